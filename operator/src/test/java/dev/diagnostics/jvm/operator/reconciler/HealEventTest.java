package dev.diagnostics.jvm.operator.reconciler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** A heal's event names at most 10 pods, whatever the target runs. */
class HealEventTest {
  @Test
  void namesTenPodsThenCountsTheRest() {
    List<String> pods = IntStream.range(0, 500).mapToObj(i -> "checkout-" + i).toList();
    String listed = JvmDiagnosticsReconciler.listed(pods);
    assertThat(listed).startsWith("checkout-0, checkout-1,").endsWith("checkout-9 and 490 more");
    assertThat(JvmDiagnosticsReconciler.listed(List.of("a", "b"))).isEqualTo("a, b");
  }
}
