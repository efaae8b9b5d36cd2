package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Size;
import io.fabric8.generator.annotation.ValidationRule;
import java.util.ArrayList;
import java.util.List;

/**
 * JVM flags the webhook appends to JAVA_TOOL_OPTIONS. Each extra entry is checked by the API
 * server (CEL) so a typo is refused at apply time instead of stopping the JVM at start.
 */
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('[[:space:]]'))",
    fieldPath = ".extra",
    message = "each entry must be ONE JVM option without whitespace: write \"-Xmx1g -Xms1g\" as two entries")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, o.matches('^-(XX:[-+]?[A-Za-z][A-Za-z0-9_]*(=[^[:space:]]+)?|Xlog:[^[:space:]]+|D[A-Za-z0-9_.-]+(=[^[:space:]]*)?|X[a-z][^[:space:]]*|javaagent:[^[:space:]]+|agentlib:[^[:space:]]+|agentpath:[^[:space:]]+|ea(:[^[:space:]]+)?|da(:[^[:space:]]+)?|esa|dsa|verbose:(gc|class|module|jni))$'))",
    fieldPath = ".extra",
    message = "each entry must be a single JVM option such as -XX:ReservedCodeCacheSize=256m, -XX:+PreserveFramePointer, -Xlog:gc:stderr or -Dkey=value")
@ValidationRule(
    value = "self.allowJavaAgents || !has(self.extra) || self.extra.all(o, !(o.startsWith('-javaagent') || o.startsWith('-agentlib') || o.startsWith('-agentpath')))",
    fieldPath = ".extra",
    message = "-javaagent, -agentlib and -agentpath load code into every JVM of the workload: remove the entry or set jvmOptions.allowJavaAgents: true")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !o.matches('^-XX:[+]Use[A-Za-z0-9]*GC$'))",
    fieldPath = ".extra",
    message = "must not select a garbage collector (-XX:+Use...GC): a second collector choice makes the JVM refuse to start; set the GC in the application's own options")
@ValidationRule(
    value = "!has(self.extra) || self.extra.all(o, !(o in ['-XX:-UsePerfData', '-XX:+PerfDisableSharedMem', '-XX:+DisableAttachMechanism', '-Xlog:disable', '-Xshare:on']))",
    fieldPath = ".extra",
    message = "-XX:-UsePerfData, -XX:+PerfDisableSharedMem, -XX:+DisableAttachMechanism, -Xlog:disable and -Xshare:on blind the collectors or can stop the JVM from starting: remove the entry")
public class JvmOptions {
  @Default("false")
  @JsonPropertyDescription("Write -Xlog:safepoint to /tmp/jvmdiag/safepoint-<pid>.log (a shared emptyDir). Always on for collection: Sidecar.")
  public boolean safepointLog = false;

  @Default("false")
  @JsonPropertyDescription("Add -XX:+PreserveFramePointer so native stack walks through JIT code work.")
  public boolean preserveFramePointer = false;

  @Size(max = 32)
  @JsonPropertyDescription("Extra JVM options, one per entry (-XX:..., -Xlog:..., -D...=...).")
  public List<@Size(max = 512) String> extra = new ArrayList<>();

  @Default("false")
  @JsonPropertyDescription("Allow -javaagent/-agentlib/-agentpath entries in extra.")
  public boolean allowJavaAgents = false;
}
