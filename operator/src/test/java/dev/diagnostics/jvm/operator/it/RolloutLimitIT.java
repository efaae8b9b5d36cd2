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
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * When the operator rolls workloads, on the real API server: resources changed together restart
 * their workloads no faster than the cluster-wide limit, and the waiting ones say so in their
 * status; no workload rolls while the operator's own Deployment rolls out.
 */
class RolloutLimitIT {
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

  static OperatorApp reconciler(String ns, ReconcilerSettings rs) throws Exception {
    return new OperatorApp(
            operatorClient,
            new OperatorApp.Settings(null, rs, new InetSocketAddress("127.0.0.1", 0)))
        .start();
  }

  /** n workloads w0..w(n-1), all at once (8 writers). */
  static void workloads(String ns, int n) throws Exception {
    inParallel(
        n,
        i ->
            admin
                .resource(
                    ApiServer.yaml(
                        admin,
                        Deployment.class,
                        """
                        apiVersion: apps/v1
                        kind: Deployment
                        metadata: {name: w%d, namespace: %s}
                        spec:
                          replicas: 1
                          selector: {matchLabels: {app: w%d}}
                          template:
                            metadata: {labels: {app: w%d}}
                            spec: {containers: [{name: app, image: eclipse-temurin:21}]}
                        """
                            .formatted(i, ns, i, i)))
                .create());
  }

  /** A JvmDiagnostics for each of w0..w(n-1), all at once (8 writers). */
  static void resources(String ns, int n) throws Exception {
    inParallel(
        n,
        i ->
            admin
                .resource(
                    ApiServer.yaml(
                        admin,
                        JvmDiagnostics.class,
                        """
                        apiVersion: jvm.diagnostics.dev/v1alpha1
                        kind: JvmDiagnostics
                        metadata: {name: w%d, namespace: %s}
                        spec: {targetRef: {kind: Deployment, name: w%d}}
                        """
                            .formatted(i, ns, i)))
                .create());
  }

