package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.reconciler.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Rollout;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The marker the reconciler wants in the target's pod template. */
class PodTemplateMarkerTest {
  final JvmDiagnostics r = resource("checkout");
  final String hash = config(r).hash();

  @Test
  void automaticRolloutWantsTheLabelAndTheConfigurationsHash() {
    Target unmarked = deployment("checkout", Map.of(), Map.of(), true);
    PodTemplateMarker m =
        PodTemplateMarker.desired("checkout", Rollout.Automatic, config(r), unmarked);
    assertThat(m).isEqualTo(new PodTemplateMarker("checkout", hash));
    assertThat(m.needsWrite(unmarked)).isTrue();
    assertThat(m.needsWrite(marked("checkout", hash)))
        .as("already there: no write, no rollout")
        .isFalse();
  }

  @Test
  void manualRolloutWantsTheLabelOnly() {
    PodTemplateMarker m =
        PodTemplateMarker.desired("checkout", Rollout.Manual, config(r), marked("checkout", "old"));
    assertThat(m.hash()).isNull();
    assertThat(m.needsWrite(marked("checkout", null))).isFalse();
    assertThat(m.needsWrite(marked("checkout", hash)))
        .as("a hash left from Automatic goes")
        .isTrue();
  }

  @Test
  void aHealSuffixIsKeptWhileTheHashIsCurrentAndDroppedWhenItIsNot() {
    Target healed = marked("checkout", hash + ".1");
    assertThat(PodTemplateMarker.desired("checkout", Rollout.Automatic, config(r), healed).hash())
        .isEqualTo(hash + ".1");
    Target stale = marked("checkout", "0123456789abcdef.1");
    assertThat(PodTemplateMarker.desired("checkout", Rollout.Automatic, config(r), stale).hash())
        .isEqualTo(hash);
  }

  @Test
  void anotherResourcesLabelIsAWrite() {
    PodTemplateMarker m = new PodTemplateMarker("checkout", hash);
    assertThat(
            m.needsWrite(
                deployment(
                    "checkout",
                    Map.of(dev.diagnostics.jvm.operator.Contract.INJECT_LABEL, "other"),
                    Map.of(dev.diagnostics.jvm.operator.Contract.CONFIG_HASH, hash),
                    true)))
        .isTrue();
    assertThat(PodTemplateMarker.present(deployment("checkout", Map.of(), Map.of(), true)))
        .isFalse();
    assertThat(PodTemplateMarker.present(marked("checkout", null))).isTrue();
  }
}
