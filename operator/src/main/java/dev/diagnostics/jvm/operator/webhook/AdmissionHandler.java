package dev.diagnostics.jvm.operator.webhook;

import static dev.diagnostics.jvm.operator.Contract.INJECT_LABEL;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.mutator.Finding;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.mutator.MutationResult;
import dev.diagnostics.jvm.operator.mutator.PodChanges;
import dev.diagnostics.jvm.operator.mutator.PodMutator;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionRequest;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionResponse;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionReview;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * AdmissionReview in, AdmissionReview out. Never denies: anything unexpected is answered with
 * "allowed, unchanged" and counted, so pod creation never fails because of this product.
 */
public final class AdmissionHandler {
  private static final Logger LOG = LoggerFactory.getLogger(AdmissionHandler.class);
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final KubernetesSerialization SERIALIZATION =
      new KubernetesSerialization(MAPPER, true);
  private final ObjectMapper mapper = MAPPER;
  private final BiFunction<String, String, JvmDiagnostics> lookup;
  private final String agentImage;
  private final List<String> allowedOptions;
  private final WebhookMetrics metrics;

  /** lookup: (namespace, name) → the JvmDiagnostics or null. */
  public AdmissionHandler(
      BiFunction<String, String, JvmDiagnostics> lookup,
      String agentImage,
      WebhookMetrics metrics) {
    this(lookup, agentImage, List.of(), metrics);
  }

  /**
   * allowedOptions: the JVM option prefixes the cluster administrator allowed (--allow-jvm-option).
   */
  public AdmissionHandler(
      BiFunction<String, String, JvmDiagnostics> lookup,
      String agentImage,
      List<String> allowedOptions,
      WebhookMetrics metrics) {
    this.lookup = lookup;
    this.agentImage = agentImage;
    this.allowedOptions = List.copyOf(allowedOptions);
    this.metrics = metrics;
  }

  public byte[] handle(byte[] body) {
    long start = System.nanoTime();
    String uid = null;
    String apiVersion = "admission.k8s.io/v1";
    try {
      AdmissionReview review =
          SERIALIZATION.unmarshal(new String(body, StandardCharsets.UTF_8), AdmissionReview.class);
      if (review.getApiVersion() != null) apiVersion = review.getApiVersion();
      AdmissionRequest req = review.getRequest();
      uid = req.getUid();
      AdmissionResponse resp = decide(req);
      return answer(apiVersion, resp);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("admission {} failed, allowing the pod unchanged: {}", uid, e.toString());
      metrics.errors.inc();
      metrics.admissions.labelValues("error").inc();
      AdmissionResponse allow = new AdmissionResponse();
      allow.setUid(uid == null ? "" : uid);
      allow.setAllowed(true);
      return answer(apiVersion, allow);
    } finally {
      metrics.duration.observe((System.nanoTime() - start) / 1e9);
    }
  }

  /**
   * The answer to a request refused before it was handled (its peer over the rate limit, {@link
   * WebhookServer}): allowed and unchanged, as every pod this webhook does not handle, with a
   * warning for whoever created it. Costs no decoding of the pod and no lookup.
   */
  byte[] refused(byte[] body, String why) {
    ReviewHead head = ReviewHead.of(body);
    AdmissionResponse allow = new AdmissionResponse();
    allow.setUid(head.uid());
    allow.setAllowed(true);
    allow.setWarnings(List.of("jvm-diagnostics: not injected: " + why));
    return answer(head.apiVersion(), allow);
  }

  WebhookMetrics metrics() {
    return metrics;
  }

  AdmissionResponse decide(AdmissionRequest req) {
    AdmissionResponse resp = new AdmissionResponse();
    resp.setUid(req.getUid());
    resp.setAllowed(true);
    if (!"CREATE".equals(req.getOperation())
        || req.getKind() == null
        || !"Pod".equals(req.getKind().getKind())) {
      return skip(resp, "NotPodCreate");
    }
    // the review's deserialiser already resolves kind Pod: no second conversion
    Pod pod =
        req.getObject() instanceof Pod p
            ? p
            : SERIALIZATION.convertValue(req.getObject(), Pod.class);
    String name =
        pod.getMetadata() == null || pod.getMetadata().getLabels() == null
            ? null
            : pod.getMetadata().getLabels().get(INJECT_LABEL);
    if (name == null) return skip(resp, "NoInjectLabel");
    String ns = req.getNamespace() != null ? req.getNamespace() : pod.getMetadata().getNamespace();
    JvmDiagnostics r = lookup.apply(ns, name);
    if (r == null || r.getSpec() == null || r.getSpec().targetRef == null)
      return skip(resp, "ResourceNotFound");
    if (r.getMetadata().getDeletionTimestamp() != null) return skip(resp, "ResourceDeleting");

    MutationResult result =
        PodMutator.mutate(pod, InjectionConfig.of(r.getSpec(), agentImage, allowedOptions));
    for (Finding f : result.findings()) metrics.findings.labelValues(f.reason().name()).inc();
    List<String> warnings =
        result.findings().stream()
            .filter(f ->
                f.blocking()
                    || f.reason() == Finding.Reason.OptionRefused
                    || f.reason() == Finding.Reason.FlagsInJdkJavaOptions)
            .map(f -> "jvm-diagnostics: " + f.message())
            .toList();
    if (!warnings.isEmpty()) resp.setWarnings(warnings);
    if (!result.changed()) return skip(resp, "AlreadyInjected");

    resp.setPatchType("JSONPatch");
    resp.setPatch(Base64.getEncoder().encodeToString(patch(PodChanges.between(pod, result.pod()))));
    metrics.admissions.labelValues("mutated").inc();
    metrics
        .mutations
        .labelValues(r.getSpec().collection == null ? "NodeAgent" : r.getSpec().collection.name())
        .inc();
    return resp;
  }

  /** Only the parts the mutation changed, never the whole pod. */
  private byte[] patch(List<PodChanges.Op> ops) {
    ArrayNode patch = mapper.createArrayNode();
    for (PodChanges.Op op : ops) {
      patch
          .addObject()
          .put("op", op.op())
          .put("path", op.path())
          .set("value", mapper.valueToTree(op.value()));
    }
    try {
      return mapper.writeValueAsBytes(patch);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private AdmissionResponse skip(AdmissionResponse resp, String reason) {
    metrics.admissions.labelValues("skipped").inc();
    metrics.skips.labelValues(reason).inc();
    return resp;
  }

  private byte[] answer(String apiVersion, AdmissionResponse resp) {
    AdmissionReview out = new AdmissionReview();
    out.setApiVersion(apiVersion);
    out.setKind("AdmissionReview");
    out.setResponse(resp);
    return SERIALIZATION.asJson(out).getBytes(StandardCharsets.UTF_8);
  }
}