  static void inParallel(int n, IntConsumer each) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int k = i;
        done.add(pool.submit(() -> each.accept(k)));
      }
      for (Future<?> f : done) f.get();
    } finally {
      pool.shutdown();
    }
  }

  /** Leaves nothing for the reconcilers of other IT classes, which watch every namespace. */
  static void forget(String ns) throws Exception {
    List<JvmDiagnostics> all =
        admin.resources(JvmDiagnostics.class).inNamespace(ns).list().getItems();
    inParallel(
        all.size(),
        i ->
            admin
                .resources(JvmDiagnostics.class)
                .inNamespace(ns)
                .withName(all.get(i).getMetadata().getName())
                .patch(
                    PatchContext.of(PatchType.JSON),
                    "[{\"op\": \"remove\", \"path\": \"/metadata/finalizers\"}]"));
    admin.resources(JvmDiagnostics.class).inNamespace(ns).delete();
  }

  static long rolledOut(String ns, int n) {
    return IntStream.range(0, n)
        .filter(i -> {
          var a =
              admin
                  .apps()
                  .deployments()
                  .inNamespace(ns)
                  .withName("w" + i)
                  .get()
                  .getSpec()
                  .getTemplate()
                  .getMetadata()
                  .getAnnotations();
          return a != null && a.containsKey(CONFIG_HASH);
        })
        .count();
  }

  static List<Condition> throttled(String ns) {
    return admin.resources(JvmDiagnostics.class).inNamespace(ns).list().getItems().stream()
        .filter(r -> r.getStatus() != null && r.getStatus().conditions != null)
        .flatMap(r -> r.getStatus().conditions.stream())
        .filter(c -> c.getType().equals("Injected") && "RolloutThrottled".equals(c.getReason()))
        .toList();
  }

  /**
   * The limit as the chart gives it (per minute): a minute's worth at once, the rest wait a minute
   * and say so.
   */
  @Test
  void perMinuteAMinutesWorthAtOnceAndTheOthersSayHowLongTheyWait() throws Exception {
    String ns = ApiServer.namespace(admin, "rollout-limit");
    int limit = 3;
    workloads(ns, 6);
    try (OperatorApp op =
        reconciler(
            ns,
            new ReconcilerSettings(
                "jvmdiag/agent:it", List.of(), Set.of(ns), limit, null, List.of()))) {
      resources(ns, 6);
      await(
          "the first " + limit + " workloads rolled out",
          Duration.ofSeconds(30),
          () -> rolledOut(ns, 6) == limit);
      await(
          "every other resource says it waits for the limit",
          Duration.ofSeconds(30),
          () -> throttled(ns).size() == 6 - limit);
      assertThat(throttled(ns))
          .allSatisfy(c -> {
            assertThat(c.getMessage())
                .contains("limit of 3 rollouts per minute")
                .contains("operator.maxRolloutsPerMinute");
            Matcher m =
                Pattern.compile("next rollout may start in about (\\d+) s").matcher(c.getMessage());
            assertThat(m.find()).as(c.getMessage()).isTrue();
            // a minute after the first three, not a third of one (a refill of one per 20 s)
            assertThat(Integer.parseInt(m.group(1))).as(c.getMessage()).isBetween(40, 60);
          });
      Thread.sleep(2000);
      assertThat(rolledOut(ns, 6)).as("no more within the minute").isEqualTo(limit);
    } finally {
      forget(ns);
    }
  }

  /**
   * A leader change inside a window: the previous leader used up the limit, so the new one (another
   * instance, nothing of the first in memory) writes nothing more until that window has passed,
   * because it reads the rollouts back from the resources' status.lastRolloutTime.
   */
  @Test
  void aNewLeaderKeepsToTheWindowThePreviousOneUsedUp() throws Exception {
    String ns = ApiServer.namespace(admin, "rollout-leader-change");
    int limit = 3;
    Duration window = Duration.ofSeconds(20);
    workloads(ns, 5);
    ReconcilerSettings rs =
        new ReconcilerSettings(
            "jvmdiag/agent:it", List.of(), Set.of(ns), limit, null, List.of(), window);
    try {
      long seen;
      try (OperatorApp first = reconciler(ns, rs)) {
        resources(ns, limit);
        await(
            "the first leader rolled out " + limit + " workloads",
            Duration.ofSeconds(30),
            () -> rolledOut(ns, 5) == limit);
        seen = System.nanoTime();
        await(
            "their status records the rollouts",
            Duration.ofSeconds(30),
            () ->
                admin.resources(JvmDiagnostics.class).inNamespace(ns).list().getItems().stream()
                        .filter(r -> r.getStatus() != null && r.getStatus().lastRolloutTime != null)
                        .count()
                    == limit);
      }
      try (OperatorApp second = reconciler(ns, rs)) {
        IntStream.range(limit, 5)
            .forEach(i ->
                admin
                    .resource(
                        ApiServer.yaml(
                            admin,
                            JvmDiagnostics.class,
                            """
                            apiVersion: jvm.diagnostics.dev/v1alpha1
                            kind: JvmDiagnostics
                            metadata: {name: w%d, namespace: %s}
                            spec: {targetRef: {kind: Deployment, name: w%d}}
                            """
                                .formatted(i, ns, i)))
                    .create());
        await(
            "the new leader says both new resources wait for the limit",
            Duration.ofSeconds(15),
            () -> throttled(ns).size() == 5 - limit);
        // until the previous leader's window is over (less slack for the watch), nothing more
        long until = seen + window.toNanos() - Duration.ofSeconds(3).toNanos();
        long waited = 0;
        while (System.nanoTime() < until) {
          assertThat(rolledOut(ns, 5))
              .as("rolled out %.1f s after the first leader's writes", waited / 1e9)
              .isEqualTo(limit);
          Thread.sleep(250);
          waited = System.nanoTime() - seen;
        }
        await(
            "the new leader rolls the other two once the window has passed",
            Duration.ofSeconds(20),
            () -> rolledOut(ns, 5) == 5);
        System.out.printf(
            "leader change: the new leader's first write %.1f s after the previous leader's (window %d s)%n",
            (System.nanoTime() - seen) / 1e9, window.toSeconds());
      }
    } finally {
      forget(ns);
    }
  }

  static final int RESOURCES = 200;
  static final int LIMIT = 70;
  static final Duration WINDOW = Duration.ofSeconds(5);

  /**
   * A write reaches the API server, and the watch, a little after the operator decided it (more on
   * a loaded machine): that much of a window is not counted.
   */
  static final Duration SLACK = Duration.ofMillis(2000);

  /**
   * 200 resources changed at once, at a limit of 70 per 5 s (the minute shortened so the test takes
   * seconds): every template write is timed by a watch on the API server; no window of 5 s (less
   * the watch's slack) holds more than 70, and all 200 are written, each once, in about three
   * windows.
   */
  @Test
  void twoHundredResourcesChangedAtOnceRollOutAtTheLimitsPace() throws Exception {
    String ns = ApiServer.namespace(admin, "rollout-pacing");
    long start = System.nanoTime();
    workloads(ns, RESOURCES);
    System.out.printf(
        "rollout pacing: %d Deployments in %.1f s%n", RESOURCES, (System.nanoTime() - start) / 1e9);
    Map<String, Long> generation = new ConcurrentHashMap<>();
    List<Long> writes = Collections.synchronizedList(new ArrayList<>());
    List<String> twice = Collections.synchronizedList(new ArrayList<>());
    SharedIndexInformer<Deployment> informer =
        admin
            .apps()
            .deployments()
            .inNamespace(ns)
            .inform(
                new ResourceEventHandler<>() {
                  @Override
                  public void onAdd(Deployment d) {
                    generation.put(d.getMetadata().getName(), d.getMetadata().getGeneration());
                  }

                  @Override
                  public void onUpdate(Deployment old, Deployment d) {
                    long now = System.nanoTime();
                    // only the operator writes these Deployments, and no controller-manager runs
                    // here: a
                    // new generation is a write of the pod template
                    Long before =
                        generation.put(d.getMetadata().getName(), d.getMetadata().getGeneration());
                    if (before != null && d.getMetadata().getGeneration() > before) {
                      writes.add(now);
                      if (d.getMetadata().getGeneration() > 2) twice.add(d.getMetadata().getName());
                    }
                  }

                  @Override
                  public void onDelete(Deployment d, boolean unknown) {}
                });
    await(
        "the informer saw the " + RESOURCES + " Deployments",
        Duration.ofSeconds(30),
        () -> generation.size() == RESOURCES);
    // all 200 before the operator starts: its first pass meets them changed at once, however
    // slowly a loaded API server takes the creates
    long t1 = System.nanoTime();
    resources(ns, RESOURCES);
    System.out.printf(
        "rollout pacing: %d JvmDiagnostics in %.1f s%n", RESOURCES, (System.nanoTime() - t1) / 1e9);
    long t0 = System.nanoTime();
    String metrics;
    try (OperatorApp op =
        reconciler(
            ns,
            new ReconcilerSettings(
                "jvmdiag/agent:it", List.of(), Set.of(ns), LIMIT, null, List.of(), WINDOW))) {
      await(
          "all " + RESOURCES + " template writes",
          Duration.ofSeconds(60),
          () -> writes.size() >= RESOURCES);
      Thread.sleep(500); // a write more would show here
      metrics =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create("http://127.0.0.1:" + op.metricsPort() + "/metrics"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
    } finally {
      informer.close();
      long f = System.nanoTime();
      forget(ns);
      System.out.printf("rollout pacing: cleaned up in %.1f s%n", (System.nanoTime() - f) / 1e9);
    }
    List<Long> t = new ArrayList<>(writes);
    Collections.sort(t);
    long window = WINDOW.toNanos() - SLACK.toNanos();
    int most = 0;
    for (int i = 0; i < t.size(); i++) {
      int in = 0;
      for (int j = i; j < t.size() && t.get(j) - t.get(i) < window; j++) in++;
      most = Math.max(most, in);
    }
    List<String> waves = new ArrayList<>();
    for (int i = 0, from = 0; i < t.size(); i++) {
      if (i == t.size() - 1 || t.get(i + 1) - t.get(i) > 500_000_000L) {
        waves.add(
            String.format(
                "%d in %.1f-%.1f s",
                i + 1 - from, (t.get(from) - t0) / 1e9, (t.get(i) - t0) / 1e9));
        from = i + 1;
      }
    }
    System.out.println("rollout pacing: waves (gaps over 0.5 s): " + waves);
    double first = (t.get(0) - t0) / 1e9, last = (t.get(t.size() - 1) - t0) / 1e9;
    System.out.printf(
        "rollout pacing: %d template writes, first at %.1f s, last at %.1f s after the operator's start; most in any %.1f s: %d (limit %d per %d s)%n",
        t.size(), first, last, window / 1e9, most, LIMIT, WINDOW.toSeconds());

    assertThat(twice).as("workloads whose template was written twice").isEmpty();
    assertThat(t).as("template writes").hasSize(RESOURCES);
    assertThat(most)
        .as("template writes in one window of %.1f s", window / 1e9)
        .isLessThanOrEqualTo(LIMIT);
    // paced: 200 at 70 per window need two more windows after the first writes; and not
    // stalled far beyond that (a waiting resource is retried when the oldest write leaves the
    // window, or a second later)
    int refills = (RESOURCES - 1) / LIMIT;
    assertThat(last - first)
        .as("seconds from the first write to the last")
        .isBetween(
            refills * (WINDOW.toSeconds() - SLACK.toSeconds()) * 1.0,
            refills * WINDOW.toSeconds() * 3.0);
    assertThat(metrics).contains("jvmdiag_operator_rollouts_total{reason=\"config\"} 200.0");
    Matcher m =
        Pattern.compile("(?m)^jvmdiag_operator_rollouts_throttled_total ([0-9.]+)")
            .matcher(metrics);
    assertThat(m.find()).isTrue();
    assertThat(Double.parseDouble(m.group(1)))
        .as("postponed rollouts")
        .isGreaterThanOrEqualTo(RESOURCES - LIMIT);
  }

  static final String OPERATOR_NS = "op-rollout-system";
  static final String DEPLOYMENT = "jd-jvm-diagnostics-operator";

  static void replica(String name, String template, boolean ready) {
    Pod p =
        admin
            .resource(
                ApiServer.yaml(
                    admin,
                    Pod.class,
                    """
                    apiVersion: v1
                    kind: Pod
                    metadata: {name: %s, namespace: %s, labels: {app: jd-operator, pod-template-hash: %s}}
                    spec: {containers: [{name: operator, image: jvmdiag/operator:it}]}
                    """
                        .formatted(name, OPERATOR_NS, template)))
            .create();
    p.setStatus(
        ApiServer.yaml(
                admin,
                Pod.class,
                """
                apiVersion: v1
                kind: Pod
                status: {phase: Running, conditions: [{type: Ready, status: "%s"}]}
                """
                    .formatted(ready ? "True" : "False"))
            .getStatus());
    admin.pods().inNamespace(OPERATOR_NS).resource(p).updateStatus();
  }

  static Map<String, String> template(String ns) {
    Map<String, String> a =
        admin
            .apps()
            .deployments()
            .inNamespace(ns)
            .withName("w0")
            .get()
            .getSpec()
            .getTemplate()
            .getMetadata()
            .getAnnotations();
    return a == null ? Map.of() : a;
  }

  static Condition injected(String ns) {
    JvmDiagnostics r = admin.resources(JvmDiagnostics.class).inNamespace(ns).withName("w0").get();
    if (r.getStatus() == null || r.getStatus().conditions == null) return null;
    return r.getStatus().conditions.stream()
        .filter(c -> c.getType().equals("Injected"))
        .findFirst()
        .orElse(null);
  }

  /**
   * The operator's own upgrade: while a replica of the operator's previous pod template is ready or
   * stopping, it may still answer the webhook with its version's injection, so the leader writes no
   * pod template; once it is gone, it does. The operator's replicas are pods made here (no kubelet
   * runs): this replica's, a ready one of the previous template, and one of a newer template that
   * never became ready.
   */
  @Test
  void podTemplatesWaitUntilNoReplicaOfThePreviousOperatorTemplateMayAnswerTheWebhook()
      throws Exception {
    ApiServer.namespace(admin, OPERATOR_NS);
    admin
        .resource(
            ApiServer.yaml(
                admin,
                Deployment.class,
                """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: %s, namespace: %s}
                spec:
                  replicas: 2
                  selector: {matchLabels: {app: jd-operator}}
                  template:
                    metadata: {labels: {app: jd-operator}}
                    spec: {containers: [{name: operator, image: jvmdiag/operator:it}]}
                """
                    .formatted(DEPLOYMENT, OPERATOR_NS)))
        .create();
    replica("op-new-1", "new", true);
    replica("op-old-1", "old", true);
    replica("op-newer-1", "newer", false);
    String ns = ApiServer.namespace(admin, "op-rollout");
    workloads(ns, 1);
    ReconcilerSettings rs =
        new ReconcilerSettings(
            "jvmdiag/agent:it",
            List.of(),
            Set.of(ns),
            0,
            null,
            List.of(),
            Duration.ofMinutes(1),
            new OperatorRollout.Self(OPERATOR_NS, DEPLOYMENT, "op-new-1"));
    try (OperatorApp op =
        new OperatorApp(
                operatorClient,
                new OperatorApp.Settings(null, rs, new InetSocketAddress("127.0.0.1", 0)))
            .start()) {
      resources(ns, 1);
      await(
          "Injected=False OperatorRollingOut",
          Duration.ofSeconds(30),
          () -> injected(ns) != null && "OperatorRollingOut".equals(injected(ns).getReason()));
      assertThat(injected(ns).getMessage())
          .contains("op-old-1")
          .doesNotContain("op-newer-1")
          .doesNotContain("op-new-1,")
          .contains("kubectl -n " + OPERATOR_NS + " rollout status deployment/" + DEPLOYMENT);
      assertThat(template(ns))
          .as("no template written while op-old-1 is ready")
          .doesNotContainKey(CONFIG_HASH);

      // stopping: out of the endpoints, but it may still drain admissions sent to it before
      admin
          .pods()
          .inNamespace(OPERATOR_NS)
          .withName("op-old-1")
          .patch(
              PatchContext.of(PatchType.JSON),
              "[{\"op\": \"add\", \"path\": \"/metadata/finalizers\", \"value\": [\"it/hold\"]}]");
      admin.pods().inNamespace(OPERATOR_NS).withName("op-old-1").withGracePeriod(0).delete();
      await(
          "op-old-1 stopping",
          Duration.ofSeconds(10),
          () ->
              admin
                      .pods()
                      .inNamespace(OPERATOR_NS)
                      .withName("op-old-1")
                      .get()
                      .getMetadata()
                      .getDeletionTimestamp()
                  != null);
      Thread.sleep(7000); // past a recheck of the replicas and a requeue of the resource
      assertThat(template(ns))
          .as("no template written while op-old-1 is stopping")
          .doesNotContainKey(CONFIG_HASH);
      assertThat(injected(ns).getReason()).isEqualTo("OperatorRollingOut");

      admin
          .pods()
          .inNamespace(OPERATOR_NS)
          .withName("op-old-1")
          .patch(
              PatchContext.of(PatchType.JSON),
              "[{\"op\": \"remove\", \"path\": \"/metadata/finalizers\"}]");
      await(
          "the template written once op-old-1 is gone",
          Duration.ofSeconds(30),
          () -> template(ns).containsKey(CONFIG_HASH));
      await(
          "Injected no longer waits for the operator",
          Duration.ofSeconds(30),
          () -> !"OperatorRollingOut".equals(injected(ns).getReason()));
    } finally {
      forget(ns);
    }
  }
}
