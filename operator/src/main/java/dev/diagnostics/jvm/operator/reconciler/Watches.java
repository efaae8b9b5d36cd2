package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.INJECT_LABEL;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.TargetRef;
import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.cache.LeanStore;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.api.reconciler.IndexedResourceCache;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * What the reconciler watches besides its resources, and the lookups into those caches: the three
 * target kinds (a target that appears later, or changes, triggers its resource's reconcile) and the
 * labelled pods (pods created while the webhook was down show up in the status at once).
 */
final class Watches {
  static final String PODS = "pods";

  /** Resources by namespace/kind/name of their target. */
  static final String TARGET_INDEX = "jvmdiag-target";

  /** Labelled pods by namespace/label value, so the status reads a resource's pods with no LIST. */
  static final String POD_INDEX = "jvmdiag-pods";

  private Watches() {}

  static List<EventSource<?, JvmDiagnostics>> eventSources(
      EventSourceContext<JvmDiagnostics> context) {
    context
        .getPrimaryCache()
        .addIndexer(
            TARGET_INDEX,
            r ->
                r.getSpec() == null || r.getSpec().targetRef == null
                    ? List.of()
                    : List.of(
                        targetKey(
                            r.getMetadata().getNamespace(),
                            r.getSpec().targetRef.kind.name(),
                            r.getSpec().targetRef.name)));
    // only labelled pods: the ones our template change produced (the webhook's own selector)
    InformerEventSource<Pod, JvmDiagnostics> pods =
        new InformerEventSource<>(
            InformerEventSourceConfiguration.from(Pod.class, JvmDiagnostics.class)
                .withName(PODS)
                .withLabelSelector(INJECT_LABEL)
                .withSecondaryToPrimaryMapper(p ->
                    Set.of(
                        new ResourceID(
                            p.getMetadata().getLabels().get(INJECT_LABEL),
                            p.getMetadata().getNamespace())))
                .withPrimaryToSecondaryMapper((JvmDiagnostics r) -> Set.of())
                .withItemStore(LeanStore.forNamespaces(namespaces(context), Lean::pod))
                .withInformerListLimit(Lean.LIST_LIMIT)
                .build(),
            context);
    pods.addIndexers(
        Map.of(
            POD_INDEX,
            p ->
                List.of(
                    p.getMetadata().getNamespace()
                        + "/"
                        + p.getMetadata().getLabels().get(INJECT_LABEL))));
    return List.of(
        target(Deployment.class, TargetRef.Kind.Deployment, Lean::deployment, context),
        target(StatefulSet.class, TargetRef.Kind.StatefulSet, Lean::statefulSet, context),
        target(DaemonSet.class, TargetRef.Kind.DaemonSet, Lean::daemonSet, context),
        pods);
  }

  /** The namespaces the controller watches (event sources inherit them). */
  private static Set<String> namespaces(EventSourceContext<JvmDiagnostics> context) {
    return context.getControllerConfiguration().getInformerConfig().getNamespaces();
  }

  /** Targets are cached lean: a write starts from a GET or applies only our fields. */
  private static <T extends HasMetadata> EventSource<?, JvmDiagnostics> target(
      Class<T> type,
      TargetRef.Kind kind,
      Consumer<T> strip,
      EventSourceContext<JvmDiagnostics> context) {
    IndexedResourceCache<JvmDiagnostics> primaries = context.getPrimaryCache();
    return new InformerEventSource<>(
        InformerEventSourceConfiguration.from(type, JvmDiagnostics.class)
            .withName(kind.name())
            .withSecondaryToPrimaryMapper(t ->
                primaries
                    .byIndex(
                        TARGET_INDEX,
                        targetKey(
                            t.getMetadata().getNamespace(), kind.name(), t.getMetadata().getName()))
                    .stream()
                    .map(ResourceID::fromResource)
                    .collect(Collectors.toSet()))
            .withPrimaryToSecondaryMapper((JvmDiagnostics r) -> Set.of())
            .withItemStore(LeanStore.forNamespaces(namespaces(context), strip))
            .withInformerListLimit(Lean.LIST_LIMIT)
            .build(),
        context);
  }

  static String targetKey(String ns, String kind, String name) {
    return ns + "/" + kind + "/" + name;
  }

  /**
   * The target from the watch's cache, not a GET per reconcile: the watch triggers a reconcile on
   * every change, and a template write from a stale copy is an idempotent apply.
   */
  static Target target(Context<JvmDiagnostics> ctx, String ns, TargetRef ref) {
    ResourceID id = new ResourceID(ref.name, ns);
    return switch (ref.kind) {
      case Deployment ->
          Target.of(informer(ctx, Deployment.class, ref.kind.name()).get(id).orElse(null));
      case StatefulSet ->
          Target.of(informer(ctx, StatefulSet.class, ref.kind.name()).get(id).orElse(null));
      case DaemonSet ->
          Target.of(informer(ctx, DaemonSet.class, ref.kind.name()).get(id).orElse(null));
    };
  }

  /** The resources that name the same target as r (r included). */
  static List<JvmDiagnostics> sameTarget(Context<JvmDiagnostics> ctx, JvmDiagnostics r) {
    TargetRef ref = r.getSpec().targetRef;
    return ctx.getPrimaryCache()
        .byIndex(
            TARGET_INDEX, targetKey(r.getMetadata().getNamespace(), ref.kind.name(), ref.name));
  }

  /** The cached pods labelled for this resource. */
  static List<Pod> labelledPods(Context<JvmDiagnostics> ctx, String ns, String resourceName) {
    return informer(ctx, Pod.class, PODS).byIndex(POD_INDEX, ns + "/" + resourceName);
  }

  @SuppressWarnings("unchecked")
  private static <T extends HasMetadata> InformerEventSource<T, JvmDiagnostics> informer(
      Context<JvmDiagnostics> ctx, Class<T> type, String name) {
    return (InformerEventSource<T, JvmDiagnostics>)
        ctx.eventSourceRetriever().getEventSourceFor(type, name);
  }
}
