package dev.diagnostics.jvm.operator.mutator;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What PodMutator changed, as JSON-patch operations on the paths it may touch (annotations,
 * volumes, each container's env and volumeMounts, appended containers). Compares only those parts,
 * so neither the webhook nor the idempotency check serialises or diffs a whole pod.
 */
public final class PodChanges {
  /** op is "add" or "replace"; value is a model object (or String) serialised by the caller. */
  public record Op(String op, String path, Object value) {}

  private PodChanges() {}

  public static List<Op> between(Pod before, Pod after) {
    List<Op> ops = new ArrayList<>();
    Map<String, String> a0 =
        before.getMetadata() == null ? null : before.getMetadata().getAnnotations();
    Map<String, String> a1 = after.getMetadata().getAnnotations();
    if (a0 == null || a0.isEmpty()) {
      if (a1 != null && !a1.isEmpty()) ops.add(new Op("add", "/metadata/annotations", a1));
    } else if (a1 != null) {
      for (var e : a1.entrySet()) {
        if (!e.getValue().equals(a0.get(e.getKey()))) {
          ops.add(
              new Op(
                  "add",
                  "/metadata/annotations/" + escape(e.getKey()),
                  e.getValue())); // add also replaces
        }
      }
    }
    List<Container> c0 = before.getSpec().getContainers();
    List<Container> c1 = after.getSpec().getContainers();
    for (int i = 0; i < c0.size(); i++) {
      listOp(ops, "/spec/containers/" + i + "/env", c0.get(i).getEnv(), c1.get(i).getEnv());
      listOp(
          ops,
          "/spec/containers/" + i + "/volumeMounts",
          c0.get(i).getVolumeMounts(),
          c1.get(i).getVolumeMounts());
    }
    for (int i = c0.size(); i < c1.size(); i++)
      ops.add(new Op("add", "/spec/containers/-", c1.get(i)));
    listOp(ops, "/spec/volumes", before.getSpec().getVolumes(), after.getSpec().getVolumes());
    return ops;
  }

  private static void listOp(List<Op> ops, String path, List<?> before, List<?> after) {
    List<?> b = before == null ? List.of() : before;
    List<?> a = after == null ? List.of() : after;
    if (Objects.equals(b, a)) return;
    // "add" of a whole member creates or replaces it; an absent list has no index to replace
    ops.add(new Op(before == null || before.isEmpty() ? "add" : "replace", path, a));
  }

  /** RFC 6901: "~" → "~0", "/" → "~1" (annotation keys carry a "/"). */
  static String escape(String key) {
    return key.replace("~", "~0").replace("/", "~1");
  }
}
