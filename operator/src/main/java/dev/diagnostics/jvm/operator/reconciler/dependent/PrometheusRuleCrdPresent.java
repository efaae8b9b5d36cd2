package dev.diagnostics.jvm.operator.reconciler.dependent;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.dependent.DependentResource;
import io.javaoperatorsdk.operator.processing.dependent.workflow.DetailedCondition;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The Prometheus Operator's PrometheusRule is served (API discovery, which every service account
 * may read; the CRD object itself is not ours to read). The answer is trusted for a few seconds:
 * the CRD may be installed at any time, but discovery is not asked again per reconcile. Its result
 * (a Boolean) is what the AlertsReady condition reports.
 */
public class PrometheusRuleCrdPresent
    implements DetailedCondition<PrometheusRule, JvmDiagnostics, Boolean> {
  static final long TRUSTED_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final LongSupplier nanos;
  private long checkedAt;
  private boolean present;
  private boolean checked;

  public PrometheusRuleCrdPresent() {
    this(System::nanoTime);
  }

  PrometheusRuleCrdPresent(LongSupplier nanos) {
    this.nanos = nanos;
  }

  @Override
  public Result<Boolean> detailedIsMet(
      DependentResource<PrometheusRule, JvmDiagnostics> dependent,
      JvmDiagnostics r,
      Context<JvmDiagnostics> ctx) {
    boolean served =
        served(() -> ctx.getClient().supports(RuleRenderer.API_VERSION, RuleRenderer.KIND));
    return Result.withResult(served, served);
  }

  synchronized boolean served(java.util.function.BooleanSupplier discovery) {
    long now = nanos.getAsLong();
    if (!checked || now - checkedAt > TRUSTED_NANOS) {
      present = discovery.getAsBoolean();
      checkedAt = now;
      checked = true;
    }
    return present;
  }
}
