package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import java.util.LinkedHashMap;
import java.util.Map;

/** Optional per-resource thresholds; each becomes one rule of the resource's PrometheusRule. */
public class Alerts {
  @JsonPropertyDescription(
      "Any safepoint pause longer than the threshold (a histogram bound), e.g. {threshold: 500ms, for: 0m, severity: critical}.")
  public DurationAlert safepointPause;

  @JsonPropertyDescription(
      "Any time-to-safepoint longer than the threshold (a histogram bound), e.g. {threshold: 100ms, for: 5m}.")
  public DurationAlert timeToSafepoint;

  @ValidationRule(
      value = "self.threshold > 0.0",
      fieldPath = ".threshold",
      message =
          "threadStartRate.threshold is in threads started per second and must be above 0, e.g. 50")
  @JsonPropertyDescription(
      "Thread starts per second above the threshold, e.g. {threshold: 50, for: 10m}.")
  public NumberAlert threadStartRate;

  @ValidationRule(
      value = "self.threshold > 0.0 && self.threshold <= 100.0",
      fieldPath = ".threshold",
      message =
          "codeCacheUsage.threshold is a percentage of the code cache's maximum: use a number above 0 and at most 100, e.g. 90")
  @JsonPropertyDescription(
      "Code cache use above this percent of its maximum, e.g. {threshold: 90, for: 15m}.")
  public NumberAlert codeCacheUsage;

  @ValidationRule(
      value = "self.threshold > 0.0",
      fieldPath = ".threshold",
      message =
          "compilationRate.threshold is in compilations per second and must be above 0, e.g. 100")
  @JsonPropertyDescription(
      "JIT compilations per second above the threshold, e.g. {threshold: 100, for: 15m}.")
  public NumberAlert compilationRate;

  @ValidationRule(
      value = "self.threshold > 0.0",
      fieldPath = ".threshold",
      message =
          "monitorContention.threshold is in seconds blocked per second on one monitor class (summed over the JVM's threads) and must be above 0, e.g. 0.5")
  @JsonPropertyDescription(
      "Seconds blocked per second on one monitor class (summed over the JVM's threads) above the threshold; needs "
          + "collectors.monitors, e.g. {threshold: 0.5, for: 5m}.")
  public NumberAlert monitorContention;

  @ValidationRule(
      value = "self.threshold > 0.0",
      fieldPath = ".threshold",
      message =
          "poolSaturation.threshold is in threads of one pool parked at once on average (seconds parked per second) and must be above 0, e.g. 8")
  @JsonPropertyDescription(
      "Threads of one pool (thread name) parked at once on average above the threshold, while most of the JVM's "
          + "parks wait for a resource (a connection pool) rather than for work; needs collectors.parking and "
          + "culprit stacks, e.g. {threshold: 8, for: 5m}.")
  public NumberAlert poolSaturation;

  /** The alerts that are set, keyed by their spec field name, in a stable order. */
  @JsonIgnore
  public Map<String, Alert> configured() {
    Map<String, Alert> m = new LinkedHashMap<>();
    if (safepointPause != null) m.put("safepointPause", safepointPause);
    if (timeToSafepoint != null) m.put("timeToSafepoint", timeToSafepoint);
    if (threadStartRate != null) m.put("threadStartRate", threadStartRate);
    if (codeCacheUsage != null) m.put("codeCacheUsage", codeCacheUsage);
    if (compilationRate != null) m.put("compilationRate", compilationRate);
    if (monitorContention != null) m.put("monitorContention", monitorContention);
    if (poolSaturation != null) m.put("poolSaturation", poolSaturation);
    return m;
  }

  /** What every alert has besides its threshold. */
  public abstract static class Alert {
    @Default("5m")
    @Size(max = 32)
    @ValidationRule(
        value = "self == '0' || self.matches('^([0-9]+(ms|s|m|h|d|w|y))+$')",
        message = "'for' must be a Prometheus duration such as 0m, 30s, 5m or 1h")
    @JsonProperty("for")
    @JsonPropertyDescription(
        "How long the condition must hold before the alert fires, a Prometheus duration: e.g. 0m (at once), 30s, 5m (default), 1h.")
    public String forDuration = "5m";

    @Default("warning")
    @Size(max = 32)
    @ValidationRule(
        value = "self in ['critical', 'warning', 'info', 'page', 'ticket']",
        message =
            "severity must be critical, warning or info (the severity label kube-prometheus-stack's Alertmanager routes and inhibits by); page and ticket are accepted as aliases of critical and warning")
    @JsonPropertyDescription(
        "The alert's severity label: critical, warning (default) or info, e.g. critical; page and ticket are aliases of critical and warning.")
    public String severity = "warning";

    /** The severity label the rule gets: page and ticket are written as critical and warning. */
    @JsonIgnore
    public String severityLabel() {
      return severityLabel(severity);
    }

    /** critical, warning or info, whatever alias the spec used. */
    public static String severityLabel(String severity) {
      if (severity == null) return "warning";
      return switch (severity) {
        case "page" -> "critical";
        case "ticket" -> "warning";
        default -> severity;
      };
    }

    /** The threshold as written in the spec. */
    @JsonIgnore
    public abstract String thresholdText();
  }

  /** A duration threshold; it must be one of the pause histogram bounds so the alert is exact. */
  public static class DurationAlert extends Alert {
    @Required
    @Size(max = 16)
    @ValidationRule(
        value = HistogramBounds.CEL_ONE_OF,
        message =
            "threshold must be one of the pause histogram bounds "
                + HistogramBounds.DURATIONS
                + " (docs/metrics.md) so the alert is exact: round to the nearest, e.g. 500ms")
    @JsonPropertyDescription(
        "The duration above which the alert fires, one of "
            + HistogramBounds.DURATIONS
            + " (a histogram bound, so the alert is exact), e.g. 500ms.")
    public String threshold;

    public DurationAlert() {}

    public DurationAlert(String threshold, String forDuration, String severity) {
      this.threshold = threshold;
      this.forDuration = forDuration;
      this.severity = severity;
    }

    @Override
    public String thresholdText() {
      return threshold;
    }
  }

  /** A plain-number threshold (a rate per second or a percentage). */
  public static class NumberAlert extends Alert {
    @Required
    @JsonPropertyDescription(
        "The threshold in the alert's unit: threads started per second for threadStartRate (e.g. 50), percent of "
            + "the code cache's maximum for codeCacheUsage (e.g. 90), compilations per second for compilationRate "
            + "(e.g. 100), seconds blocked per second on one monitor class for monitorContention (e.g. 0.5), threads "
            + "of one pool parked at once for poolSaturation (e.g. 8).")
    public Double threshold;

    public NumberAlert() {}

    public NumberAlert(double threshold, String forDuration, String severity) {
      this.threshold = threshold;
      this.forDuration = forDuration;
      this.severity = severity;
    }

    @Override
    public String thresholdText() {
      return threshold == null ? null : threshold.toString();
    }
  }
}
