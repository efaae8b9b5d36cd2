package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmOptionPolicy;
import dev.diagnostics.jvm.operator.api.JvmOptionPolicyTest;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The API server itself refuses bad resources, with a message naming the field and the fix. */
class CrdValidationIT {
  static KubernetesClient client;
  static String ns;

  @BeforeAll
  static void setUp() {
    client = ApiServer.admin();
    ns = ApiServer.namespace(client, "crd-validation");
  }

  @AfterAll
  static void tearDown() {
    client.close();
  }

  static String resource(String specBody) {
    return """
    apiVersion: jvm.diagnostics.dev/v1alpha1
    kind: JvmDiagnostics
    metadata: {name: bad}
    spec:
    """
        + specBody.indent(2);
  }

  static final String TARGET = "targetRef: {kind: Deployment, name: checkout}\n";

  static Stream<Arguments> badResources() {
    return Stream.of(
        Arguments.of("containers: [app]", "spec.targetRef", "Required value"),
        Arguments.of(
            "targetRef: {kind: Job, name: checkout}",
            "spec.targetRef.kind",
            "supported values: \"DaemonSet\", \"Deployment\", \"StatefulSet\""),
        Arguments.of("targetRef: {kind: Deployment}", "spec.targetRef.name", "Required value"),
        Arguments.of(
            "targetRef: {kind: Deployment, name: Checkout_1}",
            "spec.targetRef.name",
            "should match"),
        Arguments.of(
            TARGET + "collection: Daemon",
            "spec.collection",
            "supported values: \"NodeAgent\", \"Sidecar\""),
        Arguments.of(
            TARGET + "rollout: Sometimes",
            "spec.rollout",
            "supported values: \"Automatic\", \"Manual\""),
        Arguments.of(TARGET + "containers: [App]", "spec.containers[0]", "should match"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-Xmx1g -Xms1g']}",
            "spec.jvmOptions.extra",
            "as two entries"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['--add-opens=java.base/java.lang=ALL-UNNAMED']}",
            "spec.jvmOptions.extra",
            "--add-opens=java.base/java.lang=ALL-UNNAMED opens the internals of the JDK"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-Xlog:gc', '-XX:OnOutOfMemoryError=/bin/sh']}",
            "spec.jvmOptions.extra",
            "-XX:OnOutOfMemoryError=/bin/sh runs a shell command"),
        Arguments.of(
            TARGET
                + "jvmOptions: {extra: ['-Xrunjdwp:transport=dt_socket,server=y,address=*:5005']}",
            "spec.jvmOptions.extra",
            "address=*:5005 opens a debugger or JMX/RMI port"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-Xbootclasspath/a:/tmp/x.jar']}",
            "spec.jvmOptions.extra",
            "-Xbootclasspath/a:/tmp/x.jar changes where the JVM loads classes"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-XX:VMOptionsFile=/tmp/o']}",
            "spec.jvmOptions.extra",
            "-XX:VMOptionsFile=/tmp/o reads further options from a file"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-XX:+UseSerialGC']}",
            "spec.jvmOptions.extra",
            "-XX:+UseSerialGC is not a diagnostic option: allowed are -Xlog:"),
        Arguments.of(
            TARGET + "jvmOptions: {extra: ['-XX:-UsePerfData']}",
            "spec.jvmOptions.extra",
            "-XX:-UsePerfData blinds the collectors"),
        Arguments.of(
            TARGET + "alerts: {safepointPause: {threshold: 300ms}}",
            "spec.alerts.safepointPause.threshold",
            "round to the nearest, e.g. 500ms"),
        Arguments.of(
            TARGET + "alerts: {timeToSafepoint: {threshold: 100ms, for: 5 minutes}}",
            "spec.alerts.timeToSafepoint.for",
            "Prometheus duration such as 0m, 30s, 5m or 1h"),
        Arguments.of(
            TARGET + "alerts: {codeCacheUsage: {threshold: 150}}",
            "spec.alerts.codeCacheUsage.threshold",
            "at most 100"),
        Arguments.of(
            TARGET + "alerts: {threadStartRate: {threshold: 0}}",
            "spec.alerts.threadStartRate.threshold",
            "must be above 0"),
        Arguments.of(
            TARGET + "alerts: {safepointPause: {threshold: 1s, severity: 'Page!'}}",
            "spec.alerts.safepointPause.severity",
            "must be critical, warning or info"),
        Arguments.of(
            TARGET + "alerts: {threadStartRate: {threshold: 5, severity: sev1}}",
            "spec.alerts.threadStartRate.severity",
            "page and ticket are accepted as aliases of critical and warning"),
        Arguments.of(
            TARGET + "alerts: {safepointPause: {for: 1m}}",
            "spec.alerts.safepointPause.threshold",
            "Required value"),
        Arguments.of(
            TARGET + "collectors: {threads: {maxThreadNames: 0}}",
            "spec.collectors.threads.maxThreadNames",
            "greater than or equal to 1"),
        Arguments.of(
            TARGET + "alerts: {monitorContention: {threshold: 0}}",
            "spec.alerts.monitorContention.threshold",
            "seconds blocked per second on one monitor class"),
        Arguments.of(
            TARGET + "alerts: {poolSaturation: {threshold: -8}}",
            "spec.alerts.poolSaturation.threshold",
            "threads of one pool parked at once on average"),
        Arguments.of(
            TARGET + "collectors: {threads: {maxThreadNames: 501}}",
            "spec.collectors.threads.maxThreadNames",
            "less than or equal to 500"),
        Arguments.of(
            TARGET + "collectors: {compilation: {maxMethods: 1000}}",
            "spec.collectors.compilation.maxMethods",
            "less than or equal to 500"),
        Arguments.of(
            TARGET + "collectors: {monitors: {enabled: true, maxClasses: 0}}",
            "spec.collectors.monitors.maxClasses",
            "greater than or equal to 1"),
        Arguments.of(
            TARGET + "stacks: {samplesPerSecond: 0}",
            "spec.stacks.samplesPerSecond",
            "greater than or equal to 1"),
        Arguments.of(
            TARGET + "stacks: {samplesPerSecond: 10001}",
            "spec.stacks.samplesPerSecond",
            "less than or equal to 10000"),
        Arguments.of(
            TARGET + "collectors: {parking: {enabled: 'yes'}}",
            "spec.collectors.parking.enabled",
            "must be of type boolean"));
  }

  @ParameterizedTest(name = "[{index}] {1}")
  @MethodSource("badResources")
  void refusedWithFieldAndFix(String spec, String field, String fix) {
    GenericKubernetesResource r =
        ApiServer.yaml(client, GenericKubernetesResource.class, resource(spec));
    KubernetesClientException e =
        catchThrowableOfType(
            KubernetesClientException.class, () -> client.resource(r).inNamespace(ns).create());
    assertThat(e).as("the API server accepted:\n%s", resource(spec)).isNotNull();
    assertThat(e.getCode()).isEqualTo(422);
    assertThat(e.getStatus().getMessage()).contains(field).contains(fix);
  }

  /**
   * The CRD's CEL rules and JvmOptionPolicy (the webhook's and the mutation's check) agree on every
   * option of JvmOptionPolicyTest's corpus: the CRD lets through exactly what the policy accepts
   * when an administrator allowed every agent and property (the webhook decides on those), and its
   * message names the option and gives the policy's reason.
   */
  @Test
  void celRulesAgreeWithTheJavaPolicy() {
    List<String> everyException = List.of("-javaagent:", "-agentpath:", "-agentlib:", "-D");
    List<String> corpus = new ArrayList<>(JvmOptionPolicyTest.DIAGNOSTIC_OPTIONS);
    corpus.addAll(JvmOptionPolicyTest.REFUSED_OPTIONS.keySet());
    corpus.addAll(JvmOptionPolicyTest.NOT_DIAGNOSTIC);
    corpus.addAll(JvmOptionPolicyTest.ADMIN_ONLY_OPTIONS);
    List<String> disagreements = new ArrayList<>();
    for (String o : corpus) {
      String why = JvmOptionPolicy.refusal(o, everyException);
      GenericKubernetesResource r =
          ApiServer.yaml(
              client,
              GenericKubernetesResource.class,
              resource(TARGET + "jvmOptions: {extra: ['" + o + "']}"));
      KubernetesClientException e =
          catchThrowableOfType(
              KubernetesClientException.class,
              () -> client.resource(r).inNamespace(ns).dryRun().create());
      if (why == null && e != null)
        disagreements.add(
            o + ": the API server refused what the policy accepts: " + e.getStatus().getMessage());
      if (why != null && e == null)
        disagreements.add(o + ": the API server accepted what the policy refuses (" + why + ")");
      if (why != null && e != null && !e.getStatus().getMessage().contains(o + " " + why)) {
        disagreements.add(
            o + ": message lacks \"" + o + " " + why + "\": " + e.getStatus().getMessage());
      }
    }
    assertThat(disagreements).isEmpty();
  }

  @Test
  void everyExampleIsAccepted() throws Exception {
    java.nio.file.Path dir =
        java.nio.file.Path.of(System.getProperty("crds.dir", "../crds")).resolveSibling("examples");
    try (var files = java.nio.file.Files.list(dir)) {
      for (java.nio.file.Path f :
          files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
        for (var item : client.load(java.nio.file.Files.newInputStream(f)).items()) {
          if (!"JvmDiagnostics".equals(item.getKind())) continue;
          ApiServer.namespace(client, item.getMetadata().getNamespace());
          client.resource(item).dryRun().create();
        }
      }
    }
  }

  @Test
  void goodResourceIsAcceptedWithDefaults() {
    GenericKubernetesResource r =
        ApiServer.yaml(
            client,
            GenericKubernetesResource.class,
            resource(
                TARGET
                    + "jvmOptions: {extra: ['-XX:ReservedCodeCacheSize=256m', '-Xlog:gc:stderr', '-XX:+UnlockDiagnosticVMOptions', '-XX:+DebugNonSafepoints']}\n"
                    + "collectors: {monitors: {}, parking: {}}\n"
                    + "alerts: {safepointPause: {threshold: 2.5s}, codeCacheUsage: {threshold: 90}}"));
    r.getMetadata().setName("good");
    client.resource(r).inNamespace(ns).create();
    JvmDiagnostics got =
        client.resources(JvmDiagnostics.class).inNamespace(ns).withName("good").get();
    assertThat(got.getSpec().collection.name()).isEqualTo("NodeAgent");
    assertThat(got.getSpec().rollout.name()).isEqualTo("Automatic");
    assertThat(got.getSpec().alerts.safepointPause.forDuration).isEqualTo("5m");
    assertThat(got.getSpec().alerts.safepointPause.severity).isEqualTo("warning");
    var stored =
        client
            .genericKubernetesResources("jvm.diagnostics.dev/v1alpha1", "JvmDiagnostics")
            .inNamespace(ns)
            .withName("good")
            .get();
    assertThat(stored.<Integer>get("spec", "collectors", "monitors", "maxClasses"))
        .as("defaulted by the API server")
        .isEqualTo(20);
    assertThat(stored.<Boolean>get("spec", "collectors", "monitors", "enabled"))
        .as("on by default")
        .isTrue();
    assertThat(stored.<Boolean>get("spec", "collectors", "parking", "enabled")).isTrue();
    assertThat(stored.<Object>get("spec", "stacks", "samplesPerSecond"))
        .as("no default: the agent's own budget")
        .isNull();
  }
}
