package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import java.util.ArrayList;
import java.util.List;

/**
 * spec.collectors: the collectors of the agent, each on by default. {@code monitors} is on because
 * its flag (-XX:+DTraceMonitorProbes) and probes cost at most 1 % in the lock-storm benchmark
 * (docs/performance.md).
 */
public class CollectorsSpec {
  /** The most names a limit may keep per JVM (the agent's --max-methods allows no more). */
  public static final int MAX_LIMIT = 500;

  @JsonPropertyDescription(
      "Thread starts by (folded) thread name, e.g. pool-N-thread-N, and live threads; needs no JVM flag.")
  public Threads threads = new Threads();

  @JsonPropertyDescription(
      "Safepoint pauses and time to safepoint by VM operation; needs no JVM flag.")
  public Toggle safepoints = new Toggle();

  @JsonPropertyDescription(
      "VM operation durations and which thread requested them, e.g. RedefineClasses by a Java agent; needs no JVM flag.")
  public Toggle vmOperations = new Toggle();

  @JsonPropertyDescription(
      "JIT compilations by compiler and most-compiled method, and code cache use; needs no JVM flag.")
  public Compilation compilation = new Compilation();

  @JsonPropertyDescription(
      "Contended monitors by class (needs -XX:+DTraceMonitorProbes, which the webhook adds when enabled). On by default; enabled: false leaves the JVMs without the flag.")
  public Monitors monitors = new Monitors();

  @JsonPropertyDescription("Time parked by (folded) thread name, e.g. per pool; needs no JVM flag.")
  public Toggle parking = new Toggle();

  /** Names as stamped in the jvm.diagnostics.dev/collectors annotation, in contract order. */
  public List<String> enabledNames() {
    List<String> names = new ArrayList<>();
    if (threads == null || threads.enabled) names.add("threads");
    if (safepoints == null || safepoints.enabled) names.add("safepoints");
    if (vmOperations == null || vmOperations.enabled) names.add("vmOperations");
    if (compilation == null || compilation.enabled) names.add("compilation");
    if (monitorsEnabled()) names.add("monitors");
    if (parking == null || parking.enabled) names.add("parking");
    return names;
  }

  @JsonIgnore
  public boolean monitorsEnabled() {
    return monitors == null || monitors.enabled;
  }

  public static class Toggle {
    @Default("true")
    @JsonPropertyDescription(
        "Collect this collector's metrics (default true); false turns it off for these pods.")
    public boolean enabled = true;
  }

  public static class Threads extends Toggle {
    @Default("50")
    @Min(1)
    @Max(MAX_LIMIT)
    @JsonPropertyDescription(
        "Distinct thread names kept per JVM (1 to 500); the rest are counted as 'other'.")
    public int maxThreadNames = 50;
  }

  public static class Compilation extends Toggle {
    @Default("20")
    @Min(1)
    @Max(MAX_LIMIT)
    @JsonPropertyDescription(
        "Most-compiled methods kept per JVM (1 to 500); the rest are counted as 'other'.")
    public int maxMethods = 20;
  }

  /**
   * On by default: on a quiet host the lock-storm benchmark measures -0.3 % throughput and +0.6 %
   * CPU per monitor enter for -XX:+DTraceMonitorProbes with the agent's probes
   * (docs/performance.md), within the at most 1 % that turns a collector on.
   */
  public static class Monitors {
    @Default("true")
    @JsonPropertyDescription(
        "Collect contended monitors by class; adds -XX:+DTraceMonitorProbes to the JVMs. Default true; changing it rolls the pods.")
    public boolean enabled = true;

    @Default("20")
    @Min(1)
    @Max(MAX_LIMIT)
    @JsonPropertyDescription(
        "Most-contended monitor classes kept per JVM (1 to 500); the rest are counted as 'other'.")
    public int maxClasses = 20;
  }
}
