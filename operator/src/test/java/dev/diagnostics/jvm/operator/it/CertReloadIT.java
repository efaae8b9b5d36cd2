package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.INJECTED;
import static dev.diagnostics.jvm.operator.Contract.INJECT_LABEL;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.certs.CertificateAuthority;
import dev.diagnostics.jvm.operator.certs.CertificateAuthority.Issued;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The webhook's certificate changes while the API server keeps calling it, every ~250 ms a
 * server-side dry-run create of a labelled pod (must come back mutated: the mutating webhook fails
 * open, so a TLS failure shows as a pod without the injected annotation) and of a JvmDiagnostics
 * (the validating webhook fails closed: a TLS failure is an error). Not one may fail, and the
 * certificate served (read from a TLS handshake) must change within seconds of each change of the
 * Secret: the operator watches it (and, self-managed, both registrations) instead of waiting for
 * the hourly check.
 */
class CertReloadIT {
  /** A new certificate is served within this (debounce + the CA's settle time + a busy CI). */
  static final Duration WITHIN = Duration.ofSeconds(15);

  static final List<String> HOSTS = List.of("127.0.0.1", "localhost");
  static final String NS = "certreload";
  static KubernetesClient admin;
  static KubernetesClient operatorClient;

  /**
   * The names the chart's RBAC lets the operator touch (by resourceNames), rendered for a release
   * of this test's own.
   */
  static final ChartRbac.Names NAMES = ChartRbac.names("certreload");

  @BeforeAll
  static void up() throws Exception {
    admin = ApiServer.admin();
    operatorClient = ApiServer.client(ChartRbac.install(admin, "certreload"));
    ApiServer.namespace(admin, NS);
    // the resource the probe pods name (before any validating registration of ours exists)
    if (admin.resources(JvmDiagnostics.class).inNamespace(NS).withName("probe").get() == null)
      admin.resource(OperatorITResource.of(admin, NS, "probe", "none")).create();
  }

  @AfterAll
  static void down() {
    deleteRegistrations(NAMES.webhookConfig());
    if (operatorClient != null) operatorClient.close();
    if (admin != null) admin.close();
  }

  static void deleteRegistrations(String config) {
    admin.admissionRegistration().v1().validatingWebhookConfigurations().withName(config).delete();
    admin.admissionRegistration().v1().mutatingWebhookConfigurations().withName(config).delete();
  }

  static OperatorApp.Settings settings(String secret, String config, boolean manageConfig) {
    return new OperatorApp.Settings(
        new WebhookSettings(
            "jvmdiag/agent:it",
            ChartRbac.NAMESPACE,
            new InetSocketAddress("127.0.0.1", 0),
            "https://127.0.0.1:0",
            HOSTS,
            secret,
            config,
            manageConfig,
            Duration.ofHours(1), // the periodic check cannot be what reloads within seconds
            0,
            List.of()),
        null,
        new InetSocketAddress("127.0.0.1", 0));
  }

  // ---- (a) self-managed -----------------------------------------------------------------------

  @Test
  void selfManagedSecretDeletedReplacedByANewCaAndRenewedWithoutOneFailedAdmission()
      throws Exception {
    String secret = NAMES.webhookSecret();
    String config = NAMES.webhookConfig();
    admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).delete();
    deleteRegistrations(config);
    ChartRbac.registerLikeHelm(admin, config);
    OperatorApp app = new OperatorApp(operatorClient, settings(secret, config, true)).start();
    int port = app.webhookPort();
    try (Admissions loop = new Admissions(port, config)) {
      loop.awaitLive();
      loop.start();
      X509Certificate first = served(port);
      X509Certificate firstCa = issuerIn(bundle(config), first);

      // 1. deleted: a new CA, published with the previous one before any replica serves its leaf
      admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).delete();
      X509Certificate afterDelete = awaitServedOtherThan(port, first, "Secret deleted");
      List<X509Certificate> cas = bundle(config);
      X509Certificate newCa = issuerIn(cas, afterDelete);
      assertThat(newCa).as("a new CA").isNotEqualTo(firstCa);
      assertThat(cas).as("the caBundle: new CA first, the previous one kept").startsWith(newCa);
      assertThat(cas).contains(firstCa);
      Secret s = get(secret);
      assertThat(s.getData()).containsKey(WebhookCertificates.PREVIOUS_CA_KEY);
      assertThat(s.getMetadata().getAnnotations()).containsKey(WebhookCertificates.PREVIOUS_UNTIL);

