package dev.diagnostics.jvm.operator.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The CRD's schema hash: stamped on crds/, embedded in the jar, compared at start-up. */
class CrdSchemaTest {
  static final KubernetesSerialization K8S = new KubernetesSerialization();

  static CustomResourceDefinition checkedIn() throws Exception {
    return K8S.unmarshal(
        Files.readString(Path.of(System.getProperty("crds.dir", "../crds"), CrdUpToDateTest.FILE)),
        CustomResourceDefinition.class);
  }

  @Test
  void crdsCarriesTheHashOfItsSpecAndTheJarTheSame() throws Exception {
    CustomResourceDefinition crd = checkedIn();
    String stamped = crd.getMetadata().getAnnotations().get(CrdSchema.ANNOTATION);
    assertThat(stamped).matches("[0-9a-f]{16}");
    assertThat(CrdSchema.hash(crd.getSpec()))
        .as("the hash of the spec read back")
        .isEqualTo(stamped);
    assertThat(CrdSchema.expected()).as("the build's class path resource").isEqualTo(stamped);
    assertThat(CrdSchema.refusal(crd, CrdSchema.expected())).isEmpty();
  }

  @Test
  void anotherSchemaAnotherHash() throws Exception {
    CustomResourceDefinition crd = checkedIn();
    String before = CrdSchema.hash(crd.getSpec());
    crd.getSpec()
        .getVersions()
        .get(0)
        .getSchema()
        .getOpenAPIV3Schema()
        .getProperties()
        .get("status")
        .getProperties()
        .remove("lastRolloutTime");
    assertThat(CrdSchema.hash(crd.getSpec())).isNotEqualTo(before);
  }

  @Test
  void anOlderCrdIsRefusedNamingTheFix() throws Exception {
    CustomResourceDefinition old = checkedIn();
    old.getMetadata().setAnnotations(null); // 0.1.x: no annotation
    assertThat(CrdSchema.refusal(old, "0123456789abcdef"))
        .hasValueSatisfying(m ->
            assertThat(m)
                .contains("is older than this operator")
                .contains("Helm does not upgrade crds/: apply the chart's CRD first")
                .contains("kubectl apply --server-side --force-conflicts -f crds/"));
    CustomResourceDefinition other = checkedIn();
    other.getMetadata().setAnnotations(Map.of(CrdSchema.ANNOTATION, "ffffffffffffffff"));
    assertThat(CrdSchema.refusal(other, "0123456789abcdef"))
        .hasValueSatisfying(m ->
            assertThat(m)
                .contains("ffffffffffffffff, this operator's 0123456789abcdef")
                .contains("apply the chart's CRD first"));
  }
}
