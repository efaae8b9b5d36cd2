package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import io.fabric8.kubernetes.api.model.Condition;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * The target side of a reconcile: find the target, write the marker into its pod template (within
 * the cluster-wide rollout limit, and not while replicas of another operator version may still
 * answer the webhook), observe its pods, heal once what the webhook missed; the outcome is the
 * TargetFound and Injected conditions and the pod counts.
 */
final class TargetInjection {
  /**
   * What the target side found and did.
   *
   * @param healed the pods a heal restarted the target for (empty: no heal)
   * @param lastHealTime status.lastHealTime after this pass
   * @param lastRolloutTime status.lastRolloutTime after this pass
   */
  record Outcome(
      Condition targetFound,
      Condition injected,
      int desiredPods,
      int injectedPods,
      List<PodMissingInjection> missing,
      Duration requeue,
      List<String> healed,
      String lastHealTime,
      String lastRolloutTime) {}

  private final RolloutLimiter limiter;
  private final OperatorRollout operator;
  private final List<String> excludedNamespaces;

  /**
   * This replica's own last rollout per resource (namespace/name): a pass that starts from a cached
   * resource older than the status written with the rollout must not drop status.lastRolloutTime,
   * which the next leader's rollout limit reads.
   */
  private final Map<String, Instant> rolledOut = new ConcurrentHashMap<>();

  /**
   * excludedNamespaces: where the webhook injects nothing, so the operator writes nothing either.
   */
  TargetInjection(
      RolloutLimiter limiter, OperatorRollout operator, List<String> excludedNamespaces) {
    this.limiter = limiter;
    this.operator = operator;
    this.excludedNamespaces = List.copyOf(excludedNamespaces);
  }

