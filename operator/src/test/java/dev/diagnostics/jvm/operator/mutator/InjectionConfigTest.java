package dev.diagnostics.jvm.operator.mutator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.Alerts;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.StacksSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import org.junit.jupiter.api.Test;

class InjectionConfigTest {
  static String hash(JvmDiagnosticsSpec s) {
    return InjectionConfig.of(s, "img:1").hash();
  }

  @Test
  void hashIsStableAndShort() {
    assertThat(hash(PodMutatorTest.spec()))
        .isEqualTo(hash(PodMutatorTest.spec()))
        .matches("[0-9a-f]{16}");
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
    assertThat(InjectionConfig.of(PodMutatorTest.sidecarSpec(), "jvmdiag/agent:2").agentImage())
        .isEqualTo("jvmdiag/agent:2");
  }

  /**
   * Hashes that the operator with monitors off by default (0.1.0) writes, computed by running that
   * code: the reference the canonical text must keep where the pod's injection is the same. Each is
   * the hash of a resource as written (YAML) below.
   */
  static final String PREVIOUS_MONITORS_UNSET_OR_OFF =
      "659d9e4c7045b292"; // spec(): the flag was never injected

  static final String PREVIOUS_MONITORS_ON = "0bff6a66e0ba3329"; // spec() + monitors.enabled: true
  static final String PREVIOUS_MONITORS_ON_7 = "4e8aacaba5527f39"; // ... and maxClasses: 7
  static final String PREVIOUS_PLAIN_UNSET_OR_OFF =
      "72ce74a44f4a4615"; // targetRef only: no flag at all
  static final String PREVIOUS_PLAIN_ON = "961e88c4919f59f5";
  static final String PREVIOUS_SIDECAR_UNSET_OR_OFF = "be49c643b4a2b542"; // sidecarSpec()
  static final String PREVIOUS_SIDECAR_ON = "8896b1b4461b4a21";

  /** spec() (or sidecarSpec()) with the collectors part of a resource as written. */
  static JvmDiagnosticsSpec as(JvmDiagnosticsSpec base, String collectorsYaml) {
    if (collectorsYaml != null) {
      String spec =
          "targetRef: {kind: Deployment, name: checkout}\ncollectors: " + collectorsYaml + "\n";
      base.collectors =
          new KubernetesSerialization().unmarshal(spec, JvmDiagnosticsSpec.class).collectors;
    }
    return base;
  }

  static JvmDiagnosticsSpec plain() {
    JvmDiagnosticsSpec s = new JvmDiagnosticsSpec();
    s.targetRef = new TargetRef(TargetRef.Kind.Deployment, "checkout");
    return s;
  }

  @Test
  void monitorsOnByDefaultChangesTheHashOfTheResourcesThatLeaveItUnsetOnly() {
    // Left unset (no collectors, or collectors without monitors, or monitors without enabled): the
    // pods now get the flag, so the hash changes (their one rollout) to the one "enabled: true"
    // wrote.
    for (String unset :
        new String[] {
          null, "{threads: {maxThreadNames: 50}}", "{monitors: {}}", "{monitors: {maxClasses: 20}}"
        }) {
      assertThat(hash(as(PodMutatorTest.spec(), unset)))
          .as("unset: %s", unset)
          .isNotEqualTo(PREVIOUS_MONITORS_UNSET_OR_OFF)
          .isEqualTo(PREVIOUS_MONITORS_ON);
      assertThat(hash(as(plain(), unset))).as("unset: %s", unset).isEqualTo(PREVIOUS_PLAIN_ON);
      assertThat(hash(as(PodMutatorTest.sidecarSpec(), unset)))
          .as("unset: %s", unset)
          .isEqualTo(PREVIOUS_SIDECAR_ON);
    }
    // Set on: the same injection as before, the same hash, no restart.
    assertThat(hash(as(PodMutatorTest.spec(), "{monitors: {enabled: true}}")))
        .isEqualTo(PREVIOUS_MONITORS_ON);
    assertThat(hash(as(PodMutatorTest.spec(), "{monitors: {enabled: true, maxClasses: 7}}")))
        .isEqualTo(PREVIOUS_MONITORS_ON_7);
    assertThat(hash(as(plain(), "{monitors: {enabled: true}}"))).isEqualTo(PREVIOUS_PLAIN_ON);
    assertThat(hash(as(PodMutatorTest.sidecarSpec(), "{monitors: {enabled: true}}")))
        .isEqualTo(PREVIOUS_SIDECAR_ON);
    // Set off: the pods never had the flag and still do not, the same hash, whatever the limit
    // says.
    for (String off :
        new String[] {
          "{monitors: {enabled: false}}", "{monitors: {enabled: false, maxClasses: 5}}"
        }) {
      assertThat(hash(as(PodMutatorTest.spec(), off)))
          .as(off)
          .isEqualTo(PREVIOUS_MONITORS_UNSET_OR_OFF);
      assertThat(hash(as(plain(), off))).as(off).isEqualTo(PREVIOUS_PLAIN_UNSET_OR_OFF);
      assertThat(hash(as(PodMutatorTest.sidecarSpec(), off)))
          .as(off)
          .isEqualTo(PREVIOUS_SIDECAR_UNSET_OR_OFF);
    }
  }

