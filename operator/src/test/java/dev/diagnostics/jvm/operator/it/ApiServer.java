package dev.diagnostics.jvm.operator.it;

import io.fabric8.kubeapitest.KubeAPIServer;
import io.fabric8.kubeapitest.KubeAPIServerConfigBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * One real kube-apiserver (+ etcd) for all *IT classes of a run, started by kube-api-test in
 * offline mode from $JVMDIAG_CACHE/k8s/1.34.4-linux-amd64, with the checked-in CRD installed.
 */
public final class ApiServer {
  public static final String VERSION = "1.34.4";
  private static KubeAPIServer server;
  private static Config adminConfig;

  private ApiServer() {}

  public static synchronized Config adminConfig() {
    if (server == null) {
      String cache =
          System.getenv()
              .getOrDefault(
                  "JVMDIAG_CACHE", System.getProperty("user.home") + "/.cache/jvm-diagnostics");
      server =
          new KubeAPIServer(
              KubeAPIServerConfigBuilder.anAPIServerConfig()
                  .withOfflineMode(true)
                  .withTestDir(cache)
                  .withApiServerVersion(VERSION)
                  .withUpdateKubeConfig(false)
                  .build());
      server.start();
      Runtime.getRuntime().addShutdownHook(new Thread(server::stop));
      adminConfig = Config.fromKubeconfig(server.getKubeConfigYaml());
      try (KubernetesClient c = client(adminConfig)) {
        CustomResourceDefinition crd =
            c.apiextensions()
                .v1()
                .customResourceDefinitions()
                .load(
                    Files.newInputStream(
                        Path.of(
                            System.getProperty("crds.dir", "../crds"),
                            "jvmdiagnostics.jvm.diagnostics.dev-v1.yml")))
                .item();
        c.resource(crd).serverSideApply();
        c.apiextensions()
            .v1()
            .customResourceDefinitions()
            .withName(crd.getMetadata().getName())
            // a CRD just created has a status without conditions until the API server sets them
            .waitUntilCondition(
                d ->
                    d.getStatus() != null
                        && d.getStatus().getConditions() != null
                        && d.getStatus().getConditions().stream()
                            .anyMatch(x ->
                                "Established".equals(x.getType()) && "True".equals(x.getStatus())),
                30,
                TimeUnit.SECONDS);
      } catch (java.io.IOException e) {
        throw new IllegalStateException("cannot read the CRD from crds/: " + e.getMessage(), e);
      }
    }
    return adminConfig;
  }

  /** The admin kubeconfig as YAML, for a process of its own (the jar's subcommands). */
  public static synchronized String kubeconfigYaml() {
    adminConfig();
    return server.getKubeConfigYaml();
  }

  public static KubernetesClient admin() {
    return client(adminConfig());
  }

  public static KubernetesClient client(Config config) {
    return new KubernetesClientBuilder().withConfig(config).build();
  }

  public static String namespace(KubernetesClient c, String name) {
    c.resource(new NamespaceBuilder().withNewMetadata().withName(name).endMetadata().build())
        .serverSideApply();
    return name;
  }

  /** Polls until the condition holds; fails with what was expected. */
  public static void await(String what, Duration timeout, Supplier<Boolean> cond) {
    long end = System.nanoTime() + timeout.toNanos();
    RuntimeException last = null;
    while (System.nanoTime() < end) {
      try {
        if (Boolean.TRUE.equals(cond.get())) return;
        last = null;
      } catch (RuntimeException e) {
        last = e;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    throw new AssertionError(
        "timed out after "
            + timeout.toSeconds()
            + "s waiting for: "
            + what
            + (last == null ? "" : " (last error: " + last.getMessage() + ")"));
  }

  public static <T extends HasMetadata> T yaml(KubernetesClient c, Class<T> type, String yaml) {
    return c.getKubernetesSerialization().unmarshal(yaml, type);
  }
}
