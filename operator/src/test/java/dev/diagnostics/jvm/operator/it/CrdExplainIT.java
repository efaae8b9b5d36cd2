package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.diagnostics.jvm.operator.api.CrdDescriptionsTest;
import io.fabric8.kubernetes.api.model.apiextensions.v1.JSONSchemaProps;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kubectl explain jvmdiagnostics} explains: with the checked-in CRD applied to a real
 * kube-apiserver, what the API server serves to kubectl explain (its OpenAPI v3 document of the
 * group) has a description for every field kubectl lists, and kubectl itself prints one for the
 * kind, spec, status, each top-level field of spec and every field under them.
 */
class CrdExplainIT {
  static final String GROUP_PATH = "/openapi/v3/apis/jvm.diagnostics.dev/v1alpha1";
  static KubernetesClient admin;
  @TempDir static Path dir;
  static Path kubeconfig;

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    kubeconfig = dir.resolve("kubeconfig");
    Files.writeString(kubeconfig, ApiServer.kubeconfigYaml());
  }

  @AfterAll
  static void stop() {
    if (admin != null) admin.close();
  }

  /** The kubectl of the API server's version from the cache (as hack/lib.sh), else PATH's. */
  static String kubectl() {
    String cache =
        System.getenv()
            .getOrDefault(
                "JVMDIAG_CACHE", System.getProperty("user.home") + "/.cache/jvm-diagnostics");
    String own = System.getenv("KUBECTL");
    if (own != null && new File(own).canExecute()) return own;
    File versioned = Path.of(cache, "k8s", ApiServer.VERSION + "-linux-amd64", "kubectl").toFile();
    return versioned.canExecute() ? versioned.getPath() : "kubectl";
  }

  static String explain(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(kubectl(), "--kubeconfig", kubeconfig.toString()));
    cmd.add("explain");
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("%s:\n%s", cmd, out).isZero();
    return out;
  }

  /**
   * The field paths of {@code kubectl explain --recursive}'s FIELDS tree (two spaces per level),
   * e.g. spec.targetRef.kind; the enum lines kubectl prints under a field are not fields.
   */
  static Set<String> recursiveFields(String out) {
    Set<String> paths = new LinkedHashSet<>();
    List<String> stack = new ArrayList<>();
    boolean fields = false;
    for (String line : out.split("\n")) {
      if (line.startsWith("FIELDS:")) {
        fields = true;
        continue;
      }
      if (!fields || line.isBlank()) continue;
      int indent = line.length() - line.stripLeading().length();
      String name = line.strip().split("\\s+")[0];
      if (name.endsWith(":")) continue; // "enum: a, b" under a field
      int level = indent / 2 - 1;
      while (stack.size() > level) stack.remove(stack.size() - 1);
      stack.add(name);
      paths.add(String.join(".", stack));
    }
    return paths;
  }

  /**
   * The fields kubectl explain PATH lists under FIELDS, each with its description (the lines
   * indented further than the field's, enum and default lines aside), and the DESCRIPTION of PATH.
   */
  record Explained(String description, Map<String, String> fields) {}

  static Explained parse(String out) {
    StringBuilder description = new StringBuilder();
    Map<String, String> fields = new LinkedHashMap<>();
    String section = "";
    String field = null;
    for (String line : out.split("\n")) {
      if (!line.startsWith(" ") && line.endsWith(":") || line.matches("^[A-Z]+:.*")) {
        section = line.split(":")[0];
        continue;
      }
      if (section.equals("DESCRIPTION")) description.append(line.strip()).append(' ');
      if (!section.equals("FIELDS") || line.isBlank()) continue;
      if (line.matches("^  \\S.*\\t<.*") || line.matches("^  [A-Za-z0-9]+\\s+<.*")) {
        field = line.strip().split("\\s+")[0];
        fields.put(field, "");
      } else if (field != null && line.startsWith("    ")) {
        fields.put(field, (fields.get(field) + " " + line.strip()).strip());
      }
    }
    return new Explained(description.toString().strip(), fields);
  }

  @Test
  void theServedOpenApiDescribesEveryFieldKubectlLists() throws Exception {
    Set<String> listed = recursiveFields(explain("jvmdiagnostics", "--recursive"));
    // the API server adds apiVersion, kind and metadata (ObjectMeta, described upstream)
    Set<String> ours = new LinkedHashSet<>();
    for (String p : listed) if (p.startsWith("spec") || p.startsWith("status")) ours.add(p);
    Map<String, JSONSchemaProps> schema =
        CrdDescriptionsTest.fields(
            CrdDescriptionsTest.schema(
                Path.of(
                    System.getProperty("crds.dir", "../crds"),
                    "jvmdiagnostics.jvm.diagnostics.dev-v1.yml")));
    Set<String> fromSchema = new LinkedHashSet<>();
    for (String p : schema.keySet())
      if (!p.equals("jvmdiagnostics")) fromSchema.add(p.substring("jvmdiagnostics.".length()));
    assertThat(ours)
        .as("kubectl explain --recursive lists the schema's fields")
        .isEqualTo(fromSchema);
    assertThat(listed).contains("apiVersion", "kind", "metadata");

    // what kubectl explain reads: the group's OpenAPI v3 document
    JsonNode doc = new ObjectMapper().readTree(admin.raw(GROUP_PATH));
    JsonNode kind = null;
    for (JsonNode s : doc.path("components").path("schemas")) {
      for (JsonNode gvk : s.path("x-kubernetes-group-version-kind"))
        if (gvk.path("kind").asText().equals("JvmDiagnostics")) kind = s;
    }
    assertThat(kind).as("JvmDiagnostics in %s", GROUP_PATH).isNotNull();
    assertThat(kind.path("description").asText()).as("the kind's description").isNotBlank();
    List<String> bare = new ArrayList<>();
    for (String p : listed) {
      if (p.startsWith("metadata.")) continue; // ObjectMeta's own, by reference
      JsonNode node = kind;
      for (String part : p.split("\\.")) {
        JsonNode object = node.has("items") ? node.path("items") : node;
        node = object.path("properties").path(part);
        if (node.has("allOf")) node = resolve(doc, node);
      }
      if (node.path("description").asText().isBlank()) bare.add(p);
    }
    assertThat(bare).as("fields the served OpenAPI leaves without a description").isEmpty();
  }

  /** A property that is only a reference (metadata's ObjectMeta): its description is beside it. */
  private static JsonNode resolve(JsonNode doc, JsonNode node) {
    if (node.has("description")) return node;
    String ref = node.path("allOf").path(0).path("$ref").asText();
    String name = ref.substring(ref.lastIndexOf('/') + 1);
    return doc.path("components").path("schemas").path(name);
  }

  @Test
  void kubectlExplainPrintsADescriptionForTheKindAndEveryFieldOfSpecAndStatus() throws Exception {
    Explained root = parse(explain("jvmdiagnostics"));
    assertThat(root.description()).as("kubectl explain jvmdiagnostics").contains("workload");
    assertThat(root.fields()).containsKeys("apiVersion", "kind", "metadata", "spec", "status");
    root.fields().forEach((f, d) -> assertThat(d).as("jvmdiagnostics.%s", f).isNotBlank());

    List<String> paths = new ArrayList<>(List.of("jvmdiagnostics.spec", "jvmdiagnostics.status"));
    Explained spec = parse(explain("jvmdiagnostics.spec"));
    assertThat(spec.fields())
        .containsKeys(
            "targetRef",
            "containers",
            "collectors",
            "collection",
            "jvmOptions",
            "rollout",
            "alerts");
    assertThat(spec.fields().get("targetRef")).contains("e.g. {kind: Deployment, name: checkout}");
    for (String f : spec.fields().keySet()) paths.add("jvmdiagnostics.spec." + f);
    paths.add("jvmdiagnostics.status.conditions");
    paths.add("jvmdiagnostics.status.podsMissingInjection");
    for (String path : paths) {
      Explained e = parse(explain(path));
      assertThat(e.description()).as("DESCRIPTION of %s", path).isNotBlank();
      e.fields().forEach((f, d) -> assertThat(d).as("%s.%s", path, f).isNotBlank());
    }
    Explained conditions = parse(explain("jvmdiagnostics.status.conditions"));
    assertThat(conditions.fields()).containsKeys("type", "status", "reason", "message");
  }
}
