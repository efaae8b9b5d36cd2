package dev.diagnostics.jvm.operator.metrics;

import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

/** Plain-HTTP /metrics (Prometheus text) and /healthz for the operator. */
public final class MetricsServer implements AutoCloseable {
  private final HttpServer server;

  /**
   * healthy: false after a fatal error the process could not exit on (then /healthz answers 503).
   */
  public MetricsServer(InetSocketAddress bind, PrometheusRegistry registry, BooleanSupplier healthy)
      throws IOException {
    server = HttpServer.create(bind, 16);
    PrometheusTextFormatWriter writer = new PrometheusTextFormatWriter(false);
    server.createContext(
        "/metrics",
        ex -> {
          ByteArrayOutputStream buf = new ByteArrayOutputStream();
          writer.write(buf, registry.scrape());
          send(ex, 200, buf.toByteArray(), PrometheusTextFormatWriter.CONTENT_TYPE);
        });
    server.createContext(
        "/healthz",
        ex -> {
          if (healthy.getAsBoolean()) send(ex, 200, "ok\n".getBytes(), "text/plain");
          else send(ex, 503, "fatal error, see the log\n".getBytes(), "text/plain");
        });
    server.setExecutor(
        Executors.newSingleThreadExecutor(
            Thread.ofPlatform().name("metrics").daemon(true).factory()));
  }

  private static void send(
      com.sun.net.httpserver.HttpExchange ex, int code, byte[] body, String type)
      throws IOException {
    ex.getResponseHeaders().set("Content-Type", type);
    ex.sendResponseHeaders(code, body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  public void start() {
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
