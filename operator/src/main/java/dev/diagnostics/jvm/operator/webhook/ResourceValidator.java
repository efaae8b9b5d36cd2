package dev.diagnostics.jvm.operator.webhook;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.JvmOptionPolicy;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionRequest;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionResponse;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionReview;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The validating webhook for JvmDiagnostics itself (path {@link #PATH}): what the CRD's own rules
 * cannot know. A resource asks for diagnostics and nothing more, so on CREATE and on every UPDATE
 * that changes the spec it refuses:
 *
 * <ul>
 *   <li>entries of {@code jvmOptions.extra} that {@link JvmOptionPolicy} refuses, given the cluster
 *       administrator's exceptions ({@code --allow-jvm-option}); the CRD refuses the rest already.
 *   <li>a second resource for a workload that already has one (naming the one that owns it): two
 *       owners would flip the pod template's config hash, restarting the pods on every reconcile.
 *       Read from this replica's cache and what it admitted moments ago ({@link TargetClaims}), so
 *       an admission costs the same whatever the namespace holds. Two resources admitted by two
 *       replicas within a watch event's delay can both get past this check; the reconciler then
 *       lets only the oldest one write ({@code TargetOwnedByAnother}).
 *   <li>an author who may not {@code patch} the target workload themselves ({@link
 *       TargetPermission}): the resource would let them change it through the operator's rights.
 * </ul>
 *
 * Updates that leave the spec alone (finalizers, labels, deletion) are always allowed, so the
 * operator never waits on its own webhook to clean up. Unlike the pod webhook this one fails closed
 * (failurePolicy Fail): a resource that was not checked is not stored.
 */
public final class ResourceValidator {
  public static final String PATH = "/validate-jvmdiagnostics";
  private static final Logger LOG = LoggerFactory.getLogger(ResourceValidator.class);
  private static final KubernetesSerialization SERIALIZATION =
      new KubernetesSerialization(new ObjectMapper(), true);

  private final List<String> allowedOptions;
  private final List<String> excludedNamespaces;
  private final TargetClaims claims;
  private final TargetPermission.Check permission;
  private final Counter decisions;
  private final Histogram duration;

  /**
   * excludedNamespaces: where the pod webhook never injects (a resource there is refused); claims:
   * which resource owns a workload (the replica's cache and its recent admissions); permission:
   * whether the request's user may patch the target.
   */
  ResourceValidator(
      List<String> allowedOptions,
      List<String> excludedNamespaces,
      TargetClaims claims,
      TargetPermission.Check permission,
      PrometheusRegistry registry) {
    this.allowedOptions = List.copyOf(allowedOptions);
    this.excludedNamespaces = List.copyOf(excludedNamespaces);
    this.claims = claims;
    this.permission = permission;
    this.decisions =
        Counter.builder()
            .name("jvmdiag_operator_resource_admissions_total")
            .help(
                "JvmDiagnostics admission requests answered by the validating webhook, by result (allowed, denied, error).")
            .labelNames("result")
            .register(registry);
    this.duration =
        Histogram.builder()
            .name("jvmdiag_operator_resource_admission_duration_seconds")
            .help(
                "Time spent in the validating webhook's handler per JvmDiagnostics admission, access review included.")
            // the cache lookup alone is under a millisecond; an access review is one round trip
            .classicUpperBounds(
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
            .register(registry);
  }

  public byte[] handle(byte[] body) {
    long start = System.nanoTime();
    try {
      return answer(body);
    } finally {
      duration.observe((System.nanoTime() - start) / 1e9);
    }
  }

  private byte[] answer(byte[] body) {
    String uid = "";
    String apiVersion = "admission.k8s.io/v1";
    AdmissionResponse resp;
    try {
      AdmissionReview review =
          SERIALIZATION.unmarshal(new String(body, StandardCharsets.UTF_8), AdmissionReview.class);
      if (review.getApiVersion() != null) apiVersion = review.getApiVersion();
      uid = review.getRequest().getUid();
      resp = decide(review.getRequest());
      decisions.labelValues(Boolean.TRUE.equals(resp.getAllowed()) ? "allowed" : "denied").inc();
    } catch (RuntimeException | LinkageError e) {
      // fail closed, as the registration does when we cannot be reached: nothing unchecked is
      // stored
      LOG.warn("JvmDiagnostics admission {} failed, refusing it: {}", uid, e.toString());
      decisions.labelValues("error").inc();
      resp =
          deny(
              uid,
              "the jvm-diagnostics operator could not check this JvmDiagnostics ("
                  + e.getClass().getSimpleName()
                  + ": "
                  + e.getMessage()
                  + "); retry, and see the operator's log if it persists");
    }
    AdmissionReview out = new AdmissionReview();
    out.setApiVersion(apiVersion);
    out.setKind("AdmissionReview");
    out.setResponse(resp);
    return SERIALIZATION.asJson(out).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The answer to a request refused before it was handled (its peer over the rate limit, {@link
   * WebhookServer}): denied with 429, as the registration's failurePolicy Fail would when the
   * webhook cannot check a resource, but saying why, so the author knows to retry. Costs no
   * decoding of the resource, no lookup and no call to the API server.
   */
  byte[] refused(byte[] body, String why) {
    ReviewHead head = ReviewHead.of(body);
    AdmissionResponse resp = new AdmissionResponse();
    resp.setUid(head.uid());
    resp.setAllowed(false);
    resp.setStatus(
        new StatusBuilder().withCode(429).withReason("TooManyRequests").withMessage(why).build());
    AdmissionReview out = new AdmissionReview();
    out.setApiVersion(head.apiVersion());
    out.setKind("AdmissionReview");
    out.setResponse(resp);
    return SERIALIZATION.asJson(out).getBytes(StandardCharsets.UTF_8);
  }

  AdmissionResponse decide(AdmissionRequest req) {
    AdmissionResponse resp = new AdmissionResponse();
    resp.setUid(req.getUid());
    resp.setAllowed(true);
    boolean create = "CREATE".equals(req.getOperation());
    if (!create && !"UPDATE".equals(req.getOperation())) return resp;
    JvmDiagnostics r = resource(req.getObject());
    if (r == null || r.getSpec() == null) return resp; // the CRD's schema requires a spec
    if (!create) {
      JvmDiagnostics old = resource(req.getOldObject());
      if (old != null
          && Objects.equals(SERIALIZATION.asJson(old.getSpec()), SERIALIZATION.asJson(r.getSpec())))
        return resp;
    }
    List<String> problems = new ArrayList<>();
    List<String> warnings = new ArrayList<>();
    checkOptions(r.getSpec(), problems, warnings);
    String ns = req.getNamespace() != null ? req.getNamespace() : r.getMetadata().getNamespace();
    if (excludedNamespaces.contains(ns)) {
      problems.add(
          "namespace "
              + ns
              + " is excluded from injection ("
              + String.join(", ", excludedNamespaces)
              + ": the system namespaces and the operator's own): the webhook never mutates pods here, so this resource could"
              + " only restart its target for nothing; create the workload and its JvmDiagnostics in an application namespace");
    }
    TargetRef ref = r.getSpec().targetRef;
    boolean targeted = ref != null && ref.kind != null && ref.name != null; // the CRD requires both
    String name = r.getMetadata().getName();
    if (targeted) ownedByAnother(claims.owner(ns, name, ref), ref, ns, problems);
    if (targeted && req.getUserInfo() != null) {
      String missing = permission.missing(req.getUserInfo(), ns, ref);
      if (missing != null) problems.add(missing);
    }
    // the record that lets the next admission of this replica see this resource before its cache
    // does; checked again under the record's lock, so of two racing admissions one is refused. A
    // dry run stores nothing, so it claims nothing.
    if (targeted && problems.isEmpty() && !Boolean.TRUE.equals(req.getDryRun()))
      ownedByAnother(claims.claim(ns, name, r.getMetadata().getUid(), ref), ref, ns, problems);
    if (!warnings.isEmpty()) resp.setWarnings(warnings);
    if (problems.isEmpty()) return resp;
    AdmissionResponse denied =
        deny(
            req.getUid(),
            "JvmDiagnostics "
                + r.getMetadata().getName()
                + " refused: "
                + String.join("; ", problems));
    denied.setWarnings(resp.getWarnings());
    return denied;
  }

  @SuppressWarnings("deprecation")
  private void checkOptions(JvmDiagnosticsSpec spec, List<String> problems, List<String> warnings) {
    if (spec.jvmOptions == null) return;
    if (spec.jvmOptions.allowJavaAgents != null) {
      warnings.add(
          "spec.jvmOptions.allowJavaAgents is deprecated and grants nothing: Java agents are allowed only by the"
              + " cluster administrator (chart value operator.allowedJvmOptions); remove the field");
    }
    if (spec.jvmOptions.extra == null) return;
    for (int i = 0; i < spec.jvmOptions.extra.size(); i++) {
      String o = spec.jvmOptions.extra.get(i);
      String why = JvmOptionPolicy.refusal(o, allowedOptions);
      if (why != null) problems.add("spec.jvmOptions.extra[" + i + "]: " + o + " " + why);
    }
  }

  /** One JvmDiagnostics per workload. */
  private static void ownedByAnother(
      TargetClaims.Owner owner, TargetRef ref, String ns, List<String> problems) {
    if (owner == null) return;
    Duration age = owner.age();
    problems.add(
        "spec.targetRef: "
            + ref
            + " already has a JvmDiagnostics: "
            + ns
            + "/"
            + owner.name()
            + " owns it ("
            + (age == null
                ? ""
                : "admitted "
                    + (age.toSeconds() < 1 ? "under a second" : age.toSeconds() + " s")
                    + " ago; ")
            + "one JvmDiagnostics per workload, or both would restart its pods in turn); edit "
            + owner.name()
            + " instead, or delete it first");
  }

  private static JvmDiagnostics resource(Object o) {
    if (o == null) return null;
    return o instanceof JvmDiagnostics j ? j : SERIALIZATION.convertValue(o, JvmDiagnostics.class);
  }

  static AdmissionResponse deny(String uid, String message) {
    AdmissionResponse resp = new AdmissionResponse();
    resp.setUid(uid == null ? "" : uid);
    resp.setAllowed(false);
    Status status =
        new StatusBuilder().withCode(422).withReason("Invalid").withMessage(message).build();
    resp.setStatus(status);
    return resp;
  }
}
