package dev.diagnostics.jvm.operator.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.javaoperatorsdk.operator.api.monitoring.Metrics.ControllerExecution;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ReconcileMetricsTest {
  final PrometheusRegistry registry = new PrometheusRegistry();
  final AtomicLong clock = new AtomicLong();
  final ReconcileMetrics metrics = new ReconcileMetrics(registry, clock::get);
  static final ResourceID CHECKOUT = new ResourceID("checkout", "shop");

  String scrape() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    new PrometheusTextFormatWriter(false).write(out, registry.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  <T> ControllerExecution<T> execution(String name, ResourceID id, Callable<T> body) {
    return new ControllerExecution<>() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public String controllerName() {
        return "jvmdiagnostics";
      }

      @Override
      public String successTypeName(T result) {
        return "success";
      }

      @Override
      public ResourceID resourceID() {
        return id;
      }

      @Override
      public Map<String, Object> metadata() {
        return Map.of();
      }

      @Override
      public T execute() throws Exception {
        return body.call();
      }
    };
  }

  @Test
  void reconcilesAreCountedAndTimedPerResourceAndErrorsRethrown() throws Exception {
    metrics.timeControllerExecution(
        execution(
            "reconcile",
            CHECKOUT,
            () -> {
              clock.addAndGet(250_000_000L);
              return "ok";
            }));
    assertThatThrownBy(() ->
            metrics.timeControllerExecution(
                execution(
                    "reconcile",
                    CHECKOUT,
                    () -> {
                      clock.addAndGet(1_000_000_000L);
                      throw new IllegalStateException("API server gone");
                    })))
        .hasMessage("API server gone");
    String page = scrape();
    assertThat(page)
        .contains(
            "jvmdiag_operator_reconciliations_total{jvmdiagnostics=\"checkout\",namespace=\"shop\",operation=\"reconcile\",result=\"success\"} 1.0")
        .contains(
            "jvmdiag_operator_reconciliations_total{jvmdiagnostics=\"checkout\",namespace=\"shop\",operation=\"reconcile\",result=\"error\"} 1.0")
        .contains(
            "jvmdiag_operator_reconciliation_seconds_total{jvmdiagnostics=\"checkout\",namespace=\"shop\",operation=\"reconcile\"} 1.25")
        .contains(
            "jvmdiag_operator_reconciliation_duration_seconds_bucket{operation=\"reconcile\",le=\"0.25\"} 1")
        .contains(
            "jvmdiag_operator_reconciliation_duration_seconds_count{operation=\"reconcile\"} 2");
  }

  @Test
  void aDeletedResourceLosesItsSeries() throws Exception {
    metrics.timeControllerExecution(execution("reconcile", CHECKOUT, () -> "ok"));
    metrics.timeControllerExecution(execution("cleanup", CHECKOUT, () -> "ok"));
    metrics.timeControllerExecution(
        execution("reconcile", new ResourceID("cart", "shop"), () -> "ok"));
    metrics.cleanupDoneFor(CHECKOUT, Map.of());
    String page = scrape();
    assertThat(page)
        .doesNotContain("jvmdiagnostics=\"checkout\"")
        .contains("jvmdiagnostics=\"cart\"");
    assertThat(page)
        .contains(
            "jvmdiag_operator_reconciliation_duration_seconds_count{operation=\"cleanup\"} 1");
  }
}
