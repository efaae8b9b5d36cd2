package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.reconciler.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.fabric8.kubernetes.api.model.Condition;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The status of one pass: conditions with the generation, Ready from the others, a patch only on
 * change.
 */
class StatusUpdateTest {
  final JvmDiagnostics r = resource("cart");
  final Conditions.Builder c = Conditions.builder(r);

  TargetInjection.Outcome outcome(Condition injected, List<PodMissingInjection> missing) {
    return outcome(c, injected, missing);
  }

  TargetInjection.Outcome outcome(
      Conditions.Builder c, Condition injected, List<PodMissingInjection> missing) {
    return new TargetInjection.Outcome(
        c.of(Conditions.TARGET_FOUND, true, "Found", "Deployment/cart found"),
        injected,
        2,
        2 - missing.size(),
        missing,
        null,
        List.of(),
        "2026-01-02T12:00:00Z",
        "2026-01-02T12:00:30Z");
  }

  @Test
  void readyWhenEveryConditionIsTrue() {
    JvmDiagnosticsStatus st =
        StatusUpdate.of(
            r,
            outcome(c.of(Conditions.INJECTED, true, "AllPodsInjected", "2 pod(s)"), List.of()),
            c.of(Conditions.ALERTS_READY, true, "NoAlerts", "none"));
    assertThat(st.conditions)
        .extracting(Condition::getType)
        .containsExactly("TargetFound", "Injected", "AlertsReady", "Ready");
    assertThat(st.conditions).allSatisfy(x -> assertThat(x.getObservedGeneration()).isEqualTo(2L));
    assertThat(Conditions.isTrue(st.conditions, Conditions.READY)).isTrue();
    assertThat(st.injected).isEqualTo("2/2");
    assertThat(st.target).isEqualTo("Deployment/cart");
    assertThat(st.lastHealTime)
        .as("the heal bookkeeping is carried in the status")
        .isEqualTo("2026-01-02T12:00:00Z");
    assertThat(st.lastRolloutTime)
        .as("so is the last rollout, for a new leader's rollout limit")
        .isEqualTo("2026-01-02T12:00:30Z");
  }

  @Test
  void notReadyWithTheFirstReasonAndEveryMessage() {
    JvmDiagnosticsStatus st =
        StatusUpdate.of(
            r,
            outcome(
                c.of(Conditions.INJECTED, false, "PodsMissingInjection", "1 of 2"),
                List.of(new PodMissingInjection("cart-b", "WebhookUnavailable"))),
            c.of(Conditions.ALERTS_READY, false, "PrometheusOperatorMissing", "install it"));
    Condition ready = Conditions.find(st.conditions, Conditions.READY);
    assertThat(ready.getStatus()).isEqualTo("False");
    assertThat(ready.getReason()).isEqualTo("PodsMissingInjection");
    assertThat(ready.getMessage()).isEqualTo("Injected: 1 of 2; AlertsReady: install it");
  }

  @Test
  void noPatchWhenNothingChangedAndEveryTransitionNamedWhenSomethingDid() {
    JvmDiagnosticsStatus st =
        StatusUpdate.of(
            r,
            outcome(c.of(Conditions.INJECTED, true, "AllPodsInjected", "2 pod(s)"), List.of()),
            c.of(Conditions.ALERTS_READY, true, "NoAlerts", "none"));
    assertThat(StatusUpdate.transitions(r, st.conditions)).hasSize(4);
    assertThat(StatusUpdate.patch(r, st).isPatchStatus()).isTrue();
    r.setStatus(st);
    // the next pass builds its conditions against the stored ones (their transition times kept),
    // however many seconds later it runs
    Conditions.Builder next = Conditions.builder(r);
    JvmDiagnosticsStatus again =
        StatusUpdate.of(
            r,
            outcome(
                next, next.of(Conditions.INJECTED, true, "AllPodsInjected", "2 pod(s)"), List.of()),
            next.of(Conditions.ALERTS_READY, true, "NoAlerts", "none"));
    assertThat(StatusUpdate.transitions(r, again.conditions)).isEmpty();
    assertThat(StatusUpdate.patch(r, again).isNoUpdate()).isTrue();
  }

  @Test
  void listsTheFirstFiftyMissingPodsByNameAndCountsTheRest() {
    List<PodMissingInjection> many =
        java.util.stream.IntStream.range(0, 73)
            .mapToObj(i -> new PodMissingInjection(String.format("cart-%03d", i), "NotRolledOut"))
            .toList();
    Condition injected = c.of(Conditions.INJECTED, false, "RollingOut", "73 of 75");
    Condition alerts = c.of(Conditions.ALERTS_READY, true, "NoAlerts", "none");
    JvmDiagnosticsStatus st = StatusUpdate.of(r, outcome(injected, many), alerts);
    assertThat(st.podsMissingInjection).hasSize(JvmDiagnosticsStatus.MAX_PODS_MISSING_INJECTION);
    assertThat(st.podsMissingInjection.get(0).name).isEqualTo("cart-000");
    assertThat(st.podsMissingInjection.get(49).name).isEqualTo("cart-049");
    assertThat(st.podsMissingInjectionTruncated).isEqualTo(23);

    JvmDiagnosticsStatus fifty = StatusUpdate.of(r, outcome(injected, many.subList(0, 50)), alerts);
    assertThat(fifty.podsMissingInjection).hasSize(50);
    assertThat(fifty.podsMissingInjectionTruncated).as("absent when all are listed").isNull();
    assertThat(new io.fabric8.kubernetes.client.utils.KubernetesSerialization().asJson(fifty))
        .doesNotContain("podsMissingInjectionTruncated");
  }

  @Test
  void aPassFromAStaleResourceKeepsThisReplicasLastRollout() {
    java.time.Instant own = java.time.Instant.parse("2026-01-02T12:00:30Z");
    assertThat(TargetInjection.latest(null, own)).isEqualTo("2026-01-02T12:00:30Z");
    assertThat(TargetInjection.latest("2026-01-02T12:00:00Z", own))
        .isEqualTo("2026-01-02T12:00:30Z");
    assertThat(TargetInjection.latest("2026-01-02T12:01:00Z", own))
        .as("a later one in the status (another replica's)")
        .isEqualTo("2026-01-02T12:01:00Z");
    assertThat(TargetInjection.latest("2026-01-02T12:00:00Z", null))
        .isEqualTo("2026-01-02T12:00:00Z");
    assertThat(TargetInjection.latest("garbage", own)).isEqualTo("2026-01-02T12:00:30Z");
  }
}
