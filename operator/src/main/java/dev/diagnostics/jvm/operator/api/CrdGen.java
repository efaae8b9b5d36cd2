package dev.diagnostics.jvm.operator.api;

import io.fabric8.crdv2.generator.CRDGenerator;
import io.fabric8.crdv2.generator.CRDPostProcessor;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceColumnDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.JSONSchemaProps;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * Build time (exec-maven-plugin, process-classes): writes the CRD of {@link JvmDiagnostics} with
 * fabric8's crd-generator. The generator sorts printer columns by jsonPath (AGE READY INJECTED
 * TARGET); kubectl users read TARGET INJECTED READY AGE, so the columns are put in that order. The
 * kind's description and the conditions' list type are set here ({@link #explainAndKey}). The CRD
 * is stamped with the hash of its spec ({@link CrdSchema#ANNOTATION}), and the hash is written into
 * the classes (the jar) too, so the operator can tell whether the served CRD is its own.
 *
 * <p>Arguments: the CRD's directory (default target/crds), the classes directory (default
 * target/classes).
 */
public final class CrdGen {
  /** kubectl get jvmdiag: NAME, then these. */
  static final List<String> COLUMNS = List.of("Target", "Injected", "Ready", "Age");

  private CrdGen() {}

  /**
   * What crd-generator has no annotation for: the kind's own description (the first thing {@code
   * kubectl explain jvmdiagnostics} prints; {@link JvmDiagnostics#DESCRIPTION}) and
   * status.conditions as a list keyed by type ({@code x-kubernetes-list-type: map}, {@link
   * JvmDiagnosticsStatus#CONDITIONS_KEY}, which {@link ConditionSchema} requires).
   */
  static void explainAndKey(JSONSchemaProps root) {
    root.setDescription(JvmDiagnostics.DESCRIPTION);
    JSONSchemaProps conditions =
        root.getProperties().get("status").getProperties().get("conditions");
    List<String> required = conditions.getItems().getSchema().getRequired();
    if (required == null || !required.contains(JvmDiagnosticsStatus.CONDITIONS_KEY))
      throw new IllegalStateException(
          "status.conditions items must require the list's key "
              + JvmDiagnosticsStatus.CONDITIONS_KEY
              + " (ConditionSchema)");
    conditions.setXKubernetesListType("map");
    conditions.setXKubernetesListMapKeys(List.of(JvmDiagnosticsStatus.CONDITIONS_KEY));
  }

  public static void main(String[] args) {
    File out = new File(args.length > 0 ? args[0] : "target/crds");
    File classes = new File(args.length > 1 ? args[1] : "target/classes");
    String[] hash = new String[1];
    if (!out.isDirectory() && !out.mkdirs())
      throw new IllegalStateException("cannot create " + out);
    CRDPostProcessor columns =
        new CRDPostProcessor() {
          @Override
          public HasMetadata process(HasMetadata crd, String version) {
            if (crd instanceof CustomResourceDefinition d) {
              for (var v : d.getSpec().getVersions()) {
                List<CustomResourceColumnDefinition> cols = v.getAdditionalPrinterColumns();
                if (cols == null
                    || cols.size() != COLUMNS.size()
                    || !cols.stream().allMatch(c -> COLUMNS.contains(c.getName()))) {
                  throw new IllegalStateException(
                      "printer columns "
                          + cols
                          + " are not "
                          + COLUMNS
                          + ": update CrdGen.COLUMNS");
                }
                cols.sort(Comparator.comparingInt(c -> COLUMNS.indexOf(c.getName())));
                explainAndKey(v.getSchema().getOpenAPIV3Schema());
              }
              // after the columns: they are part of what the hash covers
              hash[0] = CrdSchema.hash(d.getSpec());
              if (d.getMetadata().getAnnotations() == null)
                d.getMetadata().setAnnotations(new LinkedHashMap<>());
              d.getMetadata().getAnnotations().put(CrdSchema.ANNOTATION, hash[0]);
            }
            return crd;
          }
        };
    int n =
        new CRDGenerator()
            .customResourceClasses(JvmDiagnostics.class)
            .forCRDVersions("v1")
            .inOutputDir(out)
            .withPostProcessor(columns)
            .generate();
    if (n != 1) throw new IllegalStateException("expected one CRD, generated " + n);
    if (hash[0] == null) throw new IllegalStateException("the CRD was not hashed");
    Path resource = classes.toPath().resolve(CrdSchema.RESOURCE);
    try {
      Files.createDirectories(resource.getParent());
      Files.writeString(resource, hash[0] + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + resource, e);
    }
  }
}
