package dev.diagnostics.jvm.operator.reconciler;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * A cluster-wide limit on the operator's pod-template writes that restart pods (a new config
 * hash, a heal, the removal at deletion): a token bucket of {@code perMinute} tokens refilled
 * evenly over a minute. Changing 1,000 resources at once (a GitOps sync, a chart upgrade) then
 * restarts their workloads a few at a time instead of a cluster's worth of pods together; the
 * others wait, and their status says so ({@code RolloutThrottled}). 0: no limit.
 */
public final class RolloutLimiter {
  private final int perMinute;
  private final LongSupplier nanos;
  private final Counter rollouts;
  private final Counter throttled;
  private double tokens;
  private long last;

  public RolloutLimiter(int perMinute, PrometheusRegistry registry) {
    this(perMinute, System::nanoTime, registry);
  }

  RolloutLimiter(int perMinute, LongSupplier nanos, PrometheusRegistry registry) {
    if (perMinute < 0) throw new IllegalArgumentException("rollouts per minute must be 0 (no limit) or more, got " + perMinute);
    this.perMinute = perMinute;
    this.nanos = nanos;
    this.tokens = perMinute;
    this.last = nanos.getAsLong();
    this.rollouts = Counter.builder().name("jvmdiag_operator_rollouts_total")
        .help("Pod-template writes that restart a workload's pods, by reason (config, heal, removal).")
        .labelNames("reason").register(registry);
    this.throttled = Counter.builder().name("jvmdiag_operator_rollouts_throttled_total")
        .help("Rollouts postponed by the cluster-wide limit (--max-rollouts-per-minute).").register(registry);
  }

  public int perMinute() {
    return perMinute;
  }

  /** Takes a token for a rollout of this reason (config, heal, removal); false: wait {@link #untilNext()}. */
  public synchronized boolean tryAcquire(String reason) {
    if (perMinute > 0) {
      refill();
      if (tokens < 1) {
        throttled.inc();
        return false;
      }
      tokens -= 1;
    }
    rollouts.labelValues(reason).inc();
    return true;
  }

  /** How long until the next token (at least a second, so a requeue is never a busy loop). */
  public synchronized Duration untilNext() {
    if (perMinute == 0) return Duration.ZERO;
    refill();
    double missing = Math.max(0, 1 - tokens);
    long millis = (long) Math.ceil(missing * 60_000.0 / perMinute);
    return Duration.ofMillis(Math.max(1000, millis));
  }

  private void refill() {
    long now = nanos.getAsLong();
    tokens = Math.min(perMinute, tokens + (now - last) * perMinute / 60e9);
    last = now;
  }
}
