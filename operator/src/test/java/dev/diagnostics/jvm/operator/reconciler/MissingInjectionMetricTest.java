package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** One series per resource and reason, counting its listed pods; none per pod. */
class MissingInjectionMetricTest {
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final MissingInjectionMetric metric = new MissingInjectionMetric(registry);

  /** "namespace/resource/reason" -> value of every series. */
  private Map<String, Double> series() {
    Map<String, Double> out = new TreeMap<>();
    for (var s : registry.scrape()) {
      if (!(s instanceof GaugeSnapshot g)) continue;
      for (var d : g.getDataPoints()) {
        var l = d.getLabels();
        assertThat(l.contains("pod")).as("a pod label").isFalse();
        out.put(
            l.get("namespace") + "/" + l.get("jvmdiagnostics") + "/" + l.get("reason"),
            d.getValue());
      }
    }
    return out;
  }

  private static PodMissingInjection pod(String name, String reason) {
    return new PodMissingInjection(name, reason);
  }

  @Test
  void countsListedPodsByReasonAndDropsWhatIsGone() {
    ResourceID shop = new ResourceID("checkout", "shop");
    ResourceID other = new ResourceID("cart", "shop");
    metric.set(
        shop,
        List.of(
            pod("checkout-1", "WebhookUnavailable"),
            pod("checkout-2", "WebhookUnavailable"),
            pod("checkout-3", "NotRolledOut")));
    metric.set(other, List.of(pod("cart-1", "WebhookUnavailable")));
    assertThat(series())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "shop/checkout/WebhookUnavailable", 2.0,
                "shop/checkout/NotRolledOut", 1.0,
                "shop/cart/WebhookUnavailable", 1.0));

    metric.set(shop, List.of(pod("checkout-2", "WebhookUnavailable")));
    assertThat(series())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("shop/checkout/WebhookUnavailable", 1.0, "shop/cart/WebhookUnavailable", 1.0));

    metric.remove(other);
    assertThat(series()).containsOnlyKeys("shop/checkout/WebhookUnavailable");
    metric.clear();
    assertThat(series()).isEmpty();
  }
}
