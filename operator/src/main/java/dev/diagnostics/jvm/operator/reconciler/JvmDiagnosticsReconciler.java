package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Rollout;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus;
import dev.diagnostics.jvm.operator.api.TargetRef;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Cleaner;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.DeleteControl;
import io.javaoperatorsdk.operator.api.reconciler.ErrorStatusUpdateControl;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.IndexedResourceCache;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Reconciles one JvmDiagnostics: resolve the target, write the inject label and config hash
 * into its pod template, inspect its pods, render the alert rules, and report all of it as
 * conditions. Targets and labelled pods are watched, so a target that appears later and pods
 * created while the webhook was down trigger a reconcile.
 */
@ControllerConfiguration(name = "jvmdiagnostics", fieldManager = FIELD_MANAGER)
public class JvmDiagnosticsReconciler implements Reconciler<JvmDiagnostics>, Cleaner<JvmDiagnostics> {
  static final String TARGET_INDEX = "jvmdiag-target";
  static final String POD_INDEX = "jvmdiag-pods";
  static final String PODS = "pods";
  /**
   * Between two heals of one resource (each for another config hash) at least this long, so a
   * spec edited again and again while the webhook is unreachable does not restart the workload at
   * every edit. Within one hash there is at most one heal anyway.
   */
  static final Duration HEAL_INTERVAL = Duration.ofSeconds(60);

  private final String agentImage;
  private final List<String> allowedJvmOptions;
  private final AlertRuleApplier alerts;
  private final Map<ResourceID, Long> lastHeal = new ConcurrentHashMap<>();
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  private final MissingInjectionMetric missingMetric;
  private final RolloutLimiter limiter;

  /** allowedJvmOptions: the cluster administrator's exceptions, as the webhook has them (the same hash). */
  public JvmDiagnosticsReconciler(String agentImage, List<String> allowedJvmOptions, AlertRuleApplier alerts,
      MissingInjectionMetric missingMetric, RolloutLimiter limiter) {
    this.limiter = limiter;
    this.agentImage = agentImage;
    this.allowedJvmOptions = List.copyOf(allowedJvmOptions);
    this.alerts = alerts;
    this.missingMetric = missingMetric;
  }

  @Override
  public List<EventSource<?, JvmDiagnostics>> prepareEventSources(EventSourceContext<JvmDiagnostics> context) {
    var primaries = context.getPrimaryCache();
    primaries.addIndexer(TARGET_INDEX, r -> r.getSpec() == null || r.getSpec().targetRef == null ? List.of()
        : List.of(targetKey(r.getMetadata().getNamespace(), r.getSpec().targetRef.kind.name(), r.getSpec().targetRef.name)));
    List<EventSource<?, JvmDiagnostics>> sources = new ArrayList<>();
    sources.add(targetSource(Deployment.class, "Deployment", context));
    sources.add(targetSource(StatefulSet.class, "StatefulSet", context));
    sources.add(targetSource(DaemonSet.class, "DaemonSet", context));
    // only labelled pods: the ones our template change produced (the webhook's own selector)
    InformerEventSource<Pod, JvmDiagnostics> pods = new InformerEventSource<>(
        InformerEventSourceConfiguration.from(Pod.class, JvmDiagnostics.class)
        .withName(PODS)
        .withLabelSelector(INJECT_LABEL)
        .withSecondaryToPrimaryMapper(p -> Set.of(new ResourceID(p.getMetadata().getLabels().get(INJECT_LABEL),
            p.getMetadata().getNamespace())))
        .withPrimaryToSecondaryMapper((JvmDiagnostics r) -> Set.of())
        .build(), context);
    // the status reads a resource's pods from this cache by namespace + label value, no LIST
    pods.addIndexers(Map.of(POD_INDEX, p -> List.of(p.getMetadata().getNamespace() + "/"
        + p.getMetadata().getLabels().get(INJECT_LABEL))));
    sources.add(pods);
    return sources;
  }

  private static <T extends HasMetadata> EventSource<?, JvmDiagnostics> targetSource(Class<T> type, String kind,
      EventSourceContext<JvmDiagnostics> context) {
    var primaries = context.getPrimaryCache();
    return new InformerEventSource<>(InformerEventSourceConfiguration.from(type, JvmDiagnostics.class)
        .withName(kind)
        .withSecondaryToPrimaryMapper(t -> primaries
            .byIndex(TARGET_INDEX, targetKey(t.getMetadata().getNamespace(), kind, t.getMetadata().getName()))
            .stream().map(ResourceID::fromResource).collect(Collectors.toSet()))
        .withPrimaryToSecondaryMapper((JvmDiagnostics r) -> Set.of())
        .build(), context);
  }

