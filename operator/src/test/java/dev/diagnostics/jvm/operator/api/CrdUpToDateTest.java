package dev.diagnostics.jvm.operator.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** crds/ is generated from this model (crd-generator-maven-plugin); fail when it is stale. */
class CrdUpToDateTest {
  static final String FILE = "jvmdiagnostics.jvm.diagnostics.dev-v1.yml";

  @Test
  void checkedInCrdMatchesTheModel() throws Exception {
    Path generated = Path.of(System.getProperty("generated.crds.dir", "target/crds"), FILE);
    Path checkedIn = Path.of(System.getProperty("crds.dir", "../crds"), FILE);
    assertThat(generated).exists();
    assertThat(Files.readString(checkedIn))
        .as("crds/%s is stale: run `make operator-crd` and commit it", FILE)
        .isEqualTo(Files.readString(generated));
  }

  @Test
  void theApiServerCapsTheListOfPodsMissingTheInjection() throws Exception {
    var crd =
        new io.fabric8.kubernetes.client.utils.KubernetesSerialization()
            .unmarshal(
                Files.readString(Path.of(System.getProperty("crds.dir", "../crds"), FILE)),
                io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition.class);
    var status =
        crd.getSpec()
            .getVersions()
            .get(0)
            .getSchema()
            .getOpenAPIV3Schema()
            .getProperties()
            .get("status")
            .getProperties();
    assertThat(status.get("podsMissingInjection").getMaxItems())
        .isEqualTo((long) JvmDiagnosticsStatus.MAX_PODS_MISSING_INJECTION);
    assertThat(status.get("podsMissingInjectionTruncated").getType()).isEqualTo("integer");
  }
}
