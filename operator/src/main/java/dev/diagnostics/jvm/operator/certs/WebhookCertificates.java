package dev.diagnostics.jvm.operator.certs;

import dev.diagnostics.jvm.operator.certs.CertificateAuthority.Issued;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The webhook's CA and serving certificate, kept in one Secret so every replica serves the same
 * certificate. Rotated when less than a third of the validity is left; the CA is kept as long as it
 * has a year left, so the caBundle rarely changes.
 */
public final class WebhookCertificates {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookCertificates.class);
  static final Duration CA_VALIDITY = Duration.ofDays(3650);
  static final Duration SERVING_VALIDITY = Duration.ofDays(365);
  static final Duration SERVING_RENEW_BEFORE = Duration.ofDays(120);
  static final Duration CA_RENEW_BEFORE = Duration.ofDays(365);

  public record Material(
      X509Certificate caCert, X509Certificate cert, java.security.PrivateKey key, String caPem) {}

  private final KubernetesClient client;
  private final String namespace;
  private final String secretName;
  private final List<String> hosts;

  /** false: another party (cert-manager) owns the Secret; the operator only reads it. */
  private final boolean issue;

  public WebhookCertificates(
      KubernetesClient client, String namespace, String secretName, List<String> hosts) {
    this(client, namespace, secretName, hosts, true);
  }

  public WebhookCertificates(
      KubernetesClient client,
      String namespace,
      String secretName,
      List<String> hosts,
      boolean issue) {
    this.client = client;
    this.namespace = namespace;
    this.secretName = secretName;
    this.hosts = hosts;
    this.issue = issue;
  }

  /**
   * Reads the Secret, (re)issuing what is missing, expiring or for other hosts (unless read-only).
   */
  public Material ensure() {
    if (!issue) return read();
    for (int attempt = 0; attempt < 5; attempt++) {
      Secret s = client.secrets().inNamespace(namespace).withName(secretName).get();
      Material current = s == null ? null : parseOrNull(s);
      if (current != null && !needsServingRenewal(current) && !needsCaRenewal(current))
        return current;
      Issued ca =
          current != null && !needsCaRenewal(current)
              ? new Issued(current.caCert(), readCaKey(s))
              : CertificateAuthority.newCa("jvmdiag-webhook-ca", CA_VALIDITY);
      if (ca.key() == null) ca = CertificateAuthority.newCa("jvmdiag-webhook-ca", CA_VALIDITY);
      Issued serving = CertificateAuthority.newServing(ca, hosts, SERVING_VALIDITY);
      Secret next =
          new SecretBuilder()
              .withNewMetadata()
              .withName(secretName)
              .withNamespace(namespace)
              .addToLabels("app.kubernetes.io/managed-by", "jvmdiag-operator")
              .withResourceVersion(s == null ? null : s.getMetadata().getResourceVersion())
              .endMetadata()
              .withType("kubernetes.io/tls")
              .withData(
                  Map.of(
                      "ca.crt", b64(CertificateAuthority.pem(ca.cert())),
                      "ca.key", b64(CertificateAuthority.pem(ca.key())),
                      "tls.crt", b64(CertificateAuthority.pem(serving.cert())),
                      "tls.key", b64(CertificateAuthority.pem(serving.key()))))
              .build();
      try {
        if (s == null) client.secrets().inNamespace(namespace).resource(next).create();
        else client.secrets().inNamespace(namespace).resource(next).update();
        LOG.info("issued webhook certificate for {} (Secret {}/{})", hosts, namespace, secretName);
      } catch (KubernetesClientException e) {
        if (e.getCode() == 409) continue; // another replica wrote it first: use theirs
        throw e;
      }
    }
    Secret s = client.secrets().inNamespace(namespace).withName(secretName).get();
    Material m = s == null ? null : parseOrNull(s);
    if (m == null)
      throw new IllegalStateException(
          "cannot settle the webhook Secret " + namespace + "/" + secretName);
    return m;
  }

  /**
   * Read-only (--no-manage-webhook-config): the Secret is served as it is. What it lacks is named
   * (an error for what the server cannot do without, a warning for hosts or an expiry cert-manager
   * should fix), never repaired by writing the Secret.
   */
  Material read() {
    String where = "webhook Secret " + namespace + "/" + secretName;
    String fix =
        "with --no-manage-webhook-config the operator only reads it: check the cert-manager Certificate that writes it";
    Secret s = client.secrets().inNamespace(namespace).withName(secretName).get();
    if (s == null) throw new IllegalStateException(where + " does not exist; " + fix);
    Map<String, String> d = s.getData() == null ? Map.of() : s.getData();
    List<String> lacking =
        List.of("tls.crt", "tls.key").stream()
            .filter(k -> d.get(k) == null || d.get(k).isEmpty())
            .toList();
    if (!lacking.isEmpty())
      throw new IllegalStateException(where + " lacks " + String.join(", ", lacking) + "; " + fix);
    Material m;
    try {
      m = parse(s);
    } catch (Exception e) {
      throw new IllegalStateException(where + " is unusable (" + e.getMessage() + "); " + fix);
    }
    List<String> missing = missingHosts(m);
    if (!missing.isEmpty()) {
      LOG.warn(
          "{}: the serving certificate does not name {} (it names {}); not re-issued: {}",
          where,
          missing,
          CertificateAuthority.sans(m.cert()),
          fix);
    }
    if (m.caCert() == null)
      LOG.warn("{} has no ca.crt: serving the certificate without its CA in the chain", where);
    if (Instant.now().isAfter(m.cert().getNotAfter().toInstant())) {
      LOG.warn(
          "{}: the serving certificate expired at {}; not re-issued: {}",
          where,
          m.cert().getNotAfter().toInstant(),
          fix);
    }
    return m;
  }

  /** The hosts this webhook is reached by that the serving certificate does not name. */
  public List<String> missingHosts(Material m) {
    var sans = new HashSet<>(CertificateAuthority.sans(m.cert()));
    return normalized().stream().filter(h -> !sans.contains(h)).toList();
  }

  boolean needsServingRenewal(Material m) {
    Instant left = m.cert().getNotAfter().toInstant().minus(SERVING_RENEW_BEFORE);
    return Instant.now().isAfter(left) || !missingHosts(m).isEmpty();
  }

  static boolean needsCaRenewal(Material m) {
    return Instant.now().isAfter(m.caCert().getNotAfter().toInstant().minus(CA_RENEW_BEFORE));
  }

  private List<String> normalized() {
    return hosts.stream()
        .map(h -> {
          try {
            return CertificateAuthority.isIp(h)
                ? java.net.InetAddress.getByName(h).getHostAddress()
                : h;
          } catch (java.net.UnknownHostException e) {
            return h;
          }
        })
        .toList();
  }

  private static Material parseOrNull(Secret s) {
    try {
      Material m = s.getData() == null ? null : parse(s);
      if (m != null && m.caCert() == null) throw new IllegalArgumentException("missing key ca.crt");
      return m;
    } catch (Exception e) {
      LOG.warn(
          "webhook Secret {} is unusable ({}); issuing a new one",
          s.getMetadata().getName(),
          e.getMessage());
      return null;
    }
  }

  /**
   * ca.crt is optional here (a cert-manager issuer may not write it); the issuing path requires it.
   */
  private static Material parse(Secret s) throws Exception {
    Map<String, String> d = s.getData();
    String caPem =
        d.get("ca.crt") == null || d.get("ca.crt").isEmpty() ? null : unb64(d.get("ca.crt"));
    X509Certificate ca = caPem == null ? null : CertificateAuthority.readCert(caPem);
    X509Certificate cert = CertificateAuthority.readCert(unb64(d.get("tls.crt")));
    var key = CertificateAuthority.readKey(unb64(d.get("tls.key")));
    if (ca != null) cert.verify(ca.getPublicKey());
    return new Material(ca, cert, key, caPem);
  }

  private static java.security.PrivateKey readCaKey(Secret s) {
    try {
      return CertificateAuthority.readKey(unb64(s.getData().get("ca.key")));
    } catch (Exception e) {
      return null;
    }
  }

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String unb64(String s) {
    if (s == null) throw new IllegalArgumentException("missing key");
    return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
  }
}
