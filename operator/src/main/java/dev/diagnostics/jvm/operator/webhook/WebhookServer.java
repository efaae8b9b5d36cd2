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
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/**
 * HTTPS endpoint for the API server's admission calls; the certificate can be swapped live. Pod
 * admission and resource validation each run on a bounded pool of their own: a flood of one (or a
 * slow API server behind validation) cannot take the other's threads. Timeouts: {@link
 * HttpListener}.
 */
public final class WebhookServer implements AutoCloseable {
  public static final String PATH = "/mutate-pods";
  private static final int MAX_BODY = 4 * 1024 * 1024;

  /** Pod admission is CPU only (the resource comes from a cache). */
  static final int ADMISSION_THREADS = Math.max(4, Runtime.getRuntime().availableProcessors() * 2);

  /** Validation waits on the API server (an access review); JvmDiagnostics writes are rare. */
  static final int VALIDATION_THREADS = 4;

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

  /**
   * validator: the JvmDiagnostics validating webhook, served at {@link ResourceValidator#PATH}
   * (null: not served).
   */
  public WebhookServer(
      InetSocketAddress bind,
      Material material,
      AdmissionHandler handler,
      ResourceValidator validator,
      HttpListener.Limits limits)
      throws IOException {
    reload(material);
    SSLContext ssl;
    try {
      ssl = SSLContext.getInstance("TLS");
      ssl.init(new javax.net.ssl.KeyManager[] {keys}, null, null);
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot set up TLS for the webhook: " + e.getMessage(), e);
    }
    listener =
        new HttpListener("webhook", bind, ssl, limits, 8)
            .post(PATH, MAX_BODY, admissions, b -> json(handler.handle(b)))
            .get("/healthz", () -> Reply.text(200, "ok\n"));
    if (validator != null)
      listener.post(ResourceValidator.PATH, MAX_BODY, validations, b -> json(validator.handle(b)));
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
