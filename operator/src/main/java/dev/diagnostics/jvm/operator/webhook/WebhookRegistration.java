package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfig;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.WebhookClientConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The MutatingWebhookConfiguration, applied by the operator so the caBundle always matches the
 * certificate it serves. Never denies (failurePolicy Ignore), short timeout, only labelled pods,
 * never in system namespaces, reinvoked after other mutating webhooks.
 */
public final class WebhookRegistration {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookRegistration.class);
  public static final List<String> SYSTEM_NAMESPACES =
      List.of("kube-system", "kube-public", "kube-node-lease");
  public static final int TIMEOUT_SECONDS = 2;

  private WebhookRegistration() {}

  /**
   * The namespaces whose pods the webhook never sees: the system namespaces and the operator's own.
   */
  public static List<String> excludedNamespaces(String operatorNamespace) {
    List<String> excluded = new ArrayList<>(SYSTEM_NAMESPACES);
    if (operatorNamespace != null && !excluded.contains(operatorNamespace))
      excluded.add(operatorNamespace);
    return List.copyOf(excluded);
  }

  /** target: "https://host:port" (a URL) or "service:NAME.NAMESPACE:PORT". */
  public static MutatingWebhookConfiguration build(
      String configName, String target, String caPem, String operatorNamespace) {
    WebhookClientConfig cc = clientConfig(target, caPem, WebhookServer.PATH);
    List<String> excluded = excludedNamespaces(operatorNamespace);
    return new MutatingWebhookConfigurationBuilder()
        .withNewMetadata()
        .withName(configName)
        .addToLabels(MANAGED_BY, Contract.FIELD_MANAGER)
        .endMetadata()
        .addNewWebhook()
        .withName("pods.jvm.diagnostics.dev")
        .withAdmissionReviewVersions("v1")
        .withSideEffects("None")
        .withFailurePolicy("Ignore")
        .withTimeoutSeconds(TIMEOUT_SECONDS)
        .withReinvocationPolicy("IfNeeded")
        .withMatchPolicy("Equivalent")
        .withClientConfig(cc)
        .withNewObjectSelector()
        .addNewMatchExpression()
        .withKey(Contract.INJECT_LABEL)
        .withOperator("Exists")
        .endMatchExpression()
        .endObjectSelector()
        .withNewNamespaceSelector()
        .addNewMatchExpression()
        .withKey("kubernetes.io/metadata.name")
        .withOperator("NotIn")
        .withValues(excluded)
        .endMatchExpression()
        .endNamespaceSelector()
        .addNewRule()
        .withOperations("CREATE")
        .withApiGroups("")
        .withApiVersions("v1")
        .withResources("pods")
        .withScope("Namespaced")
        .endRule()
        .endWebhook()
        .build();
  }

  private static WebhookClientConfig clientConfig(String target, String caPem, String path) {
    String ca = Base64.getEncoder().encodeToString(caPem.getBytes(StandardCharsets.UTF_8));
    if (target.startsWith("service:")) {
      String[] parts = target.substring("service:".length()).split("[.:]");
      return new WebhookClientConfigBuilder()
          .withCaBundle(ca)
          .withNewService()
          .withName(parts[0])
          .withNamespace(parts[1])
          .withPort(Integer.parseInt(parts[2]))
          .withPath(path)
          .endService()
          .build();
    }
    return new WebhookClientConfigBuilder()
        .withCaBundle(ca)
        .withUrl(stripSlash(target) + path)
        .build();
  }

  public static final String VALIDATING_WEBHOOK = "jvmdiagnostics.jvm.diagnostics.dev";
  public static final int VALIDATING_TIMEOUT_SECONDS = 5;

  /**
   * The validating webhook for JvmDiagnostics themselves (ResourceValidator): on CREATE and on
   * UPDATEs that change the spec (a matchCondition, so finalizer and status writes never wait on
   * it), failurePolicy Fail: a resource that was not checked is not stored. Same name as the pod
   * webhook's configuration (they are different kinds).
   */
  public static ValidatingWebhookConfiguration buildValidating(
      String configName, String target, String caPem) {
    return new ValidatingWebhookConfigurationBuilder()
        .withNewMetadata()
        .withName(configName)
        .addToLabels(MANAGED_BY, Contract.FIELD_MANAGER)
        .endMetadata()
        .addNewWebhook()
        .withName(VALIDATING_WEBHOOK)
        .withAdmissionReviewVersions("v1")
        .withSideEffects("None")
        .withFailurePolicy("Fail")
        .withTimeoutSeconds(VALIDATING_TIMEOUT_SECONDS)
        .withMatchPolicy("Equivalent")
        .withClientConfig(clientConfig(target, caPem, ResourceValidator.PATH))
        .addNewRule()
        .withOperations("CREATE", "UPDATE")
        .withApiGroups("jvm.diagnostics.dev")
        .withApiVersions("*")
        .withResources("jvmdiagnostics")
        .withScope("Namespaced")
        .endRule()
        .addNewMatchCondition()
        .withName("spec-written")
        .withExpression("request.operation == 'CREATE' || object.spec != oldObject.spec")
        .endMatchCondition()
        .endWebhook()
        .build();
  }

  /**
   * As {@link #apply(KubernetesClient, MutatingWebhookConfiguration)}, for the validating
   * registration.
   */
  public static boolean apply(KubernetesClient client, ValidatingWebhookConfiguration vwc) {
    return apply(client, vwc, () -> true);
  }

  /** As {@link #apply(KubernetesClient, ValidatingWebhookConfiguration)}, guarded (see below). */
  public static boolean apply(
      KubernetesClient client, ValidatingWebhookConfiguration vwc, BooleanSupplier stillWanted) {
    String name = vwc.getMetadata().getName();
    var existing =
        client.admissionRegistration().v1().validatingWebhookConfigurations().withName(name).get();
    List<String> want =
        vwc.getWebhooks().stream().map(w -> w.getClientConfig().getCaBundle()).toList();
    if (existing != null && !ours(existing)) {
      if (holds(
          existing.getWebhooks().stream().map(w -> w.getClientConfig().getCaBundle()).toList(),
          want)) return false;
      ValidatingWebhookConfigurationBuilder b =
          new ValidatingWebhookConfigurationBuilder()
              .withNewMetadata()
              .withName(name)
              .endMetadata();
      for (var w : vwc.getWebhooks()) {
        b.addNewWebhook()
            .withName(w.getName())
            .withNewClientConfig()
            .withCaBundle(w.getClientConfig().getCaBundle())
            .endClientConfig()
            .endWebhook();
      }
      vwc = b.build();
    }
    return serverSideApply(client, vwc, existing, stillWanted, "ValidatingWebhookConfiguration");
  }

  /**
   * Creates the registration when it does not exist and the operator may (a local run: ours
   * entirely; without `create`, as the chart's RBAC has it, a log line says who should create it).
   * When someone else owns it (the Helm chart: no managed-by label of ours), applies only what the
   * operator owns, each webhook's caBundle, and only when it differs, so Helm's labels and fields
   * stay Helm's; that needs `patch`, never `create`.
   */
  public static boolean apply(KubernetesClient client, MutatingWebhookConfiguration mwc) {
    return apply(client, mwc, () -> true);
  }

  /**
   * As {@link #apply(KubernetesClient, MutatingWebhookConfiguration)}, guarded against applying
   * what has become stale: {@code stillWanted} is asked after the registration is read and before
   * it is written, and the write carries the resourceVersion read (a precondition). A caBundle
   * computed from a Secret that changed meanwhile, or a registration another replica wrote
   * meanwhile, throws {@link WebhookCertificates.Superseded} instead of overwriting a newer
   * caBundle with an older one.
   */
  public static boolean apply(
      KubernetesClient client, MutatingWebhookConfiguration mwc, BooleanSupplier stillWanted) {
    var existing =
        client
            .admissionRegistration()
            .v1()
            .mutatingWebhookConfigurations()
            .withName(mwc.getMetadata().getName())
            .get();
    if (existing != null && !ours(existing)) {
      if (holds(
          existing.getWebhooks().stream().map(w -> w.getClientConfig().getCaBundle()).toList(),
          mwc.getWebhooks().stream().map(w -> w.getClientConfig().getCaBundle()).toList()))
        return false;
      mwc = caBundleOnly(mwc);
    }
    return serverSideApply(client, mwc, existing, stillWanted, "MutatingWebhookConfiguration");
  }

  private static boolean ours(HasMetadata existing) {
    return Contract.FIELD_MANAGER.equals(
        existing.getMetadata().getLabels() == null
            ? null
            : existing.getMetadata().getLabels().get(MANAGED_BY));
  }

  /** Every webhook already has the caBundle we would apply. */
  private static boolean holds(List<String> have, List<String> want) {
    return have.size() == want.size() && have.equals(want);
  }

  /** Whether the apply changed the object (a new resourceVersion). */
  private static boolean serverSideApply(
      KubernetesClient client,
      HasMetadata o,
      HasMetadata existing,
      BooleanSupplier stillWanted,
      String kind) {
    if (!stillWanted.getAsBoolean())
      throw new WebhookCertificates.Superseded(kind + " " + o.getMetadata().getName());
    if (existing != null)
      o.getMetadata().setResourceVersion(existing.getMetadata().getResourceVersion());
    try {
      HasMetadata after =
          client
              .resource(o)
              .fieldManager(Contract.FIELD_MANAGER)
              .forceConflicts()
              .serverSideApply();
      return existing == null
          || !existing
              .getMetadata()
              .getResourceVersion()
              .equals(after.getMetadata().getResourceVersion());
    } catch (KubernetesClientException e) {
      // written (or created) by another replica since we read it: start over from the Secret
      if (e.getCode() == 409)
        throw new WebhookCertificates.Superseded(kind + " " + o.getMetadata().getName());
      if (existing != null || e.getCode() != 403) throw e;
      LOG.error(
          "{} {} does not exist and the operator may not create it: admission does not reach the"
              + " webhook until it exists; the Helm chart creates it (helm upgrade restores it), the"
              + " operator only keeps its caBundle",
          kind,
          o.getMetadata().getName());
      return false;
    }
  }

  static final String MANAGED_BY = "app.kubernetes.io/managed-by";

  /**
   * Only the fields the operator owns in a registration it did not create: name and caBundle per
   * webhook.
   */
  static MutatingWebhookConfiguration caBundleOnly(MutatingWebhookConfiguration mwc) {
    MutatingWebhookConfigurationBuilder b =
        new MutatingWebhookConfigurationBuilder()
            .withNewMetadata()
            .withName(mwc.getMetadata().getName())
            .endMetadata();
    for (var w : mwc.getWebhooks()) {
      b.addNewWebhook()
          .withName(w.getName())
          .withNewClientConfig()
          .withCaBundle(w.getClientConfig().getCaBundle())
          .endClientConfig()
          .endWebhook();
    }
    return b.build();
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }
}