      // 2. replaced by a Secret of another CA (as a CA renewal writes it, without the previous CA)
      Issued ca3 = CertificateAuthority.newCa("renewed-ca", Duration.ofDays(3650));
      Issued leaf3 = CertificateAuthority.newServing(ca3, HOSTS, Duration.ofDays(365));
      replace(secret, ca3, leaf3);
      awaitServed(port, leaf3.cert(), "Secret replaced by a new CA's");
      cas = bundle(config);
      assertThat(cas).startsWith(ca3.cert());
      assertThat(cas).as("what was served before stays trusted").contains(newCa);

      // 3. the leaf re-issued by the same CA
      Issued leaf4 = CertificateAuthority.newServing(ca3, HOSTS, Duration.ofDays(365));
      Secret current = get(secret);
      current.getData().put("tls.crt", b64(CertificateAuthority.pem(leaf4.cert())));
      current.getData().put("tls.key", b64(CertificateAuthority.pem(leaf4.key())));
      current.getMetadata().setManagedFields(null);
      admin.resource(current).update();
      awaitServed(port, leaf4.cert(), "leaf re-issued");

      // 4. rewritten with something unusable: re-issued at once, the certificate served kept
      // trusted
      current = get(secret);
      current.getData().put("tls.crt", b64("not a certificate"));
      current.getMetadata().setManagedFields(null);
      admin.resource(current).update();
      X509Certificate afterBroken = awaitServedOtherThan(port, leaf4.cert(), "Secret broken");
      assertThat(bundle(config)).contains(ca3.cert(), issuerIn(bundle(config), afterBroken));

      loop.stopAndCheck();