  @Test
  void monitorsOnByDefaultInjectsTheFlagTheCollectorAndItsLimit() {
    InjectionConfig unset = InjectionConfig.of(as(plain(), null), "i");
    assertThat(unset.flags()).containsExactly("-XX:+DTraceMonitorProbes");
    assertThat(unset.collectors())
        .containsExactly(
            "threads", "safepoints", "vmOperations", "compilation", "monitors", "parking");
    assertThat(unset.limits()).isEqualTo("maxThreadNames=50,maxMethods=20,maxClasses=20");
    InjectionConfig off = InjectionConfig.of(as(plain(), "{monitors: {enabled: false}}"), "i");
    assertThat(off.flags()).isEmpty();
    assertThat(off.collectors()).doesNotContain("monitors");
    assertThat(off.limits()).isEqualTo("maxThreadNames=50,maxMethods=20");
  }

  @Test
  void refusedOptionsAreNeverInjectedNorHashed() {
    String base = hash(PodMutatorTest.spec());
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.jvmOptions.extra =
        List.of(
            "-XX:ReservedCodeCacheSize=256m",
            "-XX:OnOutOfMemoryError=/bin/sh",
            "-javaagent:/tmp/a.jar");
    InjectionConfig c = InjectionConfig.of(s, "img:1");
    assertThat(c.flags()).doesNotContain("-XX:OnOutOfMemoryError=/bin/sh", "-javaagent:/tmp/a.jar");
    assertThat(c.refusedOptions())
        .satisfiesExactly(
            o -> assertThat(o).startsWith("-XX:OnOutOfMemoryError=/bin/sh: runs a shell command"),
            o -> assertThat(o).startsWith("-javaagent:/tmp/a.jar: loads code"));
    assertThat(c.hash()).isEqualTo(base);
    // the administrator's exception makes the agent part of the injection (and of the hash)
    InjectionConfig allowed = InjectionConfig.of(s, "img:1", List.of("-javaagent:/tmp/"));
    assertThat(allowed.flags())
        .contains("-javaagent:/tmp/a.jar")
        .doesNotContain("-XX:OnOutOfMemoryError=/bin/sh");
    assertThat(allowed.hash()).isNotEqualTo(base);
  }

  @Test
  void collectorsAndLimitsChangeTheHashOnlyWhereThePodChanges() {
    String base = hash(PodMutatorTest.spec());
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    s.collectors.monitors.maxClasses = 5;
    assertThat(hash(s)).as("the limit of an enabled collector reaches the pod").isNotEqualTo(base);
    s.collectors.monitors.enabled = false;
    String off = hash(s);
    assertThat(off).isNotEqualTo(base);
    s.collectors.monitors.maxClasses = 6;
    assertThat(hash(s))
        .as("the limit of a disabled collector changes nothing in the pod")
        .isEqualTo(off);
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
    assertThat(InjectionConfig.of(s, "i").limits())
        .isEqualTo("maxThreadNames=50,maxMethods=20,maxClasses=20");
    s.collectors.monitors.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxThreadNames=50,maxMethods=20");
    s.collectors.monitors.enabled = true;
    s.collectors.threads.enabled = false;
    s.collectors.compilation.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("maxClasses=20");
  }