  static String targetKey(String ns, String kind, String name) {
    return ns + "/" + kind + "/" + name;
  }

  @Override
  public UpdateControl<JvmDiagnostics> reconcile(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    KubernetesClient client = ctx.getClient();
    String ns = r.getMetadata().getNamespace();
    String name = r.getMetadata().getName();
    long gen = r.getMetadata().getGeneration() == null ? 0 : r.getMetadata().getGeneration();
    List<Condition> prev = r.getStatus() == null ? List.of() : r.getStatus().conditions;
    InjectionConfig config = InjectionConfig.of(r.getSpec(), agentImage, allowedJvmOptions);
    boolean automatic = r.getSpec().rollout != Rollout.Manual;

    JvmDiagnosticsStatus st = new JvmDiagnosticsStatus();
    st.observedGeneration = gen;
    st.target = r.getSpec().targetRef.toString();
    List<Condition> conds = new ArrayList<>();
    Duration requeue = null;
    String healMessage = null;

    Target target = cachedTarget(ctx, ns, r.getSpec().targetRef);
    JvmDiagnostics owner = owner(ctx, r);
    if (owner != r && owner != null) {
      // the admission refuses a second resource per workload; two created at the same instant can
      // both get in: only the oldest writes, or the two would flip the template's hash forever
      String msg = r.getSpec().targetRef + " already has a JvmDiagnostics: " + ns + "/" + owner.getMetadata().getName()
          + " owns it; this resource changes nothing: delete it, or edit " + owner.getMetadata().getName() + " instead";
      conds.add(Conditions.of(Conditions.TARGET_FOUND, false, "TargetOwnedByAnother", msg, gen, prev));
      conds.add(Conditions.of(Conditions.INJECTED, false, "TargetOwnedByAnother", "not injected by this resource", gen, prev));
      st.desiredPods = 0;
      st.injectedPods = 0;
    } else if (target == null) {
      String msg = r.getSpec().targetRef + " does not exist in namespace " + ns
          + ": create it or fix spec.targetRef (it is picked up as soon as it appears)";
      conds.add(Conditions.of(Conditions.TARGET_FOUND, false, "TargetNotFound", msg, gen, prev));
      conds.add(Conditions.of(Conditions.INJECTED, false, "TargetNotFound", "no target, no pods to inject", gen, prev));
      st.desiredPods = 0;
      st.injectedPods = 0;
    } else {
      conds.add(Conditions.of(Conditions.TARGET_FOUND, true, "Found", r.getSpec().targetRef + " found", gen, prev));
      String current = target.templateAnnotation(CONFIG_HASH);
      String hashValue = null;
      if (automatic) {
        // keep a heal suffix ("<hash>.<n>") as long as the hash itself is current
        hashValue = current != null && (current.equals(config.hash()) || current.startsWith(config.hash() + "."))
            ? current : config.hash();
      }
      boolean throttled = false;
      if (PodTemplateApplier.needsWrite(target, name, hashValue)) {
        if (limiter.tryAcquire("config")) {
          new PodTemplateApplier(client).apply(target, name, hashValue);
        } else {
          throttled = true;
          requeue = limiter.untilNext();
        }
      }

      List<Pod> pods = pods(ctx, client, target, ns, name);
      PodInspector.Report report = PodInspector.inspect(pods, name, r.getMetadata().getCreationTimestamp(), config);
      st.desiredPods = target.desiredPods();
      st.injectedPods = report.injected();
      st.podsMissingInjection = report.missing();
      Condition injected = injectedCondition(report, target, automatic, gen, prev);
      if (!config.refusedOptions().isEmpty()) {
        // the API server refuses these already; a resource that got in anyway says why its options are missing
        injected = Conditions.of(Conditions.INJECTED, false, "OptionsRefused", "not injected (the rest is): "
            + String.join("; ", config.refusedOptions()) + "; remove the entries from spec.jvmOptions.extra"
            + ("True".equals(injected.getStatus()) ? "" : "; " + injected.getMessage()), gen, prev);
      }
      if (throttled) {
        injected = Conditions.of(Conditions.INJECTED, false, "RolloutThrottled", "the pod template of " + r.getSpec().targetRef
            + " waits for the cluster-wide limit of " + limiter.perMinute() + " rollouts per minute (--max-rollouts-per-minute,"
            + " chart value operator.maxRolloutsPerMinute) so that many changed resources never restart their workloads at once;"
            + " it is written within about " + limiter.untilNext().toSeconds() + " s", gen, prev);
      }

      conds.add(injected);
      if (!report.missing().isEmpty() && requeue == null) requeue = Duration.ofSeconds(30);
      // pods the webhook missed (down, unreachable) get one more rollout once the last one settled,
      // after the status has named them (report first, then heal on the next pass)
      Set<String> missed = report.missing().stream().filter(m -> m.reason.equals(PodInspector.Reason.WebhookUnavailable.name()))
          .map(m -> m.name).collect(Collectors.toSet());
      Set<String> reported = r.getStatus() == null || r.getStatus().podsMissingInjection == null ? Set.of()
          : r.getStatus().podsMissingInjection.stream().map(m -> m.name).collect(Collectors.toSet());
      if (automatic && !throttled && !missed.isEmpty() && !reported.containsAll(missed)) requeue = Duration.ofSeconds(3);
      // at most one heal per config hash: the template's "<hash>.1" says it happened (it survives
      // restarts of the operator); pods missed after it would be missed again, so stop and say why
      boolean healedOnce = hashValue != null && hashValue.startsWith(config.hash() + ".");
      String workload = target.kind().name().toLowerCase() + "/" + target.resource().getMetadata().getName();
      // missed by the webhook although made from the healed template: it is still unreachable
      String healedHash = hashValue;
      List<String> missedAfterHeal = !healedOnce ? List.of() : pods.stream()
          .filter(p -> missed.contains(p.getMetadata().getName()))
          .filter(p -> p.getMetadata().getAnnotations() != null && healedHash.equals(p.getMetadata().getAnnotations().get(CONFIG_HASH)))
          .map(p -> p.getMetadata().getName()).sorted().toList();
      if (automatic && !throttled && healedOnce) {
        if (!missedAfterHeal.isEmpty()) {
          injected = Conditions.of(Conditions.INJECTED, false, "HealStopped", missedAfterHeal.size() + " pod(s) still lack the injection ("
            + missedAfterHeal.stream().limit(10).collect(Collectors.joining(", ")) + ") after the operator restarted " + workload
            + " once for this configuration (config-hash " + hashValue + "): the API server could not call the webhook when they"
            + " were created (operator pods down or not ready, its Service or a NetworkPolicy, the "
            + dev.diagnostics.jvm.operator.webhook.WebhookRegistration.TIMEOUT_SECONDS + " s timeout). The"
            + " operator restarts a workload at most once per configuration; fix the cause, then: kubectl rollout restart "
            + workload, gen, prev);
          conds.set(conds.size() - 1, injected);
        }
        // else: the heal's rollout is still replacing the pods missed before it
      } else if (automatic && !throttled && !missed.isEmpty() && reported.containsAll(missed) && target.rolloutComplete()) {
        ResourceID id = ResourceID.fromResource(r);
        long now = System.currentTimeMillis();
        Long last = lastHeal.get(id);
        if (last != null && now - last < HEAL_INTERVAL.toMillis()) {
          requeue = Duration.ofMillis(HEAL_INTERVAL.toMillis() - (now - last));
        } else if (!limiter.tryAcquire("heal")) {
          requeue = limiter.untilNext();
        } else {
          lastHeal.put(id, now);
          String healed = nextHeal(hashValue, config.hash());
          new PodTemplateApplier(client).apply(Target.get(client, ns, r.getSpec().targetRef), name, healed);
          healMessage = "restarting " + workload + " once to inject pods the webhook missed: "
              + missed.stream().sorted().collect(Collectors.joining(", "));
        }
      }
    }
    st.injected = st.injectedPods + "/" + st.desiredPods;

    AlertRuleApplier.Outcome alertOutcome = alerts.apply(r);
    conds.add(Conditions.of(Conditions.ALERTS_READY, alertOutcome.ok(), alertOutcome.reason(), alertOutcome.message(), gen, prev));
    if (!alertOutcome.ok()) requeue = Duration.ofSeconds(15);

    List<Condition> notTrue = conds.stream().filter(c -> !"True".equals(c.getStatus())).toList();
    conds.add(notTrue.isEmpty()
        ? Conditions.of(Conditions.READY, true, "Ready", "injection and alerts are in place", gen, prev)
        : Conditions.of(Conditions.READY, false, notTrue.get(0).getReason(),
            notTrue.stream().map(c -> c.getType() + ": " + c.getMessage()).collect(Collectors.joining("; ")), gen, prev));
    st.conditions = conds;
    missingMetric.set(ResourceID.fromResource(r), st.podsMissingInjection);

    EventRecorder events = new EventRecorder(client);
    // one event per reconcile that names every transition in it (a new resource: one, not four);
    // its reason is the first transition's, its type Warning when any condition went False
    List<Condition> changed = conds.stream().filter(c -> !Conditions.sameState(c, Conditions.find(prev, c.getType()))).toList();
    if (!changed.isEmpty()) {
      Condition first = changed.get(0);
      String message = changed.size() == 1 ? first.getMessage() : changed.stream()
          .map(c -> c.getType() + "=" + c.getStatus() + " (" + c.getReason() + "): " + c.getMessage())
          .collect(Collectors.joining("; "));
      events.record(r, changed.stream().allMatch(c -> "True".equals(c.getStatus())), first.getType() + first.getReason(), message);
    }
    if (healMessage != null) events.record(r, true, "HealRollout", healMessage);

    UpdateControl<JvmDiagnostics> control;
    if (r.getStatus() != null && JSON.asJson(r.getStatus()).equals(JSON.asJson(st))) {
      control = UpdateControl.noUpdate();
    } else {
      JvmDiagnostics patch = statusOnly(r, st);
      control = UpdateControl.patchStatus(patch);
    }
    return requeue == null ? control : control.rescheduleAfter(requeue);
  }

