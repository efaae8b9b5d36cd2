package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.Contract.CONFIG_HASH;
import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.OperatorApp;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import io.fabric8.kubernetes.api.model.Condition;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The cluster-wide limit on rollouts: resources created together restart their workloads at the
 * limit's pace, counted on the real API server; the waiting ones say so in their status.
 */
class RolloutLimitIT {
  static final String NS = "rollout-limit";
  static final int LIMIT = 3; // per minute: a burst of 3, then one every 20 s
  static final int RESOURCES = 6;
  static KubernetesClient admin;
  static KubernetesClient operatorClient;
  static OperatorApp reconciler;

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    operatorClient = ApiServer.client(ChartRbac.install(admin));
    ApiServer.namespace(admin, NS);
    reconciler = new OperatorApp(operatorClient, new OperatorApp.Settings(null,
        new ReconcilerSettings("jvmdiag/agent:it", List.of(), Set.of(NS), LIMIT, null, List.of()), new InetSocketAddress("127.0.0.1", 0))).start();
  }

  @AfterAll
  static void stop() {
    if (reconciler != null) reconciler.close();
    if (operatorClient != null) operatorClient.close();
    if (admin != null) admin.close();
  }

  static long rolledOut() {
    return IntStream.range(0, RESOURCES).filter(i -> {
      Deployment d = admin.apps().deployments().inNamespace(NS).withName("w" + i).get();
      var a = d.getSpec().getTemplate().getMetadata().getAnnotations();
      return a != null && a.containsKey(CONFIG_HASH);
    }).count();
  }

  static Condition injected(String name) {
    JvmDiagnostics r = admin.resources(JvmDiagnostics.class).inNamespace(NS).withName(name).get();
    return r == null || r.getStatus() == null ? null
        : r.getStatus().conditions.stream().filter(c -> c.getType().equals("Injected")).findFirst().orElse(null);
  }

  @Test
  void resourcesChangedTogetherRollOutAtTheLimitsPace() throws Exception {
    for (int i = 0; i < RESOURCES; i++) {
      admin.resource(ApiServer.yaml(admin, Deployment.class, """
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: w%d, namespace: %s}
          spec:
            replicas: 1
            selector: {matchLabels: {app: w%d}}
            template:
              metadata: {labels: {app: w%d}}
              spec: {containers: [{name: app, image: eclipse-temurin:21}]}
          """.formatted(i, NS, i, i))).create();
    }
    long t0 = System.nanoTime();
    for (int i = 0; i < RESOURCES; i++) {
      admin.resource(ApiServer.yaml(admin, JvmDiagnostics.class, """
          apiVersion: jvm.diagnostics.dev/v1alpha1
          kind: JvmDiagnostics
          metadata: {name: w%d, namespace: %s}
          spec: {targetRef: {kind: Deployment, name: w%d}}
          """.formatted(i, NS, i))).create();
    }
    await("the burst: " + LIMIT + " workloads rolled out", Duration.ofSeconds(30), () -> rolledOut() == LIMIT);
    await("every other resource says it waits for the limit", Duration.ofSeconds(30), () -> IntStream.range(0, RESOURCES)
        .mapToObj(i -> injected("w" + i)).filter(c -> c != null && "RolloutThrottled".equals(c.getReason())).count() == RESOURCES - LIMIT);
    assertThat(IntStream.range(0, RESOURCES).mapToObj(i -> injected("w" + i)).filter(c -> c != null && "RolloutThrottled".equals(c.getReason())))
        .allSatisfy(c -> assertThat(c.getMessage()).contains("limit of 3 rollouts per minute").contains("operator.maxRolloutsPerMinute"));
    Thread.sleep(3000);
    assertThat(rolledOut()).as("no more than the burst before a token is refilled").isEqualTo(LIMIT);
    // one more every 20 s: the fourth comes after the refill, not before
    await("the fourth workload after one refill", Duration.ofSeconds(40), () -> rolledOut() == LIMIT + 1);
    assertThat((System.nanoTime() - t0) / 1e9).as("seconds until the fourth rollout").isGreaterThanOrEqualTo(15.0);
    assertThat(rolledOut()).isEqualTo(LIMIT + 1);
  }
}
