package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
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