  /**
   * Of the resources that target the same workload, the one that may write its template: the
   * oldest (then by name); resources being deleted do not count.
   */
  static JvmDiagnostics owner(Context<JvmDiagnostics> ctx, JvmDiagnostics r) {
    TargetRef ref = r.getSpec().targetRef;
    List<JvmDiagnostics> all = ctx.getPrimaryCache().byIndex(TARGET_INDEX,
        targetKey(r.getMetadata().getNamespace(), ref.kind.name(), ref.name));
    JvmDiagnostics best = r;
    for (JvmDiagnostics o : all) {
      if (o.getMetadata().getDeletionTimestamp() != null || o.getMetadata().getName().equals(r.getMetadata().getName())) continue;
      if (olderThan(o, best)) best = o;
    }
    return best;
  }

  private static boolean olderThan(JvmDiagnostics a, JvmDiagnostics b) {
    String ta = a.getMetadata().getCreationTimestamp();
    String tb = b.getMetadata().getCreationTimestamp();
    // RFC 3339 in UTC with second precision: compares as text
    int c = ta == null || tb == null ? 0 : ta.compareTo(tb);
    return c < 0 || (c == 0 && a.getMetadata().getName().compareTo(b.getMetadata().getName()) < 0);
  }

  /**
   * The target from the watch's cache, not a GET per reconcile: the watch triggers a reconcile
   * on every change, and a template write from a stale copy is an idempotent apply.
   */
  private static Target cachedTarget(Context<JvmDiagnostics> ctx, String ns, TargetRef ref) {
    ResourceID id = new ResourceID(ref.name, ns);
    return switch (ref.kind) {
      case Deployment -> Target.of(informer(ctx, Deployment.class, "Deployment").get(id).orElse(null));
      case StatefulSet -> Target.of(informer(ctx, StatefulSet.class, "StatefulSet").get(id).orElse(null));
      case DaemonSet -> Target.of(informer(ctx, DaemonSet.class, "DaemonSet").get(id).orElse(null));
    };
  }

