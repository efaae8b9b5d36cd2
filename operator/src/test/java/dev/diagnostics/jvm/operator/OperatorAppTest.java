package dev.diagnostics.jvm.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.javaoperatorsdk.operator.OperatorException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What a reconciler that did not start says. */
class OperatorAppTest {
  @Test
  void aCacheSyncTimeoutNamesItsFlagAndChartValue() {
    String msg =
        OperatorApp.startFailure(
            new OperatorException(
                "Couldn't start source Deployment",
                new IllegalStateException("Timed out waiting for informer cache to sync")),
            Duration.ofSeconds(60));
    assertThat(msg)
        .startsWith("Couldn't start source Deployment: Timed out waiting")
        .contains("--cache-sync-timeout=PT1M")
        .contains("operator.cacheSyncTimeout");
  }

  @Test
  void anotherFailureIsReportedAsItIs() {
    String msg =
        OperatorApp.startFailure(
            new OperatorException("CRD jvmdiagnostics.jvm.diagnostics.dev not found"),
            Duration.ofSeconds(60));
    assertThat(msg).isEqualTo("CRD jvmdiagnostics.jvm.diagnostics.dev not found");
  }
}
