package dev.diagnostics.jvm.operator.it;

import dev.diagnostics.jvm.operator.Contract;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBindingBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The operator's identity in tests: a service account bound to exactly the chart's
 * templates/operator/clusterrole.yaml (rendered by helm), used through impersonation. The chart
 * grants the webhook Secret, the Lease and the webhook registrations by name: a test gives the
 * operator the names the chart renders for its release ({@link #WEBHOOK_CONFIG}, {@link
 * #WEBHOOK_SECRET}, {@link #LEASE}, or {@link #names} of another release), and creates the
 * registrations first as Helm does ({@link #registerLikeHelm}).
 */
public final class ChartRbac {
  static final String RELEASE = "jvmdiag";
  public static final String NAMESPACE = "jvmdiag-system";
  public static final String SERVICE_ACCOUNT = "jvmdiag-operator";

  /** The names the chart's helpers give a release's objects (release names without the chart's). */
  public record Names(String webhookConfig, String webhookSecret, String lease) {}

  public static Names names(String release) {
    String fullname = release + "-jvm-diagnostics";
    return new Names(fullname + "-webhook", fullname + "-webhook-tls", fullname + "-operator");
  }

  public static final String WEBHOOK_CONFIG = names(RELEASE).webhookConfig();
  public static final String WEBHOOK_SECRET = names(RELEASE).webhookSecret();
  public static final String LEASE = names(RELEASE).lease();
  static final Path CHART =
      Path.of(System.getProperty("crds.dir", "../crds")).resolveSibling("charts/jvm-diagnostics");
  static final String TEMPLATE = "templates/operator/clusterrole.yaml";

  private ChartRbac() {}

  /**
   * The rendered ClusterRole and Role, bound to the operator's service account; returns its client
   * config.
   */
  public static Config install(KubernetesClient admin) throws Exception {
    return install(admin, RELEASE);
  }

  /**
   * As {@link #install(KubernetesClient)}, the rules rendered for another release: the same user
   * also gets that release's Secret, Lease and registration names ({@link #names}).
   */
  public static Config install(KubernetesClient admin, String release) throws Exception {
    ApiServer.namespace(admin, NAMESPACE);
    List<HasMetadata> roles =
        admin
            .load(new ByteArrayInputStream(render(release).getBytes(StandardCharsets.UTF_8)))
            .items();
    if (roles.isEmpty()) throw new IllegalStateException(TEMPLATE + " rendered to nothing");
    String user = "system:serviceaccount:" + NAMESPACE + ":" + SERVICE_ACCOUNT;
    for (HasMetadata role : roles) {
      if (role.getMetadata().getNamespace() == null && "Role".equals(role.getKind()))
        role.getMetadata().setNamespace(NAMESPACE);
      admin.resource(role).serverSideApply();
      if ("ClusterRole".equals(role.getKind())) {
        admin
            .resource(
                new ClusterRoleBindingBuilder()
                    .withNewMetadata()
                    .withName(role.getMetadata().getName())
                    .endMetadata()
                    .withNewRoleRef(
                        "rbac.authorization.k8s.io", "ClusterRole", role.getMetadata().getName())
                    .addNewSubject()
                    .withKind("User")
                    .withName(user)
                    .withApiGroup("rbac.authorization.k8s.io")
                    .endSubject()
                    .build())
            .serverSideApply();
      } else if ("Role".equals(role.getKind())) {
        admin
            .resource(
                new RoleBindingBuilder()
                    .withNewMetadata()
                    .withName(role.getMetadata().getName())
                    .withNamespace(role.getMetadata().getNamespace())
                    .endMetadata()
                    .withNewRoleRef(
                        "rbac.authorization.k8s.io", "Role", role.getMetadata().getName())
                    .addNewSubject()
                    .withKind("User")
                    .withName(user)
                    .withApiGroup("rbac.authorization.k8s.io")
                    .endSubject()
                    .build())
            .serverSideApply();
      } else {
        throw new IllegalStateException(
            TEMPLATE + " holds a " + role.getKind() + "; only ClusterRole/Role are expected");
      }
    }
    return new ConfigBuilder(ApiServer.adminConfig())
        .withImpersonateUsername(user)
        .withImpersonateGroups(
            "system:serviceaccounts", "system:serviceaccounts:" + NAMESPACE, "system:authenticated")
        .build();
  }

  /**
   * The chart's template as helm renders it with default values (hack/setup.d/helm.sh builds helm).
   */
  static String render(String release) throws Exception {
    String cache =
        System.getenv()
            .getOrDefault(
                "JVMDIAG_CACHE", System.getProperty("user.home") + "/.cache/jvm-diagnostics");
    Path helm = Path.of(cache, "bin", "helm");
    if (!Files.isExecutable(helm))
      throw new IllegalStateException(helm + " missing: run hack/setup.d/helm.sh");
    Process p =
        new ProcessBuilder(
                helm.toString(),
                "template",
                release,
                CHART.toString(),
                "--namespace",
                NAMESPACE,
                // the chart's kubeVersion is checked against this, not a cluster's
                "--kube-version",
                ApiServer.VERSION,
                "--show-only",
                TEMPLATE)
            .redirectErrorStream(false)
            .start();
    byte[] out = p.getInputStream().readAllBytes();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0)
      throw new IllegalStateException("helm template failed: " + err);
    return new String(out, StandardCharsets.UTF_8);
  }

  /**
   * What Helm does before the operator starts: both webhook registrations exist (the operator may
   * patch them, not create them). Empty, and labelled as the operator's own, so that the operator
   * applies its whole registration (a URL in tests) rather than only the caBundle.
   */
  public static void registerLikeHelm(KubernetesClient admin, String name) {
    var meta =
        new ObjectMetaBuilder()
            .withName(name)
            .addToLabels("app.kubernetes.io/managed-by", Contract.FIELD_MANAGER)
            .build();
    var mutating = admin.admissionRegistration().v1().mutatingWebhookConfigurations();
    if (mutating.withName(name).get() == null)
      mutating
          .resource(new MutatingWebhookConfigurationBuilder().withMetadata(meta).build())
          .create();
    var validating = admin.admissionRegistration().v1().validatingWebhookConfigurations();
    if (validating.withName(name).get() == null)
      validating
          .resource(new ValidatingWebhookConfigurationBuilder().withMetadata(meta).build())
          .create();
  }
}
