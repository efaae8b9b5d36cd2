package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.*;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhook;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentStatusBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operator in-process against a real kube-apiserver, as the chart's ClusterRole allows and no
 * more (impersonated service account): webhook admission through the API server, template writes,
 * status, cleanup, alert rules. No controller-manager here: pods are created as a ReplicaSet would.
 */
class OperatorIT {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final String IMAGE = "jvmdiag/agent:it";
  static KubernetesClient admin;
  static KubernetesClient operatorClient;
  static OperatorApp reconciler;
  static OperatorApp webhook;

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    Config asOperator = ChartRbac.install(admin);
    operatorClient = ApiServer.client(asOperator);
    webhook = startWebhook();
    reconciler = new OperatorApp(operatorClient, settings(false, true)).start();
  }

  static OperatorApp startWebhook() throws Exception {
    ChartRbac.registerLikeHelm(admin, ChartRbac.WEBHOOK_CONFIG);
    OperatorApp app = new OperatorApp(operatorClient, settings(true, false)).start();
    awaitWebhookLive();
    return app;
  }

  /** The API server picks up a (re)registered webhook a moment later: probe with dry-run pods. */
  static void awaitWebhookLive() {
    String ns = ApiServer.namespace(admin, "probe");
    if (get(ns, "probe") == null) admin.resource(resource(ns, "probe", "none", "")).create();
    Pod probe =
        new PodBuilder()
            .withNewMetadata()
            .withName("probe")
            .withNamespace(ns)
            .addToLabels(INJECT_LABEL, "probe")
            .endMetadata()
            .withNewSpec()
            .addNewContainer()
            .withName("app")
            .withImage("x")
            .endContainer()
            .endSpec()
            .build();
    await(
        "the API server calls the webhook",
        WAIT,
        () -> {
          Pod p = admin.pods().inNamespace(ns).resource(probe).dryRun().create();
          return p.getMetadata().getAnnotations() != null
              && p.getMetadata().getAnnotations().containsKey(INJECTED);
        });
  }

  /**
   * The cluster administrator's exception in this test: the OpenTelemetry agent from /opt/otel/,
   * nothing else.
   */
  static final List<String> ALLOWED = List.of("-javaagent:/opt/otel/");

  static OperatorApp.Settings settings(boolean webhook, boolean reconciler) {
    return settings(IMAGE, webhook, reconciler);
  }

  static OperatorApp.Settings settings(String agentImage, boolean webhook, boolean reconciler) {
    return new OperatorApp.Settings(
        webhook
            ? new WebhookSettings(
                agentImage,
                ChartRbac.NAMESPACE,
                new InetSocketAddress("127.0.0.1", 0),
                "https://127.0.0.1:0",
                List.of("127.0.0.1", "localhost"),
                ChartRbac.WEBHOOK_SECRET,
                ChartRbac.WEBHOOK_CONFIG,
                true,
                Duration.ofHours(1),
                0,
                ALLOWED)
            : null,
        reconciler
            ? new ReconcilerSettings(
                agentImage,
                ALLOWED,
                Set.of(),
                0,
                null,
                WebhookRegistration.excludedNamespaces(ChartRbac.NAMESPACE))
            : null,
        new InetSocketAddress("127.0.0.1", 0));
  }

  @AfterAll
  static void stop() {
    if (reconciler != null) reconciler.close();
    if (webhook != null) webhook.close();
    // the validating registration fails closed: leave none behind for the other IT classes
    if (admin != null) {
      admin
          .admissionRegistration()
          .v1()
          .validatingWebhookConfigurations()
          .withName(ChartRbac.WEBHOOK_CONFIG)
          .delete();
      admin
          .admissionRegistration()
          .v1()
          .mutatingWebhookConfigurations()
          .withName(ChartRbac.WEBHOOK_CONFIG)
          .delete();
    }
    if (operatorClient != null) operatorClient.close();
    if (admin != null) admin.close();
  }

  // ---- fixtures -------------------------------------------------------------------------------

  static Deployment deployment(String ns, String name) {
    return ApiServer.yaml(
        admin,
        Deployment.class,
        """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: %s, namespace: %s}
        spec:
          replicas: 2
          selector: {matchLabels: {app: %s}}
          template:
            metadata:
              labels: {app: %s}
              annotations: {team.example/owner: payments}
            spec:
              containers:
              - name: app
                image: eclipse-temurin:21
                env: [{name: JAVA_TOOL_OPTIONS, value: "-Xmx256m"}]
              - name: istio-proxy
                image: docker.io/istio/proxyv2:1.22
        """
            .formatted(name, ns, name, name));
  }

  /**
   * extraSpec may set its own jvmOptions; otherwise the resource asks for one code-cache option.
   */
  static JvmDiagnostics resource(String ns, String name, String target, String extraSpec) {
    String options =
        extraSpec.contains("jvmOptions:")
            ? ""
            : "  jvmOptions: {extra: [\"-XX:ReservedCodeCacheSize=256m\"]}\n";
    return ApiServer.yaml(
        admin,
        JvmDiagnostics.class,
        """
        apiVersion: jvm.diagnostics.dev/v1alpha1
        kind: JvmDiagnostics
        metadata: {name: %s, namespace: %s}
        spec:
          targetRef: {kind: Deployment, name: %s}
        """
                .formatted(name, ns, target)
            + options
            + extraSpec.indent(2));
  }

  /** A pod made from the Deployment's current template, as its ReplicaSet would make it. */
  static Pod podFromTemplate(String ns, String deployment, String suffix) {
    Deployment d = admin.apps().deployments().inNamespace(ns).withName(deployment).get();
    return admin
        .pods()
        .inNamespace(ns)
        .resource(
            new PodBuilder()
                .withMetadata(d.getSpec().getTemplate().getMetadata())
                .editMetadata()
                .withName(deployment + "-" + suffix)
                .withNamespace(ns)
                .endMetadata()
                .withSpec(d.getSpec().getTemplate().getSpec())
                .build())
        .create();
  }

  /**
   * A user's edit: retried on 409, since the operator writes the resource too (finalizer, status).
   */
  static void edit(String ns, String name, java.util.function.Consumer<JvmDiagnostics> change) {
    await(
        "edit of " + ns + "/" + name + " applied",
        WAIT,
        () -> {
          admin
              .resources(JvmDiagnostics.class)
              .inNamespace(ns)
              .withName(name)
              .edit(r -> {
                change.accept(r);
                return r;
              });
          return true;
        });
  }

  static JvmDiagnostics get(String ns, String name) {
    return admin.resources(JvmDiagnostics.class).inNamespace(ns).withName(name).get();
  }

  static Condition condition(String ns, String name, String type) {
    JvmDiagnostics r = get(ns, name);
    if (r == null || r.getStatus() == null) return null;
    return r.getStatus().conditions.stream()
        .filter(c -> c.getType().equals(type))
        .findFirst()
        .orElse(null);
  }

  static boolean conditionIs(String ns, String name, String type, String status, String reason) {
    Condition c = condition(ns, name, type);
    return c != null
        && c.getStatus().equals(status)
        && c.getReason().equals(reason)
        && c.getObservedGeneration().equals(get(ns, name).getMetadata().getGeneration());
  }

  static Map<String, String> templateAnnotations(String ns, String name) {
    var m =
        admin
            .apps()
            .deployments()
            .inNamespace(ns)
            .withName(name)
            .get()
            .getSpec()
            .getTemplate()
            .getMetadata()
            .getAnnotations();
    return m == null ? Map.of() : m;
  }

  static Map<String, String> templateLabels(String ns, String name) {
    return admin
        .apps()
        .deployments()
        .inNamespace(ns)
        .withName(name)
        .get()
        .getSpec()
        .getTemplate()
        .getMetadata()
        .getLabels();
  }

  static String hashOf(String ns, String name) {
    return InjectionConfig.of(get(ns, name).getSpec(), IMAGE).hash();
  }

  static String jto(Pod p, String container) {
    return p.getSpec().getContainers().stream()
        .filter(c -> c.getName().equals(container))
        .flatMap(c -> c.getEnv().stream())
        .filter(e -> e.getName().equals(JAVA_TOOL_OPTIONS))
        .map(EnvVar::getValue)
        .findFirst()
        .orElse(null);
  }

  // ---- tests ------------------------------------------------------------------------------------

  @Test
  void injectsThroughTheRealApiServerAndReportsStatus() {
    String ns = ApiServer.namespace(admin, "inject");
    admin.resource(deployment(ns, "checkout")).create();
    // limits and the monitors collector reach the pod (the annotation the agent reads, the flag)
    admin
        .resource(
            resource(
                ns,
                "checkout",
                "checkout",
                "collectors: {threads: {maxThreadNames: 3}, monitors: {enabled: true, maxClasses: 7}}"))
        .create();

    await(
        "config hash in the pod template",
        WAIT,
        () -> hashOf(ns, "checkout").equals(templateAnnotations(ns, "checkout").get(CONFIG_HASH)));
    assertThat(templateLabels(ns, "checkout"))
        .containsEntry(INJECT_LABEL, "checkout")
        .containsEntry("app", "checkout");
    assertThat(templateAnnotations(ns, "checkout"))
        .as("the user's own annotation is kept")
        .containsEntry("team.example/owner", "payments");

    Pod pod = podFromTemplate(ns, "checkout", "a");
    assertThat(pod.getMetadata().getAnnotations())
        .containsEntry(INJECTED, hashOf(ns, "checkout"))
        .containsEntry(COLLECTORS, "threads,safepoints,vmOperations,compilation,monitors,parking")
        .containsEntry(CONTAINERS, "app")
        .containsEntry(LIMITS, "maxThreadNames=3,maxMethods=20,maxClasses=7");
    assertThat(jto(pod, "app"))
        .isEqualTo("-Xmx256m -XX:+DTraceMonitorProbes -XX:ReservedCodeCacheSize=256m");
    assertThat(jto(pod, "istio-proxy")).isNull();

    await(
        "status: 1 of 2 pods injected",
        WAIT,
        () -> {
          JvmDiagnostics r = get(ns, "checkout");
          return r.getStatus() != null
              && Integer.valueOf(2).equals(r.getStatus().desiredPods)
              && Integer.valueOf(1).equals(r.getStatus().injectedPods)
              && "1/2".equals(r.getStatus().injected);
        });
    assertThat(conditionIs(ns, "checkout", "TargetFound", "True", "Found")).isTrue();
    assertThat(conditionIs(ns, "checkout", "Injected", "True", "AllPodsInjected")).isTrue();
    assertThat(get(ns, "checkout").getStatus().target).isEqualTo("Deployment/checkout");
    // the operator never writes the user's spec (only finalizers and status)
    assertThat(get(ns, "checkout").getMetadata().getManagedFields())
        .filteredOn(f -> f.getManager().equals(FIELD_MANAGER))
        .allSatisfy(
            f -> assertThat(f.getFieldsV1().getAdditionalProperties()).doesNotContainKey("f:spec"));
    await(
        "an event for the transition",
        WAIT,
        () ->
            admin.v1().events().inNamespace(ns).list().getItems().stream()
                .anyMatch(e ->
                    e.getInvolvedObject().getName().equals("checkout")
                        && e.getReason().equals("TargetFoundFound")));
  }

  @Test
  void editingTheResourceChangesTheHashAndDeletingItRemovesLabelAndHash() {
    String ns = ApiServer.namespace(admin, "lifecycle");
    admin.resource(deployment(ns, "orders")).create();
    admin.resource(resource(ns, "orders", "orders", "")).create();
    await("first hash", WAIT, () -> templateAnnotations(ns, "orders").containsKey(CONFIG_HASH));
    String first = templateAnnotations(ns, "orders").get(CONFIG_HASH);

    edit(
        ns,
        "orders",
        r -> r.getSpec().jvmOptions.extra = List.of("-XX:ReservedCodeCacheSize=512m"));
    await(
        "new hash after the edit",
        WAIT,
        () -> hashOf(ns, "orders").equals(templateAnnotations(ns, "orders").get(CONFIG_HASH)));
    assertThat(templateAnnotations(ns, "orders").get(CONFIG_HASH)).isNotEqualTo(first);
    assertThat(jto(podFromTemplate(ns, "orders", "b"), "app"))
        .isEqualTo("-Xmx256m -XX:+DTraceMonitorProbes -XX:ReservedCodeCacheSize=512m");

    admin.resources(JvmDiagnostics.class).inNamespace(ns).withName("orders").delete();
    await("resource gone (finalizer released)", WAIT, () -> get(ns, "orders") == null);
    assertThat(templateLabels(ns, "orders"))
        .doesNotContainKey(INJECT_LABEL)
        .containsEntry("app", "orders");
    assertThat(templateAnnotations(ns, "orders"))
        .doesNotContainKey(CONFIG_HASH)
        .containsEntry("team.example/owner", "payments");
    assertThat(podFromTemplate(ns, "orders", "c").getMetadata().getAnnotations())
        .doesNotContainKey(INJECTED);
  }

  @Test
  void manualRolloutWritesTheLabelButNotTheHash() {
    String ns = ApiServer.namespace(admin, "manual");
    admin.resource(deployment(ns, "billing")).create();
    Pod old = podFromTemplate(ns, "billing", "old");
    admin.resource(resource(ns, "billing", "billing", "rollout: Manual")).create();
    await(
        "label written",
        WAIT,
        () -> "billing".equals(templateLabels(ns, "billing").get(INJECT_LABEL)));
    assertThat(templateAnnotations(ns, "billing")).doesNotContainKey(CONFIG_HASH);
    await(
        "old pod reported, rollout pending",
        WAIT,
        () -> conditionIs(ns, "billing", "Injected", "False", "RolloutPending"));
    assertThat(get(ns, "billing").getStatus().podsMissingInjection)
        .extracting(m -> m.name + "/" + m.reason)
        .containsExactly(old.getMetadata().getName() + "/NotRolledOut");
    // a pod started later (by the user's own rollout) is injected all the same
    assertThat(podFromTemplate(ns, "billing", "new").getMetadata().getAnnotations())
        .containsEntry(INJECTED, hashOf(ns, "billing"));
  }

  @Test
  void targetThatAppearsLaterIsPickedUp() {
    String ns = ApiServer.namespace(admin, "later");
    admin.resource(resource(ns, "search", "search", "")).create();
    await(
        "TargetNotFound",
        WAIT,
        () -> conditionIs(ns, "search", "TargetFound", "False", "TargetNotFound"));
    assertThat(condition(ns, "search", "TargetFound").getMessage())
        .contains("Deployment/search")
        .contains("spec.targetRef");
    assertThat(conditionIs(ns, "search", "Ready", "False", "TargetNotFound")).isTrue();
    admin.resource(deployment(ns, "search")).create();
    await(
        "TargetFound after the Deployment appears",
        WAIT,
        () -> conditionIs(ns, "search", "TargetFound", "True", "Found"));
    await("hash written", WAIT, () -> templateAnnotations(ns, "search").containsKey(CONFIG_HASH));
  }

  @Test
  void valueFromGetsTheFlagsInJdkJavaOptionsAndOnlyBothFromValueFromIsReported() {
    String ns = ApiServer.namespace(admin, "valuefrom");
    Deployment d = deployment(ns, "legacy");
    d.getSpec()
        .getTemplate()
        .getSpec()
        .getContainers()
        .get(0)
        .setEnv(
            List.of(
                new EnvVar(
                    JAVA_TOOL_OPTIONS,
                    null,
                    new io.fabric8.kubernetes.api.model.EnvVarSourceBuilder()
                        .withNewConfigMapKeyRef("opts", "jvm", false)
                        .build())));
    admin.resource(d).create();
    admin.resource(resource(ns, "legacy", "legacy", "")).create();
    await("hash written", WAIT, () -> templateAnnotations(ns, "legacy").containsKey(CONFIG_HASH));

    // JAVA_TOOL_OPTIONS from a ConfigMap: untouched; the flags go into JDK_JAVA_OPTIONS
    Pod a = podFromTemplate(ns, "legacy", "a");
    assertThat(a.getSpec().getContainers().get(0).getEnv())
        .extracting(EnvVar::getName)
        .containsExactly(JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS);
    assertThat(
            a.getSpec()
                .getContainers()
                .get(0)
                .getEnv()
                .get(0)
                .getValueFrom()
                .getConfigMapKeyRef()
                .getName())
        .isEqualTo("jvm");
    assertThat(a.getSpec().getContainers().get(0).getEnv().get(1).getValue())
        .isEqualTo("-XX:+DTraceMonitorProbes -XX:ReservedCodeCacheSize=256m");
    assertThat(a.getMetadata().getAnnotations()).containsEntry(CONTAINERS, "app");

    // both from valueFrom: nothing to extend, the status names the pod and the container
    Deployment now = admin.apps().deployments().inNamespace(ns).withName("legacy").get();
    Pod b =
        admin
            .pods()
            .inNamespace(ns)
            .resource(
                new PodBuilder()
                    .withMetadata(now.getSpec().getTemplate().getMetadata())
                    .editMetadata()
                    .withName("legacy-b")
                    .withNamespace(ns)
                    .endMetadata()
                    .withSpec(now.getSpec().getTemplate().getSpec())
                    .editSpec()
                    .editFirstContainer()
                    .addNewEnv()
                    .withName(JDK_JAVA_OPTIONS)
                    .withNewValueFrom()
                    .withNewSecretKeyRef("launcher", "opts", false)
                    .endValueFrom()
                    .endEnv()
                    .endContainer()
                    .endSpec()
                    .build())
            .create();
    assertThat(b.getSpec().getContainers().get(0).getEnv())
        .allSatisfy(e -> assertThat(e.getValue()).isNull());
    await(
        "ValueFromNotMerged in status for legacy-b only",
        WAIT,
        () -> {
          JvmDiagnostics r = get(ns, "legacy");
          return r.getStatus() != null
              && r.getStatus().podsMissingInjection.stream()
                  .anyMatch(
                      m -> m.name.equals("legacy-b") && m.reason.equals("ValueFromNotMerged"));
        });
    assertThat(get(ns, "legacy").getStatus().podsMissingInjection)
        .extracting(m -> m.name)
        .doesNotContain("legacy-a");
    assertThat(get(ns, "legacy").getStatus().podsMissingInjection)
        .filteredOn(m -> m.name.equals("legacy-b"))
        .singleElement()
        .satisfies(
            m -> assertThat(m.container).as("the status names the container").isEqualTo("app"));
    assertThat(condition(ns, "legacy", "Injected").getMessage())
        .contains("legacy-b (ValueFromNotMerged in container app)")
        .as("the injected pod whose flags only the java launcher reads is named too")
        .contains("the flags are in JDK_JAVA_OPTIONS, which only the java launcher reads")
        .contains("legacy-a (container app)");
  }

  @Test
  void podsCreatedWhileTheWebhookIsDownAreCreatedReportedAndHealed() throws Exception {
    String ns = ApiServer.namespace(admin, "webhook-down");
    admin.resource(deployment(ns, "cart")).create();
    admin.resource(resource(ns, "cart", "cart", "")).create();
    await("hash written", WAIT, () -> templateAnnotations(ns, "cart").containsKey(CONFIG_HASH));
    String hash = templateAnnotations(ns, "cart").get(CONFIG_HASH);

    webhook.close();
    try {
      Pod missed = podFromTemplate(ns, "cart", "missed"); // never blocked: failurePolicy Ignore
      assertThat(missed.getMetadata().getAnnotations()).doesNotContainKey(INJECTED);
      await(
          "missing pod named in status",
          WAIT,
          () -> {
            JvmDiagnostics r = get(ns, "cart");
            return r.getStatus() != null
                && r.getStatus().podsMissingInjection.stream()
                    .map(m -> m.name + "/" + m.reason)
                    .toList()
                    .contains("cart-missed/WebhookUnavailable");
          });
      assertThat(conditionIs(ns, "cart", "Injected", "False", "PodsMissingInjection")).isTrue();
      assertThat(conditionIs(ns, "cart", "Ready", "False", "PodsMissingInjection")).isTrue();
    } finally {
      webhook = startWebhook();
    }
    // the Deployment controller is not running here: report its rollout as settled, as it would
    Deployment d = admin.apps().deployments().inNamespace(ns).withName("cart").get();
    d.setStatus(
        new DeploymentStatusBuilder()
            .withObservedGeneration(d.getMetadata().getGeneration())
            .withReplicas(2)
            .withUpdatedReplicas(2)
            .build());
    admin.apps().deployments().inNamespace(ns).resource(d).updateStatus();
    await(
        "heal rollout: the template's hash changes once",
        WAIT,
        () -> (hash + ".1").equals(templateAnnotations(ns, "cart").get(CONFIG_HASH)));
    Pod healed = podFromTemplate(ns, "cart", "healed");
    assertThat(healed.getMetadata().getAnnotations()).containsEntry(INJECTED, hash);
    await(
        "a HealRollout event naming the pod",
        WAIT,
        () ->
            admin.v1().events().inNamespace(ns).list().getItems().stream()
                .anyMatch(e ->
                    e.getReason().equals("HealRollout") && e.getMessage().contains("cart-missed")));

    // missed again, from the healed template: no second restart for this configuration, and the
    // status says why
    webhook.close();
    try {
      podFromTemplate(ns, "cart", "missed-again");
      await(
          "Injected=False HealStopped",
          WAIT,
          () -> conditionIs(ns, "cart", "Injected", "False", "HealStopped"));
      assertThat(condition(ns, "cart", "Injected").getMessage())
          .contains("(cart-missed-again)")
          .contains(
              "restarted deployment/cart once for this configuration (config-hash " + hash + ".1)")
          .contains("could not call the webhook")
          .contains("kubectl rollout restart deployment/cart");
      // minutes later, as far as the operator can tell (the time it keeps is in the cluster: its
      // last heal 10 minutes ago), every pod event is a reconcile, each a chance to restart the
      // workload again: more of them than minutes of its 30 s requeues would bring, none writes
      String aged = java.time.Instant.now().minus(Duration.ofMinutes(10)).toString();
      await(
          "status.lastHealTime set 10 minutes back",
          WAIT,
          () -> {
            admin
                .resources(JvmDiagnostics.class)
                .inNamespace(ns)
                .withName("cart")
                .editStatus(r -> {
                  r.getStatus().lastHealTime = aged;
                  return r;
                });
            return aged.equals(get(ns, "cart").getStatus().lastHealTime);
          });
      long generation =
          admin
              .apps()
              .deployments()
              .inNamespace(ns)
              .withName("cart")
              .get()
              .getMetadata()
              .getGeneration();
      double before = reconciles(ns, "cart");
      for (int i = 0; i < 12; i++) {
        int n = i;
        admin
            .pods()
            .inNamespace(ns)
            .withName("cart-missed-again")
            .edit(p -> {
              p.getMetadata().getLabels().put("touched", String.valueOf(n));
              return p;
            });
        Thread.sleep(250);
      }
      await("at least 8 more reconciles of cart", WAIT, () -> reconciles(ns, "cart") >= before + 8);
      assertThat(
              admin
                  .apps()
                  .deployments()
                  .inNamespace(ns)
                  .withName("cart")
                  .get()
                  .getMetadata()
                  .getGeneration())
          .as("the pod template was not written again: no second heal")
          .isEqualTo(generation);
      assertThat(templateAnnotations(ns, "cart").get(CONFIG_HASH))
          .as("no second heal")
          .isEqualTo(hash + ".1");
      assertThat(conditionIs(ns, "cart", "Injected", "False", "HealStopped")).isTrue();
      assertThat(get(ns, "cart").getStatus().lastHealTime).isEqualTo(aged);
    } finally {
      webhook = startWebhook();
    }
  }

  @Test
  void alertRulesFollowSpecAlertsAndSayWhenThePrometheusOperatorIsMissing() {
    String ns = ApiServer.namespace(admin, "alerts");
    admin.resource(deployment(ns, "pay")).create();
    admin
        .resource(
            resource(
                ns,
                "pay",
                "pay",
                "alerts: {safepointPause: {threshold: 500ms, for: 0m, severity: critical}}"))
        .create();
    await(
        "AlertsReady=False PrometheusOperatorMissing",
        WAIT,
        () -> conditionIs(ns, "pay", "AlertsReady", "False", "PrometheusOperatorMissing"));
    assertThat(condition(ns, "pay", "AlertsReady").getMessage())
        .contains("install the Prometheus Operator");

    installPrometheusRuleCrd();
    // the next reconcile (here: a spec change) creates the rule
    edit(
        ns,
        "pay",
        r -> r.getSpec().alerts.safepointPause.severity = "ticket"); // an alias, written as warning
    await(
        "AlertsReady=True",
        WAIT,
        () -> conditionIs(ns, "pay", "AlertsReady", "True", "RuleApplied"));
    GenericKubernetesResource rule =
        admin
            .genericKubernetesResources("monitoring.coreos.com/v1", "PrometheusRule")
            .inNamespace(ns)
            .withName("jvmdiag-pay")
            .get();
    assertThat(rule.getMetadata().getOwnerReferences())
        .singleElement()
        .satisfies(o -> assertThat(o.getName()).isEqualTo("pay"));
    String spec = rule.getAdditionalProperties().get("spec").toString();
    assertThat(spec)
        .contains("jvmdiag-alerts-pay")
        .contains("JvmDiagSafepointPauseHigh")
        .contains("le=\"0.5\"")
        .contains("severity=warning");

    edit(ns, "pay", r -> r.getSpec().alerts.safepointPause = null);
    await(
        "rule deleted when spec.alerts is emptied",
        WAIT,
        () ->
            admin
                    .genericKubernetesResources("monitoring.coreos.com/v1", "PrometheusRule")
                    .inNamespace(ns)
                    .withName("jvmdiag-pay")
                    .get()
                == null);
    await(
        "AlertsReady=True NoAlerts",
        WAIT,
        () -> conditionIs(ns, "pay", "AlertsReady", "True", "NoAlerts"));
  }

  /**
   * A user's edit the API server must refuse: retried on 409 (the operator writes the resource
   * too); the refusal.
   */
  static KubernetesClientException editRefused(
      KubernetesClient as,
      String ns,
      String name,
      java.util.function.Consumer<JvmDiagnostics> change) {
    for (int i = 0; i < 50; i++) {
      KubernetesClientException e =
          catchThrowableOfType(
              KubernetesClientException.class,
              () ->
                  as.resources(JvmDiagnostics.class)
                      .inNamespace(ns)
                      .withName(name)
                      .edit(r -> {
                        change.accept(r);
                        return r;
                      }));
      assertThat(e).as("the edit of %s/%s was accepted", ns, name).isNotNull();
      if (e.getCode() != 409) return e;
    }
    throw new AssertionError("the edit of " + ns + "/" + name + " kept conflicting");
  }

  static KubernetesClientException refused(JvmDiagnostics r) {
    KubernetesClientException e =
        catchThrowableOfType(KubernetesClientException.class, () -> admin.resource(r).create());
    assertThat(e).as("the API server accepted %s", r.getMetadata().getName()).isNotNull();
    return e;
  }

  @Test
  void javaAgentsOnlyWithTheClusterAdministratorsException() {
    String ns = ApiServer.namespace(admin, "agents");
    admin.resource(deployment(ns, "otel")).create();
    // the author's own allowJavaAgents grants nothing
    JvmDiagnostics own =
        resource(
            ns,
            "otel",
            "otel",
            "jvmOptions: {extra: ['-javaagent:/tmp/mine.jar'], allowJavaAgents: true}");
    KubernetesClientException e = refused(own);
    assertThat(e.getMessage())
        .contains("spec.jvmOptions.extra[0]: -javaagent:/tmp/mine.jar loads code into every JVM")
        .contains("only the cluster administrator can allow it");
    // a system property is the administrator's to allow too
    assertThat(
            refused(resource(ns, "otel", "otel", "jvmOptions: {extra: ['-Dotel.service.name=x']}"))
                .getMessage())
        .contains(
            "-Dotel.service.name=x loads code into every JVM of the workload (a Java agent) or sets a system property");

    // the agent the administrator allowed (--allow-jvm-option=-javaagent:/opt/otel/) is accepted
    // and injected
    admin
        .resource(
            resource(
                ns,
                "otel",
                "otel",
                "jvmOptions: {extra: ['-javaagent:/opt/otel/opentelemetry-javaagent.jar']}"))
        .create();
    await("hash written", WAIT, () -> templateAnnotations(ns, "otel").containsKey(CONFIG_HASH));
    assertThat(jto(podFromTemplate(ns, "otel", "a"), "app"))
        .isEqualTo(
            "-Xmx256m -XX:+DTraceMonitorProbes -javaagent:/opt/otel/opentelemetry-javaagent.jar");
    // and an edit to another agent is refused like a create
    KubernetesClientException edit =
        editRefused(
            admin,
            ns,
            "otel",
            r -> r.getSpec().jvmOptions.extra = List.of("-agentpath:/tmp/lib.so"));
    assertThat(edit.getMessage()).contains("-agentpath:/tmp/lib.so loads code");
  }

  @Test
  void oneResourcePerWorkload() throws Exception {
    String ns = ApiServer.namespace(admin, "single-owner");
    admin.resource(deployment(ns, "ledger")).create();
    admin.resource(deployment(ns, "audit")).create();
    admin.resource(resource(ns, "ledger-diag", "ledger", "")).create();
    await(
        "first resource writes the template",
        WAIT,
        () -> "ledger-diag".equals(templateLabels(ns, "ledger").get(INJECT_LABEL)));

    assertThat(refused(resource(ns, "ledger-again", "ledger", "")).getMessage())
        .contains(
            "spec.targetRef: Deployment/ledger already has a JvmDiagnostics: single-owner/ledger-diag owns it")
        .contains("edit ledger-diag instead, or delete it first");
    assertThat(get(ns, "ledger-again")).isNull();
    // moving another resource onto the same workload is refused like a create
    admin.resource(resource(ns, "audit-diag", "audit", "")).create();
    KubernetesClientException move =
        editRefused(admin, ns, "audit-diag", r -> r.getSpec().targetRef.name = "ledger");
    assertThat(move.getMessage())
        .contains("already has a JvmDiagnostics: single-owner/ledger-diag owns it");

    // two creates a moment apart: the second is refused before the webhook's cache holds the
    // first (its record of what it admitted); a server-side dry run claims nothing
    admin.resource(deployment(ns, "payments")).create();
    admin.resource(resource(ns, "payments-try", "payments", "")).dryRun().create();
    admin.resource(resource(ns, "payments-diag", "payments", "")).create();
    assertThat(refused(resource(ns, "payments-again", "payments", "")).getMessage())
        .contains(
            "spec.targetRef: Deployment/payments already has a JvmDiagnostics: single-owner/payments-diag owns it");
    assertThat(get(ns, "payments-again")).isNull();

    // two created at once can both pass the admission: then only the oldest writes (no hash
    // flipping)
    withoutValidation(
        resource(ns, "ledger-race", "ledger", ""),
        () -> {
          admin
              .resource(
                  resource(
                      ns,
                      "ledger-race",
                      "ledger",
                      "jvmOptions: {extra: ['-XX:ReservedCodeCacheSize=512m']}"))
              .create();
          await(
              "the younger resource says who owns the target",
              WAIT,
              () -> conditionIs(ns, "ledger-race", "TargetFound", "False", "TargetOwnedByAnother"));
          assertThat(condition(ns, "ledger-race", "TargetFound").getMessage())
              .contains("ledger-diag owns it");
          String ownerHash = InjectionConfig.of(get(ns, "ledger-diag").getSpec(), IMAGE).hash();
          Thread.sleep(2000); // a few reconciles of both
          assertThat(templateLabels(ns, "ledger")).containsEntry(INJECT_LABEL, "ledger-diag");
          assertThat(templateAnnotations(ns, "ledger")).containsEntry(CONFIG_HASH, ownerHash);
        });
  }

  /**
   * What a resource created past the admission meets: body runs while the validating webhook is not
   * registered.
   */
  static void withoutValidation(JvmDiagnostics probe, Body body) throws Exception {
    admin
        .admissionRegistration()
        .v1()
        .validatingWebhookConfigurations()
        .withName(ChartRbac.WEBHOOK_CONFIG)
        .delete();
    await(
        "validating registration gone",
        WAIT,
        () -> {
          try {
            admin.resource(probe).dryRun().create();
            return true;
          } catch (KubernetesClientException e) {
            return false;
          }
        });
    try {
      body.run();
    } finally {
      webhook.close();
      webhook = startWebhook(); // registers the validating webhook again
    }
  }

  interface Body {
    void run() throws Exception;
  }

  @Test
  void aResourceInANamespaceTheWebhookExcludesIsRefusedAndNeverRolled() throws Exception {
    String ns = ChartRbac.NAMESPACE; // the operator's own: excluded like the system namespaces
    admin.resource(deployment(ns, "excluded-app")).create();
    assertThat(refused(resource(ns, "excluded-app", "excluded-app", "")).getMessage())
        .contains("namespace " + ns + " is excluded from injection")
        .contains("in an application namespace");

    // one that got in anyway (created while the validating webhook was not registered) is reported,
    // never rolled
    withoutValidation(
        resource(ns, "excluded-app", "excluded-app", ""),
        () -> {
          admin.resource(resource(ns, "excluded-app", "excluded-app", "")).create();
          await(
              "Injected=False NamespaceExcluded",
              WAIT,
              () -> conditionIs(ns, "excluded-app", "Injected", "False", "NamespaceExcluded"));
          assertThat(condition(ns, "excluded-app", "Injected").getMessage())
              .contains("writes nothing into Deployment/excluded-app");
          Thread.sleep(2000); // a few reconciles
          assertThat(templateLabels(ns, "excluded-app")).doesNotContainKey(INJECT_LABEL);
          assertThat(templateAnnotations(ns, "excluded-app")).doesNotContainKey(CONFIG_HASH);
          admin.resources(JvmDiagnostics.class).inNamespace(ns).withName("excluded-app").delete();
        });
  }

  @Test
  void anAgentImageUpgradeRestartsNoSidecarWorkload() {
    String ns = ApiServer.namespace(admin, "agent-upgrade");
    admin.resource(deployment(ns, "inventory")).create();
    admin.resource(resource(ns, "inventory", "inventory", "collection: Sidecar")).create();
    await(
        "hash written", WAIT, () -> templateAnnotations(ns, "inventory").containsKey(CONFIG_HASH));
    String hash = templateAnnotations(ns, "inventory").get(CONFIG_HASH);
    Deployment before = admin.apps().deployments().inNamespace(ns).withName("inventory").get();

    // the upgrade: the operator restarts with a new --agent-image (what a helm upgrade of
    // agent.image does)
    reconciler.close();
    OperatorApp.Settings upgraded = settings("jvmdiag/agent:it-upgraded", false, true);
    try {
      reconciler = startReconciler(upgraded);
      // an alert edit: a new generation the upgraded reconciler must have seen once the status says
      // so
      edit(
          ns,
          "inventory",
          r ->
              r.getSpec().alerts.codeCacheUsage =
                  new dev.diagnostics.jvm.operator.api.Alerts.NumberAlert(90, "15m", "warning"));
      long gen = get(ns, "inventory").getMetadata().getGeneration();
      await(
          "the upgraded operator reconciled generation " + gen,
          WAIT,
          () -> {
            JvmDiagnostics r = get(ns, "inventory");
            return r.getStatus() != null
                && Long.valueOf(gen).equals(r.getStatus().observedGeneration);
          });
      Deployment after = admin.apps().deployments().inNamespace(ns).withName("inventory").get();
      assertThat(after.getMetadata().getGeneration())
          .as("the pod template was not written: no rollout")
          .isEqualTo(before.getMetadata().getGeneration());
      assertThat(templateAnnotations(ns, "inventory").get(CONFIG_HASH)).isEqualTo(hash);
    } finally {
      reconciler.close();
      reconciler = startReconciler(settings(false, true));
    }
  }

  static OperatorApp startReconciler(OperatorApp.Settings s) {
    try {
      return new OperatorApp(operatorClient, s).start();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** A namespace user: a Role with these rules, bound to them; returns a client acting as them. */
  static KubernetesClient actingAs(String ns, String user, String roleYaml) {
    admin
        .resource(
            ApiServer.yaml(
                admin,
                io.fabric8.kubernetes.api.model.rbac.Role.class,
                """
                apiVersion: rbac.authorization.k8s.io/v1
                kind: Role
                metadata: {name: %s, namespace: %s}
                rules:
                """
                        .formatted(user, ns)
                    + roleYaml.indent(2)))
        .serverSideApply();
    admin
        .resource(
            new io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder()
                .withNewMetadata()
                .withName(user)
                .withNamespace(ns)
                .endMetadata()
                .withNewRoleRef("rbac.authorization.k8s.io", "Role", user)
                .addNewSubject()
                .withKind("User")
                .withName(user)
                .withApiGroup("rbac.authorization.k8s.io")
                .endSubject()
                .build())
        .serverSideApply();
    return ApiServer.client(
        new io.fabric8.kubernetes.client.ConfigBuilder(ApiServer.adminConfig())
            .withImpersonateUsername(user)
            .withImpersonateGroups("system:authenticated")
            .build());
  }

  static final String MAY_WRITE_JVMDIAG =
      """
      - {apiGroups: [jvm.diagnostics.dev], resources: [jvmdiagnostics], verbs: [get, list, watch, create, update, patch]}
      """;

  @Test
  void theAuthorMustBeAllowedToPatchTheTarget() {
    String ns = ApiServer.namespace(admin, "authors");
    admin.resource(deployment(ns, "payments")).create();
    // may write JvmDiagnostics and read Deployments, but not change them
    try (KubernetesClient dev =
        actingAs(
            ns,
            "dev",
            MAY_WRITE_JVMDIAG
                + "- {apiGroups: [apps], resources: [deployments], verbs: [get, list]}\n")) {
      KubernetesClientException e =
          catchThrowableOfType(
              KubernetesClientException.class,
              () -> dev.resource(resource(ns, "payments", "payments", "")).create());
      assertThat(e)
          .as("a user without patch on the Deployment created a JvmDiagnostics for it")
          .isNotNull();
      assertThat(e.getMessage())
          .contains(
              "spec.targetRef: user \"dev\" may not patch deployments.apps \"payments\" in namespace \"authors\"")
          .contains("missing permission: patch on deployments.apps");
      assertThat(get(ns, "payments")).isNull();
    }
    // with patch on exactly that Deployment the same user may
    try (KubernetesClient dev =
        actingAs(
            ns,
            "dev",
            MAY_WRITE_JVMDIAG
                + "- {apiGroups: [apps], resources: [deployments], verbs: [get, list]}\n"
                + "- {apiGroups: [apps], resources: [deployments], resourceNames: [payments], verbs: [patch]}\n")) {
      dev.resource(resource(ns, "payments", "payments", "")).create();
      await(
          "hash written", WAIT, () -> templateAnnotations(ns, "payments").containsKey(CONFIG_HASH));
      // but not move the resource onto a workload they may not patch
      admin.resource(deployment(ns, "ledger")).create();
      KubernetesClientException move =
          editRefused(dev, ns, "payments", r -> r.getSpec().targetRef.name = "ledger");
      assertThat(move.getMessage())
          .contains("user \"dev\" may not patch deployments.apps \"ledger\"");
    }
    // an editor of the resource alone changes nothing of it
    try (KubernetesClient editor = actingAs(ns, "editor", MAY_WRITE_JVMDIAG)) {
      KubernetesClientException e =
          editRefused(
              editor, ns, "payments", r -> r.getSpec().jvmOptions.extra = List.of("-Xlog:gc"));
      assertThat(e.getMessage())
          .contains("user \"editor\" may not patch deployments.apps \"payments\"");
      // a change that leaves the spec alone (a label) is not the webhook's business
      await(
          "a label edit by the editor",
          WAIT,
          () -> {
            editor
                .resources(JvmDiagnostics.class)
                .inNamespace(ns)
                .withName("payments")
                .edit(r -> {
                  r.getMetadata().setLabels(Map.of("team", "payments"));
                  return r;
                });
            return true;
          });
    }
  }

  static void installPrometheusRuleCrd() {
    admin
        .apiextensions()
        .v1()
        .customResourceDefinitions()
        .resource(
            ApiServer.yaml(
                admin,
                io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition.class,
                """
                apiVersion: apiextensions.k8s.io/v1
                kind: CustomResourceDefinition
                metadata: {name: prometheusrules.monitoring.coreos.com}
                spec:
                  group: monitoring.coreos.com
                  names: {kind: PrometheusRule, plural: prometheusrules, singular: prometheusrule, listKind: PrometheusRuleList}
                  scope: Namespaced
                  versions:
                  - name: v1
                    served: true
                    storage: true
                    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
                """))
        .serverSideApply();
    await(
        "PrometheusRule served",
        WAIT,
        () -> admin.supports("monitoring.coreos.com/v1", "PrometheusRule"));
  }

  @Test
  void webhookRegistrationIsSafeByConstruction() {
    MutatingWebhook w =
        admin
            .admissionRegistration()
            .v1()
            .mutatingWebhookConfigurations()
            .withName(ChartRbac.WEBHOOK_CONFIG)
            .get()
            .getWebhooks()
            .get(0);
    assertThat(w.getFailurePolicy()).isEqualTo("Ignore");
    assertThat(w.getTimeoutSeconds()).isLessThanOrEqualTo(3);
    assertThat(w.getReinvocationPolicy()).isEqualTo("IfNeeded");
    assertThat(w.getObjectSelector().getMatchExpressions())
        .singleElement()
        .satisfies(e ->
            assertThat(e.getKey() + " " + e.getOperator()).isEqualTo(INJECT_LABEL + " Exists"));
    assertThat(w.getNamespaceSelector().getMatchExpressions().get(0).getValues())
        .contains("kube-system", "kube-public", ChartRbac.NAMESPACE);
    assertThat(w.getClientConfig().getCaBundle()).isNotBlank();
    assertThat(w.getRules())
        .singleElement()
        .satisfies(r -> assertThat(r.getOperations()).containsExactly("CREATE"));
  }

  @Test
  void theOperatorRunsWithTheChartRulesAndNoMore() {
    KubernetesClientException e =
        catchThrowableOfType(
            KubernetesClientException.class,
            () -> operatorClient.secrets().inNamespace("default").list());
    assertThat(e).as("secrets outside the operator namespace must be forbidden").isNotNull();
    assertThat(e.getCode()).isEqualTo(403);
    KubernetesClientException e2 =
        catchThrowableOfType(
            KubernetesClientException.class,
            () -> operatorClient.pods().inNamespace("default").withName("x").delete());
    assertThat(e2).isNotNull();
    assertThat(e2.getCode()).isEqualTo(403);
    KubernetesClientException e3 =
        catchThrowableOfType(
            KubernetesClientException.class,
            () ->
                operatorClient.secrets().inNamespace(ChartRbac.NAMESPACE).withName("other").get());
    assertThat(e3).as("only its own Secret, by name, in its own namespace").isNotNull();
    assertThat(e3.getCode()).isEqualTo(403);
    KubernetesClientException e4 =
        catchThrowableOfType(
            KubernetesClientException.class,
            () ->
                operatorClient
                    .admissionRegistration()
                    .v1()
                    .mutatingWebhookConfigurations()
                    .withName("other")
                    .get());
    assertThat(e4).as("only the chart's webhook registrations, by name").isNotNull();
    assertThat(e4.getCode()).isEqualTo(403);
    assertThat(
            admin
                .secrets()
                .inNamespace(ChartRbac.NAMESPACE)
                .withName(ChartRbac.WEBHOOK_SECRET)
                .get()
                .getData())
        .containsKeys("ca.crt", "tls.crt", "tls.key");
  }

  @Test
  void metricsCountAdmissions() throws Exception {
    String ns = ApiServer.namespace(admin, "metrics");
    admin.resource(deployment(ns, "m")).create();
    admin.resource(resource(ns, "m", "m", "")).create();
    await("hash written", WAIT, () -> templateAnnotations(ns, "m").containsKey(CONFIG_HASH));
    podFromTemplate(ns, "m", "a");
    String body =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + webhook.metricsPort() + "/metrics"))
                    .build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    assertThat(body)
        .contains("jvmdiag_operator_admissions_total{result=\"mutated\"}")
        .contains("jvmdiag_operator_admission_duration_seconds_bucket")
        // the JvmDiagnostics validating webhook's decisions: this resource was allowed
        .contains("jvmdiag_operator_resource_admissions_total{result=\"allowed\"}");
    // JOSDK's Metrics on the reconciler's registry: reconciles of this resource, counted and timed
    String reconciles =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + reconciler.metricsPort() + "/metrics"))
                    .build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    assertThat(reconciles)
        .contains(
            "jvmdiag_operator_reconciliations_total{jvmdiagnostics=\"m\",namespace=\""
                + ns
                + "\",operation=\"reconcile\",result=\"success\"}")
        .contains(
            "jvmdiag_operator_reconciliation_seconds_total{jvmdiagnostics=\"m\",namespace=\""
                + ns
                + "\",operation=\"reconcile\"}")
        .contains("jvmdiag_operator_reconciliation_duration_seconds_count{operation=\"reconcile\"}")
        // the rollouts it triggered (this one's config hash among them)
        .contains("jvmdiag_operator_rollouts_total{reason=\"config\"}")
        // the operator's own JVM
        .contains("jvm_memory_used_bytes{area=\"heap\"}")
        .contains("jvm_threads_current")
        .contains("process_cpu_seconds_total");
  }

  /**
   * jvmdiag_operator_reconciliations_total of one resource's successful reconciles, from the
   * reconciler's /metrics.
   */
  static double reconciles(String ns, String name) {
    String body;
    try {
      body =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + reconciler.metricsPort() + "/metrics"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
    } catch (java.io.IOException | InterruptedException e) {
      throw new IllegalStateException(e);
    }
    String series =
        "jvmdiag_operator_reconciliations_total{jvmdiagnostics=\""
            + name
            + "\",namespace=\""
            + ns
            + "\",operation=\"reconcile\",result=\"success\"} ";
    return body.lines()
        .filter(l -> l.startsWith(series))
        .mapToDouble(l -> Double.parseDouble(l.substring(series.length()).trim()))
        .findFirst()
        .orElse(0);
  }

  @SuppressWarnings("unused")
  private static List<PodMissingInjection> missing(String ns, String name) {
    return get(ns, name).getStatus().podsMissingInjection;
  }
}
