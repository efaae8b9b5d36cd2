package dev.diagnostics.jvm.operator.reconciler.dependent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.Alerts;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The PrometheusRule dependent: its desired state, when it is reconciled, and when it is active.
 */
class PrometheusRuleDependentTest {
  static JvmDiagnostics resource() {
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(
        new ObjectMetaBuilder().withName("pay").withNamespace("shop").withUid("uid-pay").build());
    r.setSpec(new JvmDiagnosticsSpec());
    r.getSpec().targetRef = new TargetRef(TargetRef.Kind.Deployment, "pay");
    return r;
  }

  @Test
  void desiredIsTheRenderedRuleOwnedByTheResource() {
    JvmDiagnostics r = resource();
    r.getSpec().alerts.safepointPause = new Alerts.DurationAlert("500ms", "0m", "critical");
    PrometheusRule rule =
        new PrometheusRuleDependent(RuleRenderer.fromClasspath()).desired(r, null);
    assertThat(rule.getKind()).isEqualTo("PrometheusRule");
    assertThat(rule.getApiVersion()).isEqualTo(RuleRenderer.API_VERSION);
    assertThat(rule.getMetadata().getName()).isEqualTo("jvmdiag-pay");
    assertThat(rule.getMetadata().getOwnerReferences())
        .singleElement()
        .satisfies(o -> assertThat(o.getUid()).isEqualTo("uid-pay"));
    assertThat(rule.getSpec().groups.toString()).contains("le=\"0.5\"");
    assertThat(new io.fabric8.kubernetes.client.utils.KubernetesSerialization().asJson(rule))
        .as("nothing but what we own is applied")
        .doesNotContain("status")
        .contains("\"groups\"");
  }

  @Test
  void theRuleToDeleteIsFoundByNameOnceThereIsNoneToRender() {
    JvmDiagnostics r = resource(); // no alerts: desired() is null
    assertThat(
            new PrometheusRuleDependent(RuleRenderer.fromClasspath())
                .targetSecondaryResourceID(r, null))
        .isEqualTo(new ResourceID("jvmdiag-pay", "shop"));
  }

  @Test
  void reconciledOnlyWhileSpecAlertsSetsAThreshold() {
    JvmDiagnostics r = resource();
    assertThat(AlertsConfigured.holds(r)).isFalse();
    r.getSpec().alerts.codeCacheUsage = new Alerts.NumberAlert(90, "15m", "warning");
    assertThat(AlertsConfigured.holds(r)).isTrue();
    r.getSpec().alerts = null;
    assertThat(AlertsConfigured.holds(r)).isFalse();
  }

  @Test
  void activeWhileTheCrdIsServedAskingDiscoveryAtMostEveryFewSeconds() {
    AtomicLong now = new AtomicLong(1);
    AtomicInteger asked = new AtomicInteger();
    boolean[] served = {false};
    PrometheusRuleCrdPresent crd = new PrometheusRuleCrdPresent(now::get);
    java.util.function.BooleanSupplier discovery =
        () -> {
          asked.incrementAndGet();
          return served[0];
        };
    assertThat(crd.served(discovery)).isFalse();
    served[0] = true; // installed
    now.addAndGet(TimeUnit.SECONDS.toNanos(1));
    assertThat(crd.served(discovery)).as("still trusted").isFalse();
    now.addAndGet(PrometheusRuleCrdPresent.TRUSTED_NANOS);
    assertThat(crd.served(discovery)).isTrue();
    assertThat(asked).hasValue(2);
  }
}
