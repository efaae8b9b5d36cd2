package dev.diagnostics.jvm.operator.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * /metrics on a real socket, answered by client_java's scrape handler on the operator's listener:
 * gzip when asked, plain text when not, OpenMetrics and name[] filters from the library, and
 * jvmdiag_operator_build_info in every form.
 */
class MetricsServerTest {
  static final String BUILD_LINE =
      "jvmdiag_operator_build_info{javaversion=\"25.0.1\",revision=\"0123abc\",version=\"1.2.3\"} 1";

  final PrometheusRegistry registry = new PrometheusRegistry();
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  MetricsServer server;

  @BeforeEach
  void start() throws IOException {
    new BuildInfo("1.2.3", "0123abc", "25.0.1").register(registry);
    Counter c =
        Counter.builder()
            .name("test_requests_total")
            .help("Requests.")
            .labelNames("code")
            .register(registry);
    c.labelValues("200").inc(3);
    server = new MetricsServer(new InetSocketAddress("127.0.0.1", 0), registry).start();
  }

  @AfterEach
  void stop() {
    server.close();
  }

  HttpResponse<byte[]> get(String pathAndQuery, String... headers) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + pathAndQuery))
            .timeout(Duration.ofSeconds(10));
    if (headers.length > 0) b.headers(headers);
    return http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  static String gunzip(byte[] body) throws IOException {
    try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body))) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aGzipScrapeGetsAGzipBodyOfAValidExpositionWithBuildInfo(@TempDir Path tmp) throws Exception {
    HttpResponse<byte[]> r = get("/metrics", "Accept-Encoding", "gzip");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Encoding")).hasValue("gzip");
    assertThat(r.headers().firstValue("Vary").orElse("")).containsIgnoringCase("accept-encoding");
    assertThat(r.headers().firstValueAsLong("Content-Length")).hasValue(r.body().length);
    assertThat(r.body()[0] & 0xff).as("gzip magic").isEqualTo(0x1f);
    String text = gunzip(r.body());
    assertThat(r.headers().firstValue("Content-Type").orElse(""))
        .startsWith("text/plain; version=0.0.4");
    assertThat(text)
        .contains("# TYPE jvmdiag_operator_build_info gauge\n")
        .contains(BUILD_LINE + "\n")
        .contains("test_requests_total{code=\"200\"} 3.0\n");
    assertValidExposition(text, tmp);
  }

  @Test
  void aScrapeWithoutAcceptEncodingGetsPlainText() throws Exception {
    HttpResponse<byte[]> r = get("/metrics");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Encoding")).isEmpty();
    assertThat(r.headers().firstValue("Content-Type").orElse(""))
        .startsWith("text/plain; version=0.0.4");
    String text = new String(r.body(), StandardCharsets.UTF_8);
    assertThat(text).startsWith("# HELP ").contains(BUILD_LINE + "\n");
    // the same page as the gzipped one
    assertThat(gunzip(get("/metrics", "Accept-Encoding", "gzip").body())).isEqualTo(text);
  }

  @Test
  void openMetricsAndNameFiltersComeFromTheLibrary() throws Exception {
    HttpResponse<byte[]> om =
        get("/metrics", "Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assertThat(om.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/openmetrics-text");
    String text = new String(om.body(), StandardCharsets.UTF_8);
    assertThat(text)
        .contains("# TYPE jvmdiag_operator_build info\n")
        .contains(BUILD_LINE + "\n")
        .endsWith("# EOF\n");

    HttpResponse<byte[]> only = get("/metrics?name[]=jvmdiag_operator_build_info");
    String filtered = new String(only.body(), StandardCharsets.UTF_8);
    assertThat(filtered).contains(BUILD_LINE).doesNotContain("test_requests");

    HttpResponse<byte[]> proto =
        get(
            "/metrics",
            "Accept",
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;"
                + " encoding=delimited");
    assertThat(proto.statusCode()).isEqualTo(200);
    assertThat(proto.headers().firstValue("Content-Type").orElse(""))
        .startsWith("application/vnd.google.protobuf");
    assertThat(new String(proto.body(), StandardCharsets.ISO_8859_1))
        .contains("jvmdiag_operator_build_info");
  }

  @Test
  void otherPathsAndMethodsAreRefused() throws Exception {
    assertThat(get("/other").statusCode()).isEqualTo(404);
    HttpResponse<String> post =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/metrics"))
                .POST(HttpRequest.BodyPublishers.ofString("x"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(post.statusCode()).isEqualTo(405);
  }

  @Test
  void theBuildsOwnInfoNamesTheMavenVersionAndACommit() {
    BuildInfo b = BuildInfo.current();
    assertThat(b.version()).as("written by src/build/GenerateBuildInfo").isNotEqualTo("unknown");
    assertThat(b.revision()).matches("unknown|[0-9a-f]{7,64}");
    assertThat(b.javaVersion()).isEqualTo(System.getProperty("java.version"));
  }

  /**
   * Every sample line is a name, optional labels and a number; with promtool on the PATH, also
   * {@code promtool check metrics} (its lint findings aside: only a parse failure counts).
   */
  static void assertValidExposition(String text, Path tmp) throws Exception {
    assertThat(text).endsWith("\n");
    for (String line : text.split("\n")) {
      if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
      assertThat(line)
          .matches(
              "[a-zA-Z_:][a-zA-Z0-9_:]*(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\]|\\\\.)*\",?)*\\})?"
                  + " [-+]?([0-9.eE+-]+|NaN|Inf)( [0-9]+)?");
    }
    File promtool = new File("/usr/bin/promtool");
    String onPath = System.getenv().getOrDefault("PATH", "");
    for (String dir : onPath.split(File.pathSeparator)) {
      File f = new File(dir, "promtool");
      if (f.canExecute()) {
        promtool = f;
        break;
      }
    }
    if (!promtool.canExecute()) return;
    Path page = tmp.resolve("page.txt");
    Files.writeString(page, text);
    Process p =
        new ProcessBuilder(promtool.getPath(), "check", "metrics")
            .redirectInput(page.toFile())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(out).as("promtool check metrics").doesNotContain("error while linting");
  }
}
