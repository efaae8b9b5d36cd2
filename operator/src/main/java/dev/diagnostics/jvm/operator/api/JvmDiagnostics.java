package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.annotation.JsonPropertyDescription;
import io.fabric8.crd.generator.annotation.AdditionalPrinterColumn;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Singular;
import io.fabric8.kubernetes.model.annotation.Version;

/** One JvmDiagnostics per workload: what to collect from its JVMs and how to alert on it. */
@Group(JvmDiagnostics.GROUP)
@Version(JvmDiagnostics.VERSION)
@Kind("JvmDiagnostics")
@Plural("jvmdiagnostics")
@Singular("jvmdiagnostics")
@ShortNames("jvmdiag")
// kubectl shows NAME TARGET INJECTED READY AGE: crd-generator sorts the columns by jsonPath, CrdGen
// reorders them
@AdditionalPrinterColumn(
    name = "Age",
    jsonPath = ".metadata.creationTimestamp",
    type = AdditionalPrinterColumn.Type.DATE)
@AdditionalPrinterColumn(
    name = "Ready",
    jsonPath = ".status.conditions[?(@.type==\"Ready\")].status",
    type = AdditionalPrinterColumn.Type.STRING)
@AdditionalPrinterColumn(
    name = "Injected",
    jsonPath = ".status.injected",
    type = AdditionalPrinterColumn.Type.STRING)
@AdditionalPrinterColumn(
    name = "Target",
    jsonPath = ".status.target",
    type = AdditionalPrinterColumn.Type.STRING)
public class JvmDiagnostics extends CustomResource<JvmDiagnosticsSpec, JvmDiagnosticsStatus>
    implements Namespaced {
  public static final String GROUP = "jvm.diagnostics.dev";
  public static final String VERSION = "v1alpha1";
  public static final String API_VERSION = GROUP + "/" + VERSION;

  /** What kubectl explain jvmdiagnostics says first (CrdGen puts it on the schema's root). */
  static final String DESCRIPTION =
      "JvmDiagnostics makes the JVMs of one workload (a Deployment, StatefulSet or DaemonSet of"
          + " its namespace) observable: thread starts by name, safepoint pauses and VM operations,"
          + " JIT compilation and the code cache, contended monitors and parked threads, as"
          + " Prometheus metrics per pod, with optional alerts. The operator marks the workload's"
          + " pod template, the webhook adds the JVM flags to its new pods and the node agent"
          + " traces their JVMs.";

  @Override
  @JsonPropertyDescription(
      "What to collect from the target's JVMs and how: the workload (targetRef), its containers,"
          + " the collectors, the JVM options, how pods are rolled out and the alert thresholds.")
  public JvmDiagnosticsSpec getSpec() {
    return super.getSpec();
  }

  @Override
  @JsonPropertyDescription(
      "What the operator observed, written by it alone: conditions, the resolved target and how"
          + " many of its pods carry the current injection, and which do not and why.")
  public JvmDiagnosticsStatus getStatus() {
    return super.getStatus();
  }

  // No spec/status by default: the SDK applies fresh instances (finalizer, status) by server-side
  // apply, and a defaulted spec would overwrite the user's fields under our field manager.
  @Override
  protected JvmDiagnosticsSpec initSpec() {
    return null;
  }

  @Override
  protected JvmDiagnosticsStatus initStatus() {
    return null;
  }
}
