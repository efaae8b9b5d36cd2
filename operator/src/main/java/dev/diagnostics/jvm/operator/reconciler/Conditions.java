package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.ConditionBuilder;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Objects;

/** Builds conditions, keeping lastTransitionTime when the status did not change. */
public final class Conditions {
  public static final String TARGET_FOUND = "TargetFound";
  public static final String INJECTED = "Injected";
  public static final String ALERTS_READY = "AlertsReady";
  public static final String READY = "Ready";

  private Conditions() {}

  public static Condition of(
      String type,
      boolean ok,
      String reason,
      String message,
      long generation,
      List<Condition> previous) {
    String status = ok ? "True" : "False";
    Condition old = find(previous, type);
    String since =
        old != null && status.equals(old.getStatus()) && old.getLastTransitionTime() != null
            ? old.getLastTransitionTime()
            : Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    return new ConditionBuilder()
        .withType(type)
        .withStatus(status)
        .withReason(reason)
        .withMessage(message)
        .withObservedGeneration(generation)
        .withLastTransitionTime(since)
        .build();
  }

  /**
   * Conditions of one resource: its generation, and its previous conditions for the transition
   * times.
   */
  public static Builder builder(JvmDiagnostics r) {
    long gen = r.getMetadata().getGeneration() == null ? 0 : r.getMetadata().getGeneration();
    return new Builder(gen, r.getStatus() == null ? List.of() : r.getStatus().conditions);
  }

  public record Builder(long generation, List<Condition> previous) {
    public Condition of(String type, boolean ok, String reason, String message) {
      return Conditions.of(type, ok, reason, message, generation, previous);
    }
  }

  public static Condition find(List<Condition> conditions, String type) {
    if (conditions == null) return null;
    return conditions.stream().filter(c -> type.equals(c.getType())).findFirst().orElse(null);
  }

  public static boolean isTrue(List<Condition> conditions, String type) {
    Condition c = find(conditions, type);
    return c != null && "True".equals(c.getStatus());
  }

  /** Same status and reason: no event needed. */
  public static boolean sameState(Condition a, Condition b) {
    return a != null
        && b != null
        && Objects.equals(a.getStatus(), b.getStatus())
        && Objects.equals(a.getReason(), b.getReason());
  }
}
