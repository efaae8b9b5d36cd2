package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.diagnostics.jvm.operator.certs.CertificateAuthority;
import dev.diagnostics.jvm.operator.certs.WebhookCertificates;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * --no-manage-webhook-config (the chart's cert-manager mode): the Secret is cert-manager's, so the
 * operator reads it and names what is wrong, and never writes it — even when the hosts it expects
 * are missing, which in the issuing mode re-issues the certificate.
 */
class CertManagerModeIT {
  static final List<String> HOSTS = List.of("jvmdiag-operator.jvmdiag.svc", "127.0.0.1");
  static KubernetesClient client;
  static String ns;

  @BeforeAll
  static void up() {
    client = ApiServer.admin();
    ns = ApiServer.namespace(client, "certmanager");
  }

  @AfterAll
  static void down() {
    client.close();
  }

  /** As cert-manager writes it: a CA issuer's ca.crt, tls.crt and tls.key (no ca.key). */
  static Secret certManagerSecret(String name, List<String> hosts, boolean withKey) {
    var ca = CertificateAuthority.newCa("cert-manager-ca", Duration.ofDays(90));
    var serving = CertificateAuthority.newServing(ca, hosts, Duration.ofDays(90));
    Map<String, String> data = new LinkedHashMap<>();
    data.put("ca.crt", b64(CertificateAuthority.pem(ca.cert())));
    data.put("tls.crt", b64(CertificateAuthority.pem(serving.cert())));
    if (withKey) data.put("tls.key", b64(CertificateAuthority.pem(serving.key())));
    return client
        .resource(
            new SecretBuilder()
                .withNewMetadata()
                .withName(name)
                .withNamespace(ns)
                .addToAnnotations("cert-manager.io/certificate-name", name)
                .endMetadata()
                .withType(withKey ? "kubernetes.io/tls" : "Opaque")
                .withData(data)
                .build())
        .create(); // a tls Secret must have tls.key
  }

  static String b64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  static Secret get(String name) {
    return client.secrets().inNamespace(ns).withName(name).get();
  }

  @Test
  void readOnlyServesCertManagersCertificateAndNamesTheMissingHostsInsteadOfReissuing() {
    Secret written = certManagerSecret("other-hosts", List.of("some-other.svc"), true);
    var readOnly = new WebhookCertificates(client, ns, "other-hosts", HOSTS, false);
    var m = readOnly.ensure();
    assertThat(m.cert().getSerialNumber())
        .as("cert-manager's certificate is served as it is")
        .isEqualTo(certOf(written).getSerialNumber());
    assertThat(readOnly.missingHosts(m))
        .containsExactly("jvmdiag-operator.jvmdiag.svc", "127.0.0.1");
    readOnly.ensure(); // the periodic check: still nothing written
    assertThat(get("other-hosts").getMetadata().getResourceVersion())
        .isEqualTo(written.getMetadata().getResourceVersion());
    assertThat(get("other-hosts").getData()).isEqualTo(written.getData());

    // the same Secret in the issuing mode is re-issued for the expected hosts (what read-only must
    // not do)
    var issuing = new WebhookCertificates(client, ns, "other-hosts", HOSTS, true);
    var reissued = issuing.ensure();
    assertThat(issuing.missingHosts(reissued)).isEmpty();
    assertThat(get("other-hosts").getMetadata().getResourceVersion())
        .isNotEqualTo(written.getMetadata().getResourceVersion());
  }

  @Test
  void readOnlyNamesAMissingSecretOrKeyAndCreatesNothing() {
    var absent = new WebhookCertificates(client, ns, "not-issued-yet", HOSTS, false);
    assertThatThrownBy(absent::ensure)
        .hasMessageContaining("webhook Secret " + ns + "/not-issued-yet does not exist")
        .hasMessageContaining("--no-manage-webhook-config");
    assertThat(get("not-issued-yet")).as("no Secret created").isNull();

    Secret written = certManagerSecret("no-key", HOSTS, false);
    assertThatThrownBy(new WebhookCertificates(client, ns, "no-key", HOSTS, false)::ensure)
        .hasMessageContaining("lacks tls.key");
    assertThat(get("no-key").getMetadata().getResourceVersion())
        .isEqualTo(written.getMetadata().getResourceVersion());
  }

  static java.security.cert.X509Certificate certOf(Secret s) {
    try {
      return CertificateAuthority.readCert(
          new String(
              Base64.getDecoder().decode(s.getData().get("tls.crt")), StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
