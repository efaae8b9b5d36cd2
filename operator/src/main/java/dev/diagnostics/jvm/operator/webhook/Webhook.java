package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.cache.LeanStore;
import dev.diagnostics.jvm.operator.certs.CertificateRotation;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import dev.diagnostics.jvm.operator.http.HttpListener;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admission side, on every replica: the certificate, the HTTPS server with the pod mutation and
 * the JvmDiagnostics validation, and both registrations kept in line with the CA it serves.
 */
public final class Webhook implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Webhook.class);

  private final KubernetesClient client;
  private final WebhookSettings s;
  private final PrometheusRegistry registry;
  private SharedIndexInformer<JvmDiagnostics> resources;
  private WebhookServer server;
  private CertificateRotation rotation;
  private WebhookCertificates certs;
  private volatile X509Certificate served;

  /** The first check passed: the registrations trust what this replica serves. */
  private volatile boolean trusted;

  public Webhook(KubernetesClient client, WebhookSettings settings, PrometheusRegistry registry) {
    this.client = client;
    this.s = settings;
    this.registry = registry;
  }

  public Webhook start() throws Exception {
    certs =
        new WebhookCertificates(
            client,
            s.namespace(),
            s.secret(),
            s.hosts(),
            s.manageConfig(), // without it (cert-manager) the Secret is only read, never re-issued
            grace(s.certCheckInterval()),
            WebhookCertificates.DEFAULT_SETTLE);
    WebhookCertificates.Material material = certs.ensure(); // nothing published before listening
    // the webhook reads resources from its own cache, one for both webhooks: an admission must not
    // wait on the API server. Indexed by target for the validating side's one-owner check. Lean
    // (metadata and spec: what admission reads) and listed in pages. Not the reconciler's cache:
    // that one runs on the Lease holder only, and every replica admits.
    resources =
        client
            .resources(JvmDiagnostics.class)
            .inAnyNamespace()
            .withLimit(Lean.LIST_LIMIT)
            .runnableInformer(0);
    resources.itemStore(new LeanStore<>(Lean::admitted));
    resources.addIndexers(Map.of(TargetClaims.INDEX, TargetClaims::indexKeys));
    TargetClaims claims =
        new TargetClaims(key -> resources.getIndexer().byIndex(TargetClaims.INDEX, key));
    resources.addEventHandler(
        new ResourceEventHandler<JvmDiagnostics>() {
          @Override
          public void onAdd(JvmDiagnostics r) {
            claims.cached(r);
          }

          @Override
          public void onUpdate(JvmDiagnostics old, JvmDiagnostics r) {
            claims.cached(r);
          }

          @Override
          public void onDelete(JvmDiagnostics r, boolean finalStateUnknown) {
            claims.deleted(r);
          }
        });
    resources.run(); // returns once the first LIST is in the cache
    AdmissionHandler handler =
        new AdmissionHandler(
            (ns, name) -> {
              JvmDiagnostics r = resources.getStore().getByKey(ns + "/" + name);
              return r != null
                  ? r
                  : client.resources(JvmDiagnostics.class).inNamespace(ns).withName(name).get();
            },
            s.agentImage(),
            s.allowedJvmOptions(),
            new WebhookMetrics(registry));
    ResourceValidator validator =
        new ResourceValidator(
            s.allowedJvmOptions(),
            WebhookRegistration.excludedNamespaces(s.namespace()),
            claims,
            new TargetPermission(client).asCheck(),
            registry);
    warmUp();
    server =
        new WebhookServer(
            s.bind(), material, handler, validator, HttpListener.Limits.DEFAULT, s.peerLimits());
    server.start();
    String target =
        s.target().endsWith(":0")
            ? s.target().substring(0, s.target().length() - 1) + server.port()
            : s.target();
    served = material.cert();
    LOG.info("webhook serving on port {} ({})", server.port(), target);
    rotation =
        new CertificateRotation(
            s.certCheckInterval(), CertificateRotation.DEFAULT_DEBOUNCE, () -> check(target));
    // the first check publishes the caBundle (Ready after it); a failure is logged and retried
    rotation.runNow();
    rotation.watch(
        "Secret " + s.namespace() + "/" + s.secret(),
        client.secrets().inNamespace(s.namespace()).withName(s.secret()));
    if (s.manageConfig()) {
      var registrations = client.admissionRegistration().v1();
      rotation
          .watch(
              "MutatingWebhookConfiguration " + s.configName(),
              registrations.mutatingWebhookConfigurations().withName(s.configName()))
          .watch(
              "ValidatingWebhookConfiguration " + s.configName(),
              registrations.validatingWebhookConfigurations().withName(s.configName()));
    }
    return this;
  }

  /**
   * Brings the Secret, the registrations' caBundle (self-managed) and the served certificate in
   * line; returns when to check again on its own (the end of a CA change's grace period). Reloading
   * the server swaps the certificate for new handshakes only: connections open, and the admissions
   * on them, carry on.
   */
  private synchronized Instant check(String target) {
    WebhookCertificates.Material m =
        s.manageConfig()
            ? certs.ensure((bundle, unchanged) -> register(target, bundle, unchanged))
            : certs.ensure();
    trusted = true;
    if (!m.cert().equals(served)) {
      server.reload(m);
      served = m.cert();
      LOG.info(
          "webhook serves a new certificate {} (signed by CA {}, valid until {})",
          WebhookCertificates.serial(m.cert()),
          WebhookCertificates.serial(m.caCert()),
          m.cert().getNotAfter().toInstant());
    }
    return certs.nextChange();
  }

  /**
   * How long a previous CA stays in the caBundle after a CA change: every replica serves a
   * certificate of the new CA within seconds (watch), at the latest at its next periodic check.
   */
  static Duration grace(Duration checkInterval) {
    Duration twice = checkInterval.multipliedBy(2);
    return twice.compareTo(Duration.ofMinutes(10)) < 0 ? Duration.ofMinutes(10) : twice;
  }

  /**
   * Both registrations (pods: mutating; JvmDiagnostics: validating), with the CAs that sign what
   * any replica serves.
   */
  private boolean register(String target, String caPem, BooleanSupplier secretUnchanged) {
    boolean mutating =
        WebhookRegistration.apply(
            client,
            WebhookRegistration.build(s.configName(), target, caPem, s.namespace()),
            secretUnchanged);
    boolean validating =
        WebhookRegistration.apply(
            client,
            WebhookRegistration.buildValidating(s.configName(), target, caPem),
            secretUnchanged);
    return mutating || validating;
  }

  /** Before the webhook listens (so before the pod is Ready): see AdmissionWarmup. */
  private void warmUp() {
    if (s.warmup() <= 0) return;
    try {
      AdmissionWarmup.Result w = AdmissionWarmup.run(s.agentImage(), s.warmup());
      LOG.info(
          "webhook warm-up: {} synthetic admissions ({} mutated) in {} ms",
          w.admissions(),
          w.mutated(),
          w.millis());
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("webhook warm-up failed, serving anyway: {}", e.toString());
    }
  }

  public int port() {
    return server.port();
  }

  /**
   * Ready for admissions: listening, and (self-managed) the registrations trust the certificate
   * served. A replica that started on a CA it had to publish itself becomes Ready only then.
   */
  public boolean serving() {
    return server != null && server.serving() && trusted;
  }

  @Override
  public void close() {
    if (rotation != null) rotation.close();
    if (server != null) server.close();
    if (resources != null) resources.close();
  }
}
