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
}
