package dev.diagnostics.jvm.operator.api;

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