  /**
   * The target's pods. Labelled ones come from the pod watch's cache; only when the workload
   * reports more pods than the cache holds (pods without our label: before the first rollout,
   * Manual, or a label removed) is there a LIST, since the cache cannot name those.
   */
  static List<Pod> pods(Context<JvmDiagnostics> ctx, KubernetesClient client, Target target, String ns, String name) {
    var selector = target.selector();
    boolean simple = selector != null && (selector.getMatchExpressions() == null || selector.getMatchExpressions().isEmpty());
    if (simple) {
      Map<String, String> match = selector.getMatchLabels() == null ? Map.of() : selector.getMatchLabels();
      List<Pod> cached = informer(ctx, Pod.class, PODS).byIndex(POD_INDEX, ns + "/" + name).stream()
          .filter(p -> p.getMetadata().getLabels().entrySet().containsAll(match.entrySet())).toList();
      long live = cached.stream().filter(PodInspector::live).count();
      if (live >= target.reportedPods()) return cached;
    }
    return client.pods().inNamespace(ns).withLabelSelector(selector).list().getItems();
  }

  @SuppressWarnings("unchecked")
  private static <T extends HasMetadata> InformerEventSource<T, JvmDiagnostics> informer(Context<JvmDiagnostics> ctx,
      Class<T> type, String name) {
    return (InformerEventSource<T, JvmDiagnostics>) ctx.eventSourceRetriever().getEventSourceFor(type, name);
  }

