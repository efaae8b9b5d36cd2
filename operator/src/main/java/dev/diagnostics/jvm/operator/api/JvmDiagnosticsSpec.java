package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.generator.annotation.Default;
import io.fabric8.generator.annotation.Pattern;
import io.fabric8.generator.annotation.Required;
import io.fabric8.generator.annotation.Size;
import java.util.ArrayList;
import java.util.List;

/** The spec, field by field as fixed in docs/contracts.md; defaults and validation live here. */
public class JvmDiagnosticsSpec {
  @Required
  @JsonPropertyDescription(
      "The workload whose pods are instrumented, in this namespace, e.g. {kind: Deployment, name: checkout}.")
  public TargetRef targetRef;

  @Size(max = 32)
  @JsonPropertyDescription(
      "Containers to instrument by name, e.g. [app]. Default: every container that is not a known proxy sidecar (istio-proxy, linkerd-proxy, ...).")
  public List<@Pattern("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$") @Size(max = 63) String> containers =
      new ArrayList<>();

  @JsonPropertyDescription("What the agent collects; every collector is on by default.")
  public CollectorsSpec collectors = new CollectorsSpec();

  @JsonPropertyDescription(
      "Culprit stacks: the Java stack of the thread behind an incident (starting threads, requesting a VM operation, "
          + "waiting on or holding a monitor, parking), e.g. {samplesPerSecond: 5}.")
  public StacksSpec stacks = new StacksSpec();

  @Default("NodeAgent")
  @JsonPropertyDescription(
      "NodeAgent (the DaemonSet traces the JVMs) or Sidecar (an unprivileged collector container in each pod).")
  public Collection collection = Collection.NodeAgent;

  @JsonPropertyDescription(
      "JVM flags appended to JAVA_TOOL_OPTIONS of the selected containers; changing them rolls the pods.")
  public JvmOptions jvmOptions = new JvmOptions();

  @Default("Automatic")
  @JsonPropertyDescription(
      "Automatic: the operator restarts the pods when the injection changes. Manual: pods pick it up at their next rollout.")
  public Rollout rollout = Rollout.Automatic;

  @JsonPropertyDescription(
      "Per-resource alert thresholds, rendered into a PrometheusRule owned by this resource (when the Prometheus "
          + "Operator's CRDs exist); each alert is optional, e.g. safepointPause: {threshold: 500ms, for: 0m, severity: critical}.")
  public Alerts alerts = new Alerts();

  public enum Collection {
    NodeAgent,
    Sidecar
  }

  public enum Rollout {
    Automatic,
    Manual
  }
}
