package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import dev.diagnostics.jvm.operator.reconciler.AlertRuleApplier;
import dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler;
import dev.diagnostics.jvm.operator.webhook.AdmissionHandler;
import dev.diagnostics.jvm.operator.webhook.AdmissionWarmup;
import dev.diagnostics.jvm.operator.webhook.MetricsServer;
import dev.diagnostics.jvm.operator.webhook.ResourceValidator;
import dev.diagnostics.jvm.operator.webhook.TargetPermission;
import dev.diagnostics.jvm.operator.webhook.WebhookMetrics;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import dev.diagnostics.jvm.operator.webhook.WebhookServer;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfig;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import io.javaoperatorsdk.operator.Operator;
import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import dev.diagnostics.jvm.operator.reconciler.MissingInjectionMetric;
import dev.diagnostics.jvm.operator.reconciler.RolloutLimiter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wires the parts: webhook (certificates, HTTPS server, registration), reconciler, metrics. */
public final class OperatorApp implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OperatorApp.class);

  /** Everything the command line can set. */
  public record Settings(
      String agentImage,
      String namespace,
      InetSocketAddress webhookBind,
      String webhookTarget,
      List<String> webhookHosts,
      String webhookSecret,
      String webhookConfigName,
      boolean manageWebhookConfig,
      boolean webhook,
      boolean reconciler,
      InetSocketAddress metricsBind,
      Set<String> watchNamespaces,
      Duration certCheckInterval,
      LeaderElection leaderElection,
      int webhookWarmup,
      List<String> allowedJvmOptions,
      int maxRolloutsPerMinute) {
    /**
     * allowedJvmOptions: prefixes the cluster administrator allows in jvmOptions.extra beyond the
     * diagnostic options; maxRolloutsPerMinute: the cluster-wide limit on pod-template writes that
     * restart pods (0: none).
     */
    public Settings {
      allowedJvmOptions = allowedJvmOptions == null ? List.of() : List.copyOf(allowedJvmOptions);
    }

    /** Without a limit on rollouts. */
    public Settings(String agentImage, String namespace, InetSocketAddress webhookBind, String webhookTarget,
        List<String> webhookHosts, String webhookSecret, String webhookConfigName, boolean manageWebhookConfig,
        boolean webhook, boolean reconciler, InetSocketAddress metricsBind, Set<String> watchNamespaces,
        Duration certCheckInterval, LeaderElection leaderElection, int webhookWarmup, List<String> allowedJvmOptions) {
      this(agentImage, namespace, webhookBind, webhookTarget, webhookHosts, webhookSecret, webhookConfigName,
          manageWebhookConfig, webhook, reconciler, metricsBind, watchNamespaces, certCheckInterval, leaderElection,
          webhookWarmup, allowedJvmOptions, 0);
    }

    /** Without exceptions of the cluster administrator's to the diagnostic-options allowlist. */
    public Settings(String agentImage, String namespace, InetSocketAddress webhookBind, String webhookTarget,
        List<String> webhookHosts, String webhookSecret, String webhookConfigName, boolean manageWebhookConfig,
        boolean webhook, boolean reconciler, InetSocketAddress metricsBind, Set<String> watchNamespaces,
        Duration certCheckInterval, LeaderElection leaderElection, int webhookWarmup) {
      this(agentImage, namespace, webhookBind, webhookTarget, webhookHosts, webhookSecret, webhookConfigName,
          manageWebhookConfig, webhook, reconciler, metricsBind, watchNamespaces, certCheckInterval, leaderElection,
          webhookWarmup, List.of());
    }

    /** Without a start-up warm-up of the admission path (tests). */
    public Settings(String agentImage, String namespace, InetSocketAddress webhookBind, String webhookTarget,
        List<String> webhookHosts, String webhookSecret, String webhookConfigName, boolean manageWebhookConfig,
        boolean webhook, boolean reconciler, InetSocketAddress metricsBind, Set<String> watchNamespaces,
        Duration certCheckInterval, LeaderElection leaderElection) {
      this(agentImage, namespace, webhookBind, webhookTarget, webhookHosts, webhookSecret, webhookConfigName,
          manageWebhookConfig, webhook, reconciler, metricsBind, watchNamespaces, certCheckInterval, leaderElection, 0);
    }

    /** Without leader election (a single replica, or tests that run one reconciler). */
    public Settings(String agentImage, String namespace, InetSocketAddress webhookBind, String webhookTarget,
        List<String> webhookHosts, String webhookSecret, String webhookConfigName, boolean manageWebhookConfig,
        boolean webhook, boolean reconciler, InetSocketAddress metricsBind, Set<String> watchNamespaces,
        Duration certCheckInterval) {
      this(agentImage, namespace, webhookBind, webhookTarget, webhookHosts, webhookSecret, webhookConfigName,
          manageWebhookConfig, webhook, reconciler, metricsBind, watchNamespaces, certCheckInterval, null);
    }
  }

  /**
   * Only the holder of the Lease reconciles; the webhook serves on every replica. A replica that
   * loses the Lease while running exits (exitOnLostLease) so it can never reconcile next to the new leader.
   */
  public record LeaderElection(String namespace, String leaseName, String identity, Duration leaseDuration,
      Duration renewDeadline, Duration retryPeriod, boolean exitOnLostLease) {
    public static LeaderElection defaults(String namespace, String leaseName, String identity) {
      return new LeaderElection(namespace, leaseName, identity, LeaderElectionConfiguration.LEASE_DURATION_DEFAULT_VALUE,
          LeaderElectionConfiguration.RENEW_DEADLINE_DEFAULT_VALUE, LeaderElectionConfiguration.RETRY_PERIOD_DEFAULT_VALUE, true);
    }
  }

  private final KubernetesClient client;
  private final Settings s;
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private WebhookServer webhookServer;
  private MetricsServer metricsServer;
  private Operator operator;
  private SharedIndexInformer<JvmDiagnostics> resources;
  private ScheduledExecutorService rotation;
  private volatile boolean closing;
  private volatile boolean leading;
  private volatile boolean healthy = true;
  private CompletableFuture<?> elector;

  public OperatorApp(KubernetesClient client, Settings settings) {
    this.client = client;
    this.s = settings;
  }

  public OperatorApp start() throws Exception {
    if (s.metricsBind() != null) {
      metricsServer = new MetricsServer(s.metricsBind(), registry, this::healthy);
      metricsServer.start();
    }
    if (s.webhook()) startWebhook();
    if (s.reconciler()) {
      AlertRuleApplier alerts = new AlertRuleApplier(client, RuleRenderer.fromClasspath());
      operator = new Operator(o -> o.withKubernetesClient(client).withCloseClientOnStop(false)
          .withStopOnInformerErrorDuringStartup(true).withCacheSyncTimeout(Duration.ofSeconds(60))
          .withConcurrentReconciliationThreads(RECONCILE_THREADS));
      operator.register(new JvmDiagnosticsReconciler(s.agentImage(), s.allowedJvmOptions(), alerts,
          new MissingInjectionMetric(registry), new RolloutLimiter(s.maxRolloutsPerMinute(), registry)), o -> {
        if (s.watchNamespaces() != null && !s.watchNamespaces().isEmpty()) o.settingNamespaces(s.watchNamespaces());
      });
      if (s.leaderElection() == null) {
        operator.start(); // throws: the caller exits non-zero
      } else {
        startLeaderElection(s.leaderElection());
      }
    }
    return this;
  }

  /** Reconciles are mostly waiting on the API server: many in flight, few CPU. */
  static final int RECONCILE_THREADS = 32;

  /**
   * Our own elector instead of JOSDK's: JOSDK logs a failed start on the leader ("Error starting
   * operator") and keeps the process up and healthy, and it cannot tell a lost Lease from a normal
   * stop. Here the reconciler starts only on the holder, and a start error, a Lease taken by
   * another identity or a Lease deleted under us are fatal (exit 1, the kubelet restarts us as a
   * follower); only close() is a normal stop.
   */
  private void startLeaderElection(LeaderElection le) {
    LeaseLock lease = new LeaseLock(le.namespace(), le.leaseName(), le.identity());
    Lock lock = new Lock() {
      @Override
      public LeaderElectionRecord get(KubernetesClient c) {
        LeaderElectionRecord r = lease.get(c);
        if (r == null && leading) fatal("Lease " + le.namespace() + "/" + le.leaseName() + " was deleted while we held it");
        return r;
      }

      @Override
      public void create(KubernetesClient c, LeaderElectionRecord r) {
        lease.create(c, r);
      }

      @Override
      public void update(KubernetesClient c, LeaderElectionRecord r) {
        lease.update(c, r);
      }

      @Override
      public String identity() {
        return lease.identity();
      }

      @Override
      public String describe() {
        return lease.describe();
      }
    };
    LeaderCallbacks callbacks = new LeaderCallbacks(
        () -> {
          leading = true;
          LOG.info("leader election: {} holds Lease {}/{}, reconciling", le.identity(), le.namespace(), le.leaseName());
          // not on the elector's thread: a cache sync must not hold up renewing the Lease
          Thread.ofPlatform().name("reconciler-start").daemon(true).start(() -> {
            try {
              operator.start();
            } catch (RuntimeException e) {
              fatal("the reconciler did not start: " + Errors.oneLine(e));
            }
          });
        },
        () -> {
          if (!closing) fatal("lost Lease " + le.namespace() + "/" + le.leaseName());
        },
        leader -> LOG.info("leader election: Lease {}/{} held by {}", le.namespace(), le.leaseName(), leader));
    LeaderElectionConfig config = new LeaderElectionConfig(lock, le.leaseDuration(), le.renewDeadline(), le.retryPeriod(),
        callbacks, true, le.leaseName());
    elector = client.leaderElector().withConfig(config).build().start();
    elector.whenComplete((v, t) -> {
      if (t != null && !closing && !(t instanceof CancellationException)) fatal("leader election failed: " + Errors.oneLine(t));
    });
  }

  /**
   * A replica that leads without reconciling, or reconciles next to a new leader, must not stay
   * up: exit 1 (when exitOnLostLease; in-process tests only record it and turn /healthz red).
   */
  private void fatal(String why) {
    if (closing) return;
    healthy = false;
    LeaderElection le = s.leaderElection();
    boolean exit = le == null || le.exitOnLostLease();
    LOG.error("{}{}", why, exit ? ": exiting (code 1) so that no replica leads without reconciling or reconciles next to the new leader" : "");
    if (exit) Thread.ofPlatform().start(() -> System.exit(1));
  }

  /** False after a fatal leader-election or start error (when not exiting). */
  public boolean healthy() {
    return healthy;
  }

  /**
   * JOSDK does not release the Lease on stop: shorten it to 1 s if we still hold it, so a
   * follower takes over now instead of after the full lease duration (a rolling update).
   */
  private void releaseLease() {
    LeaderElection le = s.leaderElection();
    if (le == null) return;
    try {
      var leases = client.leases().inNamespace(le.namespace());
      var current = leases.withName(le.leaseName()).get();
      if (current == null || current.getSpec() == null || !le.identity().equals(current.getSpec().getHolderIdentity())) return;
      current.getSpec().setLeaseDurationSeconds(1);
      current.getSpec().setRenewTime(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC));
      leases.resource(current).update(); // optimistic: fails if a follower already took it over
      LOG.info("leader election: released Lease {}/{}", le.namespace(), le.leaseName());
    } catch (RuntimeException e) {
      LOG.warn("leader election: could not release Lease {}/{} (it expires by itself): {}", le.namespace(), le.leaseName(), e.getMessage());
    }
  }

  private void startWebhook() throws Exception {
    WebhookCertificates certs = new WebhookCertificates(client, s.namespace(), s.webhookSecret(), s.webhookHosts(),
        s.manageWebhookConfig()); // without it (cert-manager) the Secret is only read, never re-issued
    WebhookCertificates.Material material = certs.ensure();
    // the webhook reads resources from its own cache: an admission must not wait on the API server
    resources = client.resources(JvmDiagnostics.class).inAnyNamespace().inform();
    AdmissionHandler handler = new AdmissionHandler((ns, name) -> {
      JvmDiagnostics r = resources.getStore().getByKey(ns + "/" + name);
      return r != null ? r : client.resources(JvmDiagnostics.class).inNamespace(ns).withName(name).get();
    }, s.agentImage(), s.allowedJvmOptions(), new WebhookMetrics(registry));
    // a LIST, not the cache: a resource created a moment ago must count (JvmDiagnostics writes are rare)
    ResourceValidator validator = new ResourceValidator(s.allowedJvmOptions(),
        ns -> client.resources(JvmDiagnostics.class).inNamespace(ns).list().getItems(),
        new TargetPermission(client).asCheck(), registry);
    warmUp();
    webhookServer = new WebhookServer(s.webhookBind(), material, handler, validator);
    webhookServer.start();
    String target = s.webhookTarget().endsWith(":0")
        ? s.webhookTarget().substring(0, s.webhookTarget().length() - 1) + webhookServer.port() : s.webhookTarget();
    if (s.manageWebhookConfig()) register(target, material.caPem());
    LOG.info("webhook serving on port {} ({})", webhookServer.port(), target);
    rotation = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("cert-rotation").daemon(true).factory());
    long every = s.certCheckInterval().toSeconds();
    rotation.scheduleWithFixedDelay(() -> {
      try {
        WebhookCertificates.Material m = certs.ensure();
        webhookServer.reload(m);
        if (s.manageWebhookConfig()) register(target, m.caPem());
      } catch (RuntimeException e) {
        LOG.warn("certificate check failed, retrying in {}s: {}", every, e.getMessage());
      }
    }, every, every, TimeUnit.SECONDS);
  }

  /** Both registrations (pods: mutating; JvmDiagnostics: validating), with the CA that signs what we serve. */
  private void register(String target, String caPem) {
    WebhookRegistration.apply(client, WebhookRegistration.build(s.webhookConfigName(), target, caPem, s.namespace()));
    WebhookRegistration.apply(client, WebhookRegistration.buildValidating(s.webhookConfigName(), target, caPem));
  }

  /** Before the webhook listens (so before the pod is Ready): see AdmissionWarmup. */
  private void warmUp() {
    if (s.webhookWarmup() <= 0) return;
    try {
      AdmissionWarmup.Result w = AdmissionWarmup.run(s.agentImage(), s.webhookWarmup());
      LOG.info("webhook warm-up: {} synthetic admissions ({} mutated) in {} ms", w.admissions(), w.mutated(), w.millis());
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("webhook warm-up failed, serving anyway: {}", e.toString());
    }
  }

  public int webhookPort() {
    return webhookServer.port();
  }

  public int metricsPort() {
    return metricsServer.port();
  }

  @Override
  public void close() {
    closing = true;
    if (elector != null) elector.cancel(true); // releaseOnCancel: the Lease is shortened for a follower
    if (operator != null) {
      operator.stop();
      releaseLease();
    }
    if (rotation != null) rotation.shutdownNow();
    if (webhookServer != null) webhookServer.close();
    if (resources != null) resources.close();
    if (metricsServer != null) metricsServer.close();
  }
}
