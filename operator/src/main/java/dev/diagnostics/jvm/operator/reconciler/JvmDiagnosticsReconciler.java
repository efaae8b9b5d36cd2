package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.reconciler.dependent.AlertsConfigured;
import dev.diagnostics.jvm.operator.reconciler.dependent.AlertsReady;
import dev.diagnostics.jvm.operator.reconciler.dependent.PrometheusRuleCrdPresent;
import dev.diagnostics.jvm.operator.reconciler.dependent.PrometheusRuleDependent;
import io.fabric8.kubernetes.api.model.Condition;
import io.javaoperatorsdk.operator.api.reconciler.Cleaner;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.DeleteControl;
import io.javaoperatorsdk.operator.api.reconciler.ErrorStatusUpdateControl;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import io.javaoperatorsdk.operator.api.reconciler.Workflow;
import io.javaoperatorsdk.operator.api.reconciler.dependent.Dependent;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reconciles one JvmDiagnostics: the PrometheusRule is a dependent (while its CRD is served and
 * spec.alerts sets a threshold); the target gets the inject label and config hash in its pod
 * template, its pods are observed, pods the webhook missed are healed once (TargetInjection); all
 * of it is reported as conditions. Targets and labelled pods are watched (Watches).
 */
@Workflow(
    dependents =
        @Dependent(
            name = PrometheusRuleDependent.NAME,
            type = PrometheusRuleDependent.class,
            activationCondition = PrometheusRuleCrdPresent.class,
            reconcilePrecondition = AlertsConfigured.class))
