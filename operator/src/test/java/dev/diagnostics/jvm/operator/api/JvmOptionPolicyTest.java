package dev.diagnostics.jvm.operator.api;

import static dev.diagnostics.jvm.operator.api.JvmOptionPolicy.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The allowlist of diagnostic JVM options; CrdValidationIT checks the CRD's CEL rules agree on the
 * same corpus.
 */
public class JvmOptionPolicyTest {
  /** Diagnostic and logging options: accepted without any exception. */
  public static final List<String> DIAGNOSTIC_OPTIONS =
      List.of(
          "-Xlog:gc*:stderr",
          "-Xlog:safepoint=info:file=/tmp/x.log:uptime",
          "-Xlog:os+thread=debug",
          "-verbose:gc",
          "-verbose:class",
          "-XX:+PreserveFramePointer",
          "-XX:+DTraceMonitorProbes",
          "-XX:+ExtendedDTraceProbes",
          "-XX:+UnlockDiagnosticVMOptions",
          "-XX:+DebugNonSafepoints",
          "-XX:ReservedCodeCacheSize=256m",
          "-XX:InitialCodeCacheSize=64M",
          "-XX:CICompilerCount=4",
          "-XX:-TieredCompilation",
          "-XX:TieredStopAtLevel=1",
          "-XX:+PrintCompilation",
          "-XX:+PrintCodeCache",
          "-XX:-UseCodeCacheFlushing",
          "-XX:PerMethodRecompilationCutoff=1000",
          "-XX:+HeapDumpOnOutOfMemoryError",
          "-XX:HeapDumpPath=/tmp/dumps",
          "-XX:ErrorFile=/tmp/hs_err_%p.log",
          "-XX:StartFlightRecording=duration=60s,filename=/tmp/r.jfr",
          "-XX:StartFlightRecording",
          "-XX:NativeMemoryTracking=summary",
          "-XX:-OmitStackTraceInFastThrow",
          "-XX:+SafepointTimeout",
          "-XX:SafepointTimeoutDelay=1000",
          "-Djdk.tracePinnedThreads=full");

  /** Refused for everyone, with the reason's class. */
  public static final Map<String, String> REFUSED_OPTIONS =
      Map.ofEntries(
          Map.entry(
              "-XX:OnOutOfMemoryError=kill -9 %p",
              RUNS_COMMAND_WHY), // whitespace aside, also a command
          Map.entry("-XX:OnOutOfMemoryError=/bin/sh", RUNS_COMMAND_WHY),
          Map.entry("-XX:OnError=curl", RUNS_COMMAND_WHY),
          Map.entry("-Xrunjdwp:transport=dt_socket,server=y,address=*:5005", OPENS_PORT_WHY),
          Map.entry("-agentlib:jdwp=transport=dt_socket,server=y,address=*:5005", OPENS_PORT_WHY),
          Map.entry("-Dcom.sun.management.jmxremote.port=9010", OPENS_PORT_WHY),
          Map.entry("-Djava.rmi.server.hostname=0.0.0.0", OPENS_PORT_WHY),
          Map.entry("-Xbootclasspath/a:/tmp/evil.jar", CHANGES_CLASS_LOADING_WHY),
          Map.entry("-Xrunhprof", CHANGES_CLASS_LOADING_WHY),
          Map.entry("-Djava.class.path=/tmp", CHANGES_CLASS_LOADING_WHY),
          Map.entry("-Djava.system.class.loader=com.evil.Loader", CHANGES_CLASS_LOADING_WHY),
          Map.entry("-Djava.security.manager=allow", CHANGES_CLASS_LOADING_WHY),
          Map.entry("-Djava.library.path=/tmp", CHANGES_CLASS_LOADING_WHY),
          Map.entry("--patch-module=java.base=/tmp/p.jar", CHANGES_CLASS_LOADING_WHY),
          Map.entry("--add-opens=java.base/java.lang=ALL-UNNAMED", OPENS_INTERNALS_WHY),
          Map.entry("--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", OPENS_INTERNALS_WHY),
          Map.entry("@/tmp/argfile", INDIRECT_OPTIONS_WHY),
          Map.entry("-XX:Flags=/tmp/.hotspotrc", INDIRECT_OPTIONS_WHY),
          Map.entry("-XX:VMOptionsFile=/tmp/opts", INDIRECT_OPTIONS_WHY),
          Map.entry("-XX:+IgnoreUnrecognizedVMOptions", INDIRECT_OPTIONS_WHY),
          Map.entry("-XX:-UsePerfData", BLINDS_WHY),
          Map.entry("-XX:+DisableAttachMechanism", BLINDS_WHY),
          Map.entry("-Xlog:disable", BLINDS_WHY));

