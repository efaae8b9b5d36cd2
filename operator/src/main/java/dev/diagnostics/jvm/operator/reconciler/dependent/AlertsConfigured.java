package dev.diagnostics.jvm.operator.reconciler.dependent;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.dependent.DependentResource;
import io.javaoperatorsdk.operator.processing.dependent.workflow.Condition;

/**
 * spec.alerts sets at least one threshold: there is a PrometheusRule to keep, else it is deleted.
 */
public class AlertsConfigured implements Condition<PrometheusRule, JvmDiagnostics> {
  @Override
  public boolean isMet(
      DependentResource<PrometheusRule, JvmDiagnostics> dependent,
      JvmDiagnostics r,
      Context<JvmDiagnostics> ctx) {
    return holds(r);
  }

  public static boolean holds(JvmDiagnostics r) {
    return r.getSpec().alerts != null && !r.getSpec().alerts.configured().isEmpty();
  }
}
