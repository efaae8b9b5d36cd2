package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.cache.LeanStore;
import dev.diagnostics.jvm.operator.election.LeaderElector;
import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.metrics.BuildInfo;
import dev.diagnostics.jvm.operator.metrics.MetricsServer;
import dev.diagnostics.jvm.operator.metrics.ProbeServer;
import dev.diagnostics.jvm.operator.metrics.ReconcileMetrics;
import dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.Webhook;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.javaoperatorsdk.operator.Operator;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires the parts: the probes, metrics, the webhook (every replica, leader or not), the reconciler
 * (the Lease holder: a fresh JOSDK operator per term of leadership).
 */
public final class OperatorApp implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OperatorApp.class);

  /**
   * What runs in this process.
   *
   * @param webhook the webhook's settings; null: no webhook
   * @param reconciler the reconciler's settings; null: no reconciler
   * @param metricsBind where /metrics listens; null: nowhere
   * @param probeBind where the kubelet's /healthz and /readyz listen; null: nowhere
   */
  public record Settings(
      WebhookSettings webhook,
      ReconcilerSettings reconciler,
      InetSocketAddress metricsBind,
      InetSocketAddress probeBind) {
    /** Without a probe listener (tests that do not probe). */
    public Settings(
        WebhookSettings webhook, ReconcilerSettings reconciler, InetSocketAddress metricsBind) {
      this(webhook, reconciler, metricsBind, null);
    }
  }

  /** Reconciles are mostly waiting on the API server: many in flight, few CPU. */
  static final int RECONCILE_THREADS = 32;

  private final KubernetesClient client;
  private final Settings s;
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private ProbeServer probeServer;
  private MetricsServer metricsServer;
  private Webhook webhook;
  private ReconcileMetrics reconcileMetrics;
  private JvmDiagnosticsReconciler reconciler;
  private volatile Operator operator;
  private volatile boolean running;
  private LeaderElector elector;
  private volatile boolean healthy = true;
  private volatile boolean closing;
  private ScheduledExecutorService retries;

  public OperatorApp(KubernetesClient client, Settings settings) {
    this.client = client;
    this.s = settings;
  }

  public OperatorApp start() throws Exception {
    // first: the kubelet's startup probe waits on it while the rest starts
    if (s.probeBind() != null)
      probeServer =
          new ProbeServer(s.probeBind(), this::healthy, this::ready, HttpListener.Limits.DEFAULT)
              .start();
    if (s.metricsBind() != null) {
      JvmMetrics.builder().register(registry);
      BuildInfo.current().register(registry);
      metricsServer = new MetricsServer(s.metricsBind(), registry).start();
    }
    if (s.webhook() != null) webhook = new Webhook(client, s.webhook(), registry).start();
    ReconcilerSettings rs = s.reconciler();
    if (rs != null) {
      // made once, shared by every term: the registry takes each name once
      reconcileMetrics = new ReconcileMetrics(registry);
      reconciler = new JvmDiagnosticsReconciler(rs, registry);
      GaugeWithCallback.builder()
          .name("jvmdiag_operator_reconciler_running")
          .help(
              "1 while this replica reconciles (caches synced; with leader election: the Lease holder), else 0.")
          .callback(cb -> cb.call(running ? 1 : 0))
          .register(registry);
      if (rs.leaderElection() == null) {
        retries =
            Executors.newSingleThreadScheduledExecutor(r -> {
              Thread t = new Thread(r, "reconciler-start");
              t.setDaemon(true);
              return t;
            });
        startOrRetry(); // the first attempt before start() returns, as with no failure
      } else {
        elector =
            new LeaderElector(
                    client,
                    rs.leaderElection(),
                    new LeaderElector.Reconciling() {
                      @Override
                      public void start() {
                        startReconciler();
                      }

                      @Override
                      public void stop() {
                        stopReconciler();
                      }
                    })
                .start();
      }
    }
    return this;
  }

  /** Retry delay of a failed start without leader election. */
  static final Duration START_RETRY = Duration.ofSeconds(15);

  /**
   * Without leader election: a start that fails (caches not synced in time, API server refusing) is
   * tried again, and the webhook keeps serving meanwhile: admission never waits on the reconciler.
   */
  private void startOrRetry() {
    if (closing) return;
    try {
      startReconciler();
      if (closing) stopReconciler(); // closed while starting
    } catch (RuntimeException e) {
      LOG.error(
          "the reconciler did not start: {}; the webhook keeps serving; next attempt in {} s",
          e.getMessage(),
          START_RETRY.toSeconds());
      if (!closing)
        retries.schedule(this::startOrRetry, START_RETRY.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** Why the reconciler did not start, in one line: a cache sync that timed out names its flag. */
  static String startFailure(RuntimeException e, Duration cacheSyncTimeout) {
    String why = Errors.oneLine(e);
    boolean timeout =
        why.toLowerCase(Locale.ROOT).contains("timeout")
            || why.toLowerCase(Locale.ROOT).contains("timed out");
    return why
        + (timeout
            ? " (its caches' first LIST took longer than --cache-sync-timeout="
                + cacheSyncTimeout
                + ", chart value operator.cacheSyncTimeout: raise it for a cluster this large, or see"
                + " the API server's load)"
            : "");
  }

  /**
   * A fresh JOSDK operator: a stopped one cannot start again (its informers and executors are
   * gone). Throws with a message that says why ({@link #startFailure}).
   */
  private void startReconciler() {
    ReconcilerSettings rs = s.reconciler();
    Operator o =
        new Operator(c ->
            c.withKubernetesClient(client)
                .withCloseClientOnStop(false)
                .withStopOnInformerErrorDuringStartup(true)
                .withCacheSyncTimeout(rs.cacheSyncTimeout())
                .withConcurrentReconciliationThreads(RECONCILE_THREADS)
                .withMetrics(reconcileMetrics));
    o.register(
        reconciler,
        c -> {
          if (!rs.watchNamespaces().isEmpty()) c.settingNamespaces(rs.watchNamespaces());
          // one informer (all namespaces, or one): see LeanStore.forNamespaces
          if (rs.watchNamespaces().size() <= 1) c.withItemStore(new LeanStore<>(Lean::resource));
          c.withInformerListLimit(Lean.LIST_LIMIT);
        });
    operator = o;
    try {
      o.start();
      running = true;
    } catch (RuntimeException e) {
      stopReconciler();
      // Fatal: its message is the whole story, for this log and the leader elector's
      throw new Errors.Fatal(startFailure(e, rs.cacheSyncTimeout()));
    }
  }

  private void stopReconciler() {
    running = false;
    Operator o = operator;
    operator = null;
    if (o == null) return;
    try {
      o.stop();
    } catch (RuntimeException e) {
      LOG.warn("stopping the reconciler: {}", e.getMessage());
    }
    reconciler.stoppedReconciling();
  }

  /** The process is alive: false only if a part failed for good. */
  public boolean healthy() {
    return healthy;
  }

  /** Ready for admissions: the webhook serves (without a webhook: alive). */
  public boolean ready() {
    return healthy && (s.webhook() == null || (webhook != null && webhook.serving()));
  }

  /**
   * True while this replica's reconciler runs (started, caches synced; with leader election: only
   * while it holds the Lease).
   */
  public boolean reconciling() {
    return running;
  }

  /** With leader election: how many times this replica acquired the Lease. */
  public long leaderTerms() {
    return elector == null ? 0 : elector.terms();
  }

  public int webhookPort() {
    return webhook.port();
  }

  public int metricsPort() {
    return metricsServer.port();
  }

  public int probePort() {
    return probeServer.port();
  }

  @Override
  public void close() {
    closing = true;
    if (retries != null) retries.shutdownNow();
    if (elector != null) elector.close(); // stops reconciling, then shortens the Lease
    else stopReconciler();
    if (webhook != null) webhook.close();
    if (metricsServer != null) metricsServer.close();
    if (probeServer != null) probeServer.close();
  }
}
