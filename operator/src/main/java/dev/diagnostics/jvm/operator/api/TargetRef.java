package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;

/** The instrumented workload, in the resource's namespace. */
public class TargetRef {
  @Required
  @JsonPropertyDescription("The workload's kind: Deployment, StatefulSet or DaemonSet.")
  public Kind kind;

  @Required
  @Size(min = 1, max = 253)
  @Pattern("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
  @JsonPropertyDescription("Name of the workload in this namespace, e.g. checkout.")
  public String name;

  public TargetRef() {}

  public TargetRef(Kind kind, String name) {
    this.kind = kind;
    this.name = name;
  }

  public enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet
  }

  @Override
  public String toString() {
    return kind + "/" + name;
  }
}
