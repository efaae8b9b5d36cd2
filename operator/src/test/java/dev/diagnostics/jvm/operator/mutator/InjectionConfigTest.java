package dev.diagnostics.jvm.operator.mutator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.Alerts;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

class InjectionConfigTest {
  static String hash(JvmDiagnosticsSpec s) {
    return InjectionConfig.of(s, "img:1").hash();
  }

  @Test
  void hashIsStableAndShort() {
    assertThat(hash(PodMutatorTest.spec())).isEqualTo(hash(PodMutatorTest.spec())).matches("[0-9a-f]{16}");
  }

  @Test
  void hashFollowsWhatIsInjected() {
    String base = hash(PodMutatorTest.spec());
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.jvmOptions.extra = List.of("-XX:ReservedCodeCacheSize=512m");
    assertThat(hash(s)).isNotEqualTo(base);
    s = PodMutatorTest.spec();
    s.collectors.threads.maxThreadNames = 10;
    assertThat(hash(s)).isNotEqualTo(base);
    s = PodMutatorTest.spec();
    s.containers = List.of("app");
    assertThat(hash(s)).isNotEqualTo(base);
    assertThat(hash(PodMutatorTest.sidecarSpec())).isNotEqualTo(base);
  }

  @Test
  void alertsRolloutAndTargetDoNotRestartPods() {
    String base = hash(PodMutatorTest.spec());
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.rollout = JvmDiagnosticsSpec.Rollout.Manual;
    s.alerts.safepointPause = new Alerts.DurationAlert("500ms", "0m", "page");
    s.targetRef.name = "other";
    assertThat(hash(s)).isEqualTo(base);
    // the agent image only matters for the sidecar
    assertThat(InjectionConfig.of(PodMutatorTest.spec(), "img:2").hash()).isEqualTo(base);
    assertThat(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "img:2").hash())
        .isNotEqualTo(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "img:1").hash());
  }

  @Test
  void refusedOptionsAreNeverInjectedNorHashed() {
    String base = hash(PodMutatorTest.spec());
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.jvmOptions.extra = List.of("-XX:ReservedCodeCacheSize=256m", "-XX:OnOutOfMemoryError=/bin/sh", "-javaagent:/tmp/a.jar");
    InjectionConfig c = InjectionConfig.of(s, "img:1");
    assertThat(c.flags()).doesNotContain("-XX:OnOutOfMemoryError=/bin/sh", "-javaagent:/tmp/a.jar");
    assertThat(c.refusedOptions()).satisfiesExactly(
        o -> assertThat(o).startsWith("-XX:OnOutOfMemoryError=/bin/sh: runs a shell command"),
        o -> assertThat(o).startsWith("-javaagent:/tmp/a.jar: loads code"));
    assertThat(c.hash()).isEqualTo(base);
    // the administrator's exception makes the agent part of the injection (and of the hash)
    InjectionConfig allowed = InjectionConfig.of(s, "img:1", List.of("-javaagent:/tmp/"));
    assertThat(allowed.flags()).contains("-javaagent:/tmp/a.jar").doesNotContain("-XX:OnOutOfMemoryError=/bin/sh");
    assertThat(allowed.hash()).isNotEqualTo(base);
  }
}
