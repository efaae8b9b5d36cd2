package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import java.util.HashMap;
import java.util.Map;

/** Resources, targets and pods for the reconciler's unit tests, built in memory. */
final class Fixtures {
  static final String NS = "shop";
  static final String IMAGE = "jvmdiag/agent:test";

  private Fixtures() {}

  static JvmDiagnostics resource(String name) {
    JvmDiagnosticsSpec spec = new JvmDiagnosticsSpec();
    spec.targetRef = new TargetRef(TargetRef.Kind.Deployment, name);
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(
        new ObjectMetaBuilder()
            .withName(name)
            .withNamespace(NS)
            .withGeneration(2L)
            .withCreationTimestamp("2026-01-01T00:00:00Z")
            .withUid("uid-" + name)
            .build());
    r.setSpec(spec);
    return r;
  }

  static InjectionConfig config(JvmDiagnostics r) {
    return InjectionConfig.of(r.getSpec(), IMAGE);
  }

  /**
   * A Deployment of 2 replicas whose template carries these labels and annotations; rolled out when
   * settled.
   */
  static Target deployment(
      String name,
      Map<String, String> templateLabels,
      Map<String, String> templateAnnotations,
      boolean settled) {
    Map<String, String> labels = new HashMap<>(templateLabels);
    labels.put("app", name);
    Deployment d =
        new DeploymentBuilder()
            .withNewMetadata()
            .withName(name)
            .withNamespace(NS)
            .withGeneration(1L)
            .endMetadata()
            .withNewSpec()
            .withReplicas(2)
            .withNewSelector()
            .addToMatchLabels("app", name)
            .endSelector()
            .withNewTemplate()
            .withNewMetadata()
            .withLabels(labels)
            .withAnnotations(templateAnnotations)
            .endMetadata()
            .withNewSpec()
            .addNewContainer()
            .withName("app")
            .withImage("eclipse-temurin:21")
            .endContainer()
            .endSpec()
            .endTemplate()
            .endSpec()
            .build();
    if (settled) {
      d.setStatus(
          new io.fabric8.kubernetes.api.model.apps.DeploymentStatusBuilder()
              .withObservedGeneration(1L)
              .withReplicas(2)
              .withUpdatedReplicas(2)
              .build());
    }
    return Target.of(d);
  }

  static Target marked(String name, String hash) {
    return deployment(
        name,
        Map.of(INJECT_LABEL, name),
        hash == null ? Map.of() : Map.of(CONFIG_HASH, hash),
        true);
  }

  /** A pod made from the template with this hash: injected (stamped) or missed by the webhook. */
  static Pod pod(String name, String resource, String templateHash, String injectedHash) {
    Map<String, String> ann = new HashMap<>();
    if (templateHash != null) ann.put(CONFIG_HASH, templateHash);
    if (injectedHash != null) ann.put(INJECTED, injectedHash);
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(NS)
        .withCreationTimestamp("2026-01-02T00:00:00Z")
        .addToLabels("app", resource)
        .addToLabels(INJECT_LABEL, resource)
        .withAnnotations(ann)
        .endMetadata()
        .withNewSpec()
        .addNewContainer()
        .withName("app")
        .withImage("eclipse-temurin:21")
        .endContainer()
        .endSpec()
        .withNewStatus()
        .withPhase("Running")
        .endStatus()
        .build();
  }
}
