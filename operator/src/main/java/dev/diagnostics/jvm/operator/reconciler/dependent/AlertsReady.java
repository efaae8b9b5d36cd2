package dev.diagnostics.jvm.operator.reconciler.dependent;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.reconciler.Conditions;
import io.fabric8.kubernetes.api.model.Condition;
import io.javaoperatorsdk.operator.api.reconciler.Context;

/** The AlertsReady condition, from what the workflow did with the PrometheusRule dependent. */
public final class AlertsReady {
  private AlertsReady() {}

  public static Condition of(JvmDiagnostics r, Context<JvmDiagnostics> ctx, Conditions.Builder c) {
    if (!AlertsConfigured.holds(r)) {
      return c.of(
          Conditions.ALERTS_READY,
          true,
          "NoAlerts",
          "spec.alerts sets no thresholds; the chart's default rules still apply");
    }
    boolean served =
        ctx.managedWorkflowAndDependentResourceContext()
            .getWorkflowReconcileResult()
            .flatMap(w ->
                w.getDependentConditionResult(
                    PrometheusRuleDependent.NAME,
                    io.javaoperatorsdk.operator.processing.dependent.workflow.Condition.Type
                        .ACTIVATION,
                    Boolean.class))
            .orElse(false);
    if (!served) {
      return c.of(
          Conditions.ALERTS_READY,
          false,
          "PrometheusOperatorMissing",
          "spec.alerts is set but the PrometheusRule CRD (monitoring.coreos.com/v1) is not installed: install the "
              + "Prometheus Operator or its CRDs (the rules appear within a minute), or remove spec.alerts");
    }
    // the workflow applied it before reconcile() ran (a failure to apply ends the pass as an error)
    return c.of(
        Conditions.ALERTS_READY,
        true,
        "RuleApplied",
        "PrometheusRule "
            + RuleRenderer.ruleName(r)
            + " holds "
            + r.getSpec().alerts.configured().size()
            + " alert(s)");
  }
}