  /** Not diagnostic (no specific class): refused with the allowlist's hint. */
  public static final List<String> NOT_DIAGNOSTIC =
      List.of(
          "-Xmx1g",
          "-XX:+UseSerialGC",
          "-XX:+UnlockExperimentalVMOptions",
          "-XX:+PrintAssembly",
          "-XX:MaxRAMPercentage=75",
          "-XX:ReservedCodeCacheSize=$(id)",
          "-XX:+EnableDynamicAgentLoading",
          "-ea",
          "-Xss1m",
          "-jar",
          "-XX:CompileCommand=quiet");

  /** Only with the cluster administrator's exception. */
  public static final List<String> ADMIN_ONLY_OPTIONS =
      List.of(
          "-javaagent:/opt/otel/opentelemetry-javaagent.jar",
          "-agentpath:/opt/async-profiler/libasyncProfiler.so=start",
          "-agentlib:hprof",
          "-Dotel.service.name=checkout",
          "-Dapp.mode=prod");

  @Test
  void diagnosticOptionsAreAccepted() {
    for (String o : DIAGNOSTIC_OPTIONS) assertThat(refusal(o, List.of())).as(o).isNull();
  }

  @Test
  void eachRefusedClassSaysWhy() {
    REFUSED_OPTIONS.forEach((o, why) -> {
      String got = refusal(o, List.of("-javaagent:", "-agentlib:", "-D"));
      if (o.contains(" ")) assertThat(got).as(o).contains("without whitespace");
      else
        assertThat(got)
            .as(o + " (even with every exception an administrator can give)")
            .isEqualTo(why);
    });
  }

  @Test
  void otherOptionsAreNotDiagnostic() {
    for (String o : NOT_DIAGNOSTIC)
      assertThat(refusal(o, List.of("-javaagent:", "-D"))).as(o).isEqualTo(DIAGNOSTIC_HINT);
  }

  @Test
  void agentsAndPropertiesOnlyWithTheAdministratorsPrefix() {
    for (String o : ADMIN_ONLY_OPTIONS) {
      assertThat(refusal(o, List.of())).as(o).isEqualTo(ADMIN_ONLY_WHY);
      assertThat(refusal(o, List.of(o.substring(0, 5))))
          .as(o + " with its prefix allowed")
          .isNull();
    }
    List<String> otel = List.of("-javaagent:/opt/otel/");
    assertThat(refusal("-javaagent:/opt/otel/opentelemetry-javaagent.jar", otel)).isNull();
    assertThat(refusal("-javaagent:/tmp/other.jar", otel)).isEqualTo(ADMIN_ONLY_WHY);
    assertThat(refusal("-Dotel.service.name=x", otel)).isEqualTo(ADMIN_ONLY_WHY);
  }

  @Test
  void theAdministratorCanOnlyAllowAgentsAndProperties() {
    assertThat(adminPrefixProblem("-javaagent:/opt/otel/")).isNull();
    assertThat(adminPrefixProblem("-Dotel.")).isNull();
    assertThat(adminPrefixProblem("-XX:OnError=")).contains("only Java agents");
    assertThat(adminPrefixProblem("-agentlib:jdwp")).contains("opens a debugger");
    assertThat(adminPrefixProblem("-Djava.class.path"))
        .contains("changes where the JVM loads classes");
    assertThat(adminPrefixProblem("")).contains("every option");
    assertThat(adminPrefixProblem("-Xmx")).contains("only Java agents");
  }

  @Test
  void whyTextsCanBeSplicedIntoCelStrings() {
    for (String s :
        List.of(
            RUNS_COMMAND_WHY,
            OPENS_PORT_WHY,
            CHANGES_CLASS_LOADING_WHY,
            OPENS_INTERNALS_WHY,
            INDIRECT_OPTIONS_WHY,
            BLINDS_WHY,
            DIAGNOSTIC_HINT,
            RUNS_COMMAND,
            OPENS_PORT,
            CHANGES_CLASS_LOADING,
            OPENS_INTERNALS,
            INDIRECT_OPTIONS,
            BLINDS,
            DIAGNOSTIC,
            ADMIN_ONLY)) {
      assertThat(s)
          .as("a single quote or backslash would end or escape the CEL string literal")
          .doesNotContain("'", "\\");
    }
  }
}
