package dev.diagnostics.jvm.operator.metrics;

import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.http.HttpListener.Head;
import dev.diagnostics.jvm.operator.http.HttpListener.Reply;
import io.prometheus.metrics.exporter.common.PrometheusHttpExchange;
import io.prometheus.metrics.exporter.common.PrometheusHttpRequest;
import io.prometheus.metrics.exporter.common.PrometheusHttpResponse;
import io.prometheus.metrics.exporter.common.PrometheusScrapeHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;

/**
 * Plain-HTTP /metrics, answered by client_java's own scrape handling ({@link
 * PrometheusScrapeHandler}, as its servlet and HTTPServer exporters answer): the format the scraper
 * asks for in {@code Accept} (Prometheus text, OpenMetrics, protobuf), {@code ?name[]=} filters,
 * {@code ?debug=}, and gzip when {@code Accept-Encoding} has it. It runs on the operator's own
 * listener ({@link HttpListener}: timeouts, one scrape at a time, a few waiting), not on
 * client_java's HTTPServer, which has neither. The kubelet's probes are not here ({@link
 * ProbeServer}): a scrape, or a client that holds this port, never decides whether the operator is
 * alive.
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
    PrometheusScrapeHandler handler = new PrometheusScrapeHandler(registry);
    listener =
        new HttpListener("metrics", bind, null, limits, 4)
            .getWithHead("/metrics", scrapes, head -> scrape(handler, head));
  }

  /** One scrape by handler, its answer collected in memory (a page is some tens of KB). */
  static Reply scrape(PrometheusScrapeHandler handler, Head head) {
    Exchange x = new Exchange(head);
    try {
      handler.handleRequest(x);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return x.reply();
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

  /** client_java's view of one request: its head, and a response kept until it is complete. */
  private static final class Exchange
      implements PrometheusHttpExchange, PrometheusHttpRequest, PrometheusHttpResponse {
    private final Head head;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private int code = 500;

    Exchange(Head head) {
      this.head = head;
    }

    Reply reply() {
      String type = "text/plain; charset=utf-8";
      Map<String, String> more = new LinkedHashMap<>();
      for (Map.Entry<String, String> h : headers.entrySet()) {
        String name = h.getKey();
        if (name.equalsIgnoreCase("Content-Type")) type = h.getValue();
        else if (!name.equalsIgnoreCase("Content-Length")) more.put(name, h.getValue());
      }
      // the body depends on Accept-Encoding (and Accept): caches must not mix them
      more.put("Vary", "Accept, Accept-Encoding");
      return new Reply(code, body.toByteArray(), type, more);
    }

    @Override
    public PrometheusHttpRequest getRequest() {
      return this;
    }

    @Override
    public PrometheusHttpResponse getResponse() {
      return this;
    }

    @Override
    public void handleException(IOException e) throws IOException {
      throw e;
    }

    @Override
    public void handleException(RuntimeException e) {
      throw e;
    }

    @Override
    public void close() {}

    @Override
    public String getQueryString() {
      return head.query();
    }

    @Override
    public Enumeration<String> getHeaders(String name) {
      return Collections.enumeration(head.header(name));
    }

    @Override
    public String getMethod() {
      return head.method();
    }

    @Override
    public String getRequestPath() {
      return head.path();
    }

    @Override
    public void setHeader(String name, String value) {
      headers.put(name, value);
    }

    @Override
    public OutputStream sendHeadersAndGetBody(int statusCode, int contentLength) {
      code = statusCode;
      return body;
    }
  }
}
