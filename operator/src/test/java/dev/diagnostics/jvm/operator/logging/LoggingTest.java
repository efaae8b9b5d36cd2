package dev.diagnostics.jvm.operator.logging;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.impl.Log4jLogEvent;
import org.apache.logging.log4j.core.time.MutableInstant;
import org.apache.logging.log4j.message.SimpleMessage;
import org.apache.logging.log4j.util.SortedArrayStringMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

class LoggingTest {
  static final ObjectMapper JSON = new ObjectMapper();

  /** The MDC java-operator-sdk sets while it reconciles a resource (its MDCUtils). */
  static final Map<String, String> RECONCILE_MDC =
      Map.of(
          "resource.apiVersion", "jvm.diagnostics.dev/v1alpha1",
          "resource.kind", "JvmDiagnostics",
          "resource.name", "checkout",
          "resource.namespace", "shop",
          "resource.resourceVersion", "812",
          "resource.generation", "3",
          "resource.uid", "6f1c");

  @AfterEach
  void back() {
    Logging.configure(LogFormat.logfmt, LogLevel.info);
  }

  /** 2026-01-02T12:00:00.000042Z: the agent writes microseconds, always six digits. */
  static LogEvent event(Map<String, String> mdc, Throwable thrown) {
    MutableInstant at = new MutableInstant();
    at.initFromEpochSecond(1_767_355_200L, 42_000);
    return Log4jLogEvent.newBuilder()
        .setLoggerName("dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler")
        .setLevel(Level.WARN)
        .setMessage(new SimpleMessage("conditions: Injected=\"False\"\nnext"))
        .setContextData(new SortedArrayStringMap(mdc))
        .setThrown(thrown)
        .setInstant(at)
        .build();
  }

  static String render(LogFormat format, LogEvent e) {
    Logging.configure(format, LogLevel.info);
    return (String)
        Logging.context().getConfiguration().getAppender("stderr").getLayout().toSerializable(e);
  }

  @Test
  void jsonHasTheAgentsKeysAndTheReconcilesMdc() throws Exception {
    String line = render(LogFormat.json, event(RECONCILE_MDC, null));
    assertThat(line).endsWith("}\n").hasLineCount(1);
    JsonNode n = JSON.readTree(line);
    assertThat(n.get("ts").asText()).isEqualTo("2026-01-02T12:00:00.000042Z");
    assertThat(n.get("level").asText()).isEqualTo("warn");
    assertThat(n.get("msg").asText()).isEqualTo("conditions: Injected=\"False\"\nnext");
    assertThat(n.get("target").asText())
        .isEqualTo("dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler");
    RECONCILE_MDC.forEach((k, v) -> assertThat(n.get(k).asText()).as(k).isEqualTo(v));
    assertThat(n.has("error")).isFalse();
    assertThat(n.size()).isEqualTo(4 + RECONCILE_MDC.size());
  }

  @Test
  void anExceptionIsOneFieldWithItsStack() throws Exception {
    Exception e = new IllegalStateException("boom", new RuntimeException("cause"));
    JsonNode n = JSON.readTree(render(LogFormat.json, event(Map.of(), e)));
    assertThat(n.get("error").asText())
        .startsWith("java.lang.IllegalStateException: boom")
        .contains("\tat dev.diagnostics.jvm.operator.logging.LoggingTest")
        .contains("Caused by: java.lang.RuntimeException: cause");

    String logfmt = render(LogFormat.logfmt, event(Map.of(), e));
    assertThat(logfmt).hasLineCount(1).contains(" error=\"java.lang.IllegalStateException: boom");
  }

  @Test
  void logfmtIsTheAgentsTextLine() {
    assertThat(render(LogFormat.logfmt, event(RECONCILE_MDC, null)))
        .isEqualTo(
            "ts=2026-01-02T12:00:00.000042Z level=warn"
                + " target=dev.diagnostics.jvm.operator.reconciler.JvmDiagnosticsReconciler"
                + " msg=\"conditions: Injected=\\\"False\\\"\\nnext\""
                + " resource.kind=JvmDiagnostics resource.namespace=shop resource.name=checkout\n");
    assertThat(render(LogFormat.logfmt, event(Map.of(), null)))
        .doesNotContain("resource.")
        .doesNotContain("error=");
  }

  @Test
  void levelsFilterOursAndOthersApart() {
    var ours = LogManager.getLogger("dev.diagnostics.jvm.operator.reconciler.X");
    var josdk = LogManager.getLogger("io.javaoperatorsdk.operator.Operator");
    Logging.configure(LogFormat.json, LogLevel.info);
    assertThat(List.of(ours.isInfoEnabled(), ours.isDebugEnabled())).containsExactly(true, false);
    assertThat(List.of(josdk.isWarnEnabled(), josdk.isInfoEnabled())).containsExactly(true, false);
    Logging.configure(LogFormat.json, LogLevel.debug);
    assertThat(List.of(ours.isDebugEnabled(), ours.isTraceEnabled())).containsExactly(true, false);
    assertThat(josdk.isDebugEnabled()).isTrue();
    Logging.configure(LogFormat.json, LogLevel.error);
    assertThat(List.of(ours.isErrorEnabled(), ours.isWarnEnabled())).containsExactly(true, false);
    assertThat(josdk.isWarnEnabled()).isFalse();
  }

  @Test
  void slf4jLogsThroughLog4jWithTheMdc() throws Exception {
    assertThat(LoggerFactory.getILoggerFactory().getClass().getName()).contains("Log4j");
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      Logging.configure(LogFormat.json, LogLevel.info);
      var log = LoggerFactory.getLogger("dev.diagnostics.jvm.operator.Test");
      MDC.put("resource.namespace", "shop");
      MDC.put("resource.name", "checkout");
      log.info("reconciled {}", 1);
      MDC.clear();
      log.debug("never");
      LoggerFactory.getLogger("io.fabric8.kubernetes.client.Watch").info("never");
    } finally {
      System.setErr(err);
      MDC.clear();
    }
    String[] lines = buf.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(lines).hasSize(1);
    JsonNode n = JSON.readTree(lines[0]);
    assertThat(n.get("msg").asText()).isEqualTo("reconciled 1");
    assertThat(n.get("level").asText()).isEqualTo("info");
    assertThat(n.get("resource.namespace").asText()).isEqualTo("shop");
    assertThat(n.get("resource.name").asText()).isEqualTo("checkout");
  }
}
