package dev.diagnostics.jvm.operator.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart's pre-delete hook at size: 5,000 JvmDiagnostics with the operator's finalizer, and the
 * jar's `uninstall` run as the chart's Job runs it (its JAVA_TOOL_OPTIONS, a 256 MiB container): it
 * lists them a page at a time, finishes within the Job's deadline, and leaves none with the
 * finalizer, so they then delete at once.
 */
class UninstallIT {
  static final int RESOURCES = 5_000;
  static final int NAMESPACES = 10;
  static final String FINALIZER = "jvmdiagnostics.jvm.diagnostics.dev/finalizer";

  /** The chart's values: operator.uninstallCleanup.timeoutSeconds and the Job's environment. */
  static final int JOB_DEADLINE_SECONDS = 300;

  static final String JOB_JAVA_TOOL_OPTIONS =
      "-XX:TieredStopAtLevel=1 -Xss512k -XX:MaxRAMPercentage=75";

  static KubernetesClient admin;

  @BeforeAll
  static void createResources() throws Exception {
    admin = ApiServer.admin();
    for (int n = 0; n < NAMESPACES; n++) ApiServer.namespace(admin, "uninstall-" + n);
    long t0 = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < RESOURCES; i++) {
        int k = i;
        done.add(pool.submit(() -> admin.resource(resource(k)).create()));
      }
      for (Future<?> f : done) f.get(5, TimeUnit.MINUTES);
    } finally {
      pool.shutdownNow();
    }
    System.err.printf(
        "UninstallIT: %d JvmDiagnostics with the finalizer created in %d ms%n",
        RESOURCES, (System.nanoTime() - t0) / 1_000_000);
  }

  @AfterAll
  static void deleteResources() {
    if (admin == null) return;
    for (int n = 0; n < NAMESPACES; n++)
      admin.resources(JvmDiagnostics.class).inNamespace("uninstall-" + n).delete();
    admin.close();
  }

  static JvmDiagnostics resource(int i) {
    JvmDiagnosticsSpec spec = new JvmDiagnosticsSpec();
    spec.targetRef = new TargetRef(TargetRef.Kind.Deployment, "app-" + i);
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(
        new ObjectMetaBuilder()
            .withName("r-" + i)
            .withNamespace("uninstall-" + i % NAMESPACES)
            .withFinalizers(FINALIZER)
            .build());
    r.setSpec(spec);
    return r;
  }

  @Test
  void removesTheFinalizerFromFiveThousandResourcesAPageAtATime(@TempDir Path dir)
      throws Exception {
    assertThat(withFinalizer()).isEqualTo(RESOURCES);
    Path kubeconfig = dir.resolve("kubeconfig");
    Files.writeString(kubeconfig, ApiServer.kubeconfigYaml());
    Path jar = Path.of("target/jvmdiag-operator.jar");
    assertThat(jar).as("the jar (mvn package runs before the ITs)").exists();
    ProcessBuilder pb =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:MaxRAM=256m", // the Job's memory limit
                "-jar",
                jar.toString(),
                "uninstall",
                "--kubeconfig",
                kubeconfig.toString(),
                "--namespace",
                ChartRbac.NAMESPACE)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("uninstall.log").toFile());
    pb.environment().put("JAVA_TOOL_OPTIONS", JOB_JAVA_TOOL_OPTIONS);
    long t0 = System.nanoTime();
    Process p = pb.start();
    boolean exited = p.waitFor(JOB_DEADLINE_SECONDS, TimeUnit.SECONDS);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    if (!exited) p.destroyForcibly().waitFor();
    String out = Files.readString(dir.resolve("uninstall.log"));
    System.err.printf("UninstallIT: uninstall of %d resources took %d ms%n%s", RESOURCES, ms, out);
    assertThat(exited).as("uninstall finished within the Job's deadline: " + out).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    // other ITs of the run may have left a few resources of their own: they are listed too
    Matcher pages = Pattern.compile("(?m)^page \\d+: (\\d+) JvmDiagnostics").matcher(out);
    int listed = 0;
    int count = 0;
    while (pages.find()) {
      count++;
      listed += Integer.parseInt(pages.group(1));
      assertThat(Integer.parseInt(pages.group(1))).isLessThanOrEqualTo(500);
    }
    assertThat(listed).isGreaterThanOrEqualTo(RESOURCES);
    assertThat(count).as("one progress line per page of 500").isEqualTo((listed + 499) / 500);
    Matcher total = Pattern.compile("removed from (\\d+) of (\\d+) JvmDiagnostics").matcher(out);
    assertThat(total.find()).as(out).isTrue();
    assertThat(Integer.parseInt(total.group(1))).isGreaterThanOrEqualTo(RESOURCES);
    assertThat(Integer.parseInt(total.group(2))).isEqualTo(listed);
    assertThat(withFinalizer()).as("none left with the finalizer").isZero();

    // without the finalizer they go at once
    for (int n = 0; n < NAMESPACES; n++)
      admin.resources(JvmDiagnostics.class).inNamespace("uninstall-" + n).delete();
    ApiServer.await(
        "the resources deleted",
        Duration.ofSeconds(60),
        () -> {
          for (int n = 0; n < NAMESPACES; n++) {
            if (!admin
                .resources(JvmDiagnostics.class)
                .inNamespace("uninstall-" + n)
                .list(new ListOptionsBuilder().withLimit(1L).build())
                .getItems()
                .isEmpty()) return false;
          }
          return true;
        });
  }

  /** The resources of this test that still carry the operator's finalizer. */
  static int withFinalizer() {
    int n = 0;
    String token = null;
    do {
      var page =
          admin
              .resources(JvmDiagnostics.class)
              .inAnyNamespace()
              .list(new ListOptionsBuilder().withLimit(1000L).withContinue(token).build());
      for (JvmDiagnostics r : page.getItems()) {
        if (r.getMetadata().getNamespace().startsWith("uninstall-")
            && r.getMetadata().getFinalizers() != null
            && r.getMetadata().getFinalizers().contains(FINALIZER)) n++;
      }
      token = page.getMetadata().getContinue();
      if (token != null && token.isEmpty()) token = null;
    } while (token != null);
    return n;
  }
}
