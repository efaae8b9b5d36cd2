package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes the inject label and the config-hash annotation into the target's pod template by
 * server-side apply under our own field manager: nothing else in the template is ours, and
 * applying an empty object removes exactly what we wrote (the Cleaner).
 */
public final class PodTemplateApplier {
  private final KubernetesClient client;

  public PodTemplateApplier(KubernetesClient client) {
    this.client = client;
  }

  /** True when the template does not carry this label and hash yet: a write, so a rollout. */
  public static boolean needsWrite(Target target, String resourceName, String hashValue) {
    return !(resourceName.equals(target.templateLabel(INJECT_LABEL))
        && java.util.Objects.equals(hashValue, target.templateAnnotation(CONFIG_HASH)));
  }

  /** True when the template still carries our label or hash: removing them is a rollout. */
  public static boolean needsRemoval(Target target) {
    return target.templateLabel(INJECT_LABEL) != null || target.templateAnnotation(CONFIG_HASH) != null;
  }

  /** hashValue null: label only (Manual rollout). */
  public void apply(Target target, String resourceName, String hashValue) {
    if (!needsWrite(target, resourceName, hashValue)) return; // already as wanted; skip a write per reconcile
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("labels", Map.of(INJECT_LABEL, resourceName));
    if (hashValue != null) meta.put("annotations", Map.of(CONFIG_HASH, hashValue));
    send(target, Map.of("template", Map.of("metadata", meta)));
  }

  /** Gives up our fields: the label and the annotation go away (a rollout when the hash was set). */
  public void remove(Target target) {
    if (!needsRemoval(target)) return;
    send(target, null);
  }

  private void send(Target target, Map<String, Object> spec) {
    var r = target.resource();
    GenericKubernetesResource patch = new GenericKubernetesResource();
    patch.setApiVersion("apps/v1");
    patch.setKind(target.kind().name());
    patch.setMetadata(new ObjectMetaBuilder().withName(r.getMetadata().getName())
        .withNamespace(r.getMetadata().getNamespace()).build());
    if (spec != null) patch.setAdditionalProperty("spec", spec);
    client.genericKubernetesResources("apps/v1", target.kind().name())
        .inNamespace(r.getMetadata().getNamespace())
        .resource(patch)
        .fieldManager(FIELD_MANAGER)
        .forceConflicts()
        .serverSideApply();
  }
}
