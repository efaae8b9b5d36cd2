package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Rollout;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The only thing the reconciler writes into its target: the inject label (the webhook's
 * objectSelector) and the config-hash annotation (its change rolls the pods) in the pod template.
 * Written by server-side apply under our own field manager, so nothing else in the template is ours
 * (GitOps tools keep owning env and containers), and applying an empty object removes exactly what
 * we wrote.
 *
 * @param resourceName the inject label's value: the JvmDiagnostics that owns the target
 * @param hash the config-hash annotation; null: label only (Manual rollout)
 */
public record PodTemplateMarker(String resourceName, String hash) {
  /**
   * The marker the template should carry. Automatic: the configuration's hash, keeping a heal
   * suffix ("&lt;hash&gt;.&lt;n&gt;", see {@link HealDecision}) as long as the hash itself is
   * current.
   */
  public static PodTemplateMarker desired(
      String resourceName, Rollout rollout, InjectionConfig config, Target target) {
    if (rollout == Rollout.Manual) return new PodTemplateMarker(resourceName, null);
    String current = target.templateAnnotation(CONFIG_HASH);
    boolean healed =
        current != null
            && (current.equals(config.hash()) || current.startsWith(config.hash() + "."));
    return new PodTemplateMarker(resourceName, healed ? current : config.hash());
  }

  /** True when the template does not carry this marker yet: a write, so a rollout. */
  public boolean needsWrite(Target target) {
    return !(resourceName.equals(target.templateLabel(INJECT_LABEL))
        && Objects.equals(hash, target.templateAnnotation(CONFIG_HASH)));
  }

  /** The same marker with another hash (a heal). */
  public PodTemplateMarker withHash(String newHash) {
    return new PodTemplateMarker(resourceName, newHash);
  }

  public void apply(KubernetesClient client, Target target) {
    if (!needsWrite(target)) return; // already as wanted: no write per reconcile
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("labels", Map.of(INJECT_LABEL, resourceName));
    if (hash != null) meta.put("annotations", Map.of(CONFIG_HASH, hash));
    send(client, target, Map.of("template", Map.of("metadata", meta)));
  }

  /** True when the template still carries our label or hash: removing them is a rollout. */
  public static boolean present(Target target) {
    return target.templateLabel(INJECT_LABEL) != null
        || target.templateAnnotation(CONFIG_HASH) != null;
  }

  /**
   * Gives up our fields: the label and the annotation go away (a rollout when the hash was set).
   */
  public static void remove(KubernetesClient client, Target target) {
    if (present(target)) send(client, target, null);
  }

  private static void send(KubernetesClient client, Target target, Map<String, Object> spec) {
    var r = target.resource();
    GenericKubernetesResource patch = new GenericKubernetesResource();
    patch.setApiVersion("apps/v1");
    patch.setKind(target.kind().name());
    patch.setMetadata(
        new ObjectMetaBuilder()
            .withName(r.getMetadata().getName())
            .withNamespace(r.getMetadata().getNamespace())
            .build());
    if (spec != null) patch.setAdditionalProperty("spec", spec);
    client
        .genericKubernetesResources("apps/v1", target.kind().name())
        .inNamespace(r.getMetadata().getNamespace())
        .resource(patch)
        .fieldManager(FIELD_MANAGER)
        .forceConflicts()
        .serverSideApply();
  }
}
