package dev.diagnostics.jvm.operator.webhook;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The webhook's own health: every admission is counted by result, skip reason and finding; requests
 * refused before they were handled (a peer over its rate limit), by webhook and reason.
 */
public final class WebhookMetrics {
  public final Counter admissions;
  public final Counter mutations;
  public final Counter skips;
  public final Counter findings;
  public final Counter errors;
  public final Counter refused;
  public final Histogram duration;

  public WebhookMetrics(PrometheusRegistry registry) {
    admissions =
        Counter.builder()
            .name("jvmdiag_operator_admissions_total")
            .help("Pod admission requests answered, by result (mutated, skipped, error).")
            .labelNames("result")
            .register(registry);
    mutations =
        Counter.builder()
            .name("jvmdiag_operator_mutations_total")
            .help("Pods mutated, by collection mode.")
            .labelNames("collection")
            .register(registry);
    skips =
        Counter.builder()
            .name("jvmdiag_operator_admission_skips_total")
            .help("Pod admissions allowed unchanged, by reason.")
            .labelNames("reason")
            .register(registry);
    findings =
        Counter.builder()
            .name("jvmdiag_operator_admission_findings_total")
            .help("Containers the mutation could not fully inject, by reason.")
            .labelNames("reason")
            .register(registry);
    errors =
        Counter.builder()
            .name("jvmdiag_operator_admission_errors_total")
            .help("Admissions that failed inside the webhook and were allowed unchanged.")
            .register(registry);
    refused =
        Counter.builder()
            .name("jvmdiag_operator_webhook_requests_refused_total")
            .help(
                "Admission requests answered at once without being handled, by webhook (pods, jvmdiagnostics) and reason (PeerRateLimit).")
            .labelNames("webhook", "reason")
            .register(registry);
    duration =
        Histogram.builder()
            .name("jvmdiag_operator_admission_duration_seconds")
            .help("Time spent in the webhook handler per admission.")
            // fine below 10 ms, where the handler's target (p99 <= 5 ms) is judged
            .classicUpperBounds(
                0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004,
                0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
            .register(registry);
  }
}
