package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What `helm uninstall` runs first (the chart's pre-delete hook), so that removing the product
 * never holds up a workload: the webhook registrations are deleted first (no pod creation calls a
 * Service that is about to go), the operator is stopped (so nothing re-adds a finalizer or a
 * registration), and the operator's finalizer is removed from every JvmDiagnostics (so the
 * resources and the CRD can be deleted later without an operator). Workloads are not touched: their
 * pods keep running with the flags they were started with, and pods created from now on get no
 * injection.
 */
@Command(
    name = "uninstall",
    mixinStandardHelpOptions = true,
    description =
        "Delete the webhook registrations, stop the operator and remove the operator's finalizer from every "
            + "JvmDiagnostics (what `helm uninstall` runs first).")
final class Uninstall implements Callable<Integer> {
  /**
   * java-operator-sdk's finalizer for the JvmDiagnostics reconciler: <plural>.<group>/finalizer.
   */
  static final String FINALIZER = "jvmdiagnostics.jvm.diagnostics.dev/finalizer";

  @Option(
      names = "--kubeconfig",
      paramLabel = "FILE",
      description = "kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
  Path kubeconfig;

  @Option(
      names = "--namespace",
      paramLabel = "NS",
      required = true,
      description = "namespace of the operator's Deployment")
  String namespace;

  @Option(
      names = "--deployment",
      paramLabel = "NAME",
      description = "the operator's Deployment, scaled to 0 first (default: none)")
  String deployment;

  @Option(
      names = "--webhook-config",
      paramLabel = "NAME",
      description = "the Mutating- and ValidatingWebhookConfiguration to delete (default: none)")
  String webhookConfig;

  @Option(
      names = "--wait-seconds",
      paramLabel = "N",
      defaultValue = "60",
      description =
          "how long to wait for the operator's pods to be gone (default: ${DEFAULT-VALUE})")
  int waitSeconds;

  @Override
  public Integer call() throws Exception {
    try (KubernetesClient client = ApiConnection.connect(kubeconfig, false)) {
      // The registrations first: from here on no pod creation calls the webhook. Again once the
      // operator is stopped, in case a replica re-applied them (certificate rotation) meanwhile.
      deleteRegistrations(client);
      if (deployment != null) stopOperator(client);
      deleteRegistrations(client);
      if (!client.supports(JvmDiagnostics.class)) {
        System.err.println("the JvmDiagnostics CRD is not installed: no finalizer to remove");
        return 0;
      }
      int cleared = 0;
      List<String> failed = new ArrayList<>();
      for (JvmDiagnostics r :
          client.resources(JvmDiagnostics.class).inAnyNamespace().list().getItems()) {
        List<String> fin = r.getMetadata().getFinalizers();
        if (fin == null || !fin.contains(FINALIZER)) continue;
        String id = r.getMetadata().getNamespace() + "/" + r.getMetadata().getName();
        try {
          client
              .resources(JvmDiagnostics.class)
              .inNamespace(r.getMetadata().getNamespace())
              .withName(r.getMetadata().getName())
              .edit(x -> {
                x.getMetadata().getFinalizers().remove(FINALIZER);
                return x;
              });
          cleared++;
        } catch (KubernetesClientException e) {
          failed.add(id + " (" + Errors.oneLine(e) + ")");
        }
      }
      System.err.println("finalizer " + FINALIZER + " removed from " + cleared + " JvmDiagnostics");
      if (!failed.isEmpty()) {
        throw new Errors.Fatal(
            "could not remove the finalizer from "
                + String.join(", ", failed)
                + ": remove it by hand (kubectl patch jvmdiag NAME -n NS --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]')");
      }
      return 0;
    }
  }

  private void deleteRegistrations(KubernetesClient client) {
    if (webhookConfig == null) return;
    boolean m =
        !client
            .resources(MutatingWebhookConfiguration.class)
            .withName(webhookConfig)
            .delete()
            .isEmpty();
    boolean v =
        !client
            .resources(ValidatingWebhookConfiguration.class)
            .withName(webhookConfig)
            .delete()
            .isEmpty();
    if (m || v) {
      System.err.println(
          "webhook registrations "
              + webhookConfig
              + " deleted ("
              + (m ? "mutating" : "")
              + (m && v ? ", " : "")
              + (v ? "validating" : "")
              + ")");
    }
  }

  /** Scales the operator to 0 and waits for its pods to go, so no replica acts after this. */
  private void stopOperator(KubernetesClient client) throws InterruptedException {
    var d = client.apps().deployments().inNamespace(namespace).withName(deployment);
    Deployment dep = d.get();
    if (dep == null) {
      System.err.println("operator Deployment " + namespace + "/" + deployment + ": absent");
      return;
    }
    d.scale(0);
    Map<String, String> selector = dep.getSpec().getSelector().getMatchLabels();
    long deadline = System.nanoTime() + waitSeconds * 1_000_000_000L;
    int left;
    while ((left =
            client.pods().inNamespace(namespace).withLabels(selector).list().getItems().size())
        > 0) {
      if (System.nanoTime() > deadline) {
        throw new Errors.Fatal(
            left
                + " pods of "
                + namespace
                + "/"
                + deployment
                + " still exist after "
                + waitSeconds
                + " s (--wait-seconds): the operator could still write finalizers; see kubectl -n "
                + namespace
                + " get pods");
      }
      Thread.sleep(500);
    }
    System.err.println(
        "operator Deployment " + namespace + "/" + deployment + " scaled to 0, its pods gone");
  }
}
