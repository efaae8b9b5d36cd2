package dev.diagnostics.jvm.operator.mutator;

import static dev.diagnostics.jvm.operator.Contract.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import dev.diagnostics.jvm.operator.mutator.Finding.Reason;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.List;
import org.junit.jupiter.api.Test;

public class PodMutatorTest {
  static final String FLAG = "-XX:ReservedCodeCacheSize=256m";

  /**
   * What spec() injects: its frame-pointer flag, the monitors collector's (on by default), its
   * extra option.
   */
  static final String SPEC_FLAGS = "-XX:+PreserveFramePointer " + MONITOR_PROBES_FLAG + " " + FLAG;

  public static JvmDiagnosticsSpec spec() {
    JvmDiagnosticsSpec s = new JvmDiagnosticsSpec();
    s.targetRef = new TargetRef(TargetRef.Kind.Deployment, "checkout");
    s.jvmOptions.extra = List.of(FLAG);
    s.jvmOptions.preserveFramePointer = true;
    return s;
  }

  static InjectionConfig config(JvmDiagnosticsSpec s) {
    return InjectionConfig.of(s, "jvmdiag/agent:test");
  }

  static PodBuilder pod() {
    return new PodBuilder()
        .withNewMetadata()
        .withName("checkout-1")
        .addToLabels(INJECT_LABEL, "checkout")
        .endMetadata()
        .withNewSpec()
        .endSpec();
  }

  static Container container(Pod p, String name) {
    return p.getSpec().getContainers().stream()
        .filter(c -> c.getName().equals(name))
        .findFirst()
        .orElseThrow();
  }

  static String jto(Container c) {
    return c.getEnv().stream()
        .filter(e -> e.getName().equals(JAVA_TOOL_OPTIONS))
        .map(EnvVar::getValue)
        .findFirst()
        .orElse(null);
  }