      // 5. someone rewrites a registration's caBundle: ours is back within seconds
      List<X509Certificate> ours = bundle(config);
      String foreign =
          Base64.getEncoder()
              .encodeToString(
                  CertificateAuthority.pem(
                          CertificateAuthority.newCa("foreign", Duration.ofDays(1)).cert())
                      .getBytes(StandardCharsets.UTF_8));
      long t0 = System.nanoTime();
      admin
          .admissionRegistration()
          .v1()
          .mutatingWebhookConfigurations()
          .withName(config)
          .edit(m -> {
            m.getWebhooks().get(0).getClientConfig().setCaBundle(foreign);
            return m;
          });
      await(
          "the caBundle re-applied",
          WITHIN,
          () -> {
            try {
              return bundle(config).equals(ours);
            } catch (Throwable e) {
              return false;
            }
          });
      report("caBundle rewritten (re-applied)", t0);
    } finally {
      app.close();
      deleteRegistrations(config);
    }
  }

  // ---- (b) cert-manager mode ------------------------------------------------------------------

  @Test
  void certManagerModeServesARenewedLeafOfTheSameCaWithinSecondsWithoutOneFailedAdmission()
      throws Exception {
    String secret = NAMES.webhookSecret();
    String config = NAMES.webhookConfig();
    deleteRegistrations(config);
    Issued ca = CertificateAuthority.newCa("cert-manager-ca", Duration.ofDays(3650));
    Issued leaf1 = CertificateAuthority.newServing(ca, HOSTS, Duration.ofDays(90));
    admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).delete();
    admin.resource(certManagerSecret(secret, ca, leaf1)).create();
    OperatorApp app = new OperatorApp(operatorClient, settings(secret, config, false)).start();
    int port = app.webhookPort();
    try (Admissions loop = new Admissions(port, null)) {
      // as Helm creates the registrations and the cainjector writes the CA into them
      String caPem = CertificateAuthority.pem(ca.cert());
      String target = "https://127.0.0.1:" + port;
      admin
          .resource(WebhookRegistration.build(config, target, caPem, ChartRbac.NAMESPACE))
          .create();
      admin.resource(WebhookRegistration.buildValidating(config, target, caPem)).create();
      loop.awaitLive();
      loop.start();
      assertThat(served(port)).isEqualTo(leaf1.cert());

      for (int renewal = 0; renewal < 2; renewal++) {
        Issued next = CertificateAuthority.newServing(ca, HOSTS, Duration.ofDays(90));
        admin.resource(certManagerSecret(secret, ca, next)).update();
        awaitServed(port, next.cert(), "cert-manager renewal " + (renewal + 1));
        Thread.sleep(2000); // admissions on the renewed certificate
      }
      assertThat(get(secret).getData())
          .as("the operator never writes cert-manager's Secret")
          .doesNotContainKey(WebhookCertificates.PREVIOUS_CA_KEY)
          .doesNotContainKey("ca.key");
      loop.stopAndCheck();
    } finally {
      app.close();
      deleteRegistrations(config);
    }
  }

  // ---- (c) two replicas, one Secret ----------------------------------------------------------

  /**
   * Two replicas share the Secret and one registration (here a variable both publish to, as both
   * apply the same registrations): whatever either serves is signed by a CA of the published bundle
   * at every moment (checked every 10 ms), and that CA was published at least the settle time
   * before — while one re-issues after a deletion, a new CA and a broken Secret, and the other
   * catches up on its own schedule.
   */
  @Test
  void twoReplicasNeverServeACertificateTheirRegistrationsDoNotTrust() throws Exception {
    String secret = NAMES.webhookSecret();
    Duration settle = Duration.ofMillis(800);
    admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).delete();
    var published =
        new java.util.concurrent.atomic.AtomicReference<List<X509Certificate>>(List.of());
    Map<X509Certificate, Long> publishedAt = new java.util.concurrent.ConcurrentHashMap<>();
    WebhookCertificates.Publisher registrations =
        (pem, secretUnchanged) -> {
          try {
            List<X509Certificate> cas = CertificateAuthority.readCerts(pem);
            // as the registrations do: nothing older over something newer (the precondition)
            synchronized (published) {
              if (!secretUnchanged.getAsBoolean())
                throw new WebhookCertificates.Superseded("registration");
              long now = System.nanoTime();
              for (X509Certificate ca : cas) publishedAt.putIfAbsent(ca, now);
              return !cas.equals(published.getAndSet(cas));
            }
          } catch (WebhookCertificates.Superseded e) {
            throw e; // the operator's own answer to a lost race: ensure() starts over
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        };
    List<String> violations = new CopyOnWriteArrayList<>();
    List<Replica> replicas = new ArrayList<>();
    // A reacts within 50 ms, B within 700 ms: B serves the old certificate while A re-issues
    for (long every : new long[] {50, 700}) {
      replicas.add(
          new Replica(
              new WebhookCertificates(
                  operatorClient,
                  ChartRbac.NAMESPACE,
                  secret,
                  HOSTS,
                  true,
                  Duration.ofMinutes(10),
                  settle),
              registrations,
              every,
              violations));
    }
    Thread checker =
        Thread.ofPlatform()
            .start(() -> {
              while (!Thread.currentThread().isInterrupted()) {
                List<X509Certificate> trusted = published.get();
                for (Replica r : replicas) {
                  WebhookCertificates.Material m = r.served;
                  if (m == null) continue;
                  if (!trusted.contains(m.caCert()))
                    violations.add("served " + WebhookCertificates.serial(m.cert()) + " untrusted");
                  Long at = publishedAt.get(m.caCert());
                  if (at != null && r.servedAt - at < settle.toNanos() - 50_000_000L && r.changed)
                    violations.add(
                        "served "
                            + WebhookCertificates.serial(m.cert())
                            + " before its CA settled");
                }
                try {
                  Thread.sleep(10);
                } catch (InterruptedException e) {
                  return;
                }
              }
            });
    try {
      ApiServer.await(
          "both replicas serve", WITHIN, () -> replicas.stream().allMatch(r -> r.served != null));
      for (Runnable change :
          List.<Runnable>of(
              () -> admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(secret).delete(),
              () -> {
                Issued ca = CertificateAuthority.newCa("renewed-ca", Duration.ofDays(3650));
                replace(
                    secret, ca, CertificateAuthority.newServing(ca, HOSTS, Duration.ofDays(365)));
              },
              () -> {
                Secret broken = get(secret);
                broken.getData().put("ca.crt", b64("not a certificate"));
                broken.getMetadata().setManagedFields(null);
                admin.resource(broken).update();
              })) {
        Map<Replica, X509Certificate> before = new java.util.HashMap<>();
        for (Replica r : replicas) before.put(r, r.served.cert());
        change.run();
        ApiServer.await(
            "both replicas serve a new certificate",
            WITHIN,
            () ->
                replicas.stream()
                    .allMatch(r ->
                        !r.served.cert().equals(before.get(r))
                            && r.served.cert().equals(replicas.get(0).served.cert())));
      }
      assertThat(new ArrayList<>(violations)).isEmpty();
    } finally {
      checker.interrupt();
      for (Replica r : replicas) r.close();
    }
  }

  /** One replica's certificate loop: ensure every `every` ms, what it returns is "served". */
  static final class Replica implements AutoCloseable {
    final Thread thread;
    volatile WebhookCertificates.Material served;
    volatile long servedAt;
    volatile boolean changed;

    Replica(
        WebhookCertificates certs,
        WebhookCertificates.Publisher publisher,
        long every,
        List<String> errors) {
      thread =
          Thread.ofPlatform()
              .start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                  try {
                    WebhookCertificates.Material m = certs.ensure(publisher);
                    if (served == null || !m.cert().equals(served.cert())) {
                      changed = served != null;
                      servedAt = System.nanoTime();
                      served = m;
                    }
                  } catch (RuntimeException e) {
                    if (!Thread.currentThread().isInterrupted()) errors.add(e.toString());
                  }
                  try {
                    Thread.sleep(every);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              });
    }

    @Override
    public void close() throws InterruptedException {
      thread.interrupt();
      thread.join(10_000);
    }
  }

  // ---- a watch RBAC forbids ------------------------------------------------------------------

  /** Without list/watch on the Secret the watch is logged as missing; the periodic check runs. */
  @Test
  void aWatchTheOperatorMayNotHaveLeavesThePeriodicCheck() throws Exception {
    admin
        .resource(
            new io.fabric8.kubernetes.api.model.rbac.RoleBuilder()
                .withNewMetadata()
                .withName("certreload-get-only")
                .withNamespace(NS)
                .endMetadata()
                .addNewRule()
                .withApiGroups("")
                .withResources("secrets")
                .withVerbs("get")
                .endRule()
                .build())
        .serverSideApply();
    admin
        .resource(
            new io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder()
                .withNewMetadata()
                .withName("certreload-get-only")
                .withNamespace(NS)
                .endMetadata()
                .withNewRoleRef("rbac.authorization.k8s.io", "Role", "certreload-get-only")
                .addNewSubject()
                .withKind("User")
                .withName("certreload-get-only")
                .withApiGroup("rbac.authorization.k8s.io")
                .endSubject()
                .build())
        .serverSideApply();
    AtomicInteger checks = new AtomicInteger();
    try (KubernetesClient getOnly =
            ApiServer.client(
                new io.fabric8.kubernetes.client.ConfigBuilder(ApiServer.adminConfig())
                    .withImpersonateUsername("certreload-get-only")
                    .build());
        var rotation =
            new dev.diagnostics.jvm.operator.certs.CertificateRotation(
                Duration.ofSeconds(1),
                Duration.ofMillis(100),
                () -> {
                  checks.incrementAndGet();
                  return null;
                })) {
      rotation.watch("Secret x", getOnly.secrets().inNamespace(NS).withName("x"));
      await("the periodic check runs without the watch", WITHIN, () -> checks.get() >= 2);
    }
  }

  // ---- the Secret -----------------------------------------------------------------------------

  static Secret get(String name) {
    return admin.secrets().inNamespace(ChartRbac.NAMESPACE).withName(name).get();
  }

  /** As the operator writes it, but with a CA of its own and nothing of the previous one. */
  static void replace(String name, Issued ca, Issued leaf) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put("ca.crt", b64(CertificateAuthority.pem(ca.cert())));
    data.put("ca.key", b64(CertificateAuthority.pem(ca.key())));
    data.put("tls.crt", b64(CertificateAuthority.pem(leaf.cert())));
    data.put("tls.key", b64(CertificateAuthority.pem(leaf.key())));
    admin
        .resource(
            new SecretBuilder()
                .withNewMetadata()
                .withName(name)
                .withNamespace(ChartRbac.NAMESPACE)
                .endMetadata()
                .withType("kubernetes.io/tls")
                .withData(data)
                .build())
        .createOr(existing -> existing.update());
  }

  /** As cert-manager writes it with a CA issuer: ca.crt, tls.crt, tls.key. */
  static Secret certManagerSecret(String name, Issued ca, Issued leaf) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put("ca.crt", b64(CertificateAuthority.pem(ca.cert())));
    data.put("tls.crt", b64(CertificateAuthority.pem(leaf.cert())));
    data.put("tls.key", b64(CertificateAuthority.pem(leaf.key())));
    return new SecretBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(ChartRbac.NAMESPACE)
        .addToAnnotations("cert-manager.io/certificate-name", name)
        .endMetadata()
        .withType("kubernetes.io/tls")
        .withData(data)
        .build();
  }

  static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  // ---- what is served and trusted -------------------------------------------------------------

  /** The certificate the webhook serves to a new TLS handshake. */
  static X509Certificate served(int port) throws Exception {
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(
        null,
        new TrustManager[] {
          new X509TrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] c, String a) {}

            @Override
            public void checkServerTrusted(X509Certificate[] c, String a) {}

            @Override
            public X509Certificate[] getAcceptedIssuers() {
              return new X509Certificate[0];
            }
          }
        },
        null);
    try (SSLSocket s = (SSLSocket) ssl.getSocketFactory().createSocket("127.0.0.1", port)) {
      s.setSoTimeout(5000);
      s.startHandshake();
      return (X509Certificate) s.getSession().getPeerCertificates()[0];
    }
  }

  static X509Certificate awaitServedOtherThan(int port, X509Certificate old, String after)
      throws Exception {
    long t0 = System.nanoTime();
    X509Certificate[] now = new X509Certificate[1];
    await(
        "a new certificate served after: " + after,
        WITHIN,
        () -> {
          try {
            now[0] = served(port);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          return !now[0].equals(old);
        });
    report("new certificate served after: " + after, t0);
    return now[0];
  }

  static void awaitServed(int port, X509Certificate want, String after) {
    long t0 = System.nanoTime();
    await(
        "the new certificate served after: " + after,
        WITHIN,
        () -> {
          try {
            return served(port).equals(want);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
    report("new certificate served after: " + after, t0);
  }

  static void report(String after, long t0) {
    System.out.printf("CertReloadIT: %s, in %.1f s%n", after, (System.nanoTime() - t0) / 1e9);
  }

  /** Both registrations' caBundle (they must agree), CA by CA. */
  static List<X509Certificate> bundle(String config) throws Exception {
    List<List<X509Certificate>> both = bundles(config);
    assertThat(both.get(1)).as("both registrations hold the same caBundle").isEqualTo(both.get(0));
    return both.get(0);
  }

  /** The mutating and the validating registration's caBundle, CA by CA. */
  static List<List<X509Certificate>> bundles(String config) throws Exception {
    var v1 = admin.admissionRegistration().v1();
    String mutating =
        v1.mutatingWebhookConfigurations()
            .withName(config)
            .get()
            .getWebhooks()
            .get(0)
            .getClientConfig()
            .getCaBundle();
    String validating =
        v1.validatingWebhookConfigurations()
            .withName(config)
            .get()
            .getWebhooks()
            .get(0)
            .getClientConfig()
            .getCaBundle();
    List<List<X509Certificate>> out = new ArrayList<>();
    for (String b64 : List.of(mutating, validating))
      out.add(
          CertificateAuthority.readCerts(
              new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8)));
    return out;
  }

  static X509Certificate issuerIn(List<X509Certificate> cas, X509Certificate leaf) {
    for (X509Certificate ca : cas) {
      try {
        leaf.verify(ca.getPublicKey());
        return ca;
      } catch (Exception e) {
        // not this one
      }
    }
    throw new AssertionError("no CA of the caBundle signs the served certificate");
  }

  // ---- the API server's admissions ------------------------------------------------------------

  /**
   * Every ~250 ms a dry-run pod (must be mutated) and a dry-run JvmDiagnostics (must be admitted),
   * both through the API server and so through its TLS client of the webhook.
   */
  static final class Admissions implements AutoCloseable {
    final int port;

    /** Self-managed: the registrations whose caBundle must sign what is served, at any moment. */
    final String config;

    final AtomicInteger trustChecks = new AtomicInteger();

    Admissions(int port, String config) {
      this.port = port;
      this.config = config;
    }

    final Pod pod =
        new PodBuilder()
            .withNewMetadata()
            .withName("probe")
            .withNamespace(NS)
            .addToLabels(INJECT_LABEL, "probe")
            .endMetadata()
            .withNewSpec()
            .addNewContainer()
            .withName("app")
            .withImage("x")
            .endContainer()
            .endSpec()
            .build();
    final JvmDiagnostics resource = OperatorITResource.of(admin, NS, "loop", "loop-target");
    final AtomicInteger pods = new AtomicInteger();
    final AtomicInteger resources = new AtomicInteger();
    final List<String> failures = new CopyOnWriteArrayList<>();
    volatile boolean stopped;
    Thread thread;
    Thread trust;

    boolean podMutated() {
      Pod p = admin.pods().inNamespace(NS).resource(pod).dryRun().create();
      return p.getMetadata().getAnnotations() != null
          && p.getMetadata().getAnnotations().containsKey(INJECTED);
    }

    void awaitLive() {
      await("the API server calls the webhook", Duration.ofSeconds(30), this::podMutated);
      await(
          "the API server calls the validating webhook",
          Duration.ofSeconds(30),
          () -> {
            admin.resource(resource).dryRun().create();
            return true;
          });
    }

    void start() {
      if (config != null) watchTrust();
      thread =
          Thread.ofPlatform()
              .name("admissions")
              .start(() -> {
                while (!stopped) {
                  long t0 = System.nanoTime();
                  try {
                    pods.incrementAndGet();
                    if (!podMutated()) failures.add(java.time.Instant.now() + ": pod not mutated");
                  } catch (RuntimeException e) {
                    failures.add(java.time.Instant.now() + ": pod: " + e.getMessage());
                  }
                  try {
                    resources.incrementAndGet();
                    admin.resource(resource).dryRun().create();
                  } catch (RuntimeException e) {
                    failures.add(java.time.Instant.now() + ": JvmDiagnostics: " + e.getMessage());
                  }
                  long left = 250 - (System.nanoTime() - t0) / 1_000_000;
                  if (left > 0) {
                    try {
                      Thread.sleep(left);
                    } catch (InterruptedException e) {
                      return;
                    }
                  }
                }
              });
    }

    /**
     * Every ~100 ms: the certificate served to a new handshake is signed by a CA of the caBundle
     * (read after it: a CA only leaves the bundle at the end of its grace period).
     */
    void watchTrust() {
      trust =
          Thread.ofPlatform()
              .name("trust")
              .start(() -> {
                while (!stopped) {
                  try {
                    X509Certificate now = served(port);
                    // each registration on its own (they are written one after the other)
                    for (List<X509Certificate> cas : bundles(config)) issuerIn(cas, now);
                    trustChecks.incrementAndGet();
                  } catch (AssertionError e) {
                    failures.add(java.time.Instant.now() + ": " + e.getMessage());
                  } catch (Exception e) {
                    failures.add(java.time.Instant.now() + ": handshake: " + e);
                  }
                  try {
                    Thread.sleep(100);
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              });
    }

    void stopAndCheck() throws InterruptedException {
      close();
      if (config != null)
        System.out.printf(
            "CertReloadIT: %d checks that the served certificate's CA is in the caBundle%n",
            trustChecks.get());
      System.out.printf(
          "CertReloadIT: %d pod and %d JvmDiagnostics dry-run admissions, %d failed%n",
          pods.get(), resources.get(), failures.size());
      assertThat(new ArrayList<>(failures)).as("failed or unmutated admissions").isEmpty();
      assertThat(pods.get()).as("admissions sent while the certificate changed").isGreaterThan(10);
    }

    @Override
    public void close() throws InterruptedException {
      stopped = true;
      if (thread != null) thread.join(10_000);
      if (trust != null) trust.join(10_000);
    }
  }

  /** A JvmDiagnostics as OperatorIT writes them. */
  static final class OperatorITResource {
    static JvmDiagnostics of(KubernetesClient c, String ns, String name, String target) {
      return ApiServer.yaml(
          c,
          JvmDiagnostics.class,
          """
          apiVersion: jvm.diagnostics.dev/v1alpha1
          kind: JvmDiagnostics
          metadata: {name: %s, namespace: %s}
          spec:
            targetRef: {kind: Deployment, name: %s}
          """
              .formatted(name, ns, target));
    }
  }
}
