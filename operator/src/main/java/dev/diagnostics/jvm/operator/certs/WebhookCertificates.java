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
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The webhook's CA and serving certificate, kept in one Secret so every replica serves the same
 * certificate. Rotated when less than a third of the validity is left; the CA is kept as long as it
 * has a year left, so the caBundle rarely changes.
 *
 * <p>A CA change (the CA renewed, or the Secret deleted or unusable and issued anew) never leaves
 * the API server without trust in a certificate some replica serves. The order of operations, each
 * step by whichever replica gets there first (the Secret's resourceVersion decides, a replica that
 * loses a write re-reads and takes the other's):
 *
 * <ol>
 *   <li>The Secret gets the new CA as {@code ca.crt} and keeps the serving certificate it had (or,
 *       when it was deleted or unusable, the one this replica serves), its CA moved to {@code
 *       ca-previous.crt} with the end of the grace period in an annotation. Every replica still
 *       serves the old certificate, which a CA of the bundle signs.
 *   <li>Each replica publishes the bundle the Secret names, new CA and previous CAs, into both
 *       registrations.
 *   <li>Only once a CA has been in the registrations for {@link #settle} (the API server reloads
 *       its webhook clients from a watch) does a replica issue or start serving a certificate of
 *       that CA. A replica that has not yet reloaded serves the old certificate, still trusted.
 *   <li>When the grace period ends (every replica has long reloaded: each watches the Secret, and
 *       checks it every --cert-check-interval anyway), the previous CAs are dropped from the Secret
 *       and then from the registrations.
 * </ol>
 *
 * A replica that finds the Secret rewritten by someone else with a CA that does not sign the
 * certificate it serves first adds its own CA back as a previous one (step 1), so a replaced Secret
 * takes the same path.
 */
public final class WebhookCertificates {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookCertificates.class);
  static final Duration CA_VALIDITY = Duration.ofDays(3650);
  static final Duration SERVING_VALIDITY = Duration.ofDays(365);
  static final Duration SERVING_RENEW_BEFORE = Duration.ofDays(120);
  static final Duration CA_RENEW_BEFORE = Duration.ofDays(365);
  static final String CA_NAME = "jvmdiag-webhook-ca";

  /** The Secret's key holding the previous CAs (PEM, newest first) during a CA change. */
  public static final String PREVIOUS_CA_KEY = "ca-previous.crt";

  /** The Secret's annotation: until when the previous CAs stay in the caBundle (RFC 3339). */
  public static final String PREVIOUS_UNTIL = "jvm.diagnostics.dev/ca-previous-until";

  /** How long a new CA is in the registrations before a certificate it signs is served. */
  public static final Duration DEFAULT_SETTLE = Duration.ofSeconds(2);

  /**
   * @param caCert the CA that signs {@code cert} (sent in the TLS chain)
   * @param caPem the caBundle the registrations hold: every CA a replica may serve a certificate of
   */
  public record Material(
      X509Certificate caCert, X509Certificate cert, java.security.PrivateKey key, String caPem) {}

  /** Where the caBundle goes: both webhook registrations. */
  @FunctionalInterface
  public interface Publisher {
    /**
     * Makes the registrations trust exactly these CAs (PEM, current first); throws if it cannot.
     * Returns whether it changed them (false: they held this bundle already). Before writing a
     * registration (after reading it) it asks {@code secretUnchanged}, and throws {@link
     * Superseded} when the Secret changed or another replica wrote the registration meanwhile.
     */
    boolean publish(String caBundlePem, BooleanSupplier secretUnchanged);
  }

  /**
   * A caBundle was not published because it was computed from a Secret that has changed since (or
   * the registration was written by another replica since it was read): read the Secret again.
   * Without this, a replica slow between reading the Secret and writing the registrations could put
   * an older caBundle over a newer one that another replica's certificate relies on.
   */
  public static final class Superseded extends RuntimeException {
    public Superseded(String what) {
      super(what + " changed meanwhile", null, false, false);
    }
  }

  /**
   * The Secret as written by the operator. issuer: the CA of the bundle that signs leaf, or null.
   */
  record Stored(
      CaBundle cas,
      java.security.PrivateKey caKey,
      X509Certificate leaf,
      java.security.PrivateKey leafKey,
      X509Certificate issuer) {
    Stored withCas(CaBundle next, java.security.PrivateKey key) {
      return new Stored(next, key, leaf, leafKey, issuer);
    }
  }

  private final KubernetesClient client;
  private final String namespace;
  private final String secretName;
  private final List<String> hosts;

  /** false: another party (cert-manager) owns the Secret; the operator only reads it. */
  private final boolean issue;

  private final Duration grace;
  private final Duration settle;

  /** What this replica serves, and the CAs it knew with it. */
  private Material served;

  private CaBundle servedCas;

  /** Since when each CA has been in the registrations, as this replica published them. */
  private final Map<X509Certificate, Instant> publishedSince = new HashMap<>();

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
    this(client, namespace, secretName, hosts, issue, Duration.ofHours(2), DEFAULT_SETTLE);
  }

  /**
   * @param grace how long previous CAs stay in the caBundle after a CA change: longer than any
   *     replica takes to serve a certificate of the new CA (at most --cert-check-interval)
   * @param settle how long a CA is in the registrations before a certificate it signs is served
   */
  public WebhookCertificates(
      KubernetesClient client,
      String namespace,
      String secretName,
      List<String> hosts,
      boolean issue,
      Duration grace,
      Duration settle) {
    this.client = client;
    this.namespace = namespace;
    this.secretName = secretName;
    this.hosts = hosts;
    this.issue = issue;
    this.grace = grace;
    this.settle = settle;
  }

  /**
   * Reads the Secret, (re)issuing what is missing, expiring or for other hosts (unless read-only),
   * without publishing anything: before the webhook listens, and in tests. A Secret in the middle
   * of a CA change is served as it is (its certificate is trusted).
   */
  public Material ensure() {
    return ensure(null);
  }

  /**
   * As {@link #ensure()}, and keeps the registrations trusting what every replica serves (see the
   * class comment for the order). Blocks for up to {@link #settle} when a CA is new in the bundle.
   */
  public synchronized Material ensure(Publisher publisher) {
    if (!issue) return served = read();
    for (int attempt = 0; attempt < 10; attempt++) {
      Instant now = Instant.now();
      Secret s = client.secrets().inNamespace(namespace).withName(secretName).get();
      Stored st = s == null ? null : parseOrNull(s, now);
      Stored next = null;
      if (st == null) {
        next = reissued(s == null ? "does not exist" : "is unusable", now);
      } else if (needsCaRenewal(st.cas().current(), now)) {
        LOG.info(
            "webhook CA of Secret {}/{} expires at {}: renewing it",
            namespace,
            secretName,
            st.cas().current().getNotAfter().toInstant());
        Issued ca = CertificateAuthority.newCa(CA_NAME, CA_VALIDITY);
        next = st.withCas(st.cas().rotate(ca.cert(), now, grace), ca.key());
      } else if (served != null && !st.cas().trusts(served.caCert(), now)) {
        LOG.info(
            "webhook Secret {}/{} no longer names the CA of the certificate this replica serves:"
                + " keeping it in the caBundle until {}",
            namespace,
            secretName,
            now.plus(grace));
        next = st.withCas(st.cas().keeping(servedTrusted(now), now, grace), st.caKey());
      } else if (st.cas().previousDue(now) && st.cas().current().equals(st.issuer())) {
        LOG.info(
            "webhook Secret {}/{}: the previous CA's grace period ended", namespace, secretName);
        next = st.withCas(st.cas().pruned(now), st.caKey());
      }
      if (next != null) {
        write(s, next);
        continue; // read back what is there now (ours, or another replica's)
      }
      boolean firstPublish = publishedSince.isEmpty();
      boolean changed = false;
      if (publisher != null) {
        String version = s.getMetadata().getResourceVersion();
        try {
          changed = publisher.publish(st.cas().pem(now), () -> unchanged(version));
        } catch (Superseded e) {
          continue; // another replica is ahead: read the Secret again
        }
        // counted from when the registrations hold it, not from when this check began
        noteTrusted(st.cas().trusted(now), Instant.now());
      }
      boolean untrusted = st.issuer() == null || !st.cas().trusts(st.issuer(), now);
      boolean staged = !st.cas().current().equals(st.issuer());
      if (untrusted || (staged && publisher != null) || needsServingRenewal(st.leaf(), now)) {
        awaitTrusted(st.cas().current(), publisher);
        Issued leaf =
            CertificateAuthority.newServing(
                new Issued(st.cas().current(), st.caKey()), hosts, SERVING_VALIDITY);
        write(s, new Stored(st.cas(), st.caKey(), leaf.cert(), leaf.key(), st.cas().current()));
        continue;
      }
      Material m = new Material(st.issuer(), st.leaf(), st.leafKey(), st.cas().pem(now));
      // a new certificate, or (first publish after a start) registrations that did not trust
      // what this replica already serves: not before the API server has the bundle
      if (served == null || !served.cert().equals(m.cert()) || (firstPublish && changed))
        awaitTrusted(m.caCert(), publisher);
      served = m;
      servedCas = st.cas();
      return m;
    }
    throw new IllegalStateException(
        "cannot settle the webhook Secret " + namespace + "/" + secretName);
  }

  /**
   * When the caBundle next changes on its own (the end of a grace period), for a check then; null:
   * not before a renewal.
   */
  public synchronized Instant nextChange() {
    return servedCas == null ? null : servedCas.nextChange(Instant.now());
  }

  /**
   * The Secret is gone or unusable: a new CA. A replica that serves a certificate keeps it in the
   * Secret and its CA trusted (step 1); one that serves nothing yet (first start) issues both.
   */
  private Stored reissued(String why, Instant now) {
    Issued ca = CertificateAuthority.newCa(CA_NAME, CA_VALIDITY);
    if (served == null) {
      LOG.info("webhook Secret {}/{} {}: issuing a CA and certificate", namespace, secretName, why);
      Issued leaf = CertificateAuthority.newServing(ca, hosts, SERVING_VALIDITY);
      return new Stored(CaBundle.of(ca.cert()), ca.key(), leaf.cert(), leaf.key(), ca.cert());
    }
    LOG.warn(
        "webhook Secret {}/{} {}: issuing a new CA; the certificate served until now stays"
            + " trusted until {}",
        namespace,
        secretName,
        why,
        now.plus(grace));
    CaBundle known = CaBundle.of(served.caCert()).keeping(servedTrusted(now), now, grace);
    return new Stored(
        known.rotate(ca.cert(), now, grace),
        ca.key(),
        served.cert(),
        served.key(),
        served.caCert());
  }

  /** The CA of what this replica serves, then the others it trusted with it. */
  private List<X509Certificate> servedTrusted(Instant now) {
    List<X509Certificate> cas = new ArrayList<>();
    cas.add(served.caCert());
    for (X509Certificate ca : servedCas.trusted(now)) if (!cas.contains(ca)) cas.add(ca);
    return cas;
  }

  /** The Secret still has this resourceVersion. */
  private boolean unchanged(String version) {
    Secret now = client.secrets().inNamespace(namespace).withName(secretName).get();
    return now != null && version.equals(now.getMetadata().getResourceVersion());
  }

  /** A certificate as logs name it: its serial number in hex. */
  public static String serial(X509Certificate c) {
    return c == null ? "?" : c.getSerialNumber().toString(16);
  }

  private void noteTrusted(List<X509Certificate> cas, Instant now) {
    publishedSince.keySet().retainAll(cas);
    for (X509Certificate ca : cas) publishedSince.putIfAbsent(ca, now);
  }

  /** Waits until {@code ca} has been in the registrations for {@link #settle}. */
  private void awaitTrusted(X509Certificate ca, Publisher publisher) {
    if (publisher == null) return;
    Instant since = publishedSince.get(ca);
    if (since == null)
      throw new IllegalStateException("CA not published: " + ca.getSubjectX500Principal());
    long wait = Duration.between(Instant.now(), since.plus(settle)).toMillis();
    if (wait <= 0) return;
    try {
      Thread.sleep(wait);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Creates or updates the Secret; false when another writer came first (re-read it). */
  private boolean write(Secret current, Stored st) {
    Map<String, String> data = new LinkedHashMap<>();
    data.put("ca.crt", b64(CertificateAuthority.pem(st.cas().current())));
    data.put("ca.key", b64(CertificateAuthority.pem(st.caKey())));
    data.put("tls.crt", b64(CertificateAuthority.pem(st.leaf())));
    data.put("tls.key", b64(CertificateAuthority.pem(st.leafKey())));
    Map<String, String> annotations = new LinkedHashMap<>();
    if (!st.cas().previous().isEmpty()) {
      StringBuilder previous = new StringBuilder();
      for (X509Certificate ca : st.cas().previous()) previous.append(CertificateAuthority.pem(ca));
      data.put(PREVIOUS_CA_KEY, b64(previous.toString()));
      annotations.put(PREVIOUS_UNTIL, st.cas().previousUntil().toString());
    }
    Secret next =
        new SecretBuilder()
            .withNewMetadata()
            .withName(secretName)
            .withNamespace(namespace)
            .addToLabels("app.kubernetes.io/managed-by", "jvmdiag-operator")
            .withAnnotations(annotations)
            .withResourceVersion(
                current == null ? null : current.getMetadata().getResourceVersion())
            .endMetadata()
            .withType("kubernetes.io/tls")
            .withData(data)
            .build();
    try {
      if (current == null) client.secrets().inNamespace(namespace).resource(next).create();
      else client.secrets().inNamespace(namespace).resource(next).update();
      LOG.info(
          "wrote webhook Secret {}/{}: certificate {} for {} signed by CA {}; CA {}{}",
          namespace,
          secretName,
          serial(st.leaf()),
          hosts,
          serial(st.issuer()),
          serial(st.cas().current()),
          st.cas().previous().isEmpty()
              ? ""
              : ", previous CA(s) "
                  + st.cas().previous().stream().map(WebhookCertificates::serial).toList()
                  + " trusted until "
                  + st.cas().previousUntil());
      return true;
    } catch (KubernetesClientException e) {
      // 409: another replica wrote it first (or created it); 404: deleted meanwhile. Re-read.
      if (e.getCode() == 409 || e.getCode() == 404) return false;
      throw e;
    }
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
    return missingHosts(m.cert());
  }

  private List<String> missingHosts(X509Certificate cert) {
    var sans = new HashSet<>(CertificateAuthority.sans(cert));
    return normalized().stream().filter(h -> !sans.contains(h)).toList();
  }

  boolean needsServingRenewal(X509Certificate leaf, Instant now) {
    Instant left = leaf.getNotAfter().toInstant().minus(SERVING_RENEW_BEFORE);
    return now.isAfter(left) || !missingHosts(leaf).isEmpty();
  }

  static boolean needsCaRenewal(X509Certificate ca, Instant now) {
    return now.isAfter(ca.getNotAfter().toInstant().minus(CA_RENEW_BEFORE));
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

  /** The Secret as the issuing mode writes it, or null (logged) when it is not usable. */
  static Stored parseOrNull(Secret s, Instant now) {
    try {
      Map<String, String> d = s.getData() == null ? Map.of() : s.getData();
      for (String k : List.of("ca.crt", "ca.key", "tls.crt", "tls.key"))
        if (d.get(k) == null || d.get(k).isEmpty())
          throw new IllegalArgumentException("missing key " + k);
      X509Certificate ca = CertificateAuthority.readCert(unb64(d.get("ca.crt")));
      var caKey = CertificateAuthority.readKey(unb64(d.get("ca.key")));
      X509Certificate leaf = CertificateAuthority.readCert(unb64(d.get("tls.crt")));
      var leafKey = CertificateAuthority.readKey(unb64(d.get("tls.key")));
      List<X509Certificate> previous =
          d.get(PREVIOUS_CA_KEY) == null || d.get(PREVIOUS_CA_KEY).isEmpty()
              ? List.of()
              : CertificateAuthority.readCerts(unb64(d.get(PREVIOUS_CA_KEY)));
      Instant until = Instant.EPOCH;
      var annotations = s.getMetadata().getAnnotations();
      if (annotations != null && annotations.get(PREVIOUS_UNTIL) != null) {
        try {
          until = Instant.parse(annotations.get(PREVIOUS_UNTIL));
        } catch (java.time.format.DateTimeParseException e) {
          until = Instant.EPOCH; // unreadable: the previous CAs are dropped
        }
      }
      CaBundle cas =
          new CaBundle(
              ca,
              previous.size() > CaBundle.MAX_PREVIOUS
                  ? previous.subList(0, CaBundle.MAX_PREVIOUS)
                  : previous,
              until);
      X509Certificate issuer = null;
      for (X509Certificate c : cas.trusted(now)) {
        if (signs(c, leaf)) {
          issuer = c;
          break;
        }
      }
      return new Stored(cas, caKey, leaf, leafKey, issuer);
    } catch (Exception e) {
      LOG.warn(
          "webhook Secret {} is unusable ({}); issuing a new one",
          s.getMetadata().getName(),
          e.getMessage());
      return null;
    }
  }

  private static boolean signs(X509Certificate ca, X509Certificate leaf) {
    try {
      leaf.verify(ca.getPublicKey());
      return true;
    } catch (Exception e) {
      return false;
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

  private static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String unb64(String s) {
    if (s == null) throw new IllegalArgumentException("missing key");
    return new String(Base64.getDecoder().decode(s), StandardCharsets.UTF_8);
  }
}
