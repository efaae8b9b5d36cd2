package dev.diagnostics.jvm.operator.reconciler;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A cluster-wide limit on the operator's pod-template writes that restart pods (a new config hash,
 * a heal, the removal at deletion): at most {@code max} of them in any window of {@code window} (a
 * minute, outside tests). A write is allowed while fewer than {@code max} were allowed in the last
 * window, so {@code max} can start at once and the next one only when the oldest of them is a
 * window old. Changing 1,000 resources at once (a GitOps sync, a chart upgrade) then restarts their
 * workloads {@code max} per minute instead of a cluster's worth of pods together; the others wait,
 * and their status says so ({@code RolloutThrottled}). 0: no limit. The window is kept in memory
 * and seeded, before the first decision, from the cluster ({@link #seedOnce}: each resource's
 * status.lastRolloutTime), so a new leader does not start with an empty window after the previous
 * one used it up.
 */
public final class RolloutLimiter {
  private final int max;
  private final long windowNanos;
  private final LongSupplier nanos;
  private final Counter rollouts;
  private final Counter throttled;

  /** When the writes of the last window were allowed, oldest first. */
  private final ArrayDeque<Long> granted = new ArrayDeque<>();

  private boolean seeded;

  public RolloutLimiter(int max, Duration window, PrometheusRegistry registry) {
    this(max, window, System::nanoTime, registry);
  }

  RolloutLimiter(int max, Duration window, LongSupplier nanos, PrometheusRegistry registry) {
    if (max < 0)
      throw new IllegalArgumentException(
          "rollouts per minute must be 0 (no limit) or more, got " + max);
    if (window.isNegative() || window.isZero())
      throw new IllegalArgumentException("the rollout window must be positive, got " + window);
    this.max = max;
    this.windowNanos = window.toNanos();
    this.nanos = nanos;
    this.rollouts =
        Counter.builder()
            .name("jvmdiag_operator_rollouts_total")
            .help(
                "Pod-template writes that restart a workload's pods, by reason (config, heal, removal).")
            .labelNames("reason")
            .register(registry);
    this.throttled =
        Counter.builder()
            .name("jvmdiag_operator_rollouts_throttled_total")
            .help("Rollouts postponed by the cluster-wide limit (--max-rollouts-per-minute).")
            .register(registry);
  }

  /** The limit as the status says it: "60 rollouts per minute" (0: none). */
  public String describe() {
    long ms = Duration.ofNanos(windowNanos).toMillis();
    return max
        + " rollouts per "
        + (ms == 60_000 ? "minute" : ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms");
  }

  /**
   * Takes a place in the window for a rollout of this reason (config, heal, removal); false: wait
   * {@link #untilNext()}.
   */
  public synchronized boolean tryAcquire(String reason) {
    if (max > 0) {
      long now = nanos.getAsLong();
      expire(now);
      if (granted.size() >= max) {
        throttled.inc();
        return false;
      }
      granted.addLast(now);
    }
    rollouts.labelValues(reason).inc();
    return true;
  }

  /**
   * Before this limiter's first decision: counts the rollouts the cluster records (their wall-clock
   * times, e.g. the resources' status.lastRolloutTime, written by whichever replica led then) as if
   * this limiter had allowed them. Later calls do nothing: from then on it counts its own.
   */
  public synchronized void seedOnce(Supplier<? extends Collection<Instant>> recorded) {
    // under the lock: no other reconcile decides before the seed is in (the cache is in memory)
    if (seeded) return;
    seeded = true;
    if (max == 0) return;
    seed(recorded.get(), Instant.now());
  }

  /**
   * Adds the rollouts made at these wall-clock times that fall in the window ending at {@code
   * wallNow} (a time ahead of it, another replica's clock, counts as now), oldest first.
   */
  synchronized void seed(Collection<Instant> recorded, Instant wallNow) {
    long now = nanos.getAsLong();
    List<Long> at = new ArrayList<>();
    for (Instant t : recorded) {
      if (t == null) continue;
      long ago = Math.max(0, Duration.between(t, wallNow).toNanos());
      if (ago < windowNanos) at.add(now - ago);
    }
    at.addAll(granted);
    Collections.sort(at);
    granted.clear();
    granted.addAll(at);
    expire(now);
  }

  /** How long until a place frees up (at least a second, so a requeue is never a busy loop). */
  public synchronized Duration untilNext() {
    if (max == 0) return Duration.ZERO;
    long now = nanos.getAsLong();
    expire(now);
    // seeded from the cluster, the window may hold more than max: the place frees up when the
    // (size - max + 1)th oldest is a window old
    long wait = 0;
    if (granted.size() >= max) {
      int skip = granted.size() - max;
      var it = granted.iterator();
      for (int i = 0; i < skip; i++) it.next();
      wait = it.next() + windowNanos - now;
    }
    return Duration.ofNanos(Math.max(1_000_000_000L, wait));
  }

  private void expire(long now) {
    while (!granted.isEmpty() && now - granted.peekFirst() >= windowNanos) granted.removeFirst();
  }
}
