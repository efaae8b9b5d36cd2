package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The status of one pass: the conditions, Ready from them, and a patch only when something changed.
 */
final class StatusUpdate {
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  private StatusUpdate() {}

  static JvmDiagnosticsStatus of(
      JvmDiagnostics r, TargetInjection.Outcome target, Condition alertsReady) {
    Conditions.Builder c = Conditions.builder(r);
    JvmDiagnosticsStatus st = new JvmDiagnosticsStatus();
    st.observedGeneration = c.generation();
    st.target = r.getSpec().targetRef.toString();
    st.desiredPods = target.desiredPods();
    st.injectedPods = target.injectedPods();
    st.injected = st.injectedPods + "/" + st.desiredPods;
    st.reportMissing(target.missing());
    st.lastHealTime = target.lastHealTime();
    st.lastRolloutTime = target.lastRolloutTime();
    List<Condition> conds =
        new ArrayList<>(List.of(target.targetFound(), target.injected(), alertsReady));
    conds.add(ready(c, conds));
    st.conditions = conds;
    return st;
  }

  /**
   * Ready: True when every other condition is, else False with the first one's reason and all their
   * messages.
   */
  static Condition ready(Conditions.Builder c, List<Condition> conds) {
    List<Condition> notTrue = conds.stream().filter(x -> !"True".equals(x.getStatus())).toList();
    return notTrue.isEmpty()
        ? c.of(Conditions.READY, true, "Ready", "injection and alerts are in place")
        : c.of(
            Conditions.READY,
            false,
            notTrue.get(0).getReason(),
            notTrue.stream()
                .map(x -> x.getType() + ": " + x.getMessage())
                .collect(Collectors.joining("; ")));
  }

  /** The conditions whose status or reason changed since the last status (what an event names). */
  static List<Condition> transitions(JvmDiagnostics r, List<Condition> now) {
    List<Condition> prev = r.getStatus() == null ? List.of() : r.getStatus().conditions;
    return now.stream()
        .filter(x -> !Conditions.sameState(x, Conditions.find(prev, x.getType())))
        .toList();
  }

  /** A status-only patch, or none when the status is what the resource already has. */
  static UpdateControl<JvmDiagnostics> patch(JvmDiagnostics r, JvmDiagnosticsStatus st) {
    if (r.getStatus() != null && JSON.asJson(r.getStatus()).equals(JSON.asJson(st)))
      return UpdateControl.noUpdate();
    return UpdateControl.patchStatus(statusOnly(r, st));
  }

  static JvmDiagnostics statusOnly(JvmDiagnostics r, JvmDiagnosticsStatus st) {
    JvmDiagnostics patch = new JvmDiagnostics();
    patch.setMetadata(
        new ObjectMetaBuilder()
            .withName(r.getMetadata().getName())
            .withNamespace(r.getMetadata().getNamespace())
            .build());
    patch.setSpec(null);
    patch.setStatus(st);
    return patch;
  }
}
