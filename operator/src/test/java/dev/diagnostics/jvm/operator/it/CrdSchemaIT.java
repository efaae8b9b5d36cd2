package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.CrdSchema;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator (the jar, as the chart runs it) against a served CRD that is not its own: without
 * the schema-hash annotation (0.1.x's) or with another hash it exits 1 at start-up, saying to apply
 * the chart's CRD first; with its own it starts. Only the annotation changes, never the schema, so
 * the other ITs of the run are not affected.
 */
class CrdSchemaIT {
  static KubernetesClient admin;
  static String own;
  @TempDir static Path dir;
  static Path kubeconfig;

  @BeforeAll
  static void start() throws Exception {
    admin = ApiServer.admin();
    own = CrdSchema.expected();
    kubeconfig = dir.resolve("kubeconfig");
    Files.writeString(kubeconfig, ApiServer.kubeconfigYaml());
    ApiServer.namespace(admin, "crd-schema");
  }

  @AfterAll
  static void stop() {
    if (admin == null) return;
    annotate(own); // as crds/ has it
    admin.close();
  }

  static void annotate(String hash) {
    admin
        .apiextensions()
        .v1()
        .customResourceDefinitions()
        .withName(CrdSchema.CRD_NAME)
        .edit(d -> {
          if (hash == null) d.getMetadata().getAnnotations().remove(CrdSchema.ANNOTATION);
          else d.getMetadata().getAnnotations().put(CrdSchema.ANNOTATION, hash);
          return d;
        });
  }

  /** The operator's jar, reconciler only, one namespace; its output in a file. */
  static Process operator(Path log) throws Exception {
    Path jar = Path.of("target/jvmdiag-operator.jar");
    assertThat(jar).as("the jar (mvn package runs before the ITs)").exists();
    return new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-jar",
            jar.toString(),
            "--kubeconfig",
            kubeconfig.toString(),
            "--no-webhook",
            "--no-leader-election",
            "--metrics-bind",
            "127.0.0.1:0",
            "--watch-namespaces",
            "crd-schema")
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
  }

  String refusedWith(String hash, String name) throws Exception {
    annotate(hash);
    Path log = dir.resolve(name + ".log");
    Process p = operator(log);
    boolean exited = p.waitFor(90, TimeUnit.SECONDS);
    if (!exited) p.destroyForcibly().waitFor();
    String out = Files.readString(log);
    assertThat(exited).as("the operator exits: " + out).isTrue();
    assertThat(p.exitValue()).as(out).isEqualTo(1);
    System.out.println("CrdSchemaIT (" + name + "): " + out.strip());
    return out;
  }

  @Test
  void refusesAnOlderCrdAndAnotherVersionsAndStartsWithItsOwn() throws Exception {
    assertThat(refusedWith(null, "no-annotation"))
        .contains("error: the served CRD " + CrdSchema.CRD_NAME + " is older than this operator")
        .contains("Helm does not upgrade crds/: apply the chart's CRD first")
        .contains("kubectl apply --server-side --force-conflicts -f crds/");
    assertThat(refusedWith("0000000000000000", "other-hash"))
        .contains("0000000000000000, this operator's " + own)
        .contains("apply the chart's CRD first");

    annotate(own);
    Path log = dir.resolve("own.log");
    Process p = operator(log);
    try {
      ApiServer.await(
          "the operator starts with its own CRD",
          java.time.Duration.ofSeconds(90),
          () -> {
            try {
              String out = Files.readString(log);
              if (!p.isAlive()) throw new AssertionError("the operator exited: " + out);
              return out.contains("jvmdiag-operator running against");
            } catch (java.io.IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          });
    } finally {
      p.destroy();
      if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
    }
  }
}
