package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Max;
import io.fabric8.generator.annotation.Min;

/**
 * spec.stacks: the culprit stacks the agent takes (the Java stack of the thread behind an
 * incident). Unset fields leave the agent's own value.
 */
public class StacksSpec {
  /** The agent's --stack-samples-per-second allows no more. */
  public static final int MAX_SAMPLES_PER_SECOND = 10_000;

  @Min(1)
  @Max(MAX_SAMPLES_PER_SECOND)
  @JsonPropertyDescription(
      "Culprit stacks taken per JVM, kind and second at most (1 to 10000), e.g. 5. Default: the agent's "
          + "--stack-samples-per-second (20), which also caps it.")
  public Integer samplesPerSecond;
}