@ControllerConfiguration(name = "jvmdiagnostics", fieldManager = FIELD_MANAGER)
public class JvmDiagnosticsReconciler
    implements Reconciler<JvmDiagnostics>, Cleaner<JvmDiagnostics> {
  private static final Logger LOG = LoggerFactory.getLogger(JvmDiagnosticsReconciler.class);

  private final ReconcilerSettings settings;
  private final RolloutLimiter limiter;
  private final TargetInjection targets;
  private final MissingInjectionMetric missingMetric;

  public JvmDiagnosticsReconciler(ReconcilerSettings settings, PrometheusRegistry registry) {
    this.settings = settings;
    this.limiter = new RolloutLimiter(settings.maxRollouts(), settings.rolloutWindow(), registry);
    this.targets =
        new TargetInjection(
            limiter, new OperatorRollout(settings.operator()), settings.excludedNamespaces());
    this.missingMetric = new MissingInjectionMetric(registry);
  }

  /**
   * After this replica stopped reconciling (it lost the Lease): what it exported of the resources
   * is the new leader's to say.
   */
  public void stoppedReconciling() {
    missingMetric.clear();
  }

  @Override
  public List<EventSource<?, JvmDiagnostics>> prepareEventSources(
      EventSourceContext<JvmDiagnostics> context) {
    return Watches.eventSources(context);
  }

  @Override
  public UpdateControl<JvmDiagnostics> reconcile(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    limiter.seedOnce(() -> recordedRollouts(ctx));
    InjectionConfig config =
        InjectionConfig.of(r.getSpec(), settings.agentImage(), settings.allowedJvmOptions());
    TargetInjection.Outcome target = targets.reconcile(r, ctx, config, Instant.now());
    Condition alerts = AlertsReady.of(r, ctx, Conditions.builder(r));
    JvmDiagnosticsStatus status = StatusUpdate.of(r, target, alerts);
    missingMetric.set(ResourceID.fromResource(r), status.podsMissingInjection);
    recordEvents(r, status, target.healed(), ctx);
    Duration requeue =
        "True".equals(alerts.getStatus()) ? target.requeue() : Duration.ofSeconds(15);
    UpdateControl<JvmDiagnostics> control = StatusUpdate.patch(r, status);
    return requeue == null ? control : control.rescheduleAfter(requeue);
  }

  /**
   * One event per reconcile that names every transition in it (a new resource: one, not four); its
   * reason is the first transition's, its type Warning when any condition went False. A heal is an
   * event of its own.
   */
  private static void recordEvents(
      JvmDiagnostics r,
      JvmDiagnosticsStatus status,
      List<String> healed,
      Context<JvmDiagnostics> ctx) {
    EventRecorder events = new EventRecorder(ctx.getClient());
    List<Condition> changed = StatusUpdate.transitions(r, status.conditions);
    if (!changed.isEmpty()) {
      Condition first = changed.get(0);
      String transitions =
          changed.stream()
              .map(c ->
                  c.getType() + "=" + c.getStatus() + " (" + c.getReason() + "): " + c.getMessage())
              .collect(Collectors.joining("; "));
      // the resource is in the MDC java-operator-sdk sets around reconcile()
      LOG.info("conditions changed: {}", transitions);
      String message = changed.size() == 1 ? first.getMessage() : transitions;
      events.record(
          r,
          changed.stream().allMatch(c -> "True".equals(c.getStatus())),
          first.getType() + first.getReason(),
          message);
    }
    if (!healed.isEmpty()) {
      LOG.info("restarting the target once to inject pods the webhook missed: {}", listed(healed));
      events.record(
          r,
          true,
          "HealRollout",
          "restarting "
              + r.getSpec().targetRef.kind.name().toLowerCase()
              + "/"
              + r.getSpec().targetRef.name
              + " once to inject pods the webhook missed: "
              + listed(healed));
    }
  }

  /** At most 10 names, then how many more: an event's size does not grow with the pod count. */
  static String listed(List<String> names) {
    if (names.size() <= 10) return String.join(", ", names);
    return String.join(", ", names.subList(0, 10)) + " and " + (names.size() - 10) + " more";
  }

  @Override
  public ErrorStatusUpdateControl<JvmDiagnostics> updateErrorStatus(
      JvmDiagnostics r, Context<JvmDiagnostics> ctx, Exception e) {
    Conditions.Builder c = Conditions.builder(r);
    JvmDiagnosticsStatus st = r.getStatus() == null ? new JvmDiagnosticsStatus() : r.getStatus();
    List<Condition> conds =
        new ArrayList<>(
            c.previous().stream().filter(x -> !Conditions.READY.equals(x.getType())).toList());
    conds.add(c.of(Conditions.READY, false, "ReconcileError", String.valueOf(e.getMessage())));
    st.conditions = conds;
    return ErrorStatusUpdateControl.patchStatus(StatusUpdate.statusOnly(r, st));
  }

  /**
   * The rollouts the cluster records: status.lastRolloutTime of every resource in the cache (synced
   * before the first reconcile), whichever replica wrote it.
   */
  static List<Instant> recordedRollouts(Context<JvmDiagnostics> ctx) {
    return ctx.getPrimaryCache()
        .list()
        .map(x -> x.getStatus() == null ? null : x.getStatus().lastRolloutTime)
        .filter(t -> t != null && !t.isEmpty())
        .flatMap(t -> {
          try {
            return Stream.of(Instant.parse(t));
          } catch (DateTimeParseException e) {
            return Stream.empty();
          }
        })
        .toList();
  }

  /**
   * Gives up the marker (a rollout, so within the limit); the PrometheusRule goes with its owner.
   */
  @Override
  public DeleteControl cleanup(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    limiter.seedOnce(() -> recordedRollouts(ctx));
    Target target =
        Target.get(ctx.getClient(), r.getMetadata().getNamespace(), r.getSpec().targetRef);
    // only our own label: another JvmDiagnostics may have taken over the target
    if (target != null
        && r.getMetadata().getName().equals(target.templateLabel(INJECT_LABEL))
        && PodTemplateMarker.present(target)) {
      // the removal restarts the pods too: a deleted namespace of resources rolls within the limit
      if (!limiter.tryAcquire("removal"))
        return DeleteControl.noFinalizerRemoval().rescheduleAfter(limiter.untilNext().toMillis());
      PodTemplateMarker.remove(ctx.getClient(), target);
    }
    missingMetric.remove(ResourceID.fromResource(r));
    targets.forget(r);
    return DeleteControl.defaultDelete();
  }
}
