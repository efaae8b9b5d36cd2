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
  }

  @Test
  void theAgentImageNeverRestartsPods() {
    // a helm upgrade that changes only the agent image must not roll the Sidecar workloads
    assertThat(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "jvmdiag/agent:2").hash())
        .isEqualTo(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "jvmdiag/agent:1").hash());
    assertThat(InjectionConfig.of(PodMutatorTest.spec(), "jvmdiag/agent:2").hash())
        .isEqualTo(InjectionConfig.of(PodMutatorTest.spec(), "jvmdiag/agent:1").hash());
    // the sidecar still runs the image it is given
    assertThat(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "jvmdiag/agent:2").agentImage()).isEqualTo("jvmdiag/agent:2");
  }

  @Test
  void nodeAgentHashesAreTheOnesEarlierReleasesWrote() {
    // a changed canonical text would restart every injected workload at the operator's upgrade
    assertThat(hash(PodMutatorTest.spec())).isEqualTo("659d9e4c7045b292");
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

  @Test
  void theNewCollectorsChangeTheHashOnlyAwayFromTheirDefaults() {
    // parking on and monitors off (the defaults) keep the hashes earlier releases wrote
    String base = hash(PodMutatorTest.spec());
    assertThat(base).isEqualTo("659d9e4c7045b292");
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.collectors.monitors.maxClasses = 5;
    assertThat(hash(s)).as("the limit of a disabled collector changes nothing in the pod").isEqualTo(base);
    s.collectors.monitors.enabled = true;
    String monitors = hash(s);
    assertThat(monitors).isNotEqualTo(base);
    s.collectors.monitors.maxClasses = 6;
    assertThat(hash(s)).isNotEqualTo(monitors);
    s = PodMutatorTest.spec();
    s.collectors.parking.enabled = false;
    assertThat(hash(s)).isNotEqualTo(base);
    s = PodMutatorTest.spec();
    s.collectors.compilation.maxMethods = 21;
    assertThat(hash(s)).isNotEqualTo(base);
  }

  @Test
  void limitsNameTheEnabledCollectorsOnly() {
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxThreadNames=50,maxMethods=20");
    s.collectors.monitors.enabled = true;
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxThreadNames=50,maxMethods=20,maxClasses=20");
    s.collectors.threads.enabled = false;
    s.collectors.compilation.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxClasses=20");
  }

  @Test
  void theThreadStartRateThresholdReachesTheAgentWithoutRestartingPods() {
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    String base = hash(s);
    s.alerts.threadStartRate = new dev.diagnostics.jvm.operator.api.Alerts.NumberAlert(7.5, "1m", "warning");
    // rounded up to whole threads per second: the starter probe attaches at the alert's rate
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxThreadNames=50,threadStartRate=8,maxMethods=20");
    assertThat(hash(s)).isEqualTo(base);
    s.alerts.threadStartRate = new dev.diagnostics.jvm.operator.api.Alerts.NumberAlert(0.2, "1m", "warning");
    assertThat(InjectionConfig.of(s, "i").limits()).contains("threadStartRate=1");
    s.collectors.threads.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).doesNotContain("threadStartRate");
  }
}