  @Test
  void noJavaToolOptionsGetsOneWithTheFlags() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withImage("eclipse-temurin:21")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    assertThat(r.changed()).isTrue();
    assertThat(jto(container(r.pod(), "app"))).isEqualTo(SPEC_FLAGS);
    assertThat(r.pod().getMetadata().getAnnotations())
        .containsEntry(INJECTED, config(spec()).hash())
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,monitors,parking")
        .containsEntry(CONTAINERS, "app")
        .containsEntry(LIMITS, "maxThreadNames=50,maxMethods=20,maxClasses=20");
    assertThat(r.findings()).isEmpty();
    assertThat(in.getSpec().getContainers().get(0).getEnv()).as("input untouched").isEmpty();
  }

  @Test
  void literalJavaToolOptionsIsExtendedWithUserFlagsFirst() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .addNewEnv()
            .withName("A")
            .withValue("1")
            .endEnv()
            .addNewEnv()
            .withName(JAVA_TOOL_OPTIONS)
            .withValue("-Xmx512m -Dapp=1")
            .endEnv()
            .addNewEnv()
            .withName("B")
            .withValue("2")
            .endEnv()
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    Container app = container(r.pod(), "app");
    assertThat(jto(app)).isEqualTo("-Xmx512m -Dapp=1 " + SPEC_FLAGS);
    assertThat(app.getEnv())
        .extracting(EnvVar::getName)
        .containsExactly("A", JAVA_TOOL_OPTIONS, "B");
  }

  static EnvVar fromConfigMap(String name, String key) {
    return new EnvVar(
        name,
        null,
        new io.fabric8.kubernetes.api.model.EnvVarSourceBuilder()
            .withNewConfigMapKeyRef(key, "opts", false)
            .build());
  }

  static String env(Container c, String name) {
    return c.getEnv().stream()
        .filter(e -> e.getName().equals(name))
        .map(EnvVar::getValue)
        .findFirst()
        .orElse(null);
  }

  @Test
  void valueFromGetsTheFlagsInJdkJavaOptions() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withEnv(fromConfigMap(JAVA_TOOL_OPTIONS, "jto"))
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    Container app = container(r.pod(), "app");
    assertThat(app.getEnv())
        .extracting(EnvVar::getName)
        .containsExactly(JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS);
    assertThat(app.getEnv().get(0))
        .as("JAVA_TOOL_OPTIONS untouched")
        .isEqualTo(fromConfigMap(JAVA_TOOL_OPTIONS, "jto"));
    assertThat(env(app, JDK_JAVA_OPTIONS)).isEqualTo(SPEC_FLAGS);
    assertThat(app.getEnv().toString()).doesNotContain("$(");
    assertThat(r.injectedContainers()).containsExactly("app");
    assertThat(r.hasBlockingFinding()).isFalse();
    assertThat(r.findings())
        .singleElement()
        .satisfies(f -> {
          assertThat(f.reason()).isEqualTo(Reason.FlagsInJdkJavaOptions);
          assertThat(f.message())
              .contains("JDK_JAVA_OPTIONS")
              .contains("only the java launcher")
              .contains(FLAG);
        });
    MutationResult again = PodMutator.mutate(r.pod(), config(spec()));
    assertThat(again.changed()).as("idempotent").isFalse();
  }

  @Test
  void aLiteralJdkJavaOptionsIsExtendedNeverReplaced() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withEnv(
                new EnvVar(JDK_JAVA_OPTIONS, "-Xss1m", null),
                fromConfigMap(JAVA_TOOL_OPTIONS, "jto"))
            .endContainer()
            .endSpec()
            .build();
    Container app = container(PodMutator.mutate(in, config(spec())).pod(), "app");
    assertThat(app.getEnv())
        .extracting(EnvVar::getName)
        .containsExactly(JDK_JAVA_OPTIONS, JAVA_TOOL_OPTIONS);
    assertThat(env(app, JDK_JAVA_OPTIONS)).isEqualTo("-Xss1m " + SPEC_FLAGS);
  }

  @Test
  void bothFromValueFromAreLeftUntouchedAndReported() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withEnv(
                fromConfigMap(JAVA_TOOL_OPTIONS, "jto"), fromConfigMap(JDK_JAVA_OPTIONS, "jdk"))
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    Container app = container(r.pod(), "app");
    assertThat(app.getEnv())
        .containsExactly(
            fromConfigMap(JAVA_TOOL_OPTIONS, "jto"), fromConfigMap(JDK_JAVA_OPTIONS, "jdk"));
    assertThat(r.findings())
        .singleElement()
        .satisfies(f -> {
          assertThat(f.reason()).isEqualTo(Reason.ValueFromNotMerged);
          assertThat(f.container()).isEqualTo("app");
          assertThat(f.message())
              .contains("JAVA_TOOL_OPTIONS and JDK_JAVA_OPTIONS")
              .contains("both come from valueFrom")
              .contains(FLAG);
        });
    assertThat(r.injectedContainers()).isEmpty();
    assertThat(r.pod().getMetadata().getAnnotations()).containsEntry(CONTAINERS, "");
  }

  @Test
  void valueFromWithEnvFromThatMaySetJdkJavaOptionsIsReported() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withEnv(fromConfigMap(JAVA_TOOL_OPTIONS, "jto"))
            .addNewEnvFrom()
            .withNewConfigMapRef("settings", false)
            .endEnvFrom()
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    assertThat(container(r.pod(), "app").getEnv())
        .containsExactly(fromConfigMap(JAVA_TOOL_OPTIONS, "jto"));
    assertThat(r.findings()).extracting(Finding::reason).containsExactly(Reason.ValueFromNotMerged);
    assertThat(r.findings().get(0).message()).contains("envFrom may set JDK_JAVA_OPTIONS");
  }

  @Test
  void envFromWithoutExplicitEntryIsNotOverriddenAndReported() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .addNewEnvFrom()
            .withNewConfigMapRef("settings", false)
            .endEnvFrom()
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    assertThat(container(r.pod(), "app").getEnv()).isEmpty();
    assertThat(r.findings()).extracting(Finding::reason).containsExactly(Reason.EnvFromNotMerged);
  }

  @Test
  void severalContainersAllInjectedAndProxiesNeverChosenByDefault() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .endContainer()
            .addNewContainer()
            .withName("istio-proxy")
            .withImage("docker.io/istio/proxyv2:1.22")
            .endContainer()
            .addNewContainer()
            .withName("worker")
            .endContainer()
            .addNewContainer()
            .withName("mesh")
            .withImage("cr.l5d.io/linkerd/proxy:stable")
            .endContainer()
            .addNewContainer()
            .withName("linkerd-proxy")
            .withImage("cr.l5d.io/linkerd/proxy:stable")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(spec()));
    assertThat(r.injectedContainers()).containsExactly("app", "worker");
    assertThat(jto(container(r.pod(), "istio-proxy"))).isNull();
    assertThat(jto(container(r.pod(), "linkerd-proxy"))).isNull();
    assertThat(jto(container(r.pod(), "mesh"))).as("proxy recognised by its image").isNull();
    assertThat(r.pod().getMetadata().getAnnotations().get(CONTAINERS)).isEqualTo("app,worker");
    assertThat(r.findings()).extracting(Finding::reason).containsOnly(Reason.ProxySkipped);
    assertThat(r.hasBlockingFinding()).isFalse();
  }

  @Test
  void namedContainersOnlyAndMissingOnesReported() {
    JvmDiagnosticsSpec s = spec();
    s.containers = List.of("worker", "gone");
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .endContainer()
            .addNewContainer()
            .withName("worker")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(r.injectedContainers()).containsExactly("worker");
    assertThat(jto(container(r.pod(), "app"))).isNull();
    assertThat(r.findings())
        .singleElement()
        .satisfies(f -> {
          assertThat(f.reason()).isEqualTo(Reason.ContainerNotFound);
          assertThat(f.container()).isEqualTo("gone");
        });
  }

  @Test
  void alreadyInjectedWithTheSameHashIsANoOp() {
    for (JvmDiagnosticsSpec s : List.of(spec(), sidecarSpec())) {
      Pod in =
          pod()
              .editSpec()
              .addNewContainer()
              .withName("app")
              .addNewEnv()
              .withName(JAVA_TOOL_OPTIONS)
              .withValue("-Dx=1")
              .endEnv()
              .endContainer()
              .endSpec()
              .build();
      MutationResult once = PodMutator.mutate(in, config(s));
      MutationResult twice = PodMutator.mutate(once.pod(), config(s));
      assertThat(twice.changed()).isFalse();
      assertThat(twice.pod()).isEqualTo(once.pod());
      assertThat(jto(container(twice.pod(), "app"))).isEqualTo("-Dx=1 " + config(s).flagString());
    }
  }

  public static JvmDiagnosticsSpec sidecarSpec() {
    JvmDiagnosticsSpec s = spec();
    s.collection = JvmDiagnosticsSpec.Collection.Sidecar;
    return s;
  }

  @Test
  void sidecarCollectionAddsAnUnprivilegedCollectorAndASharedTmp() {
    Pod in =
        pod()
            .editSpec()
            .withNewSecurityContext()
            .withRunAsUser(1000L)
            .endSecurityContext()
            .addNewContainer()
            .withName("app")
            .endContainer()
            .addNewContainer()
            .withName("istio-proxy")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(sidecarSpec()));
    Container side = container(r.pod(), SIDECAR_NAME);
    assertThat(side.getImage()).isEqualTo("jvmdiag/agent:test");
    assertThat(side.getArgs())
        .containsExactly(
            "--sidecar",
            "--listen",
            "0.0.0.0:9464",
            "--safepoint-log",
            "/tmp/jvmdiag/safepoint-%p.log",
            "--max-thread-names",
            "50",
            "--max-methods",
            "20");
    var sc = side.getSecurityContext();
    assertThat(sc.getRunAsNonRoot()).isTrue();
    assertThat(sc.getRunAsUser()).isEqualTo(1000L);
    assertThat(sc.getReadOnlyRootFilesystem()).isTrue();
    assertThat(sc.getAllowPrivilegeEscalation()).isFalse();
    assertThat(sc.getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(side.getEnv())
        .extracting(e ->
            e.getName()
                + "="
                + (e.getValueFrom() != null
                    ? e.getValueFrom().getFieldRef().getFieldPath()
                    : e.getValue()))
        .containsExactly(
            "JVMDIAG_POD_NAME=metadata.name",
            "JVMDIAG_POD_NAMESPACE=metadata.namespace",
            "JVMDIAG_JVMDIAGNOSTICS=metadata.labels['jvm.diagnostics.dev/inject']",
            "JVMDIAG_CONTAINERS=app",
            "JVMDIAG_LIMITS=maxThreadNames=50,maxMethods=20,maxClasses=20");
    assertThat(side.getVolumeMounts())
        .extracting(VolumeMount::getMountPath)
        .containsExactly("/tmp");
    assertThat(r.pod().getSpec().getVolumes())
        .singleElement()
        .satisfies(v -> {
          assertThat(v.getName()).isEqualTo(TMP_VOLUME);
          assertThat(v.getEmptyDir()).isNotNull();
        });
    Container app = container(r.pod(), "app");
    assertThat(app.getVolumeMounts())
        .extracting(m -> m.getMountPath() + ":" + m.getSubPath())
        .containsExactly("/tmp:null", "/tmp/jvmdiag:jvmdiag");
    assertThat(jto(app)).contains(SAFEPOINT_LOG_FLAG);
    assertThat(container(r.pod(), "istio-proxy").getVolumeMounts()).isEmpty();
    assertThat(r.findings()).extracting(Finding::reason).containsExactly(Reason.ProxySkipped);
  }

  @Test
  void sidecarWithUnknownUserStillRunsNonRootAndSaysSo() {
    Pod in = pod().editSpec().addNewContainer().withName("app").endContainer().endSpec().build();
    MutationResult r = PodMutator.mutate(in, config(sidecarSpec()));
    assertThat(container(r.pod(), SIDECAR_NAME).getSecurityContext().getRunAsUser())
        .isEqualTo(65534L);
    assertThat(r.findings()).extracting(Finding::reason).containsExactly(Reason.SidecarUserUnknown);
    assertThat(r.hasBlockingFinding()).isFalse();
  }

  @Test
  void foreignTmpMountSkipsTheContainerRatherThanBreakTheJvm() {
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .addNewVolumeMount()
            .withName("scratch")
            .withMountPath("/tmp")
            .endVolumeMount()
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(sidecarSpec()));
    assertThat(jto(container(r.pod(), "app"))).isNull();
    assertThat(r.findings()).extracting(Finding::reason).contains(Reason.TmpAlreadyMounted);
  }

  @Test
  void nodeAgentSafepointLogMountsOnlyTheLogDirectory() {
    JvmDiagnosticsSpec s = spec();
    s.jvmOptions.safepointLog = true;
    Pod in = pod().editSpec().addNewContainer().withName("app").endContainer().endSpec().build();
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(container(r.pod(), "app").getVolumeMounts())
        .extracting(VolumeMount::getMountPath)
        .containsExactly("/tmp/jvmdiag");
    assertThat(r.pod().getSpec().getContainers())
        .extracting(Container::getName)
        .containsExactly("app");
    assertThat(jto(container(r.pod(), "app"))).contains(SAFEPOINT_LOG_FLAG);
  }

  @Test
  void noFlagsStillStampsButLeavesEnvAlone() {
    JvmDiagnosticsSpec s = spec();
    s.jvmOptions.extra = List.of();
    s.jvmOptions.preserveFramePointer = false;
    s.collectors.compilation.enabled = false;
    s.collectors.monitors.enabled = false;
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .addNewEnvFrom()
            .withNewConfigMapRef("x", false)
            .endEnvFrom()
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(container(r.pod(), "app").getEnv()).isEmpty();
    assertThat(r.findings()).isEmpty();
    assertThat(r.pod().getMetadata().getAnnotations())
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,parking")
        .containsEntry(CONTAINERS, "app")
        .containsEntry(LIMITS, "maxThreadNames=50");
  }

  @Test
  void aRefusedOptionIsLeftOutAndReported() {
    JvmDiagnosticsSpec s = spec();
    s.jvmOptions.extra =
        List.of(FLAG, "-agentlib:jdwp=transport=dt_socket,server=y,address=*:5005");
    Pod in =
        pod()
            .editSpec()
            .addNewContainer()
            .withName("app")
            .withImage("x")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(container(r.pod(), "app").getEnv())
        .singleElement()
        .satisfies(e -> assertThat(e.getValue()).isEqualTo(SPEC_FLAGS));
    assertThat(r.findings())
        .singleElement()
        .satisfies(f -> {
          assertThat(f.reason()).isEqualTo(Reason.OptionRefused);
          assertThat(f.message()).contains("-agentlib:jdwp").contains("opens a debugger");
        });
  }

  @Test
  void limitsOfTheEnabledCollectorsAreStampedAndGivenToTheSidecar() {
    JvmDiagnosticsSpec s = sidecarSpec();
    s.collectors.threads.maxThreadNames = 3;
    s.collectors.compilation.maxMethods = 7;
    s.collectors.monitors.enabled = true;
    s.collectors.monitors.maxClasses = 11;
    Pod in =
        pod()
            .editSpec()
            .withNewSecurityContext()
            .withRunAsUser(1000L)
            .endSecurityContext()
            .addNewContainer()
            .withName("app")
            .endContainer()
            .endSpec()
            .build();
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(r.pod().getMetadata().getAnnotations())
        .containsEntry(LIMITS, "maxThreadNames=3,maxMethods=7,maxClasses=11")
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,monitors,parking");
    Container side = container(r.pod(), SIDECAR_NAME);
    assertThat(side.getArgs())
        .containsSequence("--max-thread-names", "3")
        .containsSequence("--max-methods", "7");
    assertThat(side.getEnv())
        .filteredOn(e -> e.getName().equals(LIMITS_ENV))
        .singleElement()
        .satisfies(
            e -> assertThat(e.getValue()).isEqualTo("maxThreadNames=3,maxMethods=7,maxClasses=11"));

    // a disabled collector's limit is named nowhere
    s.collectors.threads.enabled = false;
    s.collectors.monitors.enabled = false;
    r = PodMutator.mutate(in, config(s));
    assertThat(r.pod().getMetadata().getAnnotations()).containsEntry(LIMITS, "maxMethods=7");
    assertThat(container(r.pod(), SIDECAR_NAME).getArgs())
        .doesNotContain("--max-thread-names")
        .containsSequence("--max-methods", "7");
    s.collectors.compilation.enabled = false;
    assertThat(PodMutator.mutate(in, config(s)).pod().getMetadata().getAnnotations())
        .containsEntry(LIMITS, "");
  }

  @Test
  void theStackBudgetIsStampedWithTheLimits() {
    JvmDiagnosticsSpec s = spec();
    s.stacks.samplesPerSecond = 5;
    Pod in = pod().editSpec().addNewContainer().withName("app").endContainer().endSpec().build();
    assertThat(PodMutator.mutate(in, config(s)).pod().getMetadata().getAnnotations())
        .containsEntry(
            LIMITS, "maxThreadNames=50,maxMethods=20,maxClasses=20,stackSamplesPerSecond=5");
  }

  @Test
  void monitorsAddTheProbeFlagOnceAndParkingNeedsNone() {
    JvmDiagnosticsSpec s = spec();
    s.jvmOptions.extra = List.of();
    s.jvmOptions.preserveFramePointer = false;
    Pod in = pod().editSpec().addNewContainer().withName("app").endContainer().endSpec().build();
    // monitors is on by default: the one flag any collector needs
    MutationResult r = PodMutator.mutate(in, config(s));
    assertThat(jto(container(r.pod(), "app"))).isEqualTo(MONITOR_PROBES_FLAG);
    assertThat(r.pod().getMetadata().getAnnotations())
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,monitors,parking")
        .containsEntry(LIMITS, "maxThreadNames=50,maxMethods=20,maxClasses=20");

    s.collectors.monitors.enabled = false;
    r = PodMutator.mutate(in, config(s));
    assertThat(container(r.pod(), "app").getEnv())
        .as("monitors off: parking (on) needs no flag, nothing is touched")
        .isEmpty();
    assertThat(r.pod().getMetadata().getAnnotations())
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,parking");

    s.collectors.monitors.enabled = true;
    r = PodMutator.mutate(in, config(s));
    assertThat(jto(container(r.pod(), "app"))).isEqualTo(MONITOR_PROBES_FLAG);

    // named in extra as well: still once
    s.jvmOptions.extra = List.of(MONITOR_PROBES_FLAG);
    assertThat(jto(container(PodMutator.mutate(in, config(s)).pod(), "app")))
        .isEqualTo(MONITOR_PROBES_FLAG);

    s.collectors.parking.enabled = false;
    assertThat(PodMutator.mutate(in, config(s)).pod().getMetadata().getAnnotations())
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,monitors");
  }
}
