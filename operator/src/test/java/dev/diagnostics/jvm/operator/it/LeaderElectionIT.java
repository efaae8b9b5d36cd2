package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.*;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.certs.CertificateAuthority;
import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
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
 * when the holder stops; a replica that loses its Lease stops reconciling and stays up, its webhook
 * answering throughout. No webhook is registered here, so a pod made from the template is missing
 * the injection (WebhookUnavailable).
 */
class LeaderElectionIT {
  static final Duration WAIT = Duration.ofSeconds(40);
  static final String LEASE = ChartRbac.LEASE;
  static final String LOST = "jvmdiag-lost";
  static final String BROWNOUT = "jvmdiag-brownout";
  static final String METRIC = "jvmdiag_operator_pods_missing_injection{";
  static KubernetesClient admin;
  static Config asOperator;
  static final Map<String, KubernetesClient> clients = new HashMap<>();
  static final Map<String, OperatorApp> apps = new HashMap<>();

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    asOperator = ChartRbac.install(admin);
    // the tests with a Lease (and Secret) of their own: the chart grants them by name, so those
    // names are another release's, its rules bound to the same identity
    ChartRbac.install(admin, LOST);
    ChartRbac.install(admin, BROWNOUT);
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
              Duration.ofSeconds(1));
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

  /** The replica exports that the resource's one missed pod misses the injection for reason. */
  static boolean exports(OperatorApp app, String ns, String resource, String reason) {
    return series(app).stream()
        .anyMatch(l ->
            l.contains("namespace=\"" + ns + "\"")
                && l.contains("jvmdiagnostics=\"" + resource + "\"")
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
    resource(ns, name);
  }

  /** A JvmDiagnostics of that name targeting the Deployment of the same name, rolled by hand. */
  static void resource(String ns, String name) {
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
        () -> exports(apps.get(leader), ns, "cart", "WebhookUnavailable"));
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
        () -> exports(apps.get(follower), ns2, "orders", "WebhookUnavailable"));

    // a deleted resource loses its series too
    admin.resources(JvmDiagnostics.class).inNamespace(ns2).withName("orders").delete();
    await(
        "the resource is gone (finalizer run by the new leader)",
        WAIT,
        () -> get(ns2, "orders") == null);
    await("its series is removed", WAIT, () -> series(apps.get(follower), ns2).isEmpty());
  }

  /**
   * A replica whose Lease another identity takes stops reconciling at once and stays up (healthy, a
   * candidate): a resource created meanwhile is reconciled by the other replicas' leader, not by
   * it; once the other holder's Lease runs out, it leads and reconciles again.
   */
  @Test
  void aReplicaThatLosesItsLeaseStopsReconcilingAtOnceAndResumesWhenItLeadsAgain()
      throws Exception {
    String lease = ChartRbac.names(LOST).lease();
    String ns = ApiServer.namespace(admin, "leader-election-lost");
    LeaderElection le =
        new LeaderElection(
            ChartRbac.NAMESPACE,
            lease,
            "replica-lost",
            Duration.ofSeconds(10),
            Duration.ofSeconds(8),
            Duration.ofSeconds(1));
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
      await("replica-lost holds its Lease", WAIT, () -> "replica-lost".equals(holderOf(lease)));
      deploymentAndResource(ns, "before");
      podFromTemplate(ns, "before", "missed");
      await(
          "it reconciles while it leads",
          WAIT,
          () -> exports(app, ns, "before", "WebhookUnavailable"));

      // another identity takes the Lease for 25 s (and never renews it)
      Lease l = admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(lease).get();
      l.getSpec().setHolderIdentity("someone-else");
      l.getSpec().setLeaseDurationSeconds(25);
      l.getSpec().setRenewTime(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC));
      l.getSpec().setAcquireTime(l.getSpec().getRenewTime());
      admin.leases().inNamespace(ChartRbac.NAMESPACE).resource(l).update();
      long taken = System.nanoTime();
      await("it stops reconciling", WAIT, () -> !app.reconciling());
      assertThat(app.healthy()).as("no longer leading is not an error").isTrue();
      assertThat(series(app, ns)).as("what it exported is the new leader's to say").isEmpty();
      deploymentAndResource(ns, "after");
      podFromTemplate(ns, "after", "missed");
      await(
          "the other replicas' leader reconciles the new resource",
          WAIT,
          () -> missing(ns, "after").contains("after-missed/WebhookUnavailable"));
      Thread.sleep(3000); // past its requeue: a replica still reconciling would export it by now
      assertThat(series(app, ns))
          .as("the replica without its Lease reconciled nothing")
          .noneMatch(x -> x.contains("jvmdiagnostics=\"after\""));
      assertThat(Duration.ofNanos(System.nanoTime() - taken))
          .as("all of that while the other identity held the Lease")
          .isLessThan(Duration.ofSeconds(25));

      await(
          "once the other holder's Lease ran out, it leads again",
          Duration.ofSeconds(60),
          () -> "replica-lost".equals(holderOf(lease)) && app.reconciling());
      assertThat(app.leaderTerms()).isEqualTo(2);
      await(
          "and reconciles again, the new resource too",
          WAIT,
          () -> exports(app, ns, "after", "WebhookUnavailable"));
    }
  }

  /**
   * An API-server brownout, 5 times over: a proxy between the replica's client and the API server
   * cuts every connection for longer than the renew deadline. Each time the replica loses the Lease
   * and stops reconciling, and stays up: its webhook answers every admission sent meanwhile (one
   * every 200 ms, from its cache), and it leads and reconciles again once the API server is back.
   */
  @Test
  void repeatedLeaseLossesNeverStopTheWebhook() throws Exception {
    String lease = ChartRbac.names(BROWNOUT).lease();
    String ns = ApiServer.namespace(admin, "leader-election-brownout");
    String secret = ChartRbac.names(BROWNOUT).webhookSecret();
    var ca = CertificateAuthority.newCa("it-ca", Duration.ofDays(1));
    var serving =
        CertificateAuthority.newServing(ca, List.of("127.0.0.1", "localhost"), Duration.ofDays(1));
    if (admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).get() == null)
      admin
          .secrets()
          .inNamespace(ChartRbac.NAMESPACE)
          .resource(
              new SecretBuilder()
                  .withNewMetadata()
                  .withName(secret)
                  .endMetadata()
                  .withType("kubernetes.io/tls")
                  .addToStringData("ca.crt", CertificateAuthority.pem(ca.cert()))
                  .addToStringData("tls.crt", CertificateAuthority.pem(serving.cert()))
                  .addToStringData("tls.key", CertificateAuthority.pem(serving.key()))
                  .build())
          .create();
    // the pods' resource, in the webhook's cache before the first cut
    resource(ns, "shop");

    // renew deadline 3 s; each cut lasts 8 s
    LeaderElection le =
        new LeaderElection(
            ChartRbac.NAMESPACE,
            lease,
            "replica-brownout",
            Duration.ofSeconds(5),
            Duration.ofSeconds(3),
            Duration.ofMillis(500));
    Duration cutFor = Duration.ofSeconds(8);
    try (ApiProxy proxy = new ApiProxy(asOperator.getMasterUrl());
        KubernetesClient c =
            ApiServer.client(
                new ConfigBuilder(asOperator)
                    .withMasterUrl(proxy.url())
                    // a cut is seen at once, not after retries that outlast it
                    .withRequestRetryBackoffLimit(0)
                    .withConnectionTimeout(1000)
                    .withRequestTimeout(2000)
                    .build());
        OperatorApp app =
            new OperatorApp(
                    c,
                    new OperatorApp.Settings(
                        new WebhookSettings(
                            "jvmdiag/agent:it",
                            ChartRbac.NAMESPACE,
                            new InetSocketAddress("127.0.0.1", 0),
                            "https://127.0.0.1:0",
                            List.of("127.0.0.1", "localhost"),
                            secret,
                            ChartRbac.names(BROWNOUT).webhookConfig(),
                            false, // cert-manager mode: no registration, the test calls it
                            Duration.ofHours(1),
                            0,
                            List.of()),
                        new ReconcilerSettings(
                            "jvmdiag/agent:it", List.of(), Set.of(ns), 0, le, List.of()),
                        new InetSocketAddress("127.0.0.1", 0),
                        new InetSocketAddress("127.0.0.1", 0)))
                .start()) {
      Admissions admissions = new Admissions(app.webhookPort(), ns, serving.cert());
      await("the webhook mutates a labelled pod", WAIT, admissions::mutates);
      await("it leads and reconciles", WAIT, () -> app.reconciling());
      Thread sender = Thread.ofPlatform().name("admissions").start(admissions::sendUntilStopped);
      try {
        for (int cut = 1; cut <= 5; cut++) {
          long terms = app.leaderTerms();
          proxy.cut();
          long t0 = System.nanoTime();
          await("cut " + cut + ": it stops reconciling", WAIT, () -> !app.reconciling());
          System.out.printf(
              "cut %d: stopped reconciling after %d ms%n", cut, (System.nanoTime() - t0) / 1000000);
          assertThat(app.healthy()).isTrue();
          assertThat(app.ready()).isTrue();
          Thread.sleep(Math.max(0, cutFor.toMillis() - (System.nanoTime() - t0) / 1000000));
          assertThat(app.reconciling()).as("cut %d: not leading, not reconciling", cut).isFalse();
          proxy.restore();
          await(
              "cut " + cut + ": it leads and reconciles again",
              WAIT,
              () -> app.reconciling() && app.leaderTerms() > terms);
        }
      } finally {
        admissions.stop();
        sender.join();
      }
      System.out.printf(
          "%d admissions during 5 Lease losses: %d failed, slowest %d ms%n",
          admissions.sent.get(), admissions.failures.size(), admissions.slowest.get());
      assertThat(admissions.failures).as("admissions not answered with a mutation").isEmpty();
      assertThat(admissions.sent.get()).isGreaterThanOrEqualTo(5 * cutFor.toMillis() / 200);
      assertThat(app.leaderTerms()).as("a term per cut, and the first").isGreaterThanOrEqualTo(6);

      // and after the last loss it reconciles: a missing pod is named in status and exported
      deploymentAndResource(ns, "resumed");
      podFromTemplate(ns, "resumed", "missed");
      await(
          "reconciling resumed: status names the pod",
          WAIT,
          () -> missing(ns, "resumed").contains("resumed-missed/WebhookUnavailable"));
      await(
          "and the replica exports it",
          WAIT,
          () -> exports(app, ns, "resumed", "WebhookUnavailable"));
    }
  }

  /** The API server's side of the webhook: AdmissionReviews of a labelled pod over TLS. */
  static final class Admissions {
    final HttpClient http;
    final URI uri;
    final String review;
    final java.util.concurrent.atomic.AtomicLong sent =
        new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong slowest =
        new java.util.concurrent.atomic.AtomicLong();
    final List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    volatile boolean stopped;

    Admissions(int port, String ns, java.security.cert.X509Certificate trusted) throws Exception {
      java.security.KeyStore ks = java.security.KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      ks.setCertificateEntry("serving", trusted);
      javax.net.ssl.TrustManagerFactory tmf =
          javax.net.ssl.TrustManagerFactory.getInstance(
              javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      javax.net.ssl.SSLContext ssl = javax.net.ssl.SSLContext.getInstance("TLS");
      ssl.init(null, tmf.getTrustManagers(), null);
      http =
          HttpClient.newBuilder()
              .sslContext(ssl)
              .version(HttpClient.Version.HTTP_1_1)
              .connectTimeout(Duration.ofSeconds(2))
              .build();
      uri = URI.create("https://127.0.0.1:" + port + "/mutate-pods");
      review =
          """
          {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
           "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
           "namespace":"%s","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod",
           "metadata":{"generateName":"shop-","namespace":"%s","labels":{"app":"shop","%s":"shop"}},
           "spec":{"containers":[{"name":"app","image":"eclipse-temurin:21"}]}}}}
          """
              .formatted(ns, ns, INJECT_LABEL);
    }

    /** One admission: null when mutated, else what went wrong. */
    String admit() {
      long t0 = System.nanoTime();
      try {
        HttpResponse<String> r =
            http.send(
                HttpRequest.newBuilder(uri)
                    .timeout(Duration.ofSeconds(5))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(review))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        slowest.accumulateAndGet((System.nanoTime() - t0) / 1000000, Math::max);
        if (r.statusCode() != 200) return "HTTP " + r.statusCode();
        return r.body().contains("\"patch\"") ? null : "not mutated: " + r.body();
      } catch (Exception e) {
        return e.toString();
      }
    }

    boolean mutates() {
      return admit() == null;
    }

    void sendUntilStopped() {
      while (!stopped) {
        long t0 = System.nanoTime();
        String failed = admit();
        sent.incrementAndGet();
        if (failed != null) failures.add(java.time.Instant.now() + ": " + failed);
        long left = 200 - (System.nanoTime() - t0) / 1000000;
        if (left > 0) {
          try {
            Thread.sleep(left);
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }

    void stop() {
      stopped = true;
    }
  }

  static String holderOf(String lease) {
    Lease l = admin.leases().inNamespace(ChartRbac.NAMESPACE).withName(lease).get();
    return l == null || l.getSpec() == null ? null : l.getSpec().getHolderIdentity();
  }
}