  @Test
  void theThreadStartRateThresholdReachesTheAgentWithoutRestartingPods() {
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    String base = hash(s);
    s.alerts.threadStartRate =
        new dev.diagnostics.jvm.operator.api.Alerts.NumberAlert(7.5, "1m", "warning");
    // rounded up to whole threads per second: the starter probe attaches at the alert's rate
    assertThat(InjectionConfig.of(s, "i").limits())
        .isEqualTo("maxThreadNames=50,threadStartRate=8,maxMethods=20,maxClasses=20");
    assertThat(hash(s)).isEqualTo(base);
    s.alerts.threadStartRate =
        new dev.diagnostics.jvm.operator.api.Alerts.NumberAlert(0.2, "1m", "warning");
    assertThat(InjectionConfig.of(s, "i").limits()).contains("threadStartRate=1");
    s.collectors.threads.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).doesNotContain("threadStartRate");
  }

  @Test
  void theStackBudgetReachesTheAgentAndRollsThePods() {
    JvmDiagnosticsSpec s = PodMutatorTest.spec();
    String base = hash(s);
    assertThat(InjectionConfig.of(s, "i").limits())
        .as("unset: the agent's own budget")
        .isEqualTo("maxThreadNames=50,maxMethods=20,maxClasses=20");
    s.stacks.samplesPerSecond = 5;
    assertThat(InjectionConfig.of(s, "i").limits())
        .isEqualTo("maxThreadNames=50,maxMethods=20,maxClasses=20,stackSamplesPerSecond=5");
    String five = hash(s);
    assertThat(five).as("a budget changes what the agent does for the pod").isNotEqualTo(base);
    s.stacks.samplesPerSecond = 6;
    assertThat(hash(s)).isNotEqualTo(five).isNotEqualTo(base);
    // with the alert's threshold too, and without any collector's limit
    s.alerts.threadStartRate = new Alerts.NumberAlert(7.5, "1m", "warning");
    assertThat(InjectionConfig.of(s, "i").limits())
        .isEqualTo(
            "maxThreadNames=50,threadStartRate=8,maxMethods=20,maxClasses=20,stackSamplesPerSecond=6");
    s.collectors.threads.enabled = false;
    s.collectors.compilation.enabled = false;
    s.collectors.monitors.enabled = false;
    assertThat(InjectionConfig.of(s, "i").limits()).isEqualTo("stackSamplesPerSecond=6");
  }

  @Test
  void resourcesWithoutStacksKeepTheirHash() {
    // unset, as written or left out: the hashes of the releases before spec.stacks
    assertThat(hash(as(PodMutatorTest.spec(), "{monitors: {enabled: true}}")))
        .isEqualTo(PREVIOUS_MONITORS_ON);
    JvmDiagnosticsSpec s = plain();
    s.stacks = null;
    assertThat(hash(s)).isEqualTo(PREVIOUS_PLAIN_ON);
    s.stacks = new StacksSpec();
    assertThat(hash(s)).isEqualTo(PREVIOUS_PLAIN_ON);
    s =
        new KubernetesSerialization()
            .unmarshal(
                "targetRef: {kind: Deployment, name: checkout}\nstacks: {}\n",
                JvmDiagnosticsSpec.class);
    assertThat(hash(s)).isEqualTo(PREVIOUS_PLAIN_ON);
    s =
        new KubernetesSerialization()
            .unmarshal(
                "targetRef: {kind: Deployment, name: checkout}\nstacks: {samplesPerSecond: 20}\n",
                JvmDiagnosticsSpec.class);
    assertThat(InjectionConfig.of(s, "i").limits()).endsWith(",stackSamplesPerSecond=20");
    assertThat(hash(s)).isNotEqualTo(PREVIOUS_PLAIN_ON);
  }
}
