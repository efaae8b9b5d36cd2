package dev.diagnostics.jvm.operator.cache;

import static dev.diagnostics.jvm.operator.Contract.CONFIG_HASH;
import static dev.diagnostics.jvm.operator.Contract.INJECT_LABEL;
import static dev.diagnostics.jvm.operator.Contract.JAVA_TOOL_OPTIONS;
import static dev.diagnostics.jvm.operator.Contract.JDK_JAVA_OPTIONS;
import static dev.diagnostics.jvm.operator.Contract.PREFIX;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.mutator.PodMutator;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What each cache keeps of an object (see {@link LeanStore}). The reconciler reads of a target only
 * its name, generation, replicas, selector, our label and annotation in the pod template and the
 * status's counts; of a labelled pod its metadata, containers and phase; of a JvmDiagnostics its
 * metadata, spec and status (the webhook: not the status). managedFields and kubectl's last-applied
 * annotation are read by nobody here: together often more than half of an object.
 */
public final class Lean {
  /**
   * Objects per page of an informer's first LIST (and relists): 20,000 Deployments come in pages
   * the API server and this heap hold one at a time, not as one response.
   */
  public static final long LIST_LIMIT = 500;

  /** kubectl apply's copy of the whole object, as applied. */
  public static final String LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

  /** Shared by the lean pods of one template (see {@link Interner}). */
  private static final Interner<PodSpec> POD_SPECS = new Interner<>();

  private static final Interner<Map<String, String>> POD_MAPS = new Interner<>();
  private static final Interner<PodStatus> POD_PHASES = new Interner<>();

  private Lean() {}

  /** managedFields and the last-applied annotation. */
  public static void metadata(HasMetadata o) {
    ObjectMeta m = o.getMetadata();
    if (m == null) return;
    m.setManagedFields(null);
    if (m.getAnnotations() != null && m.getAnnotations().containsKey(LAST_APPLIED)) {
      Map<String, String> a = new HashMap<>(m.getAnnotations());
      a.remove(LAST_APPLIED);
      m.setAnnotations(a);
    }
  }

  public static void deployment(Deployment d) {
    target(d);
    if (d.getSpec() != null) {
      d.getSpec().setTemplate(template(d.getSpec().getTemplate()));
      d.getSpec().setStrategy(null);
    }
    if (d.getStatus() != null) d.getStatus().setConditions(null);
  }

  public static void statefulSet(StatefulSet s) {
    target(s);
    if (s.getSpec() != null) {
      s.getSpec().setTemplate(template(s.getSpec().getTemplate()));
      s.getSpec().setVolumeClaimTemplates(null);
      s.getSpec().setUpdateStrategy(null);
    }
    if (s.getStatus() != null) s.getStatus().setConditions(null);
  }

  public static void daemonSet(DaemonSet ds) {
    target(ds);
    if (ds.getSpec() != null) {
      ds.getSpec().setTemplate(template(ds.getSpec().getTemplate()));
      ds.getSpec().setUpdateStrategy(null);
    }
    if (ds.getStatus() != null) ds.getStatus().setConditions(null);
  }

