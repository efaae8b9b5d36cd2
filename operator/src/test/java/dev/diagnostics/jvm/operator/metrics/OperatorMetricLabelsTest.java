package dev.diagnostics.jvm.operator.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The operator's own series carry no {@code pod} label: Prometheus's Kubernetes discovery adds the
 * scraped operator pod's as {@code pod}, and a label of ours by that name would clash with it
 * (renamed exported_pod, or overwrite it with honor_labels). Read from every metric the sources
 * build ({@code .name("jvmdiag_operator_...")} up to its {@code .register(}).
 */
class OperatorMetricLabelsTest {
  private static final Pattern METRIC =
      Pattern.compile(
          "\\.name\\(\"(jvmdiag_operator_[a-z_]+)\"\\)(.*?)\\.register\\(", Pattern.DOTALL);
  private static final Pattern LABELS = Pattern.compile("\\.labelNames\\(([^)]*)\\)");

  static Map<String, List<String>> labelsByMetric() throws IOException {
    Map<String, List<String>> out = new TreeMap<>();
    try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        Matcher m = METRIC.matcher(Files.readString(f));
        while (m.find()) {
          List<String> labels = new ArrayList<>();
          Matcher l = LABELS.matcher(m.group(2));
          if (l.find())
            for (String s : l.group(1).split(",")) labels.add(s.trim().replace("\"", ""));
          out.put(m.group(1), labels);
        }
      }
    }
    return out;
  }

  @Test
  void noOperatorSeriesHasAPodLabel() throws IOException {
    Map<String, List<String>> metrics = labelsByMetric();
    assertThat(metrics)
        .containsKeys("jvmdiag_operator_admissions_total", "jvmdiag_operator_reconciler_running");
    metrics.forEach((name, labels) -> assertThat(labels).as(name).doesNotContain("pod"));
  }
}
