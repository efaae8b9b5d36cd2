package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.certs.CertificateAuthority;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates.Material;
import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.metrics.MetricsServer;
import dev.diagnostics.jvm.operator.metrics.ProbeServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The real listeners on real sockets, held by an attacker with many more connections than they have
 * threads, for 32 s: half-open TLS (TCP connected, no ClientHello), unfinished request headers,
 * headers with an unfinished body, a header trickled a byte a second. Meanwhile, every second, the
 * kubelet's /healthz, a real pod admission and a scrape must each answer within 1 s, and every held
 * connection must be closed by the server once its timeout passed.
 */
class ListenerExhaustionTest {
  static final Duration HOLD = Duration.ofSeconds(32);

  /** 4 times the threads of the largest pool a listener has (Jetty's and the admission pool). */
  static final int PER_KIND =
      4 * Math.max(WebhookServer.ADMISSION_THREADS, Math.max(8, WebhookServer.VALIDATION_THREADS));

  /** When a held connection must be gone: the timeout plus room for a loaded machine. */
  static final long CLOSE_WITHIN_MS =
      HttpListener.Limits.DEFAULT.read().toMillis()
          + HttpListener.Limits.DEFAULT.response().toMillis() / 2
          + 3000;

  final ObjectMapper json = new ObjectMapper();
  ProbeServer probes;
  MetricsServer metrics;
  WebhookServer webhook;
  SSLContext trusting;
  final ExecutorService attackers = Executors.newVirtualThreadPerTaskExecutor();

  /** One held connection: how long the server let it live (-1: still open at the end). */
  record Held(String what, long openMillis) {}

  final ConcurrentLinkedQueue<Held> held = new ConcurrentLinkedQueue<>();
  volatile boolean attacking = true;

  @BeforeEach
  void start() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
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

