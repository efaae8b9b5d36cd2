package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;
import java.util.ArrayList;
import java.util.List;

/** spec.collectors: the four collectors of the agent, each on by default. */
public class CollectorsSpec {
  public Threads threads = new Threads();
  public Toggle safepoints = new Toggle();
  public Toggle vmOperations = new Toggle();
  public Compilation compilation = new Compilation();

  /** Names as stamped in the jvm.diagnostics.dev/collectors annotation, in contract order. */
  public List<String> enabledNames() {
    List<String> names = new ArrayList<>();
    if (threads == null || threads.enabled) names.add("threads");
    if (safepoints == null || safepoints.enabled) names.add("safepoints");
    if (vmOperations == null || vmOperations.enabled) names.add("vmOperations");
    if (compilation == null || compilation.enabled) names.add("compilation");
    return names;
  }

  public static class Toggle {
    @Default("true")
    @JsonPropertyDescription("Collect this family of metrics.")
    public boolean enabled = true;
  }

  public static class Threads extends Toggle {
    @Default("50")
    @Min(1)
    @Max(1000)
    @JsonPropertyDescription("Distinct thread names kept per JVM; the rest are counted as 'other'.")
    public int maxThreadNames = 50;
  }

  public static class Compilation extends Toggle {
    @Default("20")
    @Min(1)
    @Max(1000)
    @JsonPropertyDescription("Most-compiled methods kept per JVM; the rest are counted as 'other'.")
    public int maxMethods = 20;
  }
}
