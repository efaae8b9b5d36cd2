package dev.diagnostics.jvm.operator.election;

import dev.diagnostics.jvm.operator.Errors;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfig;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Our own elector instead of JOSDK's (which exits the process when it stops leading). A term: the
 * replica acquires the Lease, starts a fresh reconciler, renews; when a renewal misses the renew
 * deadline, another identity holds the Lease, the Lease is deleted under us or the reconciler does
 * not start, the term ends: the reconciler stops at once and the replica is a candidate again,
 * after one retry period. The process stays up throughout, so the webhook keeps answering.
 */
public final class LeaderElector implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderElector.class);

  /** What the elector drives: start and stop the reconciler. */
  public interface Reconciling {
    /** Starts a fresh reconciler; throws if it cannot (the term ends). */
    void start();

    /** Stops it; returns when it no longer reconciles. Called once per started term. */
    void stop();
  }

  /** The Lease's own client (see {@link #leaseClient}). */
  private final KubernetesClient client;

  private final LeaderElection le;
  private final Reconciling reconciling;
  private final ScheduledExecutorService loop =
      Executors.newSingleThreadScheduledExecutor(
          Thread.ofPlatform().name("leader-election").daemon(true).factory());
  private final AtomicLong terms = new AtomicLong();
  private final Object lock = new Object();
  private volatile boolean leading;
  private volatile boolean closing;
  private CompletableFuture<?> elector;
  private boolean started;
  private volatile boolean backOff;

  public LeaderElector(KubernetesClient client, LeaderElection le, Reconciling reconciling) {
    this.client = leaseClient(client, le);
    this.le = le;
    this.reconciling = reconciling;
  }

  /**
   * A client for the Lease alone, whose requests give up within a third of the renew deadline and
   * are not retried. fabric8 checks the renew deadline only between attempts, and an attempt waits
   * as long as its request: with the shared client's 10 s timeout and its retries, a renewal sent
   * into a black-holed connection (an API server that stops answering, a network that drops) hangs
   * past the deadline and then succeeds late, so the leader never notices it could not renew while
   * the Lease ran out for everyone else. Short attempts end the term on time.
   */
  static KubernetesClient leaseClient(KubernetesClient shared, LeaderElection le) {
    int attempt = (int) Math.max(1_000, le.renewDeadline().toMillis() / 3);
    Config c =
        new ConfigBuilder(shared.getConfiguration())
            .withRequestTimeout(attempt)
            .withConnectionTimeout(attempt)
            .withRequestRetryBackoffLimit(0)
            .build();
    return new KubernetesClientBuilder().withConfig(c).build();
  }

  public LeaderElector start() {
    loop.execute(this::candidate);
    return this;
  }

  /** True while this replica holds the Lease (and so reconciles). */
  public boolean leading() {
    return leading;
  }

  /** How many times this replica acquired the Lease. */
  public long terms() {
    return terms.get();
  }

  /** Competes for the Lease until it holds it, then renews until the term ends. */
  private void candidate() {
    if (closing) return;
    LeaseLock lease = new LeaseLock(le.namespace(), le.leaseName(), le.identity());
    Lock checked =
        new Lock() {
          @Override
          public LeaderElectionRecord get(KubernetesClient c) {
            LeaderElectionRecord r = lease.get(c);
            if (r == null && leading) {
              // another replica may create it now: stop reconciling at once, fail this renewal
              // instead of re-creating the Lease as ours, and end the term (a fresh one competes
              // for the Lease and starts a reconciler only once it holds it)
              endTerm("Lease " + le.lease() + " was deleted while we held it");
              if (!closing) loop.execute(LeaderElector.this::cancelTerm);
              throw new IllegalStateException(
                  "Lease " + le.lease() + " was deleted while we held it");
            }
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
    LeaderCallbacks callbacks =
        new LeaderCallbacks(
            () -> {
              leading = true;
              terms.incrementAndGet();
              LOG.info(
                  "leader election: {} holds Lease {}, reconciling", le.identity(), le.lease());
              // not on the elector's thread: a cache sync must not hold up renewing the Lease
              Thread.ofPlatform().name("reconciler-start").daemon(true).start(this::startTerm);
            },
            () -> endTerm("lost Lease " + le.lease()),
            leader -> LOG.info("leader election: Lease {} held by {}", le.lease(), leader));
    LeaderElectionConfig config =
        new LeaderElectionConfig(
            checked,
            le.leaseDuration(),
            le.renewDeadline(),
            le.retryPeriod(),
            callbacks,
            true,
            le.leaseName());
    CompletableFuture<?> term = client.leaderElector().withConfig(config).build().start();
    synchronized (lock) {
      elector = term;
    }
    term.whenComplete((v, t) -> {
      endTerm(t == null ? "leader election ended" : "leader election failed: " + Errors.oneLine(t));
      // after a failed start, a whole lease duration: another replica may do better meanwhile
      long delay = (backOff ? le.leaseDuration() : le.retryPeriod()).toMillis();
      backOff = false;
      if (!closing) loop.schedule(this::candidate, delay, TimeUnit.MILLISECONDS);
    });
  }

  private void startTerm() {
    synchronized (lock) {
      if (!leading || closing) return;
      try {
        reconciling.start();
        started = true;
      } catch (RuntimeException e) {
        LOG.error(
            "leader election: the reconciler did not start, giving up Lease {}: {}",
            le.lease(),
            Errors.oneLine(e));
        backOff = true;
        endTerm(null);
        // releaseOnCancel: another replica (or this one, next term) can take over now
        if (elector != null) elector.cancel(true);
      }
    }
  }

  /** Stops reconciling (once per term); the elector's loop makes this replica a candidate again. */
  private void endTerm(String why) {
    synchronized (lock) {
      boolean was = leading;
      leading = false;
      if (was && why != null && !closing)
        LOG.warn("leader election: {}: stopped reconciling, a candidate again", why);
      if (!started) return;
      started = false;
      try {
        reconciling.stop();
      } catch (RuntimeException e) {
        LOG.warn("stopping the reconciler: {}", Errors.oneLine(e));
      }
    }
  }

  private void cancelTerm() {
    CompletableFuture<?> e;
    synchronized (lock) {
      e = elector;
    }
    if (e != null) e.cancel(true);
  }

  /** Stops competing for the Lease and stops reconciling. */
  public void stop() {
    closing = true;
    loop.shutdownNow();
    CompletableFuture<?> e;
    synchronized (lock) {
      e = elector;
    }
    if (e != null) e.cancel(true);
    endTerm(null);
  }

  /**
   * JOSDK does not release the Lease on stop: after the reconciler stopped, shorten it to 1 s if we
   * still hold it, so a follower takes over now instead of after the full lease duration (a rolling
   * update).
   */
  @Override
  public void close() {
    stop();
    try {
      var leases = client.leases().inNamespace(le.namespace());
      var current = leases.withName(le.leaseName()).get();
      if (current == null
          || current.getSpec() == null
          || !le.identity().equals(current.getSpec().getHolderIdentity())) return;
      current.getSpec().setLeaseDurationSeconds(1);
      current.getSpec().setRenewTime(ZonedDateTime.now(ZoneOffset.UTC));
      leases.resource(current).update(); // optimistic: fails if a follower already took it over
      LOG.info("leader election: released Lease {}", le.lease());
    } catch (RuntimeException e) {
      LOG.warn(
          "leader election: could not release Lease {} (it expires by itself): {}",
          le.lease(),
          e.getMessage());
    } finally {
      client.close();
    }
  }
}
