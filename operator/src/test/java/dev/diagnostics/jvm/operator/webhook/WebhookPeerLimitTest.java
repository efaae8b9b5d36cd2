package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.certs.CertificateAuthority;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates.Material;
import dev.diagnostics.jvm.operator.http.HttpListener;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A pod floods the webhook port with forged AdmissionReviews, on real sockets from its own address
 * (127.0.0.2), while the API server (127.0.0.1) keeps calling: beyond its burst the pod's requests
 * are answered at once without a SubjectAccessReview or a resource lookup, and every one of the API
 * server's is answered as usual. Each forged validation names another workload, so the access
 * review's cache cannot be what saves the calls.
 */
class WebhookPeerLimitTest {
  static final int FLOOD = 1000;
  static final int FLOODERS = 8;
  static final InetAddress POD = address("127.0.0.2");
  static final InetAddress API_SERVER = address("127.0.0.1");

  final ObjectMapper json = new ObjectMapper();
  final PrometheusRegistry registry = new PrometheusRegistry();
  final WebhookMetrics metrics = new WebhookMetrics(registry);
  final AtomicInteger reviews = new AtomicInteger(); // SubjectAccessReviews naming a workload
  final AtomicInteger lookups = new AtomicInteger(); // resource lookups of the pod webhook
  final List<AutoCloseable> open = new ArrayList<>();
  SSLContext trusting;

  static InetAddress address(String a) {
    try {
      return InetAddress.getByName(a);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : open) c.close();
  }

  WebhookServer start(WebhookServer.PeerLimits limits) throws Exception {
    CertificateAuthority.Issued ca = CertificateAuthority.newCa("test-ca", Duration.ofDays(1));
    CertificateAuthority.Issued serving =
        CertificateAuthority.newServing(ca, List.of("127.0.0.1", "localhost"), Duration.ofDays(1));
    Material m =
        new Material(ca.cert(), serving.cert(), serving.key(), CertificateAuthority.pem(ca.cert()));
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", ca.cert());
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    trusting = SSLContext.getInstance("TLS");
    trusting.init(null, tmf.getTrustManagers(), null);

    AdmissionHandler handler =
        new AdmissionHandler(
            (ns, n) -> {
              lookups.incrementAndGet();
              return ns.equals("shop") && n.equals("checkout")
                  ? AdmissionHandlerTest.resource()
                  : null;
            },
            "jvmdiag/agent:test",
            metrics);
    ResourceValidator validator =
        new ResourceValidator(
            List.of(),
            List.of("kube-system"),
            new TargetClaims(key -> List.of()),
            new TargetPermission(
                    r -> {
                      // the forged user may patch the one workload, not every one: each
                      // validation of another workload is a review (the namespace-wide no is kept)
                      if (r.getSpec().getResourceAttributes().getName() == null) return false;
                      reviews.incrementAndGet();
                      return true;
                    },
                    System::nanoTime)
                .asCheck(),
            registry);
    WebhookServer server =
        new WebhookServer(
            new InetSocketAddress("127.0.0.1", 0),
            m,
            handler,
            validator,
            HttpListener.Limits.DEFAULT,
            limits);
    server.start();
    open.add(server);
    return server;
  }

  HttpClient client(InetAddress from) {
    HttpClient c =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .sslContext(trusting)
            .localAddress(from)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    open.add(c);
    return c;
  }

  static String validation(String uid, String target) {
    return ResourceValidatorTest.review(
            "CREATE", ResourceValidatorTest.resource("r-" + target, target, ""), "null")
        .replace("\"uid\":\"u-1\"", "\"uid\":\"" + uid + "\"");
  }

  static String podAdmission(String uid, String resource) {
    return AdmissionHandlerTest.review(
            "CREATE",
            AdmissionHandlerTest.POD.replace(
                "\"jvm.diagnostics.dev/inject\":\"checkout\"",
                "\"jvm.diagnostics.dev/inject\":\"" + resource + "\""))
        .replace("\"uid\":\"u-1\"", "\"uid\":\"" + uid + "\"");
  }

