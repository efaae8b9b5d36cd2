package dev.diagnostics.jvm.operator.webhook;

import static dev.diagnostics.jvm.operator.Contract.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.mutator.PodMutatorTest;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.zjsonpatch.JsonPatch;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

class AdmissionHandlerTest {
  final ObjectMapper json = new ObjectMapper();
  final WebhookMetrics metrics = new WebhookMetrics(new PrometheusRegistry());

  static JvmDiagnostics resource() {
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(new ObjectMetaBuilder().withName("checkout").withNamespace("shop").build());
    r.setSpec(PodMutatorTest.spec());
    return r;
  }

  // a raw pod as the API server sends it, with a field the model does not know
  static final String POD =
      """
      {"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"checkout-","namespace":"shop",
       "labels":{"app":"checkout","jvm.diagnostics.dev/inject":"checkout"}},
       "spec":{"containers":[{"name":"app","image":"temurin:21","env":[{"name":"JAVA_TOOL_OPTIONS","value":"-Xmx1g"}],
         "resources":{"limits":{"memory":"1Gi"}}}],"someFutureField":{"x":1}}}\
      """;

  static String review(String operation, String pod) {
    return """
    {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
     "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
     "namespace":"shop","operation":"%s","object":%s}}\
    """
        .formatted(operation, pod);
  }

  JsonNode call(AdmissionHandler h, String body) throws Exception {
    return json.readTree(h.handle(body.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void patchAppliedToTheRawPodGivesTheMutation() throws Exception {
    AdmissionHandler h =
        new AdmissionHandler(
            (ns, n) -> ns.equals("shop") && n.equals("checkout") ? resource() : null,
            "img",
            metrics);
    JsonNode resp = call(h, review("CREATE", POD)).get("response");
    assertThat(resp.get("uid").asText()).isEqualTo("u-1");
    assertThat(resp.get("allowed").asBoolean()).isTrue();
    assertThat(resp.get("patchType").asText()).isEqualTo("JSONPatch");
    JsonNode patch = json.readTree(Base64.getDecoder().decode(resp.get("patch").asText()));
    JsonNode out = JsonPatch.apply(patch, json.readTree(POD));
    assertThat(out.at("/spec/containers/0/env/0/value").asText())
        .isEqualTo(
            "-Xmx1g -XX:+PreserveFramePointer -XX:+DTraceMonitorProbes -XX:ReservedCodeCacheSize=256m");
    assertThat(out.at("/metadata/annotations").get(INJECTED).asText()).hasSize(16);
    assertThat(out.at("/spec/someFutureField/x").asInt())
        .as("unknown fields untouched")
        .isEqualTo(1);
    assertThat(out.at("/spec/containers/0/resources/limits/memory").asText()).isEqualTo("1Gi");
  }

  @Test
  void sidecarPatchTouchesOnlyWhatTheMutationChanged() throws Exception {
    JvmDiagnostics r = resource();
    r.getSpec().collection = dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Collection.Sidecar;
    String pod = POD.replace("\"labels\":", "\"annotations\":{\"a/b~c\":\"keep\"},\"labels\":");
    AdmissionHandler h = new AdmissionHandler((ns, n) -> r, "img", metrics);
    JsonNode patch =
        json.readTree(
            Base64.getDecoder()
                .decode(call(h, review("CREATE", pod)).at("/response/patch").asText()));
    assertThat(patch)
        .extracting(op -> op.get("path").asText())
        .allMatch(p ->
            p.startsWith("/metadata/annotations/")
                || p.equals("/spec/volumes")
                || p.equals("/spec/containers/-")
                || p.matches("/spec/containers/0/(env|volumeMounts)"));
    JsonNode out = JsonPatch.apply(patch, json.readTree(pod));
    assertThat(out.at("/metadata/annotations").get("a/b~c").asText()).isEqualTo("keep");
    assertThat(out.at("/metadata/annotations").get(CONTAINERS).asText()).isEqualTo("app");
    assertThat(out.at("/spec/containers/1/name").asText()).isEqualTo(SIDECAR_NAME);
    assertThat(out.at("/spec/containers/0/volumeMounts/0/mountPath").asText()).isEqualTo("/tmp");
    assertThat(out.at("/spec/volumes/0/name").asText()).isEqualTo(TMP_VOLUME);
    assertThat(out.at("/spec/someFutureField/x").asInt()).isEqualTo(1);
    // a reinvocation on the patched pod changes nothing
    assertThat(call(h, review("CREATE", out.toString())).at("/response/patch").isMissingNode())
        .isTrue();
  }

  @Test
  void neverDenies() throws Exception {
    AdmissionHandler h =
        new AdmissionHandler(
            (ns, n) -> {
              throw new IllegalStateException("cache broken");
            },
            "img",
            metrics);
    JsonNode resp = call(h, review("CREATE", POD)).get("response");
    assertThat(resp.get("allowed").asBoolean()).isTrue();
    assertThat(resp.get("patch")).isNull();
    assertThat(call(h, "not json").get("response").get("allowed").asBoolean()).isTrue();
    assertThat(metrics.errors.get()).isEqualTo(2.0);
  }

  @Test
  void skipsWhatIsNotOurs() throws Exception {
    AdmissionHandler h = new AdmissionHandler((ns, n) -> null, "img", metrics);
    assertThat(call(h, review("CREATE", POD)).at("/response/patch").isMissingNode()).isTrue();
    assertThat(call(h, review("UPDATE", POD)).at("/response/allowed").asBoolean()).isTrue();
    assertThat(metrics.skips.labelValues("ResourceNotFound").get()).isEqualTo(1.0);
    assertThat(metrics.skips.labelValues("NotPodCreate").get()).isEqualTo(1.0);
  }
}