  /**
   * A labelled pod: PodInspector re-runs the mutation on it, so what PodMutator reads stays (its
   * labels and our annotations; each container's name, image, JAVA_TOOL_OPTIONS and
   * JDK_JAVA_OPTIONS, envFrom, the mounts it reads and runAsUser; the pod's security context and
   * whether it has our volume); of the status, the phase. The replicas of one template share one
   * instance of each of these (unmodifiable; see {@link Interner}): what is left per pod is its
   * name, uid, resourceVersion and timestamps.
   */
  public static void pod(Pod p) {
    metadata(p);
    ObjectMeta m = p.getMetadata();
    m.setOwnerReferences(null);
    if (m.getNamespace() != null) m.setNamespace(m.getNamespace().intern());
    if (m.getGenerateName() != null) m.setGenerateName(m.getGenerateName().intern());
    if (m.getLabels() != null) m.setLabels(POD_MAPS.intern(unmodifiable(m.getLabels())));
    if (m.getAnnotations() != null) {
      Map<String, String> ours = new HashMap<>();
      m.getAnnotations()
          .forEach((k, v) -> {
            if (k.startsWith(PREFIX)) ours.put(k, v);
          });
      m.setAnnotations(POD_MAPS.intern(unmodifiable(ours)));
    }
    if (p.getStatus() != null) {
      PodStatus phase = new PodStatus();
      phase.setPhase(p.getStatus().getPhase());
      p.setStatus(POD_PHASES.intern(phase));
    }
    PodSpec spec = p.getSpec();
    if (spec == null) return;
    PodSpec lean = new PodSpec();
    lean.setSecurityContext(spec.getSecurityContext());
    if (spec.getContainers() != null)
      lean.setContainers(spec.getContainers().stream().map(Lean::container).toList());
    if (spec.getVolumes() != null)
      lean.setVolumes(
          spec.getVolumes().stream()
              .filter(PodMutator::readsVolume)
              .map(v -> new VolumeBuilder().withName(v.getName()).build())
              .toList());
    p.setSpec(POD_SPECS.intern(lean));
  }

  /** An unmodifiable copy (the API server sends no null label or annotation; none is kept). */
  private static Map<String, String> unmodifiable(Map<String, String> m) {
    Map<String, String> copy = new HashMap<>();
    m.forEach((k, v) -> {
      if (k != null && v != null) copy.put(k, v);
    });
    return Map.copyOf(copy);
  }

  private static Container container(Container c) {
    Container lean = new Container();
    lean.setName(c.getName());
    lean.setImage(c.getImage());
    if (c.getEnv() != null)
      lean.setEnv(
          c.getEnv().stream()
              .filter(e ->
                  JAVA_TOOL_OPTIONS.equals(e.getName()) || JDK_JAVA_OPTIONS.equals(e.getName()))
              .toList());
    if (c.getEnvFrom() != null) lean.setEnvFrom(List.copyOf(c.getEnvFrom()));
    if (c.getVolumeMounts() != null)
      lean.setVolumeMounts(c.getVolumeMounts().stream().filter(PodMutator::readsMount).toList());
    if (c.getSecurityContext() != null && c.getSecurityContext().getRunAsUser() != null) {
      SecurityContext user = new SecurityContext();
      user.setRunAsUser(c.getSecurityContext().getRunAsUser());
      lean.setSecurityContext(user);
    }
    return lean;
  }

  /** A JvmDiagnostics as the reconciler reads it. */
  public static void resource(JvmDiagnostics r) {
    metadata(r);
  }

  /** A JvmDiagnostics as the webhook reads it: metadata and spec. */
  public static void admitted(JvmDiagnostics r) {
    metadata(r);
    r.setStatus(null);
  }

  /** A target's own labels, annotations and owners are not read: the template's are. */
  private static void target(HasMetadata t) {
    t.getMetadata().setManagedFields(null);
    // empty, not null: JOSDK's event handler reads the annotations of every event
    t.getMetadata().setAnnotations(Map.of());
    t.getMetadata().setLabels(null);
    t.getMetadata().setOwnerReferences(null);
  }

  /** Of the pod template only our label and annotation (the marker); no pod spec. */
  private static PodTemplateSpec template(PodTemplateSpec t) {
    if (t == null) return null;
    ObjectMeta kept = new ObjectMeta();
    ObjectMeta m = t.getMetadata();
    if (m != null && m.getLabels() != null && m.getLabels().containsKey(INJECT_LABEL))
      kept.setLabels(Map.of(INJECT_LABEL, m.getLabels().get(INJECT_LABEL)));
    if (m != null && m.getAnnotations() != null && m.getAnnotations().containsKey(CONFIG_HASH))
      kept.setAnnotations(Map.of(CONFIG_HASH, m.getAnnotations().get(CONFIG_HASH)));
    PodTemplateSpec lean = new PodTemplateSpec();
    lean.setMetadata(kept);
    return lean;
  }
}
