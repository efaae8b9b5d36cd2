package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * jvmdiag_operator_pods_missing_injection: 1 per entry of a resource's status.podsMissingInjection
 * (the JvmDiagPodsMissingInjection alert). Series of pods no longer missing, or of deleted
 * resources, are removed, not set to 0. Only the leader reconciles, so only the leader exports it.
 */
public final class MissingInjectionMetric {
  private final Gauge gauge;
  private final Map<ResourceID, Set<List<String>>> current = new ConcurrentHashMap<>();

  public MissingInjectionMetric(PrometheusRegistry registry) {
    gauge =
        Gauge.builder()
            .name("jvmdiag_operator_pods_missing_injection")
            .help(
                "1 per pod of a JvmDiagnostics target without the current injection, by reason (status.podsMissingInjection).")
            .labelNames("namespace", "jvmdiagnostics", "pod", "reason")
            .register(registry);
  }

  /** The series of one resource become exactly these pods. */
  public synchronized void set(ResourceID id, List<PodMissingInjection> missing) {
    String ns = id.getNamespace().orElse("");
    Set<List<String>> now = new HashSet<>();
    if (missing != null) {
      for (PodMissingInjection m : missing)
        now.add(List.of(ns, id.getName(), m.name, String.valueOf(m.reason)));
    }
    for (List<String> old : current.getOrDefault(id, Set.of())) {
      if (!now.contains(old)) gauge.remove(old.toArray(String[]::new));
    }
    for (List<String> l : now) gauge.labelValues(l.toArray(String[]::new)).set(1);
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
