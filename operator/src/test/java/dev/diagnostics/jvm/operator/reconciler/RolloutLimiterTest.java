package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RolloutLimiterTest {
  final AtomicLong now = new AtomicLong();

  RolloutLimiter perMinute(int max) {
    return new RolloutLimiter(max, Duration.ofMinutes(1), now::get, new PrometheusRegistry());
  }

  @Test
  void aMinutesWorthAtOnceThenTheNextWhenTheOldestIsAMinuteOld() {
    RolloutLimiter l = perMinute(6);
    int granted = 0;
    for (int i = 0; i < 200; i++) if (l.tryAcquire("config")) granted++;
    assertThat(granted).isEqualTo(6);
    assertThat(l.untilNext()).isEqualTo(Duration.ofMinutes(1));
    now.addAndGet(Duration.ofSeconds(59).toNanos());
    assertThat(l.tryAcquire("config")).as("59 s after six rollouts").isFalse();
    assertThat(l.untilNext()).isEqualTo(Duration.ofSeconds(1));
    now.addAndGet(Duration.ofSeconds(1).toNanos());
    granted = 0;
    for (int i = 0; i < 200; i++) if (l.tryAcquire("config")) granted++;
    assertThat(granted).as("a minute after the first six").isEqualTo(6);
    // an idle hour frees the window, never more than it
    now.addAndGet(Duration.ofHours(1).toNanos());
    granted = 0;
    for (int i = 0; i < 200; i++) if (l.tryAcquire("heal")) granted++;
    assertThat(granted).isEqualTo(6);
  }

  /** Whoever asks whenever: no window of a minute ever holds more than the limit. */
  @Test
  void neverMoreThanTheLimitInAnyMinute() {
    RolloutLimiter l = perMinute(10);
    List<Long> times = new ArrayList<>();
    java.util.Random random = new java.util.Random(42);
    for (int i = 0; i < 20_000; i++) {
      now.addAndGet(random.nextInt(2_000) * 1_000_000L); // 0 to 2 s between requests
      if (l.tryAcquire("config")) times.add(now.get());
    }
    for (int i = 0; i < times.size(); i++) {
      int in = 0;
      for (int j = i;
          j < times.size() && times.get(j) - times.get(i) < Duration.ofMinutes(1).toNanos();
          j++) in++;
      assertThat(in).as("rollouts in the minute from %d ns", times.get(i)).isLessThanOrEqualTo(10);
    }
    // and the limit is used: 20,000 requests over ~5.5 hours, 10 a minute
    assertThat(times.size()).isGreaterThan(10 * 5 * 60);
  }

  @Test
  void untilNextIsAtLeastASecond() {
    RolloutLimiter l = perMinute(1);
    assertThat(l.tryAcquire("config")).isTrue();
    now.addAndGet(Duration.ofMillis(59_900).toNanos());
    assertThat(l.untilNext()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void theStatusSaysTheLimit() {
    assertThat(perMinute(60).describe()).isEqualTo("60 rollouts per minute");
    assertThat(
            new RolloutLimiter(50, Duration.ofSeconds(5), now::get, new PrometheusRegistry())
                .describe())
        .isEqualTo("50 rollouts per 5 s");
  }

  @Test
  void zeroIsNoLimit() {
    RolloutLimiter l = perMinute(0);
    for (int i = 0; i < 1000; i++) assertThat(l.tryAcquire("config")).isTrue();
    assertThat(l.untilNext()).isZero();
  }

  /**
   * A new leader: the rollouts the cluster records (another replica's, wall-clock times) count as
   * its own, so the window the previous leader used up stays used up.
   */
  @Test
  void aNewLeaderCountsTheRolloutsTheClusterRecords() {
    now.set(Duration.ofHours(5).toNanos()); // nanoTime has no relation to the wall clock
    java.time.Instant wall = java.time.Instant.parse("2026-01-02T12:00:00Z");
    RolloutLimiter l = perMinute(3);
    l.seed(
        List.of(
            wall.minusSeconds(50), // in the window: free again in 10 s
            wall.minusSeconds(20),
            wall.minusSeconds(5),
            wall.minusSeconds(61), // before the window
            wall.plusSeconds(2)), // another replica's clock a little ahead: now
        wall);
    assertThat(l.tryAcquire("config")).as("4 of 3 in the window already").isFalse();
    // the oldest two must leave before there is a place: the 2nd oldest, 40 s from now
    assertThat(l.untilNext()).isEqualTo(Duration.ofSeconds(40));
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    assertThat(l.tryAcquire("config")).as("3 left in the window").isFalse();
    now.addAndGet(Duration.ofSeconds(30).toNanos());
    assertThat(l.tryAcquire("config")).as("2 left in the window").isTrue();
    assertThat(l.tryAcquire("config")).isFalse();
  }

  @Test
  void seededOnceBeforeTheFirstDecisionThenItCountsItsOwn() {
    RolloutLimiter l = perMinute(2);
    java.util.concurrent.atomic.AtomicInteger asked =
        new java.util.concurrent.atomic.AtomicInteger();
    l.seedOnce(() -> {
      asked.incrementAndGet();
      return List.of(java.time.Instant.now().minusSeconds(1));
    });
    l.seedOnce(() -> {
      asked.incrementAndGet();
      return List.of(java.time.Instant.now(), java.time.Instant.now());
    });
    assertThat(asked).hasValue(1);
    assertThat(l.tryAcquire("config")).isTrue();
    assertThat(l.tryAcquire("config")).as("1 recorded + 1 own").isFalse();
    RolloutLimiter none = perMinute(0);
    none.seedOnce(() -> {
      throw new AssertionError("no limit: nothing to read");
    });
  }
}
