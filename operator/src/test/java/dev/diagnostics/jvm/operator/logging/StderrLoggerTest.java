package dev.diagnostics.jvm.operator.logging;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class StderrLoggerTest {
  static final Instant T = Instant.parse("2026-01-02T12:00:00Z");

  @AfterEach
  void back() {
    LogFormat.use(LogFormat.text);
  }

  @Test
  void textIsTheLineSlf4jSimpleWrote() {
    assertThat(
            StderrLogger.format(
                LogFormat.text, T, Level.INFO, "dev.x.Reconciler", "main", "hello 1", null))
        .isEqualTo("[main] INFO dev.x.Reconciler - hello 1\n");
  }

  @Test
  void jsonIsOneObjectPerLineWithEveryFieldEscaped() throws Exception {
    String line =
        StderrLogger.format(
            LogFormat.json,
            T,
            Level.WARN,
            "dev.x.Webhook",
            "pool-1 \"a\"",
            "bad\nvalue\t\u0001",
            new IllegalStateException("boom"));
    assertThat(line).endsWith("}\n").doesNotContain("\n{").hasLineCount(1);
    JsonNode n = new ObjectMapper().readTree(line);
    assertThat(n.get("time").asText()).isEqualTo("2026-01-02T12:00:00Z");
    assertThat(n.get("level").asText()).isEqualTo("WARN");
    assertThat(n.get("logger").asText()).isEqualTo("dev.x.Webhook");
    assertThat(n.get("thread").asText()).isEqualTo("pool-1 \"a\"");
    assertThat(n.get("message").asText()).isEqualTo("bad\nvalue\t\u0001");
    assertThat(n.get("exception").asText())
        .startsWith("java.lang.IllegalStateException: boom")
        .contains("\tat ");
  }

  @Test
  void theProcessWideBindingFollowsTheFormatAndDropsDebug() throws Exception {
    assertThat(LoggerFactory.getILoggerFactory().getClass().getName())
        .startsWith(LogProvider.class.getName());
    PrintStream err = System.err;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      var log = LoggerFactory.getLogger("dev.x.Test");
      log.info("as {}", "text");
      log.debug("never");
      LogFormat.use(LogFormat.json);
      log.error("as {}", "json");
    } finally {
      System.setErr(err);
    }
    String[] lines = buf.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(lines).hasSize(2);
    assertThat(lines[0]).endsWith("INFO dev.x.Test - as text");
    assertThat(new ObjectMapper().readTree(lines[1]).get("message").asText()).isEqualTo("as json");
  }
}
