package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.api.CrdSchema;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.slf4j.LoggerFactory;

/**
 * The connection to the API server, for the operator and its subcommands: the kubeconfig is
 * --kubeconfig, else found as kubectl finds it ($KUBECONFIG, ~/.kube/config, in-cluster), and the
 * client is checked before anything starts, each failure one line that says what to fix.
 */
final class ApiConnection {
  private ApiConnection() {}

  /** A client that has been checked: reachable, authenticated, and the CRD installed. */
  static KubernetesClient connect(Path kubeconfig) {
    return connect(kubeconfig, true);
  }

  /** requireCrd false: reachable and authenticated only. */
  static KubernetesClient connect(Path kubeconfig, boolean requireCrd) {
    Config config;
    if (kubeconfig != null) {
      if (!Files.isReadable(kubeconfig))
        throw new Errors.Fatal(
            "kubeconfig " + kubeconfig + " does not exist or is not readable (--kubeconfig)");
      try {
        config = Config.fromKubeconfig(null, Files.readString(kubeconfig), kubeconfig.toString());
      } catch (Exception e) {
        throw new Errors.Fatal("cannot read kubeconfig " + kubeconfig + ": " + Errors.oneLine(e));
      }
    } else {
      String env = System.getenv("KUBECONFIG");
      boolean inCluster = System.getenv("KUBERNETES_SERVICE_HOST") != null;
      boolean home = Files.exists(Path.of(System.getProperty("user.home"), ".kube", "config"));
      if (!inCluster && !home && (env == null || env.isBlank())) {
        throw new Errors.Fatal(
            "no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (or run in a cluster)");
      }
      if (env != null
          && !env.isBlank()
          && Arrays.stream(env.split(":")).noneMatch(p -> Files.exists(Path.of(p)))) {
        throw new Errors.Fatal(
            "KUBECONFIG=" + env + " does not exist: pass --kubeconfig FILE or fix KUBECONFIG");
      }
      config = Config.autoConfigure(null);
    }
    config = new ConfigBuilder(config).withRequestRetryBackoffLimit(1).build();
    KubernetesClient client = new KubernetesClientBuilder().withConfig(config).build();
    String url = config.getMasterUrl();
    try {
      client.getKubernetesVersion();
      if (requireCrd && !client.supports(JvmDiagnostics.class)) {
        throw new Errors.Fatal(
            "the JvmDiagnostics CRD is not installed on " + url + ": kubectl apply -f crds/");
      }
      if (requireCrd) requireOwnCrd(client, url);
    } catch (KubernetesClientException e) {
      client.close();
      if (e.getCode() == 401 || e.getCode() == 403) {
        throw new Errors.Fatal(
            "the API server at "
                + url
                + " refused our credentials (HTTP "
                + e.getCode()
                + "): check the kubeconfig user/token");
      }
      throw new Errors.Fatal(
          "cannot reach the API server at "
              + url
              + " ("
              + Errors.oneLine(e)
              + "): is it running, and is this the right kubeconfig?");
    }
    return client;
  }

  /**
   * The served CRD must be the one this operator was built with (CrdSchema): with an older one the
   * API server would drop the status fields it added or refuse values its model allows.
   */
  private static void requireOwnCrd(KubernetesClient client, String url) {
    CustomResourceDefinition served;
    try {
      served =
          client
              .apiextensions()
              .v1()
              .customResourceDefinitions()
              .withName(CrdSchema.CRD_NAME)
              .get();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 403) {
        client.close();
        throw e;
      }
      // an identity of its own making (the chart's ClusterRole grants it): start without the check
      // rather than refuse on a missing permission, and say so
      LoggerFactory.getLogger(ApiConnection.class)
          .warn(
              "may not get customresourcedefinitions/{} on {}: the served CRD is not compared with"
                  + " this operator's own (grant get on it, as the chart's ClusterRole does)",
              CrdSchema.CRD_NAME,
              url);
      return;
    }
    if (served == null) {
      client.close();
      throw new Errors.Fatal(
          "the JvmDiagnostics CRD is not installed on " + url + ": kubectl apply -f crds/");
    }
    var refusal = CrdSchema.refusal(served, CrdSchema.expected());
    if (refusal.isPresent()) {
      client.close();
      throw new Errors.Fatal(refusal.get());
    }
  }
}
