package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.*;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two operator replicas with the chart's RBAC against a real kube-apiserver: only the Lease holder
 * reconciles (and so only it exports jvmdiag_operator_pods_missing_injection), the other takes over
 * when the holder stops. No webhook runs here, so a pod made from the template is missing the
 * injection (WebhookUnavailable).
 */
class LeaderElectionIT {
  static final Duration WAIT = Duration.ofSeconds(40);
  static final String LEASE = "jvmdiag-it-leader";
  static final String METRIC = "jvmdiag_operator_pods_missing_injection{";
  static KubernetesClient admin;
  static Config asOperator;
  static final Map<String, KubernetesClient> clients = new HashMap<>();
  static final Map<String, OperatorApp> apps = new HashMap<>();

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    asOperator = ChartRbac.install(admin);
    for (String id : List.of("replica-a", "replica-b")) {
      KubernetesClient c = ApiServer.client(asOperator);
      clients.put(id, c);
      // a short Lease, but with room for a loaded machine: a leader that misses its renew
      // deadline would hand over in the middle of the test
      LeaderElection le =
          new LeaderElection(
              ChartRbac.NAMESPACE,
              LEASE,
              id,
              Duration.ofSeconds(10),
              Duration.ofSeconds(8),
              Duration.ofSeconds(1),
              false);
      apps.put(
          id,
          new OperatorApp(
                  c,
                  new OperatorApp.Settings(
                      null,
                      new ReconcilerSettings(
                          "jvmdiag/agent:it", List.of(), Set.of(), 0, le, List.of()),
                      new InetSocketAddress("127.0.0.1", 0)))
              .start());
    }
  }

  @AfterAll
  static void stop() {
    apps.values().forEach(OperatorApp::close);
    clients.values().forEach(KubernetesClient::close);
    if (admin != null) admin.close();
  }

  static String holder() {
    Lease l = admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(LEASE).get();
    return l == null || l.getSpec() == null ? null : l.getSpec().getHolderIdentity();
  }

  /** The series of one namespace: the leader also reconciles what other ITs left behind. */
  static List<String> series(OperatorApp app, String ns) {
    return series(app).stream().filter(l -> l.contains("namespace=\"" + ns + "\"")).toList();
  }

  static List<String> series(OperatorApp app) {
    try {
      String body =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + app.metricsPort() + "/metrics"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      return body.lines().filter(l -> l.startsWith(METRIC)).toList();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static boolean exports(OperatorApp app, String ns, String resource, String pod, String reason) {
    return series(app).stream()
        .anyMatch(l ->
            l.contains("namespace=\"" + ns + "\"")
                && l.contains("jvmdiagnostics=\"" + resource + "\"")
                && l.contains("pod=\"" + pod + "\"")
                && l.contains("reason=\"" + reason + "\"")
                && l.endsWith(" 1.0"));
  }

  static JvmDiagnostics get(String ns, String name) {
    return admin.resources(JvmDiagnostics.class).inNamespace(ns).withName(name).get();
  }

  static List<String> missing(String ns, String name) {
    JvmDiagnostics r = get(ns, name);
    return r == null || r.getStatus() == null
        ? List.of()
        : r.getStatus().podsMissingInjection.stream().map(m -> m.name + "/" + m.reason).toList();
  }

  static void deploymentAndResource(String ns, String name) {
    admin
        .resource(
            ApiServer.yaml(
                admin,
                Deployment.class,
                """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: %s, namespace: %s}
                spec:
                  replicas: 1
                  selector: {matchLabels: {app: %s}}
                  template:
                    metadata: {labels: {app: %s}}
                    spec: {containers: [{name: app, image: eclipse-temurin:21}]}
                """
                    .formatted(name, ns, name, name)))
        .create();
    admin
        .resource(
            ApiServer.yaml(
                admin,
                JvmDiagnostics.class,
                """
                apiVersion: jvm.diagnostics.dev/v1alpha1
                kind: JvmDiagnostics
                metadata: {name: %s, namespace: %s}
                spec:
                  targetRef: {kind: Deployment, name: %s}
                  rollout: Manual
                """
                    .formatted(name, ns, name)))
        .create();
  }

  /**
   * A pod from the Deployment's template as its ReplicaSet would make it, with no webhook to inject
   * it.
   */
  static void podFromTemplate(String ns, String deployment, String suffix) {
    await(
        "the template carries the inject label",
        WAIT,
        () -> {
          var labels =
              admin
                  .apps()
                  .deployments()
                  .inNamespace(ns)
                  .withName(deployment)
                  .get()
                  .getSpec()
                  .getTemplate()
                  .getMetadata()
                  .getLabels();
          return labels != null && labels.containsKey(INJECT_LABEL);
        });
    Deployment d = admin.apps().deployments().inNamespace(ns).withName(deployment).get();
    admin
        .pods()
        .inNamespace(ns)
        .resource(
            new PodBuilder()
                .withMetadata(d.getSpec().getTemplate().getMetadata())
                .editMetadata()
                .withName(deployment + "-" + suffix)
                .withNamespace(ns)
                .endMetadata()
                .withSpec(d.getSpec().getTemplate().getSpec())
                .build())
        .create();
  }

  @Test
  void onlyTheLeaseHolderReconcilesAndTheOtherTakesOverWhenItStops() {
    await("one replica holds the Lease", WAIT, () -> apps.containsKey(holder()));
    String leader = holder();
    String follower = leader.equals("replica-a") ? "replica-b" : "replica-a";

    String ns = ApiServer.namespace(admin, "leader-election");
    deploymentAndResource(ns, "cart");
    podFromTemplate(ns, "cart", "missed");
    await(
        "the missing pod named in status",
        WAIT,
        () -> missing(ns, "cart").contains("cart-missed/WebhookUnavailable"));
    await(
        "the leader exports it",
        WAIT,
        () -> exports(apps.get(leader), ns, "cart", "cart-missed", "WebhookUnavailable"));
    // the follower reconciled nothing: no series at all, and the Lease did not move
    assertThat(series(apps.get(follower))).isEmpty();
    assertThat(holder()).isEqualTo(leader);

    // a pod that is no longer missing loses its series (removed, not left at 0)
    admin.pods().inNamespace(ns).withName("cart-missed").delete();
    await("status no longer lists the pod", WAIT, () -> missing(ns, "cart").isEmpty());
    await("the series is removed", WAIT, () -> series(apps.get(leader), ns).isEmpty());

    apps.get(leader).close();
    // stopping releases the Lease (1 s left) instead of leaving the follower to wait out 10 s
    Lease released = admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(LEASE).get();
    assertThat(
            released.getSpec().getLeaseDurationSeconds() == 1
                || follower.equals(released.getSpec().getHolderIdentity()))
        .as("released or already taken over: %s", released.getSpec())
        .isTrue();
    await("the follower takes the Lease over", WAIT, () -> follower.equals(holder()));
    String ns2 = ApiServer.namespace(admin, "leader-election-2");
    deploymentAndResource(ns2, "orders");
    podFromTemplate(ns2, "orders", "missed");
    await(
        "the new leader reconciles: status names the pod",
        WAIT,
        () -> missing(ns2, "orders").contains("orders-missed/WebhookUnavailable"));
    await(
        "the new leader exports it",
        WAIT,
        () -> exports(apps.get(follower), ns2, "orders", "orders-missed", "WebhookUnavailable"));

    // a deleted resource loses its series too
    admin.resources(JvmDiagnostics.class).inNamespace(ns2).withName("orders").delete();
    await(
        "the resource is gone (finalizer run by the new leader)",
        WAIT,
        () -> get(ns2, "orders") == null);
    await("its series is removed", WAIT, () -> series(apps.get(follower), ns2).isEmpty());
  }

  /**
   * A replica whose Lease is deleted under it (as when another took it over) stops reconciling at
   * once: a resource created afterwards is reconciled by the other replicas' leader, not by it.
   * Here it stays up (no exit in-process) with /healthz red; in a pod it then exits 1.
   */
  @Test
  void aReplicaThatLosesItsLeaseStopsReconcilingAtOnce() throws Exception {
    String lease = "jvmdiag-it-lost";
    String ns = ApiServer.namespace(admin, "leader-election-lost");
    LeaderElection le =
        new LeaderElection(
            ChartRbac.NAMESPACE,
            lease,
            "replica-lost",
            Duration.ofSeconds(10),
            Duration.ofSeconds(8),
            Duration.ofSeconds(1),
            false);
    try (KubernetesClient c = ApiServer.client(asOperator);
        OperatorApp app =
            new OperatorApp(
                    c,
                    new OperatorApp.Settings(
                        null,
                        new ReconcilerSettings(
                            "jvmdiag/agent:it", List.of(), Set.of(ns), 0, le, List.of()),
                        new InetSocketAddress("127.0.0.1", 0)))
                .start()) {
      await(
          "replica-lost holds its Lease",
          WAIT,
          () -> {
            Lease l = admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(lease).get();
            return l != null && "replica-lost".equals(l.getSpec().getHolderIdentity());
          });
      deploymentAndResource(ns, "before");
      podFromTemplate(ns, "before", "missed");
      await(
          "it reconciles while it leads",
          WAIT,
          () -> exports(app, ns, "before", "before-missed", "WebhookUnavailable"));

      admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(lease).delete();
      await("/healthz red after the Lease was lost", WAIT, () -> !app.healthy());
      deploymentAndResource(ns, "after");
      podFromTemplate(ns, "after", "missed");
      await(
          "the other replicas' leader reconciles the new resource",
          WAIT,
          () -> missing(ns, "after").contains("after-missed/WebhookUnavailable"));
      Thread.sleep(
          3000); // past its requeue: a replica still reconciling would have exported it by now
      assertThat(series(app, ns))
          .as("the replica without its Lease reconciled nothing more")
          .noneMatch(l -> l.contains("jvmdiagnostics=\"after\""));
    }
  }
}