  static String nextHeal(String current, String hash) {
    if (current == null || !current.startsWith(hash + ".")) return hash + ".1";
    try {
      return hash + "." + (Integer.parseInt(current.substring(hash.length() + 1)) + 1);
    } catch (NumberFormatException e) {
      return hash + ".1";
    }
  }

  private static Condition injectedCondition(PodInspector.Report report, Target target, boolean automatic, long gen,
      List<Condition> prev) {
    if (report.missing().isEmpty()) {
      String msg = report.live() == 0 ? "the target runs no pods yet" : report.injected() + " pod(s) carry the current injection";
      return Conditions.of(Conditions.INJECTED, true, report.live() == 0 ? "NoPods" : "AllPodsInjected", msg, gen, prev);
    }
    String list = report.missing().stream().limit(10).map(m -> m.name + " (" + m.reason + ")").collect(Collectors.joining(", "));
    String reason;
    String fix;
    if (report.any("WebhookUnavailable")) {
      reason = "PodsMissingInjection";
      fix = automatic ? "they were created while the webhook was unreachable; the operator restarts the workload once its rollout settles"
          : "they were created while the webhook was unreachable; restart them: kubectl rollout restart "
              + target.kind().name().toLowerCase() + "/" + target.resource().getMetadata().getName();
    } else if (!automatic && (report.any("Outdated") || report.any("NotRolledOut"))) {
      reason = "RolloutPending";
      fix = "rollout is Manual: restart them to apply the current configuration: kubectl rollout restart "
          + target.kind().name().toLowerCase() + "/" + target.resource().getMetadata().getName();
    } else if (report.any("Outdated") || report.any("NotRolledOut")) {
      reason = "RollingOut";
      fix = "a rollout with the current configuration is in progress";
    } else {
      reason = "PodsMissingInjection";
      fix = "see each pod's reason in status.podsMissingInjection and docs/operator.md";
    }
    return Conditions.of(Conditions.INJECTED, false, reason,
        report.missing().size() + " of " + report.live() + " pod(s) lack the current injection: " + list + "; " + fix, gen, prev);
  }

  private static JvmDiagnostics statusOnly(JvmDiagnostics r, JvmDiagnosticsStatus st) {
    JvmDiagnostics patch = new JvmDiagnostics();
    patch.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder()
        .withName(r.getMetadata().getName()).withNamespace(r.getMetadata().getNamespace()).build());
    patch.setSpec(null);
    patch.setStatus(st);
    return patch;
  }

  @Override
  public ErrorStatusUpdateControl<JvmDiagnostics> updateErrorStatus(JvmDiagnostics r, Context<JvmDiagnostics> ctx, Exception e) {
    long gen = r.getMetadata().getGeneration() == null ? 0 : r.getMetadata().getGeneration();
    List<Condition> prev = r.getStatus() == null ? List.of() : r.getStatus().conditions;
    JvmDiagnosticsStatus st = r.getStatus() == null ? new JvmDiagnosticsStatus() : r.getStatus();
    List<Condition> conds = new ArrayList<>(prev.stream().filter(c -> !Conditions.READY.equals(c.getType())).toList());
    conds.add(Conditions.of(Conditions.READY, false, "ReconcileError", String.valueOf(e.getMessage()), gen, prev));
    st.conditions = conds;
    return ErrorStatusUpdateControl.patchStatus(statusOnly(r, st));
  }

  @Override
  public DeleteControl cleanup(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    Target target = Target.get(ctx.getClient(), r.getMetadata().getNamespace(), r.getSpec().targetRef);
    // only our own label: another JvmDiagnostics may have taken over the target
    if (target != null && r.getMetadata().getName().equals(target.templateLabel(INJECT_LABEL))
        && PodTemplateApplier.needsRemoval(target)) {
      // the removal restarts the pods too: a deleted namespace of resources rolls within the limit
      if (!limiter.tryAcquire("removal")) return DeleteControl.noFinalizerRemoval().rescheduleAfter(limiter.untilNext().toMillis());
      new PodTemplateApplier(ctx.getClient()).remove(target);
    }
    alerts.delete(r);
    lastHeal.remove(ResourceID.fromResource(r));
    missingMetric.remove(ResourceID.fromResource(r));
    return DeleteControl.defaultDelete();
  }
}
