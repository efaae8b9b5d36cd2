package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.CONFIG_HASH;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.reconciler.OperatorRollout;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operator's own upgrade, on the real API server with the chart's RBAC: while a replica of
 * the operator's previous pod template is ready or stopping, it may still answer the webhook with
 * its version's injection, so the leader writes no pod template; once it is gone, it does. The
 * operator's replicas are pods made here (no kubelet runs): this replica's, a ready one of the
 * previous template, and one of a newer template that never became ready.
 */
class OperatorRolloutIT {
  static final String OPERATOR_NS = "op-rollout-system";
  static final String DEPLOYMENT = "jd-jvm-diagnostics-operator";
  static KubernetesClient admin;
  static KubernetesClient operatorClient;

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    operatorClient = ApiServer.client(ChartRbac.install(admin));
  }

  @AfterAll
  static void stop() {
    if (operatorClient != null) operatorClient.close();
    if (admin != null) admin.close();
  }

  static void replica(String name, String template, boolean ready) {
    Pod p = admin.resource(ApiServer.yaml(admin, Pod.class, """
        apiVersion: v1
        kind: Pod
        metadata: {name: %s, namespace: %s, labels: {app: jd-operator, pod-template-hash: %s}}
        spec: {containers: [{name: operator, image: jvmdiag/operator:it}]}
        """.formatted(name, OPERATOR_NS, template))).create();
    p.setStatus(ApiServer.yaml(admin, Pod.class, """
        apiVersion: v1
        kind: Pod
        status: {phase: Running, conditions: [{type: Ready, status: "%s"}]}
        """.formatted(ready ? "True" : "False")).getStatus());
    admin.pods().inNamespace(OPERATOR_NS).resource(p).updateStatus();
  }

  static Map<String, String> template(String ns) {
    Map<String, String> a = admin.apps().deployments().inNamespace(ns).withName("cart").get().getSpec().getTemplate().getMetadata()
        .getAnnotations();
    return a == null ? Map.of() : a;
  }

  static Condition injected(String ns) {
    JvmDiagnostics r = admin.resources(JvmDiagnostics.class).inNamespace(ns).withName("cart").get();
    if (r.getStatus() == null || r.getStatus().conditions == null) return null;
    return r.getStatus().conditions.stream().filter(c -> c.getType().equals("Injected")).findFirst().orElse(null);
  }

  @Test
  void podTemplatesWaitUntilNoReplicaOfThePreviousOperatorTemplateMayAnswerTheWebhook() throws Exception {
    ApiServer.namespace(admin, OPERATOR_NS);
    admin.resource(ApiServer.yaml(admin, Deployment.class, """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: %s, namespace: %s}
        spec:
          replicas: 2
          selector: {matchLabels: {app: jd-operator}}
          template:
            metadata: {labels: {app: jd-operator}}
            spec: {containers: [{name: operator, image: jvmdiag/operator:it}]}
        """.formatted(DEPLOYMENT, OPERATOR_NS))).create();
    replica("op-new-1", "new", true);
    replica("op-old-1", "old", true);
    replica("op-newer-1", "newer", false);
    String ns = ApiServer.namespace(admin, "op-rollout");
    admin.resource(ApiServer.yaml(admin, Deployment.class, """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: cart, namespace: %s}
        spec:
          replicas: 1
          selector: {matchLabels: {app: cart}}
          template:
            metadata: {labels: {app: cart}}
            spec: {containers: [{name: app, image: eclipse-temurin:21}]}
        """.formatted(ns))).create();
    ReconcilerSettings rs = new ReconcilerSettings("jvmdiag/agent:it", List.of(), Set.of(ns), 0, null, List.of(), Duration.ofMinutes(1),
        new OperatorRollout.Self(OPERATOR_NS, DEPLOYMENT, "op-new-1"));
    try (OperatorApp op = new OperatorApp(operatorClient, new OperatorApp.Settings(null, rs, new InetSocketAddress("127.0.0.1", 0))).start()) {
      admin.resource(ApiServer.yaml(admin, JvmDiagnostics.class, """
          apiVersion: jvm.diagnostics.dev/v1alpha1
          kind: JvmDiagnostics
          metadata: {name: cart, namespace: %s}
          spec: {targetRef: {kind: Deployment, name: cart}}
          """.formatted(ns))).create();
      await("Injected=False OperatorRollingOut", Duration.ofSeconds(30),
          () -> injected(ns) != null && "OperatorRollingOut".equals(injected(ns).getReason()));
      assertThat(injected(ns).getMessage()).contains("op-old-1").doesNotContain("op-newer-1").doesNotContain("op-new-1,")
          .contains("kubectl -n " + OPERATOR_NS + " rollout status deployment/" + DEPLOYMENT);
      assertThat(template(ns)).as("no template written while op-old-1 is ready").doesNotContainKey(CONFIG_HASH);

      // stopping: out of the endpoints, but it may still drain admissions sent to it before
      admin.pods().inNamespace(OPERATOR_NS).withName("op-old-1")
          .patch(PatchContext.of(PatchType.JSON), "[{\"op\": \"add\", \"path\": \"/metadata/finalizers\", \"value\": [\"it/hold\"]}]");
      admin.pods().inNamespace(OPERATOR_NS).withName("op-old-1").withGracePeriod(0).delete();
      await("op-old-1 stopping", Duration.ofSeconds(10),
          () -> admin.pods().inNamespace(OPERATOR_NS).withName("op-old-1").get().getMetadata().getDeletionTimestamp() != null);
      Thread.sleep(7000); // past a recheck of the replicas and a requeue of the resource
      assertThat(template(ns)).as("no template written while op-old-1 is stopping").doesNotContainKey(CONFIG_HASH);
      assertThat(injected(ns).getReason()).isEqualTo("OperatorRollingOut");

      admin.pods().inNamespace(OPERATOR_NS).withName("op-old-1")
          .patch(PatchContext.of(PatchType.JSON), "[{\"op\": \"remove\", \"path\": \"/metadata/finalizers\"}]");
      await("the template written once op-old-1 is gone", Duration.ofSeconds(30), () -> template(ns).containsKey(CONFIG_HASH));
      await("Injected no longer waits for the operator", Duration.ofSeconds(30),
          () -> !"OperatorRollingOut".equals(injected(ns).getReason()));
    } finally {
      List<JvmDiagnostics> all = admin.resources(JvmDiagnostics.class).inNamespace(ns).list().getItems();
      for (JvmDiagnostics r : all) {
        admin.resources(JvmDiagnostics.class).inNamespace(ns).withName(r.getMetadata().getName())
            .patch(PatchContext.of(PatchType.JSON), "[{\"op\": \"remove\", \"path\": \"/metadata/finalizers\"}]");
      }
      admin.resources(JvmDiagnostics.class).inNamespace(ns).delete();
    }
  }
}
