package dev.diagnostics.jvm.operator.metrics;

import io.javaoperatorsdk.operator.api.monitoring.Metrics;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * java-operator-sdk's {@link Metrics} on the operator's registry: every reconcile and cleanup of a
 * JvmDiagnostics, counted and timed.
 *
 * <ul>
 *   <li>{@code jvmdiag_operator_reconciliations_total{namespace,jvmdiagnostics,operation,result}}:
 *       operation {@code reconcile} or {@code cleanup}, result {@code success} or {@code error};
 *   <li>{@code jvmdiag_operator_reconciliation_seconds_total{namespace,jvmdiagnostics,operation}}:
 *       the time spent, so {@code rate(..._seconds_total) / rate(..._reconciliations_total)} is the
 *       mean duration of one resource's reconciles;
 *   <li>{@code jvmdiag_operator_reconciliation_duration_seconds{operation}}: the distribution over
 *       all resources (a histogram per resource would be a dozen series each).
 * </ul>
 *
 * A deleted resource loses its series once its cleanup is done. Only the leader reconciles, so only
 * the leader exports them.
 */
public final class ReconcileMetrics implements Metrics {
  private final Counter reconciliations;
  private final Counter seconds;
  private final Histogram duration;
  private final LongSupplier nanos;

  /** The label values each resource has series under, to remove them when it is gone. */
  private final Map<ResourceID, Set<String>> operations = new ConcurrentHashMap<>();

  public ReconcileMetrics(PrometheusRegistry registry) {
    this(registry, System::nanoTime);
  }

  ReconcileMetrics(PrometheusRegistry registry, LongSupplier nanos) {
    this.nanos = nanos;
    reconciliations =
        Counter.builder()
            .name("jvmdiag_operator_reconciliations_total")
            .help(
                "Reconciles (operation reconcile) and cleanups (operation cleanup) of a JvmDiagnostics, by result (success, error).")
            .labelNames("namespace", "jvmdiagnostics", "operation", "result")
            .register(registry);
    seconds =
        Counter.builder()
            .name("jvmdiag_operator_reconciliation_seconds_total")
            .help("Time spent reconciling (or cleaning up) a JvmDiagnostics, in seconds.")
            .labelNames("namespace", "jvmdiagnostics", "operation")
            .register(registry);
    duration =
        Histogram.builder()
            .name("jvmdiag_operator_reconciliation_duration_seconds")
            .help("Duration of one reconcile or cleanup of any JvmDiagnostics, in seconds.")
            .classicOnly()
            .classicUpperBounds(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
            .labelNames("operation")
            .register(registry);
  }

  @Override
  public <T> T timeControllerExecution(ControllerExecution<T> execution) throws Exception {
    long start = nanos.getAsLong();
    String result = "error";
    try {
      T out = execution.execute();
      result = "success";
      return out;
    } finally {
      record(execution.resourceID(), execution.name(), result, (nanos.getAsLong() - start) / 1e9);
    }
  }

  void record(ResourceID id, String operation, String result, double elapsedSeconds) {
    String ns = id.getNamespace().orElse("");
    operations.computeIfAbsent(id, k -> ConcurrentHashMap.newKeySet()).add(operation);
    reconciliations.labelValues(ns, id.getName(), operation, result).inc();
    seconds.labelValues(ns, id.getName(), operation).inc(elapsedSeconds);
    duration.labelValues(operation).observe(elapsedSeconds);
  }

  /** The resource is deleted and its finalizer removed: its series go. */
  @Override
  public void cleanupDoneFor(ResourceID id, Map<String, Object> metadata) {
    Set<String> ops = operations.remove(id);
    if (ops == null) return;
    String ns = id.getNamespace().orElse("");
    for (String op : ops) {
      seconds.remove(ns, id.getName(), op);
      for (String result : new String[] {"success", "error"})
        reconciliations.remove(ns, id.getName(), op, result);
    }
  }
}
