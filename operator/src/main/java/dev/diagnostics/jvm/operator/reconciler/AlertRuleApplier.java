package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;

/** Keeps the resource's PrometheusRule in line with spec.alerts, when the CRD exists. */
public final class AlertRuleApplier {
  /** The outcome, as the AlertsReady condition. */
  public record Outcome(boolean ok, String reason, String message) {}

  private final KubernetesClient client;
  private final RuleRenderer renderer;

  public AlertRuleApplier(KubernetesClient client, RuleRenderer renderer) {
    this.client = client;
    this.renderer = renderer;
  }

  public Outcome apply(JvmDiagnostics r) {
    GenericKubernetesResource rule = renderer.render(r);
    boolean crd = crdPresent();
    if (rule == null) {
      if (crd) delete(r);
      return new Outcome(true, "NoAlerts", "spec.alerts sets no thresholds; the chart's default rules still apply");
    }
    if (!crd) {
      return new Outcome(false, "PrometheusOperatorMissing",
          "spec.alerts is set but the PrometheusRule CRD (monitoring.coreos.com/v1) is not installed: install the "
              + "Prometheus Operator or its CRDs (the rules appear within a minute), or remove spec.alerts");
    }
    client.resource(rule).fieldManager(Contract.FIELD_MANAGER).forceConflicts().serverSideApply();
    int n = r.getSpec().alerts.configured().size();
    return new Outcome(true, "RuleApplied", "PrometheusRule " + rule.getMetadata().getName() + " holds " + n + " alert(s)");
  }

  /** How long one discovery answer is trusted: the CRD may be installed at any time, but not re-asked per reconcile. */
  static final long CRD_CHECK_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
  private volatile long crdCheckedAt;
  private volatile boolean crdPresent;

  private boolean crdPresent() {
    long now = System.nanoTime();
    if (crdCheckedAt == 0 || now - crdCheckedAt > CRD_CHECK_NANOS) {
      crdPresent = client.supports(RuleRenderer.API_VERSION, RuleRenderer.KIND);
      crdCheckedAt = now;
    }
    return crdPresent;
  }

  public void delete(JvmDiagnostics r) {
    if (!crdPresent()) return;
    client.genericKubernetesResources(RuleRenderer.API_VERSION, RuleRenderer.KIND)
        .inNamespace(r.getMetadata().getNamespace()).withName(RuleRenderer.ruleName(r)).delete();
  }
}
