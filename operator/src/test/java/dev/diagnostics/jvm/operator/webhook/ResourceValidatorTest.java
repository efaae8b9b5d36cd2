package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The JvmDiagnostics validating webhook's decisions, without a cluster (OperatorIT runs it through
 * the API server).
 */
class ResourceValidatorTest {
  final ObjectMapper json = new ObjectMapper();
  final List<JvmDiagnostics> existing = new ArrayList<>(); // the informer's cache
  final List<String> asked = new ArrayList<>();
  String deny; // what the permission check answers (null: allowed)
  final PrometheusRegistry registry = new PrometheusRegistry();
  final TargetClaims claims =
      new TargetClaims(
          key -> existing.stream().filter(r -> TargetClaims.indexKeys(r).contains(key)).toList());
  final ResourceValidator validator =
      new ResourceValidator(
          List.of("-javaagent:/opt/otel/"),
          List.of("kube-system", "jvm-diagnostics"),
          claims,
          (user, ns, ref) -> {
            asked.add(user.getUsername() + " " + ns + " " + ref);
            return deny;
          },
          registry);

  static String resource(String name, String target, String extra) {
    return """
    {"apiVersion":"jvm.diagnostics.dev/v1alpha1","kind":"JvmDiagnostics","metadata":{"name":"%s","namespace":"shop"},
     "spec":{"targetRef":{"kind":"Deployment","name":"%s"},"jvmOptions":{"extra":[%s]}}}\
    """
        .formatted(name, target, extra);
  }

  static String review(String operation, String object, String oldObject) {
    return """
    {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
     "kind":{"group":"jvm.diagnostics.dev","version":"v1alpha1","kind":"JvmDiagnostics"},
     "resource":{"group":"jvm.diagnostics.dev","version":"v1alpha1","resource":"jvmdiagnostics"},
     "namespace":"shop","operation":"%s","userInfo":{"username":"dev","groups":["team-a"]},"object":%s,"oldObject":%s}}\
    """
        .formatted(operation, object, oldObject);
  }

  static JvmDiagnostics parsed(String resource) {
    return new KubernetesSerialization().unmarshal(resource, JvmDiagnostics.class);
  }

  JsonNode call(String body) throws Exception {
    return json.readTree(validator.handle(body.getBytes(StandardCharsets.UTF_8))).get("response");
  }

  @Test
  void aDiagnosticResourceOfAPermittedAuthorIsAllowed() throws Exception {
    JsonNode r =
        call(
            review(
                "CREATE",
                resource("a", "checkout", "\"-Xlog:gc\", \"-javaagent:/opt/otel/agent.jar\""),
                "null"));
    assertThat(r.get("allowed").asBoolean()).isTrue();
    assertThat(r.get("uid").asText()).isEqualTo("u-1");
    assertThat(asked).containsExactly("dev shop Deployment/checkout");
  }

  @Test
  void eachProblemIsNamed() throws Exception {
    existing.add(parsed(resource("owner", "checkout", "")));
    deny = "spec.targetRef: user \"dev\" may not patch deployments.apps \"checkout\"";
    JsonNode r =
        call(review("CREATE", resource("a", "checkout", "\"-javaagent:/tmp/x.jar\""), "null"));
    assertThat(r.get("allowed").asBoolean()).isFalse();
    assertThat(r.at("/status/code").asInt()).isEqualTo(422);
    assertThat(r.at("/status/message").asText())
        .contains("spec.jvmOptions.extra[0]: -javaagent:/tmp/x.jar loads code")
        .contains("already has a JvmDiagnostics: shop/owner owns it")
        .contains("may not patch deployments.apps \"checkout\"");
  }

  @Test
  void aResourceInANamespaceTheWebhookExcludesIsRefused() throws Exception {
    JsonNode r =
        call(
            review(
                    "CREATE",
                    resource("a", "checkout", "").replace("\"shop\"", "\"kube-system\""),
                    "null")
                .replace("\"namespace\":\"shop\"", "\"namespace\":\"kube-system\""));
    assertThat(r.get("allowed").asBoolean()).isFalse();
    assertThat(r.at("/status/message").asText())
        .contains("namespace kube-system is excluded from injection")
        .contains("create the workload and its JvmDiagnostics in an application namespace");
  }

  @Test
  void anUpdateThatLeavesTheSpecAloneIsNotChecked() throws Exception {
    deny = "no";
    String old = resource("a", "checkout", "\"-Xlog:gc\"");
    String labelled =
        old.replace("\"namespace\":\"shop\"}", "\"namespace\":\"shop\",\"labels\":{\"x\":\"y\"}}");
    assertThat(call(review("UPDATE", labelled, old)).get("allowed").asBoolean()).isTrue();
    assertThat(asked).isEmpty();
    assertThat(
            call(review("UPDATE", resource("a", "checkout", "\"-Xlog:safepoint\""), old))
                .get("allowed")
                .asBoolean())
        .isFalse();
  }

