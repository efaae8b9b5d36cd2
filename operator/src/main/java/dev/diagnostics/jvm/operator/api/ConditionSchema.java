package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Required;

/**
 * The schema of one entry of status.conditions, for the CRD only ({@code @SchemaFrom} on {@link
 * JvmDiagnosticsStatus#conditions}): the operator reads and writes fabric8's {@code Condition},
 * whose class carries no descriptions, so {@code kubectl explain} would show its fields bare. The
 * fields and their JSON types are those of Kubernetes' metav1.Condition; {@code type} is required
 * because it is the list's map key.
 */
@SuppressWarnings("unused")
final class ConditionSchema {
  private ConditionSchema() {}

  @Required
  @JsonPropertyDescription(
      "What the condition is about, one entry per type: TargetFound, Injected, AlertsReady or"
          + " Ready.")
  public String type;

  @Required
  @JsonPropertyDescription("True, False or Unknown.")
  public String status;

  @JsonPropertyDescription(
      "Why the condition has its status, one CamelCase word, e.g. TargetNotFound or"
          + " PodsMissingInjection.")
  public String reason;

  @JsonPropertyDescription("What happened, for a person: which pods, what to do next.")
  public String message;

  @JsonPropertyDescription("When status last changed, an RFC 3339 time, e.g. 2026-01-02T15:04:05Z.")
  public String lastTransitionTime;

  @JsonPropertyDescription(
      "metadata.generation of the resource when the condition was set: older than the current"
          + " generation means the condition is stale.")
  public Long observedGeneration;
}
