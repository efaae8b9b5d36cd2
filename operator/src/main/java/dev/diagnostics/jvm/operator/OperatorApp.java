package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.election.LeaderElector;
import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.metrics.MetricsServer;
import dev.diagnostics.jvm.operator.metrics.ProbeServer;
import dev.diagnostics.jvm.operator.metrics.ReconcileMetrics;
import dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.Webhook;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.javaoperatorsdk.operator.Operator;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Wires the parts: metrics, the webhook (every replica), the reconciler (the Lease holder). */
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
  private Operator operator;
  private LeaderElector elector;
  private volatile boolean closing;
  private volatile boolean healthy = true;

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
      metricsServer = new MetricsServer(s.metricsBind(), registry).start();
    }
    if (s.webhook() != null) webhook = new Webhook(client, s.webhook(), registry).start();
    ReconcilerSettings rs = s.reconciler();
    if (rs != null) {
      // made once: java-operator-sdk may apply the overrider more than once, the registry takes
      // each name once
      ReconcileMetrics metrics = new ReconcileMetrics(registry);
      operator =
          new Operator(o ->
              o.withKubernetesClient(client)
                  .withCloseClientOnStop(false)
                  .withStopOnInformerErrorDuringStartup(true)
                  .withCacheSyncTimeout(Duration.ofSeconds(60))
                  .withConcurrentReconciliationThreads(RECONCILE_THREADS)
                  .withMetrics(metrics));
      operator.register(
          new JvmDiagnosticsReconciler(rs, registry),
          o -> {
            if (!rs.watchNamespaces().isEmpty()) o.settingNamespaces(rs.watchNamespaces());
          });
      if (rs.leaderElection() == null) {
        operator.start(); // throws: the caller exits non-zero
      } else {
        // after a fatal error the reconciler stays stopped, even if the elector leads once more
        // before the exit
        elector =
            new LeaderElector(
                    client,
                    rs.leaderElection(),
                    () -> {
                      if (healthy) operator.start();
                    },
                    this::fatal)
                .start();
      }
    }
    return this;
  }

  /**
   * A replica that leads without reconciling, or reconciles next to a new leader, must not stay up.
   * Its reconciler stops at once and never starts again; then it exits 1 (when exitOnLostLease;
   * in-process tests stay up with /healthz red). The webhook does not depend on leadership: on the
   * way out it drains like any stop (--webhook-drain-seconds), without reconciling meanwhile. The
   * elector is left to the exit: the Lease stays as it is, which says who held it last.
   */
  private void fatal(String why) {
    if (closing) return;
    healthy = false;
    LeaderElection le = s.reconciler() == null ? null : s.reconciler().leaderElection();
    boolean exit = le == null || le.exitOnLostLease();
    LOG.error(
        "{}{}",
        why,
        exit
            ? ": exiting (code 1) so that no replica leads without reconciling or reconciles next to the new leader"
            : "");
    Thread.ofPlatform()
        .name("fatal-stop")
        .start(() -> {
          try {
            if (operator != null) operator.stop();
          } catch (RuntimeException e) {
            LOG.warn("stopping the reconciler: {}", e.getMessage());
          }
          if (exit) System.exit(1);
        });
  }

  /** False after a fatal leader-election or start error (when not exiting). */
  public boolean healthy() {
    return healthy;
  }

  /** Ready for admissions: the webhook serves (without a webhook: alive). */
  public boolean ready() {
    return healthy && (s.webhook() == null || (webhook != null && webhook.serving()));
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
    if (elector != null) elector.stop(); // releaseOnCancel: the Lease is shortened for a follower
    if (operator != null) operator.stop();
    if (elector != null) elector.close();
    if (webhook != null) webhook.close();
    if (metricsServer != null) metricsServer.close();
    if (probeServer != null) probeServer.close();
  }
}
