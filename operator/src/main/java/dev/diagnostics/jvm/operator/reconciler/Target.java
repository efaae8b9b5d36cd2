package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.KubernetesClient;

/** The workload named by spec.targetRef, seen through what all three kinds have in common. */
public record Target(
    TargetRef.Kind kind,
    HasMetadata resource,
    PodTemplateSpec template,
    LabelSelector selector,
    int desiredPods,
    boolean rolloutComplete,
    int reportedPods) {
  // reportedPods: the pods the workload's status counts (all revisions), to tell whether a cache
  // of labelled pods can hold them all

  public static Target get(KubernetesClient client, String namespace, TargetRef ref) {
    return switch (ref.kind) {
      case Deployment ->
          of(client.apps().deployments().inNamespace(namespace).withName(ref.name).get());
      case StatefulSet ->
          of(client.apps().statefulSets().inNamespace(namespace).withName(ref.name).get());
      case DaemonSet ->
          of(client.apps().daemonSets().inNamespace(namespace).withName(ref.name).get());
    };
  }

  static Target of(Deployment d) {
    if (d == null) return null;
    int replicas = d.getSpec().getReplicas() == null ? 1 : d.getSpec().getReplicas();
    var st = d.getStatus();
    boolean done =
        st != null
            && st.getObservedGeneration() != null
            && st.getObservedGeneration() >= d.getMetadata().getGeneration()
            && nz(st.getUpdatedReplicas()) == replicas
            && nz(st.getReplicas()) == replicas;
    return new Target(
        TargetRef.Kind.Deployment,
        d,
        d.getSpec().getTemplate(),
        d.getSpec().getSelector(),
        replicas,
        done,
        observed(st == null ? null : st.getObservedGeneration()) ? nz(st.getReplicas()) : replicas);
  }

  static Target of(StatefulSet s) {
    if (s == null) return null;
    int replicas = s.getSpec().getReplicas() == null ? 1 : s.getSpec().getReplicas();
    var st = s.getStatus();
    boolean done =
        st != null
            && st.getObservedGeneration() != null
            && st.getObservedGeneration() >= s.getMetadata().getGeneration()
            && nz(st.getUpdatedReplicas()) == replicas;
    return new Target(
        TargetRef.Kind.StatefulSet,
        s,
        s.getSpec().getTemplate(),
        s.getSpec().getSelector(),
        replicas,
        done,
        observed(st == null ? null : st.getObservedGeneration()) ? nz(st.getReplicas()) : replicas);
  }

  static Target of(DaemonSet ds) {
    if (ds == null) return null;
    var st = ds.getStatus();
    int desired = st == null ? 0 : nz(st.getDesiredNumberScheduled());
    boolean done =
        st != null
            && st.getObservedGeneration() != null
            && st.getObservedGeneration() >= ds.getMetadata().getGeneration()
            && nz(st.getUpdatedNumberScheduled()) == desired;
    return new Target(
        TargetRef.Kind.DaemonSet,
        ds,
        ds.getSpec().getTemplate(),
        ds.getSpec().getSelector(),
        desired,
        done,
        observed(st == null ? null : st.getObservedGeneration())
            ? nz(st.getCurrentNumberScheduled()) + nz(st.getNumberMisscheduled())
            : Math.max(desired, 1));
  }

  /** A status no controller has written yet ({} from the API server) counts nothing. */
  private static boolean observed(Long generation) {
    return generation != null;
  }

  private static int nz(Integer i) {
    return i == null ? 0 : i;
  }

  /** kind/name as kubectl names it: deployment/checkout. */
  public String workload() {
    return kind.name().toLowerCase() + "/" + resource.getMetadata().getName();
  }

  public String templateLabel(String key) {
    var m = template.getMetadata() == null ? null : template.getMetadata().getLabels();
    return m == null ? null : m.get(key);
  }

  public String templateAnnotation(String key) {
    var m = template.getMetadata() == null ? null : template.getMetadata().getAnnotations();
    return m == null ? null : m.get(key);
  }
}
