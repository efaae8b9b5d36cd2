package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.reconciler.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * When the reconciler restarts a target once more for pods the webhook missed, and when it stops.
 */
class HealDecisionTest {
  static final String HASH = "0123456789abcdef";
  static final Instant NOW = Instant.parse("2026-01-02T12:00:00Z");
  final Pod missed = pod("cart-missed", "cart", HASH, null);
  final List<PodMissingInjection> missing =
      List.of(new PodMissingInjection("cart-missed", "WebhookUnavailable"));

  HealDecision decide(
      String current,
      List<PodMissingInjection> reported,
      boolean settled,
      Instant lastHeal,
      Pod... pods) {
    return HealDecision.decide(
        current, HASH, missing, reported, List.of(pods), settled, lastHeal, NOW);
  }

  @Test
  void theStatusNamesTheMissedPodsBeforeAnyRestart() {
    HealDecision d = decide(HASH, List.of(), true, null, missed);
    assertThat(d.healTo()).isNull();
    assertThat(d.requeue()).isEqualTo(HealDecision.REPORT_FIRST);
  }

  @Test
  void healsOnceTheMissedPodsAreReportedAndTheRolloutSettled() {
    assertThat(decide(HASH, missing, false, null, missed).healTo())
        .as("rollout still in progress")
        .isNull();
    HealDecision d = decide(HASH, missing, true, null, missed);
    assertThat(d.healTo()).isEqualTo(HASH + ".1");
    assertThat(HealDecision.missed(missing)).containsExactly("cart-missed");
  }

  @Test
  void atMostOnceAMinuteAcrossHashes() {
    HealDecision d = decide(HASH, missing, true, NOW.minusSeconds(20), missed);
    assertThat(d.healTo()).isNull();
    assertThat(d.requeue()).isEqualTo(Duration.ofSeconds(40));
    assertThat(decide(HASH, missing, true, NOW.minusSeconds(61), missed).healTo())
        .isEqualTo(HASH + ".1");
  }

  @Test
  void afterTheHealOfThisHashPodsMissedAgainStopItAndAreNamed() {
    Pod again = pod("cart-missed", "cart", HASH + ".1", null);
    HealDecision d = decide(HASH + ".1", missing, true, null, again);
    assertThat(d.healTo()).as("never a second heal for one configuration").isNull();
    assertThat(d.stillMissing()).containsExactly("cart-missed");
    // nor later: time since the last heal never makes another one for this configuration
    assertThat(decide(HASH + ".1", missing, true, NOW.minus(Duration.ofHours(1)), again).healTo())
        .isNull();
    // pods from before the heal are still being replaced: nothing to say yet
    assertThat(decide(HASH + ".1", missing, true, null, missed).stillMissing()).isEmpty();
  }

  @Test
  void nothingForManualRolloutOrWithoutMissedPods() {
    assertThat(decide(null, missing, true, null, missed)).isEqualTo(HealDecision.NONE);
    assertThat(
            HealDecision.decide(
                HASH,
                HASH,
                List.of(new PodMissingInjection("x", "Outdated")),
                List.of(),
                List.of(),
                true,
                null,
                NOW))
        .isEqualTo(HealDecision.NONE);
  }

  @Test
  void aStatusThatListsOnlyTheFirstFiftyStillLetsTheHealGo() {
    List<PodMissingInjection> many =
        java.util.stream.IntStream.range(0, 80)
            .mapToObj(
                i -> new PodMissingInjection(String.format("cart-%03d", i), "WebhookUnavailable"))
            .toList();
    List<PodMissingInjection> listed =
        dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.listed(many);
    assertThat(listed).hasSize(50);
    assertThat(
            HealDecision.decide(HASH, HASH, many, listed, List.of(missed), true, null, NOW)
                .healTo())
        .as("the 30 pods the status only counts do not hold the heal back")
        .isEqualTo(HASH + ".1");
    assertThat(
            HealDecision.decide(
                    HASH, HASH, many, listed.subList(0, 49), List.of(missed), true, null, NOW)
                .healTo())
        .as("a listed pod not yet named: report first")
        .isNull();
    assertThat(
            HealDecision.decide(HASH, HASH, many, null, List.of(missed), true, null, NOW).healTo())
        .isNull();
  }
}
