package dev.diagnostics.jvm.operator.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy between a client and the API server that the test can cut: {@link #cut()} closes
 * every connection and resets new ones (an API-server brownout as the client sees it) until {@link
 * #restore()}. TLS passes through untouched.
 */
final class ApiProxy implements AutoCloseable {
  private final ServerSocket listen;
  private final String host;
  private final int port;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean cut;

  ApiProxy(String masterUrl) throws IOException {
    URI u = URI.create(masterUrl);
    host = u.getHost();
    port = u.getPort();
    // the API server's own address and name, so that its certificate fits the proxy's URL too
    listen = new ServerSocket(0, 64, InetAddress.getByName(host));
    Thread.ofVirtual().name("api-proxy").start(this::accept);
  }

  String url() {
    return "https://" + host + ":" + listen.getLocalPort();
  }

  void cut() {
    cut = true;
    for (Socket s : open) close(s);
  }

  void restore() {
    cut = false;
  }

  private void accept() {
    while (!listen.isClosed()) {
      try {
        Socket client = listen.accept();
        if (cut) {
          client.setSoLinger(true, 0); // a reset, not a clean close
          client.close();
          continue;
        }
        Socket upstream = new Socket(host, port);
        open.add(client);
        open.add(upstream);
        Thread.ofVirtual().start(() -> pump(client, upstream));
        Thread.ofVirtual().start(() -> pump(upstream, client));
      } catch (IOException e) {
        if (listen.isClosed()) return;
      }
    }
  }

  private void pump(Socket from, Socket to) {
    byte[] buf = new byte[16384];
    try (InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream()) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // closed on either side
    } finally {
      close(from);
      close(to);
    }
  }

  private void close(Socket s) {
    open.remove(s);
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    listen.close();
    cut();
  }
}
