package dev.diagnostics.jvm.operator.http;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.ssl.SslConnection;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One listener (a port) on Jetty's non-blocking connector. No client can hold a thread: bytes are
 * read by the selector, and a request reaches a thread only once its headers are complete.
 *
 * <ul>
 *   <li>read: a connection that has not completed its first request's headers (for TLS: including
 *       the handshake) {@link Limits#read()} after it opened is closed;
 *   <li>idle: a connection with no byte moving either way for {@link Limits#idle()} is closed (this
 *       also ends a response the client does not read, and a keep-alive connection);
 *   <li>response: a route that has not produced its reply {@link Limits#response()} after the
 *       headers (body read and work together) is answered 503 and the connection closed.
 * </ul>
 *
 * <p>Each listener has its own small Jetty pool; routes with work that can block (admission,
 * validation, the metrics scrape) run on their own bounded pool and are refused with 503 when it is
 * full, so one purpose cannot starve another.
 */
public final class HttpListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HttpListener.class);

  /** What a listener allows a client. */
  public record Limits(Duration read, Duration idle, Duration response) {
    /**
     * The API server calls webhooks with a 10 s timeout by default, the kubelet probes with 5 s.
     */
    public static final Limits DEFAULT =
        new Limits(Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofSeconds(10));
  }

  /** A route's answer; headers: more response headers (Content-Type and -Length are set apart). */
  public record Reply(int code, byte[] body, String type, Map<String, String> headers) {
    public Reply(int code, byte[] body, String type) {
      this(code, body, type, Map.of());
    }

    public static Reply text(int code, String body) {
      return new Reply(code, body.getBytes(StandardCharsets.UTF_8), "text/plain; charset=utf-8");
    }
  }

  /**
   * What a route may read of a request besides its body: the method, the path, the raw query (null:
   * none) and the header values by lower-case name, copied before the work leaves Jetty's thread
   * (the head is at most 8 KiB).
   */
  public record Head(String method, String path, String query, Map<String, List<String>> fields) {
    /** The values of header name (any case), in the order sent; empty when absent. */
    public List<String> header(String name) {
      return fields.getOrDefault(name.toLowerCase(Locale.ROOT), List.of());
    }

    static Head of(Request request) {
      Map<String, List<String>> fields = new LinkedHashMap<>();
      for (HttpField f : request.getHeaders())
        fields.computeIfAbsent(f.getLowerCaseName(), k -> new ArrayList<>()).add(f.getValue());
      return new Head(
          request.getMethod(),
          Request.getPathInContext(request),
          request.getHttpURI().getQuery(),
          fields);
    }
  }

  /**
   * method: the only method served ("POST": the body is read, up to maxBody); pool: where the work
   * runs (null: on the listener's thread, for answers that never block); readsHead: the handler
   * gets the request's {@link Head} (else null: the admission path copies no headers).
   */
  private record Route(
      String method,
      int maxBody,
      ExecutorService pool,
      boolean readsHead,
      BiFunction<Head, byte[], Reply> handler,
      Gate gate) {}

  /**
   * Decides, on the listener's own thread and before a route's pool, whether a request is answered
   * at once: null lets it through to the route's handler. It must not block (a lookup in memory).
   */
  @FunctionalInterface
  public interface Gate {
    /** peer: the address the connection comes from; body: the request's, read in full. */
    Reply check(InetSocketAddress peer, byte[] body);
  }

  private final String name;
  private final Limits limits;
  private final Server server;
  private final ServerConnector connector;
  private final Map<String, Route> routes = new LinkedHashMap<>();
  private final Set<Connection> pastHeaders = ConcurrentHashMap.newKeySet();

  /**
   * name: for the threads and the log; tls: null for plain HTTP; threads: the listener's own pool
   * (selector and acceptor included).
   */
  public HttpListener(
      String name, InetSocketAddress bind, SSLContext tls, Limits limits, int threads) {
    this.name = name;
    this.limits = limits;
    QueuedThreadPool pool = new QueuedThreadPool(Math.max(threads, 4), 2);
    pool.setName(name);
    pool.setDaemon(true);
    pool.setReservedThreads(0);
    server = new Server(pool);
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    http.setSendDateHeader(false);
    http.setRequestHeaderSize(8 * 1024);
    HttpConnectionFactory plain = new HttpConnectionFactory(http);
    if (tls == null) {
      connector = new ServerConnector(server, 1, 1, plain);
    } else {
      SslContextFactory.Server ssl = new SslContextFactory.Server();
      ssl.setSslContext(tls);
      // the Host the API server sends is not ours to check: it follows the registration's URL or
      // Service, and the certificate's names are checked by the client
      SecureRequestCustomizer secure = new SecureRequestCustomizer();
      secure.setSniHostCheck(false);
      http.addCustomizer(secure);
      connector =
          new ServerConnector(server, 1, 1, new SslConnectionFactory(ssl, "http/1.1"), plain);
    }
    connector.setHost(bind.getHostString());
    connector.setPort(bind.getPort());
    connector.setIdleTimeout(limits.idle().toMillis());
    connector.setAcceptQueueSize(256);
    connector.addEventListener(new ReadDeadline());
    server.addConnector(connector);
    server.setHandler(new Routes());
    server.setStopTimeout(0);
  }

  /**
   * A pool for one purpose: threads workers, at most queue waiting; past that the route answers 503
   * at once (the API server retries or applies the webhook's failurePolicy).
   */
  public static ExecutorService pool(String name, int threads, int queue) {
    return new java.util.concurrent.ThreadPoolExecutor(
        threads,
        threads,
        0,
        TimeUnit.MILLISECONDS,
        new java.util.concurrent.ArrayBlockingQueue<>(queue),
        Thread.ofPlatform().name(name + "-", 0).daemon(true).factory(),
        new java.util.concurrent.ThreadPoolExecutor.AbortPolicy());
  }

  /** A GET route answered on the listener's own thread: only for answers that never block. */
  public HttpListener get(String path, java.util.function.Supplier<Reply> handler) {
    routes.put(path, new Route("GET", 0, null, false, (h, b) -> handler.get(), null));
    return this;
  }

  /** A GET route whose work runs on pool. */
  public HttpListener get(String path, ExecutorService pool, java.util.function.Supplier<Reply> h) {
    routes.put(path, new Route("GET", 0, pool, false, (head, b) -> h.get(), null));
    return this;
  }

  /** A GET route whose work runs on pool and reads the request's head (query, headers). */
  public HttpListener getWithHead(
      String path, ExecutorService pool, Function<Head, Reply> handler) {
    routes.put(path, new Route("GET", 0, pool, true, (head, b) -> handler.apply(head), null));
    return this;
  }

  /** A POST route: the body (at most maxBody bytes) is read without a thread, then run on pool. */
  public HttpListener post(
      String path, int maxBody, ExecutorService pool, Function<byte[], Reply> handler) {
    return post(path, maxBody, pool, handler, null);
  }

  /**
   * A POST route whose gate may answer a request at once, once its body is read and before it takes
   * a place in pool (gate null: none).
   */
  public HttpListener post(
      String path, int maxBody, ExecutorService pool, Function<byte[], Reply> handler, Gate gate) {
    routes.put(path, new Route("POST", maxBody, pool, false, (h, b) -> handler.apply(b), gate));
    return this;
  }

  public HttpListener start() throws IOException {
    try {
      server.start();
    } catch (IOException e) {
      throw e;
    } catch (Exception e) {
      throw new IOException("cannot start the " + name + " listener: " + e.getMessage(), e);
    }
    return this;
  }

  public int port() {
    return connector.getLocalPort();
  }

  public boolean running() {
    return server.isStarted();
  }

  @Override
  public void close() {
    try {
      server.stop();
    } catch (Exception e) {
      LOG.warn("stopping the {} listener: {}", name, e.toString());
    }
  }

  /**
   * Closes a connection that has not completed a request's headers within the read timeout of
   * opening: a half-open TLS connection (no ClientHello), a trickled request line.
   */
  private final class ReadDeadline implements Connection.Listener {
    @Override
    public void onOpened(Connection c) {
      if (c instanceof SslConnection) return; // for TLS: the HTTP one inside it counts
      Scheduler scheduler = connector.getScheduler();
      scheduler.schedule(
          () -> {
            if (!pastHeaders.contains(c) && c.getEndPoint().isOpen()) {
              LOG.debug("{}: closing a connection without a request after {}", name, limits.read());
              c.getEndPoint().close();
            }
          },
          limits.read().toMillis(),
          TimeUnit.MILLISECONDS);
    }

    @Override
    public void onClosed(Connection c) {
      pastHeaders.remove(c);
    }
  }

  private final class Routes extends Handler.Abstract.NonBlocking {
    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      Connection c = request.getConnectionMetaData().getConnection();
      if (c.getEndPoint().isOpen()) pastHeaders.add(c);
      Route r = routes.get(Request.getPathInContext(request));
      if (r == null) {
        send(response, callback, Reply.text(404, "not found\n"));
        return true;
      }
      if (!r.method().equals(request.getMethod())) {
        send(response, callback, Reply.text(405, r.method() + " only\n"));
        return true;
      }
      Head head = r.readsHead() ? Head.of(request) : null;
      Function<byte[], Reply> work = b -> r.handler().apply(head, b);
      CompletableFuture<byte[]> body =
          r.maxBody() > 0
              ? Content.Source.asByteArrayAsync(request, r.maxBody())
              : CompletableFuture.completedFuture(new byte[0]);
      CompletableFuture<Reply> reply;
      try {
        if (r.gate() != null) {
          InetSocketAddress peer =
              request.getConnectionMetaData().getRemoteSocketAddress()
                      instanceof InetSocketAddress a
                  ? a
                  : null;
          // answered here when the gate says so: the pool never sees it
          reply =
              body.thenCompose(b -> {
                Reply now = r.gate().check(peer, b);
                if (now != null) return CompletableFuture.completedFuture(now);
                return r.pool() == null
                    ? CompletableFuture.completedFuture(work.apply(b))
                    : CompletableFuture.supplyAsync(() -> work.apply(b), r.pool());
              });
        } else {
          reply = r.pool() == null ? body.thenApply(work) : body.thenApplyAsync(work, r.pool());
        }
      } catch (RejectedExecutionException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply
          .orTimeout(limits.response().toMillis(), TimeUnit.MILLISECONDS)
          .whenComplete((ok, err) ->
              send(
                  response,
                  callback,
                  ok != null
                      ? ok
                      : failure(err, body.isDone() && !body.isCompletedExceptionally())));
      return true;
    }

    /**
     * What a failed request gets. What a client does (a body that never arrives, a connection it
     * drops) is logged at debug only: a client must not be able to fill the log.
     */
    private Reply failure(Throwable err, boolean bodyRead) {
      Throwable t = err instanceof java.util.concurrent.CompletionException ? err.getCause() : err;
      if (t instanceof RejectedExecutionException) return Reply.text(503, "busy\n");
      if (t instanceof TimeoutException) {
        if (bodyRead) LOG.warn("{}: no reply within {}", name, limits.response());
        else LOG.debug("{}: the request body did not arrive within {}", name, limits.response());
        return Reply.text(503, "timed out\n");
      }
      if (!bodyRead || t instanceof java.io.IOException) {
        LOG.debug("{}: reading the request: {}", name, String.valueOf(t));
        return Reply.text(400, "bad request\n");
      }
      LOG.warn("{}: {}", name, String.valueOf(t));
      return Reply.text(500, "failed\n");
    }

    private void send(Response response, Callback callback, Reply reply) {
      if (reply.code() >= 500) response.getHeaders().put(HttpHeader.CONNECTION, "close");
      response.setStatus(reply.code());
      reply.headers().forEach((name, value) -> response.getHeaders().put(name, value));
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, reply.type());
      response.getHeaders().put(HttpHeader.CONTENT_LENGTH, reply.body().length);
      response.write(true, ByteBuffer.wrap(reply.body()), callback);
    }
  }
}
