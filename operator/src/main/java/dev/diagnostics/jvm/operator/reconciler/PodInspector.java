package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import dev.diagnostics.jvm.operator.mutator.Finding;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.mutator.MutationResult;
import dev.diagnostics.jvm.operator.mutator.PodMutator;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/** Decides, pod by pod, whether the current injection is in place, and if not, why. */
public final class PodInspector {
  private PodInspector() {}

  public enum Reason {
    /** The pod was created without the inject label: before the resource, or Manual rollout. */
    NotRolledOut,
    /** Labelled, but the webhook did not mutate it (operator down, network, timeout). */
    WebhookUnavailable,
    /** Injected with an older configuration (Manual rollout, or a rollout in progress). */
    Outdated,
    /**
     * Made from a template that asks for the current configuration, yet injected with another: the
     * webhook replica that admitted it computed another configuration (one whose view of the
     * resource lagged; a replica of the previous operator version only if it answered although
     * templates wait for the operator's own rollout, see OperatorRollout). Healed like a miss.
     */
    OtherConfiguration
  }

  /**
   * launcherOnly: the injected pods whose flags went into JDK_JAVA_OPTIONS (JAVA_TOOL_OPTIONS from
   * valueFrom), as "pod (container c)": injected, but only a JVM started by the java launcher reads
   * them.
   */
  public record Report(
      int live, int injected, List<PodMissingInjection> missing, List<String> launcherOnly) {
    public boolean any(String reason) {
      return missing.stream().anyMatch(m -> m.reason.equals(reason));
    }
  }

  /** resourceCreated: the resource's creationTimestamp (RFC 3339), or null. */
  public static Report inspect(
      List<Pod> pods, String resourceName, String resourceCreated, InjectionConfig config) {
    String hash = config.hash();
    int live = 0;
    int injected = 0;
    List<PodMissingInjection> missing = new ArrayList<>();
    List<String> launcherOnly = new ArrayList<>();
    for (Pod p : pods) {
      if (!live(p)) continue;
      live++;
      PodMissingInjection miss = miss(p, resourceName, resourceCreated, config, hash, launcherOnly);
      if (miss == null) injected++;
      else missing.add(miss);
    }
    missing.sort(Comparator.comparing(m -> m.name));
    launcherOnly.sort(Comparator.naturalOrder());
    return new Report(live, injected, missing, List.copyOf(launcherOnly));
  }

  /** Counted: not being deleted and not finished. */
  static boolean live(Pod p) {
    return p.getMetadata().getDeletionTimestamp() == null && !finished(p);
  }

  /** Its containers ran to the end (phase Succeeded or Failed). */
  static boolean finished(Pod p) {
    String phase = p.getStatus() == null ? null : p.getStatus().getPhase();
    return "Succeeded".equals(phase) || "Failed".equals(phase);
  }

  static boolean olderThan(String a, String b) {
    if (a == null || b == null) return false;
    try {
      return java.time.Instant.parse(a).isBefore(java.time.Instant.parse(b));
    } catch (java.time.format.DateTimeParseException e) {
      return false;
    }
  }

  /**
   * Why the pod lacks the current injection (and in which container, when one is the cause), or
   * null.
   */
  static PodMissingInjection miss(
      Pod p,
      String resourceName,
      String resourceCreated,
      InjectionConfig config,
      String hash,
      List<String> launcherOnly) {
    String name = p.getMetadata().getName();
    Map<String, String> labels = p.getMetadata().getLabels();
    Map<String, String> ann = p.getMetadata().getAnnotations();
    if (labels == null || !resourceName.equals(labels.get(INJECT_LABEL)))
      return new PodMissingInjection(name, Reason.NotRolledOut.name());
    String stamped = ann == null ? null : ann.get(INJECTED);
    if (stamped == null) {
      // labelled by the user's own manifest before the resource existed: nothing could inject it
      // yet
      return new PodMissingInjection(
          name,
          olderThan(p.getMetadata().getCreationTimestamp(), resourceCreated)
              ? Reason.NotRolledOut.name()
              : Reason.WebhookUnavailable.name());
    }
    if (!stamped.equals(hash)) {
      String made = ann.get(CONFIG_HASH);
      boolean fromCurrent = made != null && (made.equals(hash) || made.startsWith(hash + "."));
      return new PodMissingInjection(
          name, fromCurrent ? Reason.OtherConfiguration.name() : Reason.Outdated.name());
    }
    // the mutation is pure and idempotent: run it again to learn what it could not do
    MutationResult again = PodMutator.mutate(p, config);
    again.findings().stream()
        .filter(f -> f.reason() == Finding.Reason.FlagsInJdkJavaOptions)
        .forEach(f -> launcherOnly.add(name + " (container " + f.container() + ")"));
    return again.findings().stream()
        .filter(Finding::blocking)
        .findFirst()
        .map(f -> new PodMissingInjection(name, f.reason().name(), f.container()))
        .orElse(null);
  }
}
