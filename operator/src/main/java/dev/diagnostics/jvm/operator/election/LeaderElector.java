package dev.diagnostics.jvm.operator.election;

import dev.diagnostics.jvm.operator.Errors;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfig;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Our own elector instead of JOSDK's: JOSDK logs a failed start on the leader ("Error starting
 * operator") and keeps the process up and healthy, and it cannot tell a lost Lease from a normal
 * stop. Here the reconciler starts only on the holder, and a start error, a Lease taken by another
 * identity or a Lease deleted under us are fatal (the kubelet restarts the replica as a follower);
 * only {@link #close()} is a normal stop.
 */
public final class LeaderElector implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderElector.class);

  private final KubernetesClient client;
  private final LeaderElection le;
  private final Runnable onLeading;
  private final Consumer<String> fatal;
  private volatile boolean leading;
  private volatile boolean closing;
  private CompletableFuture<?> elector;

  /**
   * onLeading: starts the reconciler (on its own thread); fatal: what to do when leading without
   * reconciling is possible.
   */
  public LeaderElector(
      KubernetesClient client, LeaderElection le, Runnable onLeading, Consumer<String> fatal) {
    this.client = client;
    this.le = le;
    this.onLeading = onLeading;
    this.fatal = fatal;
  }

  public LeaderElector start() {
    LeaseLock lease = new LeaseLock(le.namespace(), le.leaseName(), le.identity());
    Lock lock =
        new Lock() {
          @Override
          public LeaderElectionRecord get(KubernetesClient c) {
            LeaderElectionRecord r = lease.get(c);
            if (r == null && leading) fail("Lease " + le.lease() + " was deleted while we held it");
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
              LOG.info(
                  "leader election: {} holds Lease {}, reconciling", le.identity(), le.lease());
              // not on the elector's thread: a cache sync must not hold up renewing the Lease
              Thread.ofPlatform()
                  .name("reconciler-start")
                  .daemon(true)
                  .start(() -> {
                    try {
                      onLeading.run();
                    } catch (RuntimeException e) {
                      fail("the reconciler did not start: " + Errors.oneLine(e));
                    }
                  });
            },
            () -> fail("lost Lease " + le.lease()),
            leader -> LOG.info("leader election: Lease {} held by {}", le.lease(), leader));
    LeaderElectionConfig config =
        new LeaderElectionConfig(
            lock,
            le.leaseDuration(),
            le.renewDeadline(),
            le.retryPeriod(),
            callbacks,
            true,
            le.leaseName());
    elector = client.leaderElector().withConfig(config).build().start();
    elector.whenComplete((v, t) -> {
      if (t != null && !(t instanceof CancellationException))
        fail("leader election failed: " + Errors.oneLine(t));
    });
    return this;
  }

  private void fail(String why) {
    if (!closing) fatal.accept(why);
  }

  /** Stops competing for the Lease (releaseOnCancel: the elector gives it up). */
  public void stop() {
    closing = true;
    if (elector != null) elector.cancel(true);
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
    }
  }
}
