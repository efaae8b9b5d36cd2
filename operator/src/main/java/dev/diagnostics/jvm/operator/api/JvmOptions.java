package dev.diagnostics.jvm.operator.api;

import static dev.diagnostics.jvm.operator.api.JvmOptionPolicy.*;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import java.util.ArrayList;
import java.util.List;

/**
 * JVM flags the webhook appends to JAVA_TOOL_OPTIONS. Each extra entry is checked by the API server
 * (CEL, patterns from {@link JvmOptionPolicy}): only diagnostic options, so a resource cannot make
 * the workload's JVMs load code, open a port or run a command, and a typo is refused at apply time
 * instead of stopping the JVM at start. Each message names the first offending entry and why. Java
 * agents and system properties pass these rules and are refused by the operator's validating
 * webhook unless the cluster administrator allowed them.
 */
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('[[:space:]]'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('[[:space:]]'))[0] + ' must be ONE JVM option without whitespace: write \"-Xmx1g -Xms1g\" as two entries'")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('" + RUNS_COMMAND + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('" + RUNS_COMMAND + "'))[0] + ' " + RUNS_COMMAND_WHY + "'")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('" + OPENS_PORT + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('" + OPENS_PORT + "'))[0] + ' " + OPENS_PORT_WHY + "'")
@ValidationRule(
    value =
        "!has(self.extra) || self.extra.all(o, o.matches('"
            + OPENS_PORT
            + "') || !o.matches('"
            + CHANGES_CLASS_LOADING
            + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, !o.matches('"
            + OPENS_PORT
            + "') && o.matches('"
            + CHANGES_CLASS_LOADING
            + "'))[0] + ' "
            + CHANGES_CLASS_LOADING_WHY
            + "'")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('" + OPENS_INTERNALS + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('"
            + OPENS_INTERNALS
            + "'))[0] + ' "
            + OPENS_INTERNALS_WHY
            + "'")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('" + INDIRECT_OPTIONS + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('"
            + INDIRECT_OPTIONS
            + "'))[0] + ' "
            + INDIRECT_OPTIONS_WHY
            + "'")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('" + BLINDS + "'))",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, o.matches('" + BLINDS + "'))[0] + ' " + BLINDS_WHY + "'")
// everything else must be a diagnostic option (or an agent / system property, which the webhook
// decides on);
// entries already refused above for a more specific reason are not named twice
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, " + JvmOptions.KNOWN + ")",
    fieldPath = ".extra",
    messageExpression =
        "self.extra.filter(o, !(" + JvmOptions.KNOWN + "))[0] + ' " + DIAGNOSTIC_HINT + "'")
public class JvmOptions {
  /**
   * CEL: the entry is diagnostic, of an administrator-only shape, or refused by a more specific
   * rule.
   */
  static final String KNOWN =
      "o.matches('[[:space:]]') || o.matches('"
          + DIAGNOSTIC
          + "') || o.matches('"
          + ADMIN_ONLY
          + "')"
          + " || o.matches('"
          + RUNS_COMMAND
          + "') || o.matches('"
          + OPENS_PORT
          + "') || o.matches('"
          + CHANGES_CLASS_LOADING
          + "')"
          + " || o.matches('"
          + OPENS_INTERNALS
          + "') || o.matches('"
          + INDIRECT_OPTIONS
          + "') || o.matches('"
          + BLINDS
          + "')";

  @Default("false")
  @JsonPropertyDescription(
      "Write -Xlog:safepoint to /tmp/jvmdiag/safepoint-<pid>.log (a shared emptyDir). Always on for collection: Sidecar.")
  public boolean safepointLog = false;

  @Default("false")
  @JsonPropertyDescription(
      "Add -XX:+PreserveFramePointer so native stack walks through JIT code work.")
  public boolean preserveFramePointer = false;

  @Size(max = 32)
  @JsonPropertyDescription(
      "Extra JVM options, one per entry: diagnostic and logging options only (-Xlog:..., -XX:+PreserveFramePointer, "
          + "-XX:ReservedCodeCacheSize=256m, ...; docs/operator.md). Java agents and -D system properties only where the cluster administrator allowed them.")
  public List<@Size(max = 512) String> extra = new ArrayList<>();

  /**
   * Kept so that existing manifests still apply; it grants nothing. Whether a Java agent may be
   * injected is the cluster administrator's decision (operator flag --allow-jvm-option), never the
   * resource author's: the validating webhook warns when it is set.
   */
  @Deprecated
  @JsonPropertyDescription(
      "Deprecated, grants nothing: Java agents in extra are allowed only by the cluster administrator (chart value operator.allowedJvmOptions).")
  public Boolean allowJavaAgents;
}
