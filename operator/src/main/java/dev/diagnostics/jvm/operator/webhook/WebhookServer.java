package dev.diagnostics.jvm.operator.webhook;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates.Material;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/** HTTPS endpoint for the API server's admission calls; the certificate can be swapped live. */
public final class WebhookServer implements AutoCloseable {
  public static final String PATH = "/mutate-pods";
  private static final int MAX_BODY = 4 * 1024 * 1024;
  private final HttpsServer server;
  private final ExecutorService executor;
  private final SwappableKeyManager keys = new SwappableKeyManager();

  public WebhookServer(InetSocketAddress bind, Material material, AdmissionHandler handler)
      throws IOException {
    this(bind, material, handler, null);
  }

  /**
   * validator: the JvmDiagnostics validating webhook, served at {@link ResourceValidator#PATH}
   * (null: not served).
   */
  public WebhookServer(
      InetSocketAddress bind,
      Material material,
      AdmissionHandler handler,
      ResourceValidator validator)
      throws IOException {
    reload(material);
    try {
      SSLContext ssl = SSLContext.getInstance("TLS");
      ssl.init(new javax.net.ssl.KeyManager[] {keys}, null, null);
      server = HttpsServer.create(bind, 256);
      server.setHttpsConfigurator(new HttpsConfigurator(ssl));
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot set up TLS for the webhook: " + e.getMessage(), e);
    }
    server.createContext(PATH, ex -> serve(ex, handler::handle));
    if (validator != null)
      server.createContext(ResourceValidator.PATH, ex -> serve(ex, validator::handle));
    server.createContext("/healthz", ex -> reply(ex, 200, "ok\n".getBytes(), "text/plain"));
    executor =
        Executors.newFixedThreadPool(
            Math.max(4, Runtime.getRuntime().availableProcessors() * 2),
            Thread.ofPlatform().name("webhook-", 0).daemon(true).factory());
    server.setExecutor(executor);
  }

  public void start() {
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
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

  private static void serve(HttpExchange ex, java.util.function.UnaryOperator<byte[]> handler)
      throws IOException {
    if (!"POST".equals(ex.getRequestMethod())) {
      reply(ex, 405, "POST an AdmissionReview\n".getBytes(), "text/plain");
      return;
    }
    byte[] body;
    try (InputStream in = ex.getRequestBody()) {
      body = in.readNBytes(MAX_BODY);
    }
    reply(ex, 200, handler.apply(body), "application/json");
  }

  private static void reply(HttpExchange ex, int code, byte[] body, String type)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", type);
    ex.sendResponseHeaders(code, body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
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