  Outcome reconcile(
      JvmDiagnostics r, Context<JvmDiagnostics> ctx, InjectionConfig config, Instant now) {
    var spec = r.getSpec();
    String ns = r.getMetadata().getNamespace();
    String lastHeal = r.getStatus() == null ? null : r.getStatus().lastHealTime;
    String key = ns + "/" + r.getMetadata().getName();
    String lastRollout =
        latest(r.getStatus() == null ? null : r.getStatus().lastRolloutTime, rolledOut.get(key));
    Conditions.Builder c = Conditions.builder(r);

    Target target = Watches.target(ctx, ns, spec.targetRef);
    Condition found =
        target != null
            ? c.of(Conditions.TARGET_FOUND, true, "Found", spec.targetRef + " found")
            : c.of(
                Conditions.TARGET_FOUND,
                false,
                "TargetNotFound",
                spec.targetRef
                    + " does not exist in namespace "
                    + ns
                    + ": create it or fix spec.targetRef (it is picked up as soon as it appears)");
    if (excludedNamespaces.contains(ns)) {
      // the webhook never sees pods here: a template write would only restart the workload
      return notWritten(
          found,
          c.of(
              Conditions.INJECTED,
              false,
              "NamespaceExcluded",
              "namespace "
                  + ns
                  + " is excluded from injection ("
                  + String.join(", ", excludedNamespaces)
                  + ": the system namespaces and the"
                  + " operator's own): the webhook never mutates pods here, so the operator writes nothing into "
                  + spec.targetRef
                  + " and restarts nothing; put the workload and this resource in an application namespace"),
          lastHeal,
          lastRollout);
    }
    JvmDiagnostics owner = TargetOwner.of(r, Watches.sameTarget(ctx, r));
    if (owner != r) {
      String msg =
          spec.targetRef
              + " already has a JvmDiagnostics: "
              + ns
              + "/"
              + owner.getMetadata().getName()
              + " owns it; this resource changes nothing: delete it, or edit "
              + owner.getMetadata().getName()
              + " instead";
      return notWritten(
          c.of(Conditions.TARGET_FOUND, false, "TargetOwnedByAnother", msg),
          c.of(Conditions.INJECTED, false, "TargetOwnedByAnother", "not injected by this resource"),
          lastHeal,
          lastRollout);
    }
    if (target == null)
      return notWritten(
          found,
          c.of(Conditions.INJECTED, false, "TargetNotFound", "no target, no pods to inject"),
          lastHeal,
          lastRollout);

    PodTemplateMarker marker =
        PodTemplateMarker.desired(r.getMetadata().getName(), spec.rollout, config, target);
    // before the limit: a write that waits for the operator's rollout takes none of it
    boolean writes = marker.needsWrite(target);
    OperatorRollout.Wait waiting = writes ? operator.waitFor(ctx.getClient(), now) : null;
    boolean throttled = waiting == null && writes && !limiter.tryAcquire("config");
    if (waiting == null && !throttled) {
      marker.apply(ctx.getClient(), target); // a no-op when the template carries it already
      if (writes) {
        lastRollout = now.toString();
        rolledOut.put(key, now);
      }
    }
    Duration requeue =
        throttled ? limiter.untilNext() : waiting != null ? OperatorRollout.REQUEUE : null;

    PodObserver.Observation seen = PodObserver.observe(ctx, target, r, config);
    PodInspector.Report report = seen.report();
    Condition injected = InjectedCondition.of(c, report, target, marker.hash() != null);
    if (!config.refusedOptions().isEmpty())
      injected = InjectedCondition.optionsRefused(c, config, injected);
    if (throttled) injected = InjectedCondition.throttled(c, spec.targetRef.toString(), limiter);
    if (waiting != null)
      injected =
          InjectedCondition.waitingForOperator(c, spec.targetRef.toString(), waiting, "written");
    if (!report.missing().isEmpty() && requeue == null) requeue = Duration.ofSeconds(30);

    HealDecision heal =
        throttled || waiting != null
            ? HealDecision.NONE
            : HealDecision.decide(
                marker.hash(),
                config.hash(),
                report.missing(),
                r.getStatus() == null ? null : r.getStatus().podsMissingInjection,
                seen.pods(),
                target.rolloutComplete(),
                lastHeal == null ? null : Instant.parse(lastHeal),
                now);
    if (heal.requeue() != null) requeue = heal.requeue();
    if (!heal.stillMissing().isEmpty())
      injected = InjectedCondition.healStopped(c, heal.stillMissing(), target, marker.hash());
    List<String> healed = List.of();
    OperatorRollout.Wait healWaits =
        heal.healTo() != null ? operator.waitFor(ctx.getClient(), now) : null;
    if (healWaits != null) {
      // a heal now could meet the same replica of the previous version again, and there is one heal
      // per configuration
      injected =
          InjectedCondition.waitingForOperator(
              c, spec.targetRef.toString(), healWaits, "restarted to heal the pods missed");
      requeue = OperatorRollout.REQUEUE;
    } else if (heal.healTo() != null) {
      if (limiter.tryAcquire("heal")) {
        // a fresh copy: the heal must not apply over a template changed since the cache saw it
        marker
            .withHash(heal.healTo())
            .apply(ctx.getClient(), Target.get(ctx.getClient(), ns, spec.targetRef));
        healed = HealDecision.missed(report.missing());
        lastHeal = now.toString();
        lastRollout = lastHeal;
        rolledOut.put(key, now);
      } else {
        requeue = limiter.untilNext();
      }
    }
    return new Outcome(
        found,
        injected,
        target.desiredPods(),
        report.injected(),
        report.missing(),
        requeue,
        healed,
        lastHeal,
        lastRollout);
  }

  /** The resource is gone: its own last rollout is no longer needed. */
  void forget(JvmDiagnostics r) {
    rolledOut.remove(r.getMetadata().getNamespace() + "/" + r.getMetadata().getName());
  }

  /** The later of the status's time (RFC 3339, maybe unreadable) and this replica's own. */
  static String latest(String recorded, Instant own) {
    if (own == null) return recorded;
    try {
      if (recorded != null && !Instant.parse(recorded).isBefore(own)) return recorded;
    } catch (java.time.format.DateTimeParseException e) {
      // unreadable: ours is the one to keep
    }
    return own.toString();
  }

  /** Nothing written into the target, no pods counted. */
  private static Outcome notWritten(
      Condition targetFound, Condition injected, String lastHeal, String lastRollout) {
    return new Outcome(
        targetFound, injected, 0, 0, List.of(), null, List.of(), lastHeal, lastRollout);
  }

  /** The Injected condition's variants. */
  static final class InjectedCondition {
    private InjectedCondition() {}

