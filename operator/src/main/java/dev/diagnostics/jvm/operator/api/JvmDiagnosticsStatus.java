package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.crd.generator.annotation.SchemaFrom;
import io.fabric8.generator.annotation.Size;
import io.fabric8.kubernetes.api.model.Condition;
import java.util.ArrayList;
import java.util.List;

/**
 * Conditions with observedGeneration, and the pods that did not get the injection and why. The
 * conditions are a map keyed by {@link #CONDITIONS_KEY} for the API server ({@code
 * x-kubernetes-list-type: map}): server-side apply merges them by type, and two entries of one type
 * are refused. crd-generator has no annotation for the list type: {@link CrdGen} sets it.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public class JvmDiagnosticsStatus {
  /** The key of the conditions list, required in each entry ({@link ConditionSchema#type}). */
  public static final String CONDITIONS_KEY = "type";

  /**
   * At most this many entries in podsMissingInjection (the first by pod name); the number of the
   * others is podsMissingInjectionTruncated. A workload of thousands of pods that the webhook
   * missed would otherwise write a status of hundreds of kilobytes at every pass.
   */
  public static final int MAX_PODS_MISSING_INJECTION = 50;

  @JsonPropertyDescription("The generation of the spec this status describes.")
  public Long observedGeneration;

  @JsonPropertyDescription(
      "The resource's state as conditions, one per type: TargetFound (targetRef names a workload"
          + " that exists), Injected (its pods carry the current injection), AlertsReady (the"
          + " PrometheusRule of spec.alerts is written, or none is needed) and Ready (all of them).")
  @SchemaFrom(type = ConditionSchema[].class)
  public List<Condition> conditions = new ArrayList<>();

  @JsonPropertyDescription(
      "Kind/name of the resolved target, e.g. Deployment/checkout (the TARGET printer column).")
  public String target;

  @JsonPropertyDescription("injectedPods/desiredPods, e.g. 4/4 (the INJECTED printer column).")
  public String injected;

  @JsonPropertyDescription("Pods the target should run (its replicas; for a DaemonSet, its nodes).")
  public Integer desiredPods;

  @JsonPropertyDescription(
      "Existing pods of the target carrying the current injection (the webhook stamped them with"
          + " the current config hash).")
  public Integer injectedPods;

  @JsonPropertyDescription(
      "Pods of the target without the current injection, and why: the first 50 by pod name "
          + "(podsMissingInjectionTruncated counts the others).")
  @Size(max = MAX_PODS_MISSING_INJECTION)
  public List<PodMissingInjection> podsMissingInjection = new ArrayList<>();

  @JsonPropertyDescription(
      "How many further pods lack the current injection beyond the 50 podsMissingInjection lists; "
          + "absent when it lists them all.")
  public Integer podsMissingInjectionTruncated;

  @JsonPropertyDescription(
      "When the operator last restarted the target so the webhook could inject pods it had missed; "
          + "kept here so that any replica that leads spaces those restarts (at most once per configuration, a minute apart). "
          + "An RFC 3339 time, e.g. 2026-01-02T15:04:05Z.")
  public String lastHealTime;

  @JsonPropertyDescription(
      "When the operator last wrote the target's pod template in a way that restarts its pods (a new "
          + "configuration or a heal); kept here so that a replica that becomes leader counts it in the "
          + "cluster-wide rollout limit. An RFC 3339 time, e.g. 2026-01-02T15:04:05Z.")
  public String lastRolloutTime;

  /**
   * Sets podsMissingInjection to the first {@link #MAX_PODS_MISSING_INJECTION} of {@code missing}
   * (sorted by pod name) and podsMissingInjectionTruncated to the number of the others (null:
   * none).
   */
  public void reportMissing(List<PodMissingInjection> missing) {
    podsMissingInjection = listed(missing);
    int rest = missing.size() - podsMissingInjection.size();
    podsMissingInjectionTruncated = rest > 0 ? rest : null;
  }

  /**
   * The entries of {@code missing} the status lists: its first {@link #MAX_PODS_MISSING_INJECTION}.
   */
  public static List<PodMissingInjection> listed(List<PodMissingInjection> missing) {
    return missing.size() <= MAX_PODS_MISSING_INJECTION
        ? missing
        : List.copyOf(missing.subList(0, MAX_PODS_MISSING_INJECTION));
  }

  /** One pod that is not (fully) injected. */
  public static class PodMissingInjection {
    @JsonPropertyDescription("The pod's name, e.g. checkout-7d9f8-x2bq4.")
    public String name;

    @JsonPropertyDescription(
        "Why the pod lacks the current injection: WebhookUnavailable (created while the webhook did not answer), "
            + "Outdated (injected with an older configuration), ValueFromNotMerged, EnvFromNotMerged (JAVA_TOOL_OPTIONS "
            + "comes from elsewhere and was not extended), ContainerNotFound, ...")
    public String reason;

    @JsonPropertyDescription(
        "The container that could not be injected, when the reason is about one container of the pod.")
    public String container;

    public PodMissingInjection() {}

    public PodMissingInjection(String name, String reason) {
      this(name, reason, null);
    }

    public PodMissingInjection(String name, String reason, String container) {
      this.name = name;
      this.reason = reason;
      this.container = container;
    }

    /** "pod (reason)", or "pod (reason in container c)". */
    @Override
    public String toString() {
      return name + " (" + reason + (container == null ? "" : " in container " + container) + ")";
    }
  }
}
