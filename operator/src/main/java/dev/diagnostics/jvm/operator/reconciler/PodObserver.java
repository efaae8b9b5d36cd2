package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import io.fabric8.kubernetes.api.model.Pod;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Observes the target's pods: which carry the current injection, which do not and why
 * (PodInspector).
 */
final class PodObserver {
  private PodObserver() {}

  /** The pods seen, and what they say. */
  record Observation(List<Pod> pods, PodInspector.Report report) {}

  static Observation observe(
      Context<JvmDiagnostics> ctx, Target target, JvmDiagnostics r, InjectionConfig config) {
    String ns = r.getMetadata().getNamespace();
    String name = r.getMetadata().getName();
    List<Pod> pods =
        podsOf(
            target,
            Watches.labelledPods(ctx, ns, name),
            () ->
                ctx.getClient()
                    .pods()
                    .inNamespace(ns)
                    .withLabelSelector(target.selector())
                    .list()
                    .getItems());
    return new Observation(
        pods, PodInspector.inspect(pods, name, r.getMetadata().getCreationTimestamp(), config));
  }

  /**
   * The target's pods. Labelled ones come from the pod watch's cache; only when the workload
   * reports more pods than the cache holds (pods without our label: before the first rollout,
   * Manual, or a label removed) is there a LIST, since the cache cannot name those.
   */
  static List<Pod> podsOf(Target target, List<Pod> labelled, Supplier<List<Pod>> list) {
    var selector = target.selector();
    boolean simple =
        selector != null
            && (selector.getMatchExpressions() == null || selector.getMatchExpressions().isEmpty());
    if (simple) {
      Map<String, String> match =
          selector.getMatchLabels() == null ? Map.of() : selector.getMatchLabels();
      List<Pod> cached =
          labelled.stream()
              .filter(p -> p.getMetadata().getLabels().entrySet().containsAll(match.entrySet()))
              .toList();
      long live = cached.stream().filter(PodInspector::live).count();
      if (live >= target.reportedPods()) return cached;
    }
    return list.get();
  }
}
