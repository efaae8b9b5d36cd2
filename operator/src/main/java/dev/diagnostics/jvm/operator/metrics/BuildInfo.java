package dev.diagnostics.jvm.operator.metrics;

import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What this operator was built from, as every exporter says it (node_exporter's {@code
 * node_exporter_build_info}): {@code jvmdiag_operator_build_info{version, revision, javaversion}
 * 1}. version and revision are written into the jar at build time (src/build/GenerateBuildInfo: the
 * Maven version, the git commit or "unknown"); javaversion is the runtime's ({@code java.version}),
 * the Java counterpart of the agent's rustversion.
 */
public record BuildInfo(String version, String revision, String javaVersion) {
  static final String RESOURCE = "/dev/diagnostics/jvm/operator/build-info.properties";
  static final String UNKNOWN = "unknown";

  /** This jar's (or classes directory's); "unknown" for what the build did not write. */
  public static BuildInfo current() {
    Properties p = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
      if (in != null) p.load(in);
    } catch (IOException e) {
      // a jar that cannot be read is a broken jar; the metric just says unknown
    }
    return new BuildInfo(
        p.getProperty("version", UNKNOWN).strip(),
        p.getProperty("revision", UNKNOWN).strip(),
        System.getProperty("java.version", UNKNOWN));
  }

  /** Registers the always-1 info series in registry. */
  public BuildInfo register(PrometheusRegistry registry) {
    Info.builder()
        .name("jvmdiag_operator_build_info")
        .help(
            "Always 1: the operator's version, the git commit it was built from and the Java"
                + " runtime it runs on.")
        .labelNames("version", "revision", "javaversion")
        .register(registry)
        .addLabelValues(version, revision, javaVersion);
    return this;
  }
}
