package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which replicas of the operator's own Deployment make pod templates wait. */
class OperatorRolloutTest {
  static Pod replica(String name, String template, boolean ready, boolean stopping, String phase) {
    PodBuilder b =
        new PodBuilder()
            .withNewMetadata()
            .withName(name)
            .addToLabels("app", "op")
            .addToLabels(OperatorRollout.TEMPLATE_HASH, template)
            .endMetadata();
    if (stopping) b.editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata();
    return b.withNewStatus()
        .withPhase(phase)
        .addNewCondition()
        .withType("Ready")
        .withStatus(ready ? "True" : "False")
        .endCondition()
        .endStatus()
        .build();
  }

  @Test
  void replicasOfThisTemplateNeverHold() {
    assertThat(
            OperatorRollout.others(
                List.of(
                    replica("a", "new", true, false, "Running"),
                    replica("b", "new", true, true, "Running")),
                "new"))
        .isEmpty();
  }

  @Test
  void aReadyReplicaOfAnotherTemplateHolds() {
    assertThat(
            OperatorRollout.others(
                List.of(
                    replica("a", "new", true, false, "Running"),
                    replica("old-1", "old", true, false, "Running")),
                "new"))
        .containsExactly("old-1");
  }

  @Test
  void aStoppingReplicaOfAnotherTemplateHoldsEvenWhenNoLongerReady() {
    // a stopping replica leaves the endpoints, but it may drain admissions sent before the API
    // server saw that
    assertThat(
            OperatorRollout.others(List.of(replica("old-1", "old", false, true, "Running")), "new"))
        .containsExactly("old-1");
  }

  @Test
  void aReplicaThatNeverBecameReadyOrHasFinishedServesNothing() {
    assertThat(
            OperatorRollout.others(
                List.of(
                    replica("crashing", "newer", false, false, "Running"),
                    replica("done", "old", true, true, "Failed"),
                    replica("pending", "old", false, false, "Pending")),
                "new"))
        .isEmpty();
  }

  @Test
  void aPodWithoutTheTemplateLabelIsAnother() {
    Pod bare =
        new PodBuilder()
            .withNewMetadata()
            .withName("bare")
            .addToLabels("app", "op")
            .endMetadata()
            .withNewStatus()
            .withPhase("Running")
            .addNewCondition()
            .withType("Ready")
            .withStatus("True")
            .endCondition()
            .endStatus()
            .build();
    assertThat(OperatorRollout.others(List.of(bare), "new")).containsExactly("bare");
  }
}