    InetSocketAddress any = new InetSocketAddress("127.0.0.1", 0);
    probes = new ProbeServer(any, () -> true, () -> true, HttpListener.Limits.DEFAULT).start();
    metrics = new MetricsServer(any, registry).start();
    AdmissionHandler handler =
        new AdmissionHandler(
            (ns, n) ->
                ns.equals("shop") && n.equals("checkout") ? AdmissionHandlerTest.resource() : null,
            "jvmdiag/agent:test",
            new WebhookMetrics(registry));
    webhook = new WebhookServer(any, m, handler);
    webhook.start();
  }

  @AfterEach
  void stop() {
    attacking = false;
    attackers.shutdownNow();
    if (webhook != null) webhook.close();
    if (metrics != null) metrics.close();
    if (probes != null) probes.close();
  }

  // ---- the attacker ---------------------------------------------------------------------------

  interface Opening {
    Socket open() throws Exception;
  }

  /** Keeps PER_KIND connections of one kind open until HOLD ends, each reopened when closed. */
  void hold(String what, Opening opening) {
    long end = System.nanoTime() + HOLD.toNanos();
    for (int i = 0; i < PER_KIND; i++) {
      attackers.execute(() -> {
        while (attacking && System.nanoTime() < end) {
          long t0 = System.nanoTime();
          try (Socket s = opening.open()) {
            s.setSoTimeout(500);
            InputStream in = s.getInputStream();
            boolean closed = false;
            while (attacking && System.nanoTime() < end && !closed) {
              try {
                // a 503 answer, then the close; or the close alone
                while (in.read() >= 0) {}
                closed = true;
              } catch (SocketTimeoutException still) {
              } catch (java.io.IOException reset) {
                closed = true;
              }
            }
            if (closed) held.add(new Held(what, (System.nanoTime() - t0) / 1_000_000));
            else held.add(new Held(what, -(System.nanoTime() - t0) / 1_000_000));
          } catch (Exception e) {
            // refused or reset while opening: try again
            sleep(100);
          }
        }
      });
    }
  }

  /** Trickles one header byte a second: never idle, never done. */
  void trickle(String what, int port) {
    long end = System.nanoTime() + HOLD.toNanos();
    for (int i = 0; i < PER_KIND / 2; i++) {
      attackers.execute(() -> {
        while (attacking && System.nanoTime() < end) {
          long t0 = System.nanoTime();
          try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            byte[] line = "GET /healthz HTTP/1.1\r\nX-A: ".getBytes(StandardCharsets.US_ASCII);
            boolean closed = false;
            for (int k = 0; !closed && attacking && System.nanoTime() < end; k++) {
              try {
                out.write(k < line.length ? line[k] : 'a');
                out.flush();
                closed = s.getInputStream().read() < 0;
              } catch (SocketTimeoutException still) {
              } catch (java.io.IOException reset) {
                closed = true;
              }
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            held.add(new Held(what, closed ? ms : -ms));
          } catch (Exception e) {
            sleep(100);
          }
        }
      });
    }
  }

  static Socket plain(int port, String partial) throws Exception {
    Socket s = new Socket("127.0.0.1", port);
    s.getOutputStream().write(partial.getBytes(StandardCharsets.US_ASCII));
    s.getOutputStream().flush();
    return s;
  }

  Socket tls(int port, String partial) throws Exception {
    SSLSocket s = (SSLSocket) trusting.getSocketFactory().createSocket("127.0.0.1", port);
    s.startHandshake();
    s.getOutputStream().write(partial.getBytes(StandardCharsets.US_ASCII));
    s.getOutputStream().flush();
    return s;
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---- the test -------------------------------------------------------------------------------

  @Test
  void heldConnectionsOnEveryListenerBlockNoProbeNoAdmissionNoScrape() throws Exception {
    int wh = webhook.port();
    HttpClient probe =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    HttpClient apiServer =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .sslContext(trusting)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    String review = AdmissionHandlerTest.review("CREATE", AdmissionHandlerTest.POD);
    // before the attack: the JIT and JSSE warm, the connections open (the API server and the
    // kubelet keep theirs too)
    String warm = AdmissionHandlerTest.review("CREATE", AdmissionHandlerTest.POD);
    for (int i = 0; i < 20; i++) {
      Duration cold = Duration.ofSeconds(20);
      probe.send(
          get("http://127.0.0.1:" + probes.port() + "/healthz", cold),
          HttpResponse.BodyHandlers.discarding());
      apiServer.send(admission(wh, warm, cold), HttpResponse.BodyHandlers.discarding());
      probe.send(
          get("http://127.0.0.1:" + metrics.port() + "/metrics", cold),
          HttpResponse.BodyHandlers.discarding());
    }
    // the webhook: half-open TLS, unfinished headers over TLS, an unfinished admission body
    hold("webhook half-open TLS", () -> new Socket("127.0.0.1", wh));
    hold("webhook unfinished headers", () -> tls(wh, "POST /mutate-pods HTTP/1.1\r\nHost: x\r\n"));
    hold(
        "webhook unfinished body",
        () ->
            tls(
                wh,
                "POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100000\r\n\r\n{\"apiVersion\":"));
    // metrics and probes: unfinished headers, a trickled header
    hold("metrics unfinished headers", () -> plain(metrics.port(), "GET /metrics HTTP/1.1\r\n"));
    trickle("metrics trickle", metrics.port());
    hold("probes unfinished headers", () -> plain(probes.port(), "GET /healthz HTTP/1.1\r\n"));
    trickle("probes trickle", probes.port());
    sleep(3000); // every attacker connected

    List<String> slow = new ArrayList<>();
    long worst = 0;
    int rounds = 0;
    long end = System.nanoTime() + HOLD.minusSeconds(2).toNanos();
    while (System.nanoTime() < end) {
      long round = System.nanoTime();
      rounds++;

      long healthz =
          timed(
              slow,
              rounds,
              "/healthz",
              () -> {
                HttpResponse<String> h =
                    probe.send(
                        get("http://127.0.0.1:" + probes.port() + "/healthz"),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(h.statusCode()).isEqualTo(200);
              });
      long admission =
          timed(
              slow,
              rounds,
              "admission",
              () -> {
                HttpResponse<String> a =
                    apiServer.send(admission(wh, review), HttpResponse.BodyHandlers.ofString());
                assertThat(a.statusCode()).isEqualTo(200);
                JsonNode resp = json.readTree(a.body()).get("response");
                assertThat(resp.get("allowed").asBoolean()).isTrue();
                assertThat(resp.get("patch").asText())
                    .as("the labelled pod is mutated")
                    .isNotEmpty();
              });
      long scrape =
          timed(
              slow,
              rounds,
              "/metrics",
              () -> {
                HttpResponse<String> m =
                    probe.send(
                        get("http://127.0.0.1:" + metrics.port() + "/metrics"),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(m.statusCode()).isEqualTo(200);
                assertThat(m.body()).contains("jvmdiag_operator_admissions_total");
              });
      System.out.printf(
          "round %d: healthz %d ms, admission %d ms, scrape %d ms, %d closed so far%n",
          rounds, healthz, admission, scrape, held.size());
      for (long l : List.of(healthz, admission, scrape)) worst = Math.max(worst, l);
      sleep(Math.max(0, 1000 - ms(round)));
    }

    attacking = false;
    attackers.shutdown();
    attackers.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS);
    // every connection the attacker held long enough was closed by the server, in time
    List<Held> all = List.copyOf(held);
    List<String> problems = new ArrayList<>();
    for (String kind :
        List.of(
            "webhook half-open TLS",
            "webhook unfinished headers",
            "webhook unfinished body",
            "metrics unfinished headers",
            "metrics trickle",
            "probes unfinished headers",
            "probes trickle")) {
      List<Held> of = all.stream().filter(x -> x.what().equals(kind)).toList();
      List<Held> closed = of.stream().filter(x -> x.openMillis() >= 0).toList();
      List<Held> overdue =
          of.stream()
              .filter(x -> Math.abs(x.openMillis()) > CLOSE_WITHIN_MS)
              .filter(x -> x.openMillis() < 0 || x.openMillis() > CLOSE_WITHIN_MS)
              .toList();
      long max = closed.stream().mapToLong(Held::openMillis).max().orElse(-1);
      long quick = closed.stream().filter(x -> x.openMillis() < 5000).count();
      System.out.printf(
          "%s: %d connections, %d closed by the server (longest %d ms, %d within 5 s)%n",
          kind, of.size(), closed.size(), max, quick);
      long min = closed.stream().mapToLong(Held::openMillis).min().orElse(-1);
      if (min < HttpListener.Limits.DEFAULT.read().toMillis() - 1000)
        problems.add(kind + ": one closed after " + min + " ms, before its timeout");
      if (closed.size() < PER_KIND / 2)
        problems.add(kind + ": only " + closed.size() + " closed by the server");
      if (!overdue.isEmpty())
        problems.add(kind + ": " + overdue.size() + " open longer than " + CLOSE_WITHIN_MS + " ms");
    }
    assertThat(problems).isEmpty();
    assertThat(slow).as("answers that failed or took 1 s or more").isEmpty();
    assertThat(rounds).isGreaterThanOrEqualTo(25);
    System.out.printf(
        "%d rounds, each of /healthz, an admission and /metrics within %d ms at worst%n",
        rounds, worst);
  }

  interface Call {
    void run() throws Exception;
  }

  /** Runs one call: its milliseconds; a failure or 1 s or more is listed in slow. */
  static long timed(List<String> slow, int round, String what, Call call) {
    long t0 = System.nanoTime();
    try {
      call.run();
    } catch (Exception | AssertionError e) {
      slow.add("round " + round + ": " + what + " after " + ms(t0) + " ms: " + e);
      return ms(t0);
    }
    long took = ms(t0);
    if (took >= 1000) slow.add("round " + round + ": " + what + " took " + took + " ms");
    return took;
  }

  static HttpRequest admission(int port, String review) {
    return admission(port, review, Duration.ofSeconds(1));
  }

  static HttpRequest admission(int port, String review, Duration timeout) {
    return HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + WebhookServer.PATH))
        .timeout(timeout)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(review))
        .build();
  }

  static HttpRequest get(String url) {
    return get(url, Duration.ofSeconds(1));
  }

  static HttpRequest get(String url, Duration timeout) {
    return HttpRequest.newBuilder(URI.create(url)).timeout(timeout).build();
  }

  static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
