import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.HandshakeCompletedListener;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * Thread-storm incident (JDK-8246039): a TLS client with a HandshakeCompletedListener
 * calls an HTTPS server that answers {@code Connection: close}. Every request is a new
 * handshake, and the JDK notifies the listener on a brand-new platform thread named
 * {@code HandshakeCompletedNotify-Thread}: one thread start per request.
 *
 * <p>The server runs in the same JVM on loopback only (127.0.0.1), with a fixed thread
 * pool so that its own threads are started once. Usage:
 * {@code java -jar tls-storm.jar [requestsPerSecond=100] [clients=4] [seconds=0 (forever)]}
 */
public final class TlsStorm {
    private static final char[] PASSWORD = "changeit".toCharArray();

    public static void main(String[] args) throws Exception {
        int rate = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        int clients = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        long seconds = args.length > 2 ? Long.parseLong(args[2]) : 0;
        if (rate < 1 || clients < 1) {
            throw new IllegalArgumentException("requestsPerSecond and clients must be >= 1");
        }
        SSLContext ctx = sslContext();
        SSLServerSocket server = (SSLServerSocket) ctx.getServerSocketFactory()
                .createServerSocket(0, 128, InetAddress.getLoopbackAddress());
        int port = server.getLocalPort();
        ExecutorService pool = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "https-server");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < 4; i++) pool.execute(() -> serve(server));
        System.out.printf("tls-storm: HTTPS server on 127.0.0.1:%d, %d req/s from %d clients%n", port, rate, clients);

        AtomicLong done = new AtomicLong();
        AtomicLong notified = new AtomicLong();
        HandshakeCompletedListener listener = e -> notified.incrementAndGet();
        long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        Thread[] workers = new Thread[clients];
        for (int c = 0; c < clients; c++) {
            workers[c] = new Thread(() -> {
                long periodNanos = 1_000_000_000L * clients / rate;
                long next = System.nanoTime();
                while (System.nanoTime() < deadline) {
                    try {
                        request(ctx, port, listener);
                        done.incrementAndGet();
                    } catch (Exception e) {
                        System.err.println("tls-storm: request failed: " + e);
                    }
                    next += periodNanos;
                    long sleep = next - System.nanoTime();
                    if (sleep > 0) sleepNanos(sleep);
                    else next = System.nanoTime(); // fell behind: do not burst to catch up
                }
            }, "tls-client-" + c);
            workers[c].start();
        }
        long lastDone = 0;
        while (System.nanoTime() < deadline) {
            Thread.sleep(Math.min(10_000, seconds > 0 ? seconds * 1000 : 10_000));
            long d = done.get();
            System.out.printf("tls-storm: %d requests (%d in the last period), %d handshake notifications%n",
                    d, d - lastDone, notified.get());
            lastDone = d;
        }
        for (Thread w : workers) w.join();
        System.out.printf("tls-storm: done, %d requests, %d handshake notifications%n", done.get(), notified.get());
        System.exit(0);
    }

    /** One request on a fresh connection; the listener makes the JDK start a notify thread. */
    private static void request(SSLContext ctx, int port, HandshakeCompletedListener listener) throws Exception {
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), port)) {
            s.addHandshakeCompletedListener(listener);
            OutputStream out = s.getOutputStream();
            out.write("GET /price HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[512];
            while (in.read(buf) >= 0) { /* read until the server closes */ }
        }
    }

    private static void serve(SSLServerSocket server) {
        while (true) {
            try (SSLSocket s = (SSLSocket) server.accept()) {
                BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                String line;
                while ((line = r.readLine()) != null && !line.isEmpty()) { /* headers */ }
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                        + "Content-Length: 3\r\n\r\n42\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
            } catch (Exception e) {
                if (server.isClosed()) return;
            }
        }
    }

    /** Key and trust material from the self-signed PKCS12 keystore packed into the jar by build.sh. */
    private static SSLContext sslContext() throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = TlsStorm.class.getResourceAsStream("/tls-storm.p12")) {
            if (in == null) throw new IllegalStateException("tls-storm.p12 missing from the jar: build with examples/workloads/build.sh");
            ks.load(in, PASSWORD);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    private static void sleepNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
