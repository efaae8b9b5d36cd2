package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RolloutLimiterTest {
  final AtomicLong now = new AtomicLong();

  @Test
  void aBurstOfAMinutesWorthThenEvenlySpread() {
    RolloutLimiter l = new RolloutLimiter(6, now::get, new PrometheusRegistry());
    int granted = 0;
    for (int i = 0; i < 200; i++) if (l.tryAcquire("config")) granted++;
    assertThat(granted).isEqualTo(6);
    assertThat(l.untilNext()).isEqualTo(Duration.ofSeconds(10));
    now.addAndGet(Duration.ofSeconds(9).toNanos());
    assertThat(l.tryAcquire("config")).isFalse();
    now.addAndGet(Duration.ofSeconds(1).toNanos());
    assertThat(l.tryAcquire("config")).isTrue();
    // an idle hour refills to the burst, never beyond
    now.addAndGet(Duration.ofHours(1).toNanos());
    granted = 0;
    for (int i = 0; i < 200; i++) if (l.tryAcquire("heal")) granted++;
    assertThat(granted).isEqualTo(6);
  }

  @Test
  void zeroIsNoLimit() {
    RolloutLimiter l = new RolloutLimiter(0, now::get, new PrometheusRegistry());
    for (int i = 0; i < 1000; i++) assertThat(l.tryAcquire("config")).isTrue();
    assertThat(l.untilNext()).isZero();
  }
}
