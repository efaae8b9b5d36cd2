package dev.diagnostics.jvm.operator.it;

import static dev.diagnostics.jvm.operator.it.ApiServer.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBindingBuilder;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operator's apply of the registration on a real API server: Helm's object keeps Helm's fields.
 */
class WebhookRegistrationIT {
  static KubernetesClient client;

  @BeforeAll
  static void up() {
    client = ApiServer.admin();
  }

  @AfterAll
  static void down() {
    client
        .admissionRegistration()
        .v1()
        .mutatingWebhookConfigurations()
        .withName("reg-helm")
        .delete();
    client
        .admissionRegistration()
        .v1()
        .mutatingWebhookConfigurations()
        .withName("reg-own")
        .delete();
    client.close();
  }

  private static MutatingWebhookConfiguration get(String name) {
    return client.admissionRegistration().v1().mutatingWebhookConfigurations().withName(name).get();
  }

  private static String ca(MutatingWebhookConfiguration m) {
    return new String(
        Base64.getDecoder().decode(m.getWebhooks().get(0).getClientConfig().getCaBundle()),
        StandardCharsets.UTF_8);
  }

  @Test
  void helmsRegistrationKeepsHelmsLabelsAndServiceOnlyTheCaBundleChanges() {
    // as the chart creates it (no caBundle)
    MutatingWebhookConfiguration helm =
        WebhookRegistration.build(
            "reg-helm", "service:jvmdiag-operator.jvmdiag:443", "x", "jvmdiag");
    helm.getMetadata().getLabels().put("app.kubernetes.io/managed-by", "Helm");
    helm.getMetadata().getLabels().put("helm.sh/chart", "jvm-diagnostics-0.1.0");
    helm.getWebhooks().get(0).getClientConfig().setCaBundle(null);
    client.resource(helm).create(); // Helm 3 creates with a plain POST

    WebhookRegistration.apply(
        client, WebhookRegistration.build("reg-helm", "https://127.0.0.1:9443", "CA-1", "jvmdiag"));
    MutatingWebhookConfiguration got = get("reg-helm");
    assertThat(got.getMetadata().getLabels())
        .containsEntry("app.kubernetes.io/managed-by", "Helm")
        .containsEntry("helm.sh/chart", "jvm-diagnostics-0.1.0");
    assertThat(ca(got)).isEqualTo("CA-1");
    // the Service Helm wrote stays: the operator owns nothing but the caBundle
    assertThat(got.getWebhooks().get(0).getClientConfig().getService().getName())
        .isEqualTo("jvmdiag-operator");
    assertThat(got.getWebhooks().get(0).getClientConfig().getUrl()).isNull();
    assertThat(got.getWebhooks().get(0).getFailurePolicy()).isEqualTo("Ignore");

    // rotation: a new CA replaces the caBundle, the labels still survive
    WebhookRegistration.apply(
        client, WebhookRegistration.build("reg-helm", "https://127.0.0.1:9443", "CA-2", "jvmdiag"));
    got = get("reg-helm");
    assertThat(ca(got)).isEqualTo("CA-2");
    assertThat(got.getMetadata().getLabels()).containsEntry("app.kubernetes.io/managed-by", "Helm");
  }

