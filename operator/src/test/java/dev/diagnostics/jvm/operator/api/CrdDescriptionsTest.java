package dev.diagnostics.jvm.operator.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.JSONSchemaProps;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code kubectl explain jvmdiagnostics...} prints each field's description from the CRD's schema:
 * every field of the generated CRD has one — the kind itself, spec, status, every nested field and
 * the fields of array items — so no field is explained by its type alone.
 */
public class CrdDescriptionsTest {
  static JSONSchemaProps schema() throws Exception {
    return schema(
        Path.of(System.getProperty("generated.crds.dir", "target/crds"), CrdUpToDateTest.FILE));
  }

  /** The openAPIV3Schema of the CRD in file. */
  public static JSONSchemaProps schema(Path file) throws Exception {
    CustomResourceDefinition crd =
        new KubernetesSerialization()
            .unmarshal(Files.readString(file), CustomResourceDefinition.class);
    return crd.getSpec().getVersions().get(0).getSchema().getOpenAPIV3Schema();
  }

  /**
   * The field paths as kubectl explain names them (jvmdiagnostics.spec.targetRef.kind; an array's
   * item fields under the array's own path), each with its schema, the kind's own root first.
   */
  public static Map<String, JSONSchemaProps> fields(JSONSchemaProps root) {
    Map<String, JSONSchemaProps> out = new java.util.LinkedHashMap<>();
    out.put("jvmdiagnostics", root);
    walk("jvmdiagnostics", root, out);
    return out;
  }

  private static void walk(String path, JSONSchemaProps s, Map<String, JSONSchemaProps> out) {
    JSONSchemaProps object = s;
    if (s.getItems() != null && s.getItems().getSchema() != null) object = s.getItems().getSchema();
    if (object.getProperties() == null) return;
    for (var e : object.getProperties().entrySet()) {
      String p = path + "." + e.getKey();
      out.put(p, e.getValue());
      walk(p, e.getValue(), out);
    }
  }

  @Test
  void everyFieldOfTheSchemaHasADescription() throws Exception {
    Map<String, JSONSchemaProps> fields = fields(schema());
    List<String> bare = new ArrayList<>();
    fields.forEach((path, s) -> {
      if (s.getDescription() == null || s.getDescription().isBlank()) bare.add(path);
    });
    assertThat(fields)
        .as("the walk reaches nested fields and array items' fields")
        .containsKeys(
            "jvmdiagnostics.spec.alerts.safepointPause.threshold",
            "jvmdiagnostics.status.conditions.type",
            "jvmdiagnostics.status.podsMissingInjection.name");
    assertThat(fields.size()).isGreaterThan(50);
    assertThat(bare).as("fields without a description").isEmpty();
  }

  @Test
  void descriptionsOfValuesWithAFormatShowAnExample() throws Exception {
    Map<String, JSONSchemaProps> fields = fields(schema());
    for (String p :
        List.of(
            "jvmdiagnostics.spec.targetRef",
            "jvmdiagnostics.spec.targetRef.name",
            "jvmdiagnostics.spec.containers",
            "jvmdiagnostics.spec.jvmOptions.extra",
            "jvmdiagnostics.spec.alerts.safepointPause",
            "jvmdiagnostics.spec.alerts.safepointPause.threshold",
            "jvmdiagnostics.spec.alerts.safepointPause.for",
            "jvmdiagnostics.spec.alerts.threadStartRate.threshold",
            "jvmdiagnostics.spec.alerts.codeCacheUsage",
            "jvmdiagnostics.spec.alerts.poolSaturation",
            "jvmdiagnostics.status.lastHealTime",
            "jvmdiagnostics.status.conditions.lastTransitionTime")) {
      assertThat(fields.get(p).getDescription()).as(p).containsPattern("e\\.g\\.|-XX:|-Xlog");
    }
  }

  @Test
  void conditionsAreAListKeyedByTypeWhichEachEntryHas() throws Exception {
    JSONSchemaProps conditions =
        schema().getProperties().get("status").getProperties().get("conditions");
    assertThat(conditions.getXKubernetesListType()).isEqualTo("map");
    assertThat(conditions.getXKubernetesListMapKeys()).containsExactly("type");
    assertThat(conditions.getItems().getSchema().getRequired()).contains("type", "status");
  }
}
