package dev.diagnostics.jvm.operator.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.http.HttpListener.Limits;
import dev.diagnostics.jvm.operator.http.HttpListener.Reply;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One listener with short limits: what each limit answers, and when. */
class HttpListenerTest {
  static final Limits SHORT =
      new Limits(Duration.ofSeconds(1), Duration.ofSeconds(3), Duration.ofSeconds(1));

  final CountDownLatch release = new CountDownLatch(1);
  final ExecutorService pool = HttpListener.pool("test-work", 1, 1);
  HttpListener listener;
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeEach
  void start() throws Exception {
    listener =
        new HttpListener("test", new InetSocketAddress("127.0.0.1", 0), null, SHORT, 4)
            .get("/now", () -> Reply.text(200, "ok\n"))
            .post("/echo", 16, pool, b -> new Reply(200, b, "application/octet-stream"))
            .post(
                "/wait",
                16,
                pool,
                b -> {
                  try {
                    release.await(5, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  return Reply.text(200, "done\n");
                })
            .start();
  }

  @AfterEach
  void stop() {
    release.countDown();
    listener.close();
    pool.shutdownNow();
  }

  HttpResponse<String> send(String method, String path, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + path))
            .method(method, HttpRequest.BodyPublishers.ofString(body))
            .timeout(Duration.ofSeconds(10))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void routesMethodsAndBodies() throws Exception {
    assertThat(send("GET", "/now", "").body()).isEqualTo("ok\n");
    assertThat(send("GET", "/other", "").statusCode()).isEqualTo(404);
    assertThat(send("GET", "/echo", "").statusCode()).isEqualTo(405);
    assertThat(send("POST", "/echo", "hello").body()).isEqualTo("hello");
    assertThat(send("POST", "/echo", "more than sixteen bytes").statusCode())
        .as("a body over the route's limit")
        .isEqualTo(400);
  }

  @Test
  void aFullPoolAnswers503AtOnceAndSlowWorkTimesOut() throws Exception {
    // one worker, one waiting: the third request finds the pool full
    List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
    for (int i = 0; i < 2; i++)
      held.add(
          http.sendAsync(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + "/wait"))
                  .POST(HttpRequest.BodyPublishers.ofString("x"))
                  .build(),
              HttpResponse.BodyHandlers.ofString()));
    Thread.sleep(300);
    long t0 = System.nanoTime();
    HttpResponse<String> busy = send("POST", "/wait", "x");
    assertThat(busy.statusCode()).isEqualTo(503);
    assertThat(busy.body()).isEqualTo("busy\n");
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(900));
    // the held ones: no reply within the response timeout
    for (var f : held) {
      HttpResponse<String> r = f.get(5, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.body()).isEqualTo("timed out\n");
    }
    // the probe-like route never waits on the pool
    assertThat(send("GET", "/now", "").statusCode()).isEqualTo(200);
  }

  @Test
  void aConnectionWithoutARequestIsClosedAfterTheReadTimeout() throws Exception {
    try (Socket s = new Socket("127.0.0.1", listener.port())) {
      s.getOutputStream().write("GET /now HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
      s.setSoTimeout(5000);
      long t0 = System.nanoTime();
      InputStream in = s.getInputStream();
      while (in.read() >= 0) {}
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertThat(ms).isBetween(800L, 2500L);
    }
  }

  @Test
  void anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() throws Exception {
    try (Socket s = new Socket("127.0.0.1", listener.port())) {
      s.getOutputStream()
          .write("GET /now HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      s.setSoTimeout(8000);
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      int n = in.read(buf);
      assertThat(new String(buf, 0, n, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 200");
      long t0 = System.nanoTime();
      while (in.read(buf) >= 0) {}
      long ms = (System.nanoTime() - t0) / 1_000_000;
      // past the read deadline (the request was complete), closed by the idle timeout
      assertThat(ms).isBetween(2500L, 5000L);
    }
  }
}
