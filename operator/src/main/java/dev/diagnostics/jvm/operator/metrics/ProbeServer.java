package dev.diagnostics.jvm.operator.metrics;

import dev.diagnostics.jvm.operator.http.HttpListener;
import dev.diagnostics.jvm.operator.http.HttpListener.Reply;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.function.BooleanSupplier;

/**
 * The kubelet's probes on a port of their own: /healthz (liveness and startup) and /readyz
 * (readiness). Both answer from a flag on the listener's own thread, never blocking, so nothing a
 * client does on the webhook or the metrics port can fail them.
 */
public final class ProbeServer implements AutoCloseable {
  private final HttpListener listener;

  /**
   * healthy: false after a fatal error the process could not exit on; ready: the webhook serves
   * (true without a webhook).
   */
  public ProbeServer(
      InetSocketAddress bind,
      BooleanSupplier healthy,
      BooleanSupplier ready,
      HttpListener.Limits limits) {
    listener =
        new HttpListener("probes", bind, null, limits, 4)
            .get(
                "/healthz",
                () ->
                    healthy.getAsBoolean()
                        ? Reply.text(200, "ok\n")
                        : Reply.text(503, "fatal error, see the log\n"))
            .get(
                "/readyz",
                () ->
                    !healthy.getAsBoolean()
                        ? Reply.text(503, "fatal error, see the log\n")
                        : ready.getAsBoolean()
                            ? Reply.text(200, "ok\n")
                            : Reply.text(503, "the webhook is not serving yet\n"));
  }

  public ProbeServer start() throws IOException {
    listener.start();
    return this;
  }

  public int port() {
    return listener.port();
  }

  @Override
  public void close() {
    listener.close();
  }
}
