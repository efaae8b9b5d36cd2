package dev.diagnostics.jvm.operator.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinitionSpec;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;

/**
 * Which CRD this operator was built with: {@link CrdGen} stamps the generated CRD with a hash of
 * its spec (the annotation {@link #ANNOTATION}) and puts the same hash into the jar ({@link
 * #RESOURCE}); at start-up the operator compares it with the served CRD's annotation. Helm installs
 * crds/ once and never upgrades it, so after a `helm upgrade` that skipped the documented CRD step
 * the API server would prune the fields the new operator writes (status fields it added, say) or
 * refuse values its model allows; the operator refuses to start instead, and says how to fix it.
 */
public final class CrdSchema {
  public static final String CRD_NAME = "jvmdiagnostics.jvm.diagnostics.dev";
  public static final String ANNOTATION = "jvm.diagnostics.dev/schema-hash";

  /** The hash as the build wrote it, on the class path (in the jar). */
  static final String RESOURCE = "jvmdiag/crd-schema-hash";

  private CrdSchema() {}

  /**
   * The first 16 hex digits of the SHA-256 of the spec as JSON with every object's keys sorted: the
   * same for the same schema, printer columns, names and versions, whatever the field order.
   */
  static String hash(CustomResourceDefinitionSpec spec) {
    ObjectMapper sorted = new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    try {
      byte[] json = sorted.writeValueAsBytes(sorted.convertValue(spec, Map.class));
      byte[] sha = MessageDigest.getInstance("SHA-256").digest(json);
      return HexFormat.of().formatHex(sha, 0, 8);
    } catch (IOException | NoSuchAlgorithmException e) {
      throw new IllegalStateException("cannot hash the CRD's spec: " + e.getMessage(), e);
    }
  }

  /** The hash of the CRD this operator was built with. */
  public static String expected() {
    try (InputStream in = CrdSchema.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      if (in == null)
        throw new IllegalStateException(
            RESOURCE + " is not on the class path: the build (api/CrdGen) writes it");
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + RESOURCE + ": " + e.getMessage(), e);
    }
  }

  /**
   * Why this operator must not run against the served CRD, or empty when it is its own. A CRD
   * without the annotation predates it (0.1.x, or one edited by hand); one with another hash is
   * another version's.
   */
  public static Optional<String> refusal(CustomResourceDefinition served, String expected) {
    var annotations = served.getMetadata().getAnnotations();
    String have = annotations == null ? null : annotations.get(ANNOTATION);
    if (expected.equals(have)) return Optional.empty();
    String what =
        have == null
            ? "is older than this operator (it has no annotation "
                + ANNOTATION
                + "; this operator's is "
                + expected
                + ")"
            : "is not the one this operator was built with ("
                + ANNOTATION
                + " "
                + have
                + ", this operator's "
                + expected
                + "; another version's)";
    return Optional.of(
        "the served CRD "
            + CRD_NAME
            + " "
            + what
            + ": Helm does not upgrade crds/: apply the chart's CRD first, then start the operator: "
            + "helm show crds <chart> --version <this version> | kubectl apply --server-side --force-conflicts -f - "
            + "(or, from the repository, kubectl apply --server-side --force-conflicts -f crds/)");
  }
}
