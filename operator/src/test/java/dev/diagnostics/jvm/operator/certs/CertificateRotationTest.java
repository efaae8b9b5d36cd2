package dev.diagnostics.jvm.operator.certs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** When the certificate check runs: debounced on changes, at the times it asks for. */
class CertificateRotationTest {
  static final Duration HOUR = Duration.ofHours(1);

  @Test
  void aBurstOfChangesRunsTheCheckOnceAfterTheDebounceDelay() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    try (var rotation =
        new CertificateRotation(
            HOUR,
            Duration.ofMillis(200),
            () -> {
              runs.incrementAndGet();
              return null;
            })) {
      long t0 = System.nanoTime();
      for (int i = 0; i < 50; i++) rotation.trigger();
      Thread.sleep(100);
      assertThat(runs.get()).as("not before the debounce delay").isZero();
      while (runs.get() == 0 && System.nanoTime() - t0 < 5_000_000_000L) Thread.sleep(10);
      Thread.sleep(500);
      assertThat(runs.get()).as("50 changes, one check").isEqualTo(1);
      rotation.trigger();
      Thread.sleep(600);
      assertThat(runs.get()).as("a later change runs it again").isEqualTo(2);
    }
  }

  @Test
  void theCheckRunsAgainWhenItAsksTo() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    try (var rotation =
        new CertificateRotation(
            HOUR,
            Duration.ofMillis(10),
            () -> {
              // the first run asks to be run again right away (the end of a grace period)
              return runs.incrementAndGet() == 1 ? Instant.now() : null;
            })) {
      rotation.runNow();
      assertThat(runs.get()).isEqualTo(1);
      long t0 = System.nanoTime();
      while (runs.get() < 2 && System.nanoTime() - t0 < 5_000_000_000L) Thread.sleep(10);
      assertThat(runs.get()).isEqualTo(2);
    }
  }
}
