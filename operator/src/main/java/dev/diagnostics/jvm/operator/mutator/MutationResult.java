package dev.diagnostics.jvm.operator.mutator;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;

/** The mutated pod (a copy), whether it differs from the input, and what was found. */
public record MutationResult(
    Pod pod, boolean changed, List<String> injectedContainers, List<Finding> findings) {
  public boolean hasBlockingFinding() {
    return findings.stream().anyMatch(Finding::blocking);
  }
}