  @Test
  void theDeprecatedFieldWarnsAndGrantsNothing() throws Exception {
    String r =
        resource("a", "checkout", "\"-javaagent:/tmp/x.jar\"")
            .replace("\"jvmOptions\":{", "\"jvmOptions\":{\"allowJavaAgents\":true,");
    JsonNode resp = call(review("CREATE", r, "null"));
    assertThat(resp.get("allowed").asBoolean()).isFalse();
    assertThat(resp.get("warnings").toString())
        .contains("allowJavaAgents is deprecated and grants nothing");
  }

  @Test
  void failsClosedWhenItCannotCheck() throws Exception {
    ResourceValidator broken =
        new ResourceValidator(
            List.of(),
            List.of(),
            new TargetClaims(key -> {
              throw new IllegalStateException("cache gone");
            }),
            (u, n, t) -> null,
            new PrometheusRegistry());
    JsonNode r =
        json.readTree(
                broken.handle(
                    review("CREATE", resource("a", "checkout", ""), "null")
                        .getBytes(StandardCharsets.UTF_8)))
            .get("response");
    assertThat(r.get("allowed").asBoolean()).isFalse();
    assertThat(r.at("/status/message").asText())
        .contains("could not check this JvmDiagnostics")
        .contains("cache gone");
  }

  @Test
  void aSecondResourceForAWorkloadIsRefusedBeforeTheCacheHoldsTheFirst() throws Exception {
    assertThat(
            call(review("CREATE", resource("a", "checkout", ""), "null"))
                .get("allowed")
                .asBoolean())
        .isTrue();
    // a moment later: the watch event of "a" has not reached the cache yet
    JsonNode second = call(review("CREATE", resource("b", "checkout", ""), "null"));
    assertThat(second.get("allowed").asBoolean()).isFalse();
    assertThat(second.at("/status/message").asText())
        .contains(
            "spec.targetRef: Deployment/checkout already has a JvmDiagnostics: shop/a owns it")
        .contains("admitted under a second ago")
        .contains("edit a instead, or delete it first");
    // another workload, and "a" itself (an edit of its spec), are not held by the record
    assertThat(call(review("CREATE", resource("c", "cart", ""), "null")).get("allowed").asBoolean())
        .isTrue();
    assertThat(
            call(review(
                    "UPDATE",
                    resource("a", "checkout", "\"-Xlog:gc\""),
                    resource("a", "checkout", "")))
                .get("allowed")
                .asBoolean())
        .isTrue();
    // once the cache holds "a", the cache names it
    existing.add(parsed(resource("a", "checkout", "")));
    claims.cached(existing.get(0));
    assertThat(
            call(review("CREATE", resource("b", "checkout", ""), "null"))
                .at("/status/message")
                .asText())
        .contains("shop/a owns it (one JvmDiagnostics per workload");
  }

  @Test
  void aRefusedOrDryRunCreateClaimsNothing() throws Exception {
    deny = "spec.targetRef: user \"dev\" may not patch deployments.apps \"checkout\"";
    assertThat(
            call(review("CREATE", resource("a", "checkout", ""), "null"))
                .get("allowed")
                .asBoolean())
        .isFalse();
    deny = null;
    String dryRun =
        review("CREATE", resource("b", "checkout", ""), "null")
            .replace("\"operation\"", "\"dryRun\":true,\"operation\"");
    assertThat(call(dryRun).get("allowed").asBoolean()).isTrue();
    assertThat(claims.size()).isZero();
    assertThat(
            call(review("CREATE", resource("c", "checkout", ""), "null"))
                .get("allowed")
                .asBoolean())
        .isTrue();
    assertThat(claims.size()).isEqualTo(1);
  }

  @Test
  void everyAnswerIsTimed() throws Exception {
    call(review("CREATE", resource("a", "checkout", ""), "null"));
    deny = "spec.targetRef: user \"dev\" may not patch deployments.apps \"ledger\"";
    call(review("CREATE", resource("b", "ledger", ""), "null"));
    call("{not json");
    HistogramSnapshot.HistogramDataPointSnapshot timed =
        registry.scrape().stream()
            .filter(m ->
                m.getMetadata()
                    .getPrometheusName()
                    .startsWith("jvmdiag_operator_resource_admission_duration"))
            .map(m -> ((HistogramSnapshot) m).getDataPoints().get(0))
            .findFirst()
            .orElseThrow();
    assertThat(timed.getCount()).isEqualTo(3);
    assertThat(timed.getSum()).isPositive();
  }
}
