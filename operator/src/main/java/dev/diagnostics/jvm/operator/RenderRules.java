package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The render-rules subcommand: prints the PrometheusRule the operator would create for a
 * JvmDiagnostics file, offline. The rendering itself is {@link RuleRenderer}'s, as in the
 * reconciler.
 */
@Command(
    name = "render-rules",
    mixinStandardHelpOptions = true,
    description =
        "Print the PrometheusRule YAML for the JvmDiagnostics in FILE (namespace 'default' when unset).")
final class RenderRules implements Callable<Integer> {
  @Parameters(paramLabel = "FILE", description = "a JvmDiagnostics YAML file")
  Path file;

  @Option(
      names = "--templates",
      paramLabel = "FILE",
      description =
          "alert templates to use instead of the ones in the jar (as monitoring/generate.py writes them)")
  Path templates;

  @Override
  public Integer call() throws Exception {
    KubernetesSerialization yaml = new KubernetesSerialization();
    JvmDiagnostics r;
    try (InputStream in = Files.newInputStream(file)) {
      r = yaml.unmarshal(in, JvmDiagnostics.class);
    }
    if (r == null || r.getSpec() == null)
      throw new Errors.Fatal(file + " holds no JvmDiagnostics spec");
    if (r.getMetadata().getNamespace() == null) r.getMetadata().setNamespace("default");
    RuleRenderer renderer;
    if (templates != null) {
      try (InputStream in = new FileInputStream(templates.toFile())) {
        renderer = RuleRenderer.fromYaml(in);
      }
    } else {
      renderer = RuleRenderer.fromClasspath();
    }
    GenericKubernetesResource rule = renderer.render(r);
    if (rule == null) {
      System.err.println(file + ": spec.alerts sets no thresholds, no PrometheusRule");
      return 0;
    }
    System.out.print(yaml.asYaml(rule));
    return 0;
  }
}