  /**
   * As the chart's RBAC may have it: get and patch on the registrations, no create. An existing
   * registration (the chart's, or one the operator made) is updated with patch alone; a missing one
   * is logged, not created, and nothing throws.
   */
  @Test
  void patchAloneKeepsAnExistingRegistrationAndAMissingOneIsLoggedNotCreated() {
    admin(
        new ClusterRoleBuilder()
            .withNewMetadata()
            .withName("reg-patch-only")
            .endMetadata()
            .addNewRule()
            .withApiGroups("admissionregistration.k8s.io")
            .withResources("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
            .withVerbs("get", "list", "watch", "patch")
            .endRule()
            .build());
    admin(
        new ClusterRoleBindingBuilder()
            .withNewMetadata()
            .withName("reg-patch-only")
            .endMetadata()
            .withNewRoleRef("rbac.authorization.k8s.io", "ClusterRole", "reg-patch-only")
            .addNewSubject()
            .withKind("User")
            .withName("reg-patch-only")
            .withApiGroup("rbac.authorization.k8s.io")
            .endSubject()
            .build());
    try (KubernetesClient patchOnly =
        ApiServer.client(
            new ConfigBuilder(ApiServer.adminConfig())
                .withImpersonateUsername("reg-patch-only")
                .withImpersonateGroups("system:authenticated")
                .build())) {
      // the chart's (Helm's labels): only the caBundle is applied
      MutatingWebhookConfiguration helm =
          WebhookRegistration.build(
              "reg-patch", "service:jvmdiag-operator.jvmdiag:443", "x", "jvmdiag");
      helm.getMetadata().getLabels().put("app.kubernetes.io/managed-by", "Helm");
      helm.getWebhooks().get(0).getClientConfig().setCaBundle(null);
      client.resource(helm).create();
      ValidatingWebhookConfiguration helmValidating =
          WebhookRegistration.buildValidating(
              "reg-patch", "service:jvmdiag-operator.jvmdiag:443", "x");
      helmValidating.getMetadata().getLabels().put("app.kubernetes.io/managed-by", "Helm");
      helmValidating.getWebhooks().get(0).getClientConfig().setCaBundle(null);
      client.resource(helmValidating).create();
      await(
          "patch-only RBAC in effect",
          Duration.ofSeconds(10),
          () -> {
            WebhookRegistration.apply(
                patchOnly,
                WebhookRegistration.build(
                    "reg-patch", "https://127.0.0.1:9443", "CA-1", "jvmdiag"));
            return "CA-1".equals(ca(get("reg-patch")));
          });
      WebhookRegistration.apply(
          patchOnly,
          WebhookRegistration.buildValidating("reg-patch", "https://127.0.0.1:9443", "CA-1"));
      assertThat(
              decode(
                  client
                      .admissionRegistration()
                      .v1()
                      .validatingWebhookConfigurations()
                      .withName("reg-patch")
                      .get()
                      .getWebhooks()
                      .get(0)
                      .getClientConfig()
                      .getCaBundle()))
          .isEqualTo("CA-1");

      // one the operator made (its own label): the whole object, still with patch alone
      WebhookRegistration.apply(
          client,
          WebhookRegistration.build("reg-patch-own", "https://127.0.0.1:9443", "CA-1", "jvmdiag"));
      WebhookRegistration.apply(
          patchOnly,
          WebhookRegistration.build("reg-patch-own", "https://127.0.0.1:9443", "CA-2", "jvmdiag"));
      assertThat(ca(get("reg-patch-own"))).isEqualTo("CA-2");

      // missing: logged (the chart creates it), nothing created, nothing thrown
      WebhookRegistration.apply(
          patchOnly,
          WebhookRegistration.build("reg-patch-absent", "https://127.0.0.1:9443", "CA-1", "x"));
      WebhookRegistration.apply(
          patchOnly,
          WebhookRegistration.buildValidating(
              "reg-patch-absent", "https://127.0.0.1:9443", "CA-1"));
      assertThat(get("reg-patch-absent")).isNull();
    } finally {
      for (String name : List.of("reg-patch", "reg-patch-own")) {
        client.admissionRegistration().v1().mutatingWebhookConfigurations().withName(name).delete();
        client
            .admissionRegistration()
            .v1()
            .validatingWebhookConfigurations()
            .withName(name)
            .delete();
      }
    }
  }

  /**
   * Nothing older over something newer: a caBundle from a Secret that changed meanwhile is not
   * applied, nor one over a registration another replica wrote after it was read (the write carries
   * the resourceVersion read, a precondition the API server checks).
   */
  @Test
  void aStaleCaBundleIsNotAppliedOverANewerOne() {
    MutatingWebhookConfiguration helm =
        WebhookRegistration.build(
            "reg-stale", "service:jvmdiag-operator.jvmdiag:443", "x", "jvmdiag");
    helm.getMetadata().getLabels().put("app.kubernetes.io/managed-by", "Helm");
    helm.getWebhooks().get(0).getClientConfig().setCaBundle(null);
    client.resource(helm).create();
    try {
      var caOne =
          WebhookRegistration.build("reg-stale", "https://127.0.0.1:9443", "CA-1", "jvmdiag");
      // the Secret changed after the caBundle was computed from it
      assertThatThrownBy(() -> WebhookRegistration.apply(client, caOne, () -> false))
          .isInstanceOf(WebhookCertificates.Superseded.class);
      assertThat(get("reg-stale").getWebhooks().get(0).getClientConfig().getCaBundle()).isNull();
      // another replica writes the registration between our read and our write
      var caTwo =
          WebhookRegistration.build("reg-stale", "https://127.0.0.1:9443", "CA-2", "jvmdiag");
      assertThatThrownBy(() ->
              WebhookRegistration.apply(
                  client,
                  caOne,
                  () -> {
                    WebhookRegistration.apply(client, caTwo);
                    return true;
                  }))
          .isInstanceOf(WebhookCertificates.Superseded.class);
      assertThat(ca(get("reg-stale"))).as("the newer caBundle stays").isEqualTo("CA-2");
    } finally {
      client
          .admissionRegistration()
          .v1()
          .mutatingWebhookConfigurations()
          .withName("reg-stale")
          .delete();
    }
  }

  private static void admin(HasMetadata o) {
    client.resource(o).serverSideApply();
  }

  private static String decode(String b64) {
    return new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
  }

  @Test
  void withoutAChartTheOperatorCreatesAndUpdatesTheWholeRegistration() {
    WebhookRegistration.apply(
        client, WebhookRegistration.build("reg-own", "https://127.0.0.1:9443", "CA-1", "jvmdiag"));
    MutatingWebhookConfiguration got = get("reg-own");
    assertThat(got.getMetadata().getLabels())
        .containsEntry("app.kubernetes.io/managed-by", Contract.FIELD_MANAGER);
    assertThat(got.getWebhooks().get(0).getClientConfig().getUrl())
        .isEqualTo("https://127.0.0.1:9443/mutate-pods");
    WebhookRegistration.apply(
        client, WebhookRegistration.build("reg-own", "https://127.0.0.1:9453", "CA-2", "jvmdiag"));
    got = get("reg-own");
    assertThat(got.getWebhooks().get(0).getClientConfig().getUrl())
        .isEqualTo("https://127.0.0.1:9453/mutate-pods");
    assertThat(ca(got)).isEqualTo("CA-2");
  }
}