    static Condition of(
        Conditions.Builder c, PodInspector.Report report, Target target, boolean automatic) {
      if (report.missing().isEmpty()) {
        String msg =
            report.live() == 0
                ? "the target runs no pods yet"
                : report.injected() + " pod(s) carry the current injection" + launcherOnly(report);
        return c.of(
            Conditions.INJECTED, true, report.live() == 0 ? "NoPods" : "AllPodsInjected", msg);
      }
      String list =
          report.missing().stream()
              .limit(10)
              .map(PodMissingInjection::toString)
              .collect(Collectors.joining(", "));
      String reason;
      String fix;
      if (report.any("WebhookUnavailable")) {
        reason = "PodsMissingInjection";
        fix =
            automatic
                ? "they were created while the webhook was unreachable; the operator restarts the workload once its rollout settles"
                : "they were created while the webhook was unreachable; restart them: kubectl rollout restart "
                    + target.workload();
      } else if (report.any("OtherConfiguration")) {
        reason = "PodsMissingInjection";
        fix =
            "a webhook replica with another configuration admitted them (one whose view of the resource lagged, or"
                + " one of another operator version); the operator restarts the workload once its rollout settles";
      } else if (!automatic && (report.any("Outdated") || report.any("NotRolledOut"))) {
        reason = "RolloutPending";
        fix =
            "rollout is Manual: restart them to apply the current configuration: kubectl rollout restart "
                + target.workload();
      } else if (report.any("Outdated") || report.any("NotRolledOut")) {
        reason = "RollingOut";
        fix = "a rollout with the current configuration is in progress";
      } else {
        reason = "PodsMissingInjection";
        fix = "see each pod's reason in status.podsMissingInjection and docs/operator.md";
      }
      return c.of(
          Conditions.INJECTED,
          false,
          reason,
          report.missing().size()
              + " of "
              + report.live()
              + " pod(s) lack the current injection: "
              + list
              + "; "
              + fix
              + launcherOnly(report));
    }

    /**
     * Injected pods whose JVM flags only the java launcher reads (JAVA_TOOL_OPTIONS from
     * valueFrom).
     */
    static String launcherOnly(PodInspector.Report report) {
      if (report.launcherOnly().isEmpty()) return "";
      return "; JAVA_TOOL_OPTIONS comes from valueFrom, so the flags are in JDK_JAVA_OPTIONS, which only the java launcher "
          + "reads (not a JVM created through JNI), in "
          + report.launcherOnly().stream().limit(10).collect(Collectors.joining(", "));
    }

    /**
     * The API server refuses these already; a resource that got in anyway says why its options are
     * missing.
     */
    static Condition optionsRefused(
        Conditions.Builder c, InjectionConfig config, Condition injected) {
      return c.of(
          Conditions.INJECTED,
          false,
          "OptionsRefused",
          "not injected (the rest is): "
              + String.join("; ", config.refusedOptions())
              + "; remove the entries from spec.jvmOptions.extra"
              + ("True".equals(injected.getStatus()) ? "" : "; " + injected.getMessage()));
    }

    static Condition throttled(Conditions.Builder c, String targetRef, RolloutLimiter limiter) {
      return c.of(
          Conditions.INJECTED,
          false,
          "RolloutThrottled",
          "the pod template of "
              + targetRef
              + " waits for the cluster-wide limit of "
              + limiter.describe()
              + " (--max-rollouts-per-minute,"
              + " chart value operator.maxRolloutsPerMinute) so that many changed resources never restart their workloads at once;"
              + " the next rollout may start in about "
              + limiter.untilNext().toSeconds()
              + " s");
    }

    /** what: what happens to the template once the operator's rollout is done ("written", ...). */
    static Condition waitingForOperator(
        Conditions.Builder c, String targetRef, OperatorRollout.Wait wait, String what) {
      return c.of(
          Conditions.INJECTED,
          false,
          "OperatorRollingOut",
          "the pod template of "
              + targetRef
              + " is "
              + what
              + " once the operator's own rollout is done: "
              + wait.describe()
              + " may still answer the webhook, and a pod it admits"
              + " gets that version's injection; this continues by itself when that rollout ends (see it: "
              + wait.statusCommand()
              + ")");
    }

    static Condition healStopped(
        Conditions.Builder c, List<String> stillMissing, Target target, String hash) {
      return c.of(
          Conditions.INJECTED,
          false,
          "HealStopped",
          stillMissing.size()
              + " pod(s) still lack the injection ("
              + stillMissing.stream().limit(10).collect(Collectors.joining(", "))
              + ") after the operator restarted "
              + target.workload()
              + " once for this configuration (config-hash "
              + hash
              + "): the API server could not call the webhook when they"
              + " were created (operator pods down or not ready, its Service or a NetworkPolicy, the "
              + WebhookRegistration.TIMEOUT_SECONDS
              + " s timeout). The"
              + " operator restarts a workload at most once per configuration; fix the cause, then: kubectl rollout restart "
              + target.workload());
    }
  }
}
