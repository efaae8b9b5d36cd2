package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.certs.WebhookCertificates.Material;
import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.http.HttpListener.Reply;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTPS endpoint for the API server's admission calls; the certificate can be swapped live. Pod
 * admission and resource validation each run on a bounded pool of their own: a flood of one (or a
 * slow API server behind validation) cannot take the other's threads. Timeouts: {@link
 * HttpListener}.
 *
 * <p>Each endpoint answers one peer address at most {@link PeerLimits} requests ({@link
 * PeerLimiter}): the API server calls from few addresses, and a pod that reaches the port (no
 * NetworkPolicy keeps it out) must not turn a flood of forged AdmissionReviews into as many
 * SubjectAccessReviews or lookups, nor take the pools' places from the API server. A request over
 * its peer's limit is answered at once on the listener's thread, never queued: validation denies it
 * with 429 (failurePolicy Fail would refuse an unchecked resource anyway; this says why), pod
 * admission allows the pod unchanged (it never denies a pod). Counted in {@code
 * jvmdiag_operator_webhook_requests_refused_total{webhook,reason="PeerRateLimit"}}.
 */
public final class WebhookServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookServer.class);
  public static final String PATH = "/mutate-pods";
  private static final int MAX_BODY = 4 * 1024 * 1024;

  /** Pod admission is CPU only (the resource comes from a cache). */
  static final int ADMISSION_THREADS = Math.max(4, Runtime.getRuntime().availableProcessors() * 2);

  /** Validation waits on the API server (an access review); JvmDiagnostics writes are rare. */
  static final int VALIDATION_THREADS = 4;

  /**
   * Per peer address and endpoint: pods (/mutate-pods, --webhook-pod-limit) and validation
   * (/validate-jvmdiagnostics, --webhook-validation-limit).
   */
  public record PeerLimits(PeerRateLimit pods, PeerRateLimit validation) {
    /**
     * Validation: JvmDiagnostics writes are rare, and each costs a SubjectAccessReview. Pods: one
     * API server address may admit a scale-up of many labelled pods, and a pod over the limit is
     * admitted uninjected (healed by a rollout later), so the bar is higher; the handler is CPU
     * only, about 1 ms a pod.
     */
    public static final PeerLimits DEFAULT =
        new PeerLimits(new PeerRateLimit(200, 400), new PeerRateLimit(50, 100));

    public static final PeerLimits NONE = new PeerLimits(PeerRateLimit.NONE, PeerRateLimit.NONE);
  }

  private final HttpListener listener;
  private final ExecutorService admissions =
      HttpListener.pool("webhook-admission", ADMISSION_THREADS, 256);
  private final ExecutorService validations =
      HttpListener.pool("webhook-validation", VALIDATION_THREADS, 32);
  private final SwappableKeyManager keys = new SwappableKeyManager();

  public WebhookServer(InetSocketAddress bind, Material material, AdmissionHandler handler)
      throws IOException {
    this(bind, material, handler, null);
  }

  public WebhookServer(
      InetSocketAddress bind,
      Material material,
      AdmissionHandler handler,
      ResourceValidator validator)
      throws IOException {
    this(bind, material, handler, validator, HttpListener.Limits.DEFAULT);
  }

  public WebhookServer(
      InetSocketAddress bind,
      Material material,
      AdmissionHandler handler,
      ResourceValidator validator,
      HttpListener.Limits limits)
      throws IOException {
    this(bind, material, handler, validator, limits, PeerLimits.DEFAULT);
  }

  /**
   * validator: the JvmDiagnostics validating webhook, served at {@link ResourceValidator#PATH}
   * (null: not served); peers: how many requests one address may send each endpoint.
   */
  public WebhookServer(
      InetSocketAddress bind,
      Material material,
      AdmissionHandler handler,
      ResourceValidator validator,
      HttpListener.Limits limits,
      PeerLimits peers)
      throws IOException {
    reload(material);
    SSLContext ssl;
    try {
      ssl = SSLContext.getInstance("TLS");
      ssl.init(new javax.net.ssl.KeyManager[] {keys}, null, null);
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot set up TLS for the webhook: " + e.getMessage(), e);
    }
    WebhookMetrics metrics = handler.metrics();
    listener =
        new HttpListener("webhook", bind, ssl, limits, 8)
            .post(
                PATH,
                MAX_BODY,
                admissions,
                b -> json(handler.handle(b)),
                new PeerGate(
                    new PeerLimiter(peers.pods()),
                    "pods",
                    "pod admission",
                    "--webhook-pod-limit",
                    "webhook.rateLimitPerPeer.pods",
                    "; the pod is admitted without it and its JvmDiagnostics names it"
                        + " (WebhookUnavailable)",
                    handler::refused,
                    metrics))
            .get("/healthz", () -> Reply.text(200, "ok\n"));
    if (validator != null)
      listener.post(
          ResourceValidator.PATH,
          MAX_BODY,
          validations,
          b -> json(validator.handle(b)),
          new PeerGate(
              new PeerLimiter(peers.validation()),
              "jvmdiagnostics",
              "validation",
              "--webhook-validation-limit",
              "webhook.rateLimitPerPeer.validation",
              ": retry in a moment",
              validator::refused,
              metrics));
  }

  /** Answers a peer over its limit at once, with the endpoint's refusal; counts and logs it. */
  private static final class PeerGate implements HttpListener.Gate {
    private final PeerLimiter limiter;
    private final String webhook;
    private final String what;
    private final String flag;
    private final String value;
    private final String then;
    private final BiFunction<byte[], String, byte[]> refusal;
    private final WebhookMetrics metrics;
    private final AtomicLong nextLog = new AtomicLong(System.nanoTime());
    private final AtomicLong unlogged = new AtomicLong();

    PeerGate(
        PeerLimiter limiter,
        String webhook,
        String what,
        String flag,
        String value,
        String then,
        BiFunction<byte[], String, byte[]> refusal,
        WebhookMetrics metrics) {
      this.limiter = limiter;
      this.webhook = webhook;
      this.what = what;
      this.flag = flag;
      this.value = value;
      this.then = then;
      this.refusal = refusal;
      this.metrics = metrics;
    }

    @Override
    public Reply check(InetSocketAddress peer, byte[] body) {
      if (peer == null || limiter.tryAcquire(peer.getAddress())) return null;
      metrics.refused.labelValues(webhook, "PeerRateLimit").inc();
      String from = peer.getAddress().getHostAddress();
      PeerRateLimit l = limiter.limit();
      String why =
          "too many "
              + what
              + " requests from "
              + from
              + "; the jvm-diagnostics operator answers at most "
              + l.toString().replace("/", " a second, with bursts of ")
              + ", from one address ("
              + flag
              + ", chart value "
              + value
              + ")"
              + then;
      // at most one line a minute, however many peers flood: a client must not fill the log
      long n = unlogged.incrementAndGet();
      long now = System.nanoTime();
      long next = nextLog.get();
      if (now - next >= 0 && nextLog.compareAndSet(next, now + 60_000_000_000L)) {
        unlogged.addAndGet(-n);
        LOG.warn(
            "webhook: refused {} {} request(s) over the limit of one peer address in the last"
                + " minute, the last from {} ({} {}, chart value {})",
            n,
            what,
            from,
            flag,
            l,
            value);
      }
      return json(refusal.apply(body, why));
    }
  }

  private static Reply json(byte[] body) {
    return new Reply(200, body, "application/json");
  }

  public void start() throws IOException {
    listener.start();
  }

  public int port() {
    return listener.port();
  }

  public boolean serving() {
    return listener.running();
  }

  /** Serves the new certificate to every new TLS handshake. */
  public void reload(Material m) {
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(null, null);
      ks.setKeyEntry(
          "webhook",
          m.key(),
          new char[0],
          m.caCert() == null
              ? new X509Certificate[] {m.cert()}
              : new X509Certificate[] {m.cert(), m.caCert()});
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, new char[0]);
      keys.delegate.set((X509ExtendedKeyManager) kmf.getKeyManagers()[0]);
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot load the webhook certificate: " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    listener.close();
    admissions.shutdownNow();
    validations.shutdownNow();
  }

  /** Delegates to the current key manager so rotation needs no restart. */
  static final class SwappableKeyManager extends X509ExtendedKeyManager {
    final AtomicReference<X509ExtendedKeyManager> delegate = new AtomicReference<>();

    @Override
    public String[] getClientAliases(String t, Principal[] i) {
      return delegate.get().getClientAliases(t, i);
    }

    @Override
    public String chooseClientAlias(String[] t, Principal[] i, Socket s) {
      return delegate.get().chooseClientAlias(t, i, s);
    }

    @Override
    public String[] getServerAliases(String t, Principal[] i) {
      return delegate.get().getServerAliases(t, i);
    }

    @Override
    public String chooseServerAlias(String t, Principal[] i, Socket s) {
      return delegate.get().chooseServerAlias(t, i, s);
    }

    @Override
    public String chooseEngineServerAlias(String t, Principal[] i, SSLEngine e) {
      return delegate.get().chooseEngineServerAlias(t, i, e);
    }

    @Override
    public X509Certificate[] getCertificateChain(String a) {
      return delegate.get().getCertificateChain(a);
    }

    @Override
    public PrivateKey getPrivateKey(String a) {
      return delegate.get().getPrivateKey(a);
    }
  }
}
