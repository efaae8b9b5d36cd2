package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.charset.StandardCharsets;

/**
 * Compiles the admission path before the webhook serves. A fresh JVM interprets it: the first
 * ~1,000 admissions after a start took 5–7 ms at p99 in the handler, 0.5 ms once the JIT had
 * compiled it (docs/performance.md). Synthetic reviews go through a handler of their own, with a
 * throwaway metrics registry and a resource made up here: nothing is counted, no API call is made,
 * and a failure only costs the warm-up, never the webhook.
 */
public final class AdmissionWarmup {
  /** What ran: admissions answered, how many of them were mutations, and the time taken. */
  public record Result(int admissions, int mutated, long millis) {}

  private static final String NAMESPACE = "jvmdiag-warmup";
  private static final String RESOURCE = "warmup";

  private AdmissionWarmup() {}

  public static Result run(String agentImage, int admissions) {
    long start = System.nanoTime();
    JvmDiagnostics nodeAgent = resource(JvmDiagnosticsSpec.Collection.NodeAgent);
    JvmDiagnostics sidecar = resource(JvmDiagnosticsSpec.Collection.Sidecar);
    WebhookMetrics metrics = new WebhookMetrics(new PrometheusRegistry());
    // every 10th admission for a Sidecar resource, as both paths are served; pod shapes vary too
    AdmissionHandler handler =
        new AdmissionHandler(
            (ns, name) -> name.equals(RESOURCE + "-sidecar") ? sidecar : nodeAgent,
            agentImage,
            metrics);
    for (int i = 0; i < admissions; i++) {
      String name = i % 10 == 9 ? RESOURCE + "-sidecar" : RESOURCE;
      handler.handle(review(i, name).getBytes(StandardCharsets.UTF_8));
    }
    int mutated = (int) metrics.admissions.labelValues("mutated").get();
    return new Result(admissions, mutated, (System.nanoTime() - start) / 1_000_000);
  }

  private static JvmDiagnostics resource(JvmDiagnosticsSpec.Collection collection) {
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(new ObjectMetaBuilder().withName(RESOURCE).withNamespace(NAMESPACE).build());
    JvmDiagnosticsSpec spec = new JvmDiagnosticsSpec();
    spec.targetRef = new TargetRef(TargetRef.Kind.Deployment, RESOURCE);
    spec.collection = collection;
    r.setSpec(spec);
    return r;
  }

  /**
   * A pod create as the API server sends it: one to three containers, with or without
   * JAVA_TOOL_OPTIONS.
   */
  static String review(int i, String resource) {
    String app =
        i % 3 == 0
            ? "{\"name\":\"app\",\"image\":\"app:1\",\"env\":[{\"name\":\"JAVA_TOOL_OPTIONS\",\"value\":\"-Xmx512m\"},{\"name\":\"PORT\",\"value\":\"8080\"}],"
                + "\"ports\":[{\"containerPort\":8080}],\"resources\":{\"limits\":{\"memory\":\"1Gi\"}}}"
            : "{\"name\":\"app\",\"image\":\"app:1\",\"volumeMounts\":[{\"name\":\"config\",\"mountPath\":\"/etc/app\"}]}";
    String others =
        switch (i % 4) {
          case 1 -> ",{\"name\":\"istio-proxy\",\"image\":\"proxy:1\"}";
          case 2 ->
              ",{\"name\":\"worker\",\"image\":\"app:1\"},{\"name\":\"linkerd-proxy\",\"image\":\"proxy:1\"}";
          default -> "";
        };
    return """
    {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"warmup-%d",
     "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
     "namespace":"%s","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod",
     "metadata":{"generateName":"warmup-","namespace":"%s","labels":{"app":"warmup","%s":"%s"}},
     "spec":{"containers":[%s%s],"volumes":[{"name":"config","configMap":{"name":"app"}}]}}}}\
    """
        .formatted(i, NAMESPACE, NAMESPACE, Contract.INJECT_LABEL, resource, app, others);
  }
}
