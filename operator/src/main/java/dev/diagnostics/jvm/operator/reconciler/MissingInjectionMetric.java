package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * jvmdiag_operator_pods_missing_injection: per resource and reason, how many pods its
 * status.podsMissingInjection lists (the JvmDiagPodsMissingInjection alert). No pod label: the
 * series stay one per resource and reason however many pods a target has, and Prometheus's own pod
 * label (the scraped operator's) keeps its meaning. Series of reasons no longer listed, or of
 * deleted resources, are removed, not set to 0. Only the leader reconciles, so only the leader
 * exports it.
 */
public final class MissingInjectionMetric {
  private final Gauge gauge;
  private final Map<ResourceID, Map<List<String>, Integer>> current = new ConcurrentHashMap<>();

  public MissingInjectionMetric(PrometheusRegistry registry) {
    gauge =
        Gauge.builder()
            .name("jvmdiag_operator_pods_missing_injection")
            .help(
                "Pods of a JvmDiagnostics target without the current injection, by reason: the ones status.podsMissingInjection lists (at most 50).")
            .labelNames("namespace", "jvmdiagnostics", "reason")
            .register(registry);
  }

  /** The series of one resource become the counts of these pods by reason. */
  public synchronized void set(ResourceID id, List<PodMissingInjection> missing) {
    String ns = id.getNamespace().orElse("");
    Map<List<String>, Integer> now = new HashMap<>();
    if (missing != null) {
      for (PodMissingInjection m : missing)
        now.merge(List.of(ns, id.getName(), String.valueOf(m.reason)), 1, Integer::sum);
    }
    for (List<String> old : current.getOrDefault(id, Map.of()).keySet()) {
      if (!now.containsKey(old)) gauge.remove(old.toArray(String[]::new));
    }
    now.forEach((l, n) -> gauge.labelValues(l.toArray(String[]::new)).set(n));
    if (now.isEmpty()) current.remove(id);
    else current.put(id, now);
  }

  public void remove(ResourceID id) {
    set(id, List.of());
  }

  /** Every series: a replica that stopped reconciling exports none (the leader does). */
  public synchronized void clear() {
    for (ResourceID id : List.copyOf(current.keySet())) set(id, List.of());
  }
}
