package dev.diagnostics.jvm.operator.metrics;

import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.http.HttpListener.Reply;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;

/**
 * Plain-HTTP /metrics (Prometheus text). The kubelet's probes are not here ({@link ProbeServer}): a
 * scrape, or a client that holds this port, never decides whether the operator is alive.
 */
public final class MetricsServer implements AutoCloseable {
  /** Scrapes are rare and a scrape is quick: one at a time, a few waiting. */
  static final int SCRAPE_THREADS = 1;

  private final HttpListener listener;
  private final ExecutorService scrapes = HttpListener.pool("metrics-scrape", SCRAPE_THREADS, 4);

  public MetricsServer(InetSocketAddress bind, PrometheusRegistry registry) {
    this(bind, registry, HttpListener.Limits.DEFAULT);
  }

  public MetricsServer(
      InetSocketAddress bind, PrometheusRegistry registry, HttpListener.Limits limits) {
    PrometheusTextFormatWriter writer = new PrometheusTextFormatWriter(false);
    listener =
        new HttpListener("metrics", bind, null, limits, 4)
            .get(
                "/metrics",
                scrapes,
                () -> {
                  ByteArrayOutputStream buf = new ByteArrayOutputStream();
                  try {
                    writer.write(buf, registry.scrape());
                  } catch (IOException e) {
                    throw new UncheckedIOException(e);
                  }
                  return new Reply(200, buf.toByteArray(), PrometheusTextFormatWriter.CONTENT_TYPE);
                });
  }

  public MetricsServer start() throws IOException {
    listener.start();
    return this;
  }

  public int port() {
    return listener.port();
  }

  @Override
  public void close() {
    listener.close();
    scrapes.shutdownNow();
  }
}
