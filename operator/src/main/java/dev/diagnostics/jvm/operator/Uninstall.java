package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.KubernetesResourceList;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
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

  @Option(
      names = "--page-size",
      paramLabel = "N",
      defaultValue = "500",
      description =
          "JvmDiagnostics listed per request; each page is done before the next is asked for (default: ${DEFAULT-VALUE})")
  int pageSize;

  @Option(
      names = "--parallel",
      paramLabel = "N",
      defaultValue = "8",
      description = "finalizers removed at the same time (default: ${DEFAULT-VALUE})")
  int parallel;

  @Override
  public Integer call() throws Exception {
    if (pageSize < 1 || parallel < 1)
      throw new Errors.Fatal("--page-size and --parallel must be 1 or more");
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
      Finalizers result = removeFinalizers(client);
      System.err.println(
          "finalizer "
              + FINALIZER
              + " removed from "
              + result.cleared
              + " of "
              + result.seen
              + " JvmDiagnostics ("
              + result.pages
              + " pages, "
              + (System.nanoTime() - result.started) / 1_000_000
              + " ms)");
      if (!result.failed.isEmpty()) {
        List<String> shown = result.failed.subList(0, Math.min(20, result.failed.size()));
        throw new Errors.Fatal(
            "could not remove the finalizer from "
                + result.failed.size()
                + " JvmDiagnostics ("
                + String.join(", ", shown)
                + (result.failed.size() > shown.size() ? ", ..." : "")
                + "): remove it by hand (kubectl patch jvmdiag NAME -n NS --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]')");
      }
      return 0;
    }
  }

  /** What removing the finalizers did. */
  private static final class Finalizers {
    final long started = System.nanoTime();
    int pages;
    int seen;
    final AtomicInteger clearedCount = new AtomicInteger();
    int cleared;
    final List<String> failed = Collections.synchronizedList(new ArrayList<>());
  }

  /**
   * Lists the resources a page at a time ({@code --page-size}, with the API server's continue
   * token) and removes the finalizer from each page's resources, {@code --parallel} at a time,
   * before it asks for the next page: the memory used is a page's, whatever the number of
   * resources, and each page's progress is printed. A continue token that expired (410 Gone: the
   * list took longer than the API server keeps its snapshot) starts the list again; resources
   * already done no longer carry the finalizer and are skipped.
   */
  private Finalizers removeFinalizers(KubernetesClient client) throws InterruptedException {
    Finalizers result = new Finalizers();
    ExecutorService pool = Executors.newFixedThreadPool(parallel);
    try {
      String token = null;
      int restarts = 0;
      do {
        KubernetesResourceList<JvmDiagnostics> page;
        try {
          page =
              client
                  .resources(JvmDiagnostics.class)
                  .inAnyNamespace()
                  .list(
                      new ListOptionsBuilder()
                          .withLimit((long) pageSize)
                          .withContinue(token)
                          .build());
        } catch (KubernetesClientException e) {
          if (e.getCode() != 410 || token == null || ++restarts > 3) throw e;
          System.err.println("the list's continue token expired (410 Gone): listing again");
          token = null;
          continue;
        }
        List<Future<?>> pending = new ArrayList<>();
        for (JvmDiagnostics r : page.getItems()) {
          result.seen++;
          List<String> fin = r.getMetadata().getFinalizers();
          if (fin == null || !fin.contains(FINALIZER)) continue;
          pending.add(
              pool.submit(() -> {
                String id = r.getMetadata().getNamespace() + "/" + r.getMetadata().getName();
                try {
                  if (removeFinalizer(client, r)) result.clearedCount.incrementAndGet();
                } catch (KubernetesClientException e) {
                  result.failed.add(id + " (" + Errors.oneLine(e) + ")");
                }
              }));
        }
        for (Future<?> f : pending) {
          try {
            f.get();
          } catch (ExecutionException e) {
            result.failed.add(Errors.oneLine(e.getCause()));
          }
        }
        result.pages++;
        token = page.getMetadata().getContinue();
        if (token != null && token.isEmpty()) token = null;
        Long left = page.getMetadata().getRemainingItemCount();
        System.err.println(
            "page "
                + result.pages
                + ": "
                + page.getItems().size()
                + " JvmDiagnostics, "
                + pending.size()
                + " with the finalizer; "
                + result.clearedCount.get()
                + " cleared of "
                + result.seen
                + " so far"
                + (left != null ? ", about " + left + " to go" : "")
                + " ("
                + (System.nanoTime() - result.started) / 1_000_000
                + " ms)");
      } while (token != null);
    } finally {
      pool.shutdownNow();
    }
    result.cleared = result.clearedCount.get();
    return result;
  }

  /**
   * One PATCH that removes the finalizer where the list saw it (a JSON patch that first tests the
   * entry, so a list changed since is never cut at the wrong place); when it changed, the resource
   * is read again and edited. False: the resource is gone or no longer has the finalizer.
   */
  private static boolean removeFinalizer(KubernetesClient client, JvmDiagnostics r) {
    var one =
        client
            .resources(JvmDiagnostics.class)
            .inNamespace(r.getMetadata().getNamespace())
            .withName(r.getMetadata().getName());
    int i = r.getMetadata().getFinalizers().indexOf(FINALIZER);
    String path = "/metadata/finalizers/" + i;
    try {
      one.patch(
          PatchContext.of(PatchType.JSON),
          "[{\"op\":\"test\",\"path\":\""
              + path
              + "\",\"value\":\""
              + FINALIZER
              + "\"},{\"op\":\"remove\",\"path\":\""
              + path
              + "\"}]");
      return true;
    } catch (KubernetesClientException e) {
      if (e.getCode() == 404) return false;
      if (e.getCode() != 422 && e.getCode() != 409) throw e;
    }
    JvmDiagnostics now = one.get();
    if (now == null
        || now.getMetadata().getFinalizers() == null
        || !now.getMetadata().getFinalizers().contains(FINALIZER)) return false;
    one.edit(x -> {
      x.getMetadata().getFinalizers().remove(FINALIZER);
      return x;
    });
    return true;
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