  JsonNode post(HttpClient c, int port, String path, String body) throws Exception {
    HttpResponse<String> r =
        c.send(
            HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return json.readTree(r.body()).get("response");
  }

  /** What a flood got: answers by kind, and how long it took. */
  record Flood(int answered, List<JsonNode> refusals, double seconds) {}

  /** FLOOD forged requests from the pod, FLOODERS at a time, each naming another target. */
  Flood flood(int port, String path, java.util.function.IntFunction<String> forged)
      throws Exception {
    HttpClient pod = client(POD);
    ConcurrentLinkedQueue<JsonNode> refused = new ConcurrentLinkedQueue<>();
    AtomicInteger answered = new AtomicInteger();
    AtomicInteger next = new AtomicInteger();
    long t0 = System.nanoTime();
    try (ExecutorService flooders = Executors.newVirtualThreadPerTaskExecutor()) {
      List<Future<?>> done = new ArrayList<>();
      for (int f = 0; f < FLOODERS; f++)
        done.add(
            flooders.submit(() -> {
              for (int i; (i = next.getAndIncrement()) < FLOOD; ) {
                JsonNode r = post(pod, port, path, forged.apply(i));
                assertThat(r.get("uid").asText()).isEqualTo("forged-" + i);
                if (r.toString().contains("too many")) refused.add(r);
                else answered.incrementAndGet();
              }
              return null;
            }));
      for (Future<?> d : done) d.get();
    }
    return new Flood(answered.get(), List.copyOf(refused), (System.nanoTime() - t0) / 1e9);
  }

  @Test
  void aFloodedValidationCostsTheBurstAndTheRateWhileTheApiServerIsAnswered() throws Exception {
    WebhookServer server = start(WebhookServer.PeerLimits.DEFAULT);
    int port = server.port();
    HttpClient apiServer = client(API_SERVER);
    // the API server, before and during the flood: every request answered and checked
    ConcurrentLinkedQueue<String> apiServerProblems = new ConcurrentLinkedQueue<>();
    AtomicInteger apiServerAnswered = new AtomicInteger();
    Thread legit =
        Thread.ofVirtual()
            .start(() -> {
              for (int i = 0; i < 40; i++) {
                try {
                  JsonNode r =
                      post(
                          apiServer,
                          port,
                          ResourceValidator.PATH,
                          validation("legit-" + i, "legit-" + i));
                  if (!r.get("allowed").asBoolean() || !r.get("uid").asText().equals("legit-" + i))
                    apiServerProblems.add(r.toString());
                  else apiServerAnswered.incrementAndGet();
                  Thread.sleep(25);
                } catch (Exception e) {
                  apiServerProblems.add(e.toString());
                }
              }
            });
    Flood f = flood(port, ResourceValidator.PATH, i -> validation("forged-" + i, "w-" + i));
    legit.join();

    PeerRateLimit limit = WebhookServer.PeerLimits.DEFAULT.validation();
    int most = limit.burst() + (int) Math.ceil(limit.perSecond() * f.seconds()) + 1;
    System.out.printf(
        "flood of %d forged validations from one peer in %.2f s: %d answered (SubjectAccessReviews:"
            + " %d in all, %d of them the API server's), %d refused%n",
        FLOOD,
        f.seconds(),
        f.answered(),
        reviews.get(),
        apiServerAnswered.get(),
        f.refusals().size());
    assertThat(apiServerProblems).isEmpty();
    assertThat(apiServerAnswered.get()).isEqualTo(40);
    assertThat(f.answered()).isGreaterThanOrEqualTo(limit.burst()).isLessThanOrEqualTo(most);
    assertThat(f.answered() + f.refusals().size()).isEqualTo(FLOOD);
    // a refused request asked nothing of the API server
    assertThat(reviews.get()).isEqualTo(f.answered() + apiServerAnswered.get());
    JsonNode refusal = f.refusals().get(0);
    assertThat(refusal.get("allowed").asBoolean()).isFalse();
    assertThat(refusal.at("/status/code").asInt()).isEqualTo(429);
    assertThat(refusal.at("/status/reason").asText()).isEqualTo("TooManyRequests");
    assertThat(refusal.at("/status/message").asText())
        .startsWith("too many validation requests from 127.0.0.2; ")
        .contains("at most 50 a second, with bursts of 100, from one address")
        .contains("--webhook-validation-limit, chart value webhook.rateLimitPerPeer.validation");
    assertThat(metrics.refused.labelValues("jvmdiagnostics", "PeerRateLimit").get())
        .isEqualTo(f.refusals().size());
  }

  @Test
  void withoutTheLimitEveryForgedValidationIsAnAccessReview() throws Exception {
    WebhookServer server = start(WebhookServer.PeerLimits.NONE);
    Flood f =
        flood(server.port(), ResourceValidator.PATH, i -> validation("forged-" + i, "w-" + i));
    System.out.printf(
        "without the limit: %d forged validations in %.2f s: %d SubjectAccessReviews%n",
        FLOOD, f.seconds(), reviews.get());
    assertThat(f.refusals()).isEmpty();
    assertThat(reviews.get()).isEqualTo(FLOOD);
  }

  @Test
  void theSameForgedValidationRepeatedIsOneAccessReview() throws Exception {
    WebhookServer server = start(WebhookServer.PeerLimits.NONE);
    Flood f = flood(server.port(), ResourceValidator.PATH, i -> validation("forged-" + i, "same"));
    System.out.printf(
        "without the limit: %d identical forged validations in %.2f s: %d SubjectAccessReview(s)%n",
        FLOOD, f.seconds(), reviews.get());
    // FLOODERS may miss the cache together before the first answer is in
    assertThat(reviews.get()).isBetween(1, FLOODERS);
  }

  @Test
  void aFloodedPodWebhookAdmitsUnchangedWithoutLookups() throws Exception {
    WebhookServer server = start(WebhookServer.PeerLimits.DEFAULT);
    int port = server.port();
    Flood f = flood(port, WebhookServer.PATH, i -> podAdmission("forged-" + i, "absent-" + i));
    PeerRateLimit limit = WebhookServer.PeerLimits.DEFAULT.pods();
    int most = limit.burst() + (int) Math.ceil(limit.perSecond() * f.seconds()) + 1;
    System.out.printf(
        "flood of %d forged pod admissions from one peer in %.2f s: %d handled (lookups: %d), %d"
            + " refused%n",
        FLOOD, f.seconds(), f.answered(), lookups.get(), f.refusals().size());
    assertThat(f.answered()).isGreaterThanOrEqualTo(limit.burst()).isLessThanOrEqualTo(most);
    assertThat(lookups.get()).isEqualTo(f.answered());
    JsonNode refusal = f.refusals().get(0);
    assertThat(refusal.get("allowed").asBoolean()).isTrue(); // never denies a pod
    assertThat(refusal.has("patch")).isFalse();
    assertThat(refusal.get("warnings").get(0).asText())
        .startsWith(
            "jvm-diagnostics: not injected: too many pod admission requests from 127.0.0.2");
    // the API server's pod is still mutated
    JsonNode r =
        post(client(API_SERVER), port, WebhookServer.PATH, podAdmission("p-1", "checkout"));
    assertThat(r.get("patchType").asText()).isEqualTo("JSONPatch");
    assertThat(metrics.refused.labelValues("pods", "PeerRateLimit").get())
        .isEqualTo(f.refusals().size());
  }
}
