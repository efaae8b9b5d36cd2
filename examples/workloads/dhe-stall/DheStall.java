import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.Security;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.spec.DHParameterSpec;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.crypto.generators.DHParametersGenerator;
import org.bouncycastle.crypto.params.DHParameters;
import org.bouncycastle.jce.provider.BouncyCastleProvider;

/**
 * SSL stall from one lock: a loopback TLS 1.2 server that only offers DHE cipher suites,
 * with BouncyCastle registered as security provider 1 (ahead of the JDK's), so the
 * handshake's Diffie-Hellman key pairs come from BouncyCastle's DH KeyPairGenerator. One
 * {@code SecureRandom} (SHA1PRNG: not thread-safe, so every {@code nextBytes} synchronizes
 * on the {@code java.security.SecureRandom} object) is shared by the server's SSLContext and
 * by the "library" that, for every handshake, generates fresh DH parameters (large random
 * primes, BouncyCastle's DHParametersGenerator) holding that SecureRandom's monitor, as a
 * library guarding a non-thread-safe SecureRandom does. The library runs on the server's
 * handshake thread (the ALPN selector, called while the ClientHello is processed), so every
 * other handshake thread waits: {@code BLOCKED (on object monitor)} on the one
 * {@code java.security.SecureRandom}, either in the library or inside JSSE/BouncyCastle
 * drawing random bytes.
 *
 * <p>Clients run in the same JVM; everything is on 127.0.0.1. Usage:
 * {@code java -cp dhe-stall.jar:bcprov-jdk18on.jar DheStall [clients=6] [primeBits=256] [thinkMillis=200] [seconds=0]}
 */
public final class DheStall {
    private static final char[] PASSWORD = "changeit".toCharArray();
    private static final String SUITE = "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256";

    public static void main(String[] args) throws Exception {
        int clients = args.length > 0 ? Integer.parseInt(args[0]) : 6;
        int primeBits = args.length > 1 ? Integer.parseInt(args[1]) : 256;
        long think = args.length > 2 ? Long.parseLong(args[2]) : 200;
        long seconds = args.length > 3 ? Long.parseLong(args[3]) : 0;
        // What the library did silently: BouncyCastle ahead of the JDK's providers.
        Security.insertProviderAt(new BouncyCastleProvider(), 1);
        SecureRandom shared = SecureRandom.getInstance("SHA1PRNG");
        shared.nextBytes(new byte[8]); // self-seed now, not in the first handshake

        SSLContext serverCtx = sslContext(shared);
        SSLServerSocket server = (SSLServerSocket) serverCtx.getServerSocketFactory()
                .createServerSocket(0, 128, InetAddress.getLoopbackAddress());
        SSLParameters sp = server.getSSLParameters();
        sp.setProtocols(new String[] {"TLSv1.2"});
        sp.setCipherSuites(new String[] {SUITE});
        server.setSSLParameters(sp);
        int port = server.getLocalPort();
        AtomicLong paramsMade = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(clients, r -> {
            Thread t = new Thread(r, "tls-handshake");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < clients; i++) pool.execute(() -> serve(server, shared, primeBits, paramsMade));
        String dhProvider = KeyPairGenerator.getInstance("DiffieHellman").getProvider().getName();
        System.out.printf("dhe-stall: TLS server on 127.0.0.1:%d (%s), DH key pairs from %s, %d clients, %d-bit DH parameters per handshake%n",
                port, SUITE, dhProvider, clients, primeBits);

        SSLContext clientCtx = sslContext(null);
        AtomicLong done = new AtomicLong();
        long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        Thread[] workers = new Thread[clients];
        for (int c = 0; c < clients; c++) {
            workers[c] = new Thread(() -> {
                while (System.nanoTime() < deadline) {
                    try {
                        request(clientCtx, port);
                        done.incrementAndGet();
                    } catch (Exception e) {
                        System.err.println("dhe-stall: request failed: " + e);
                    }
                    sleep(think);
                }
            }, "tls-client-" + c);
            workers[c].start();
        }
        long last = 0, t0 = System.nanoTime();
        while (System.nanoTime() < deadline) {
            Thread.sleep(Math.min(10_000, seconds > 0 ? seconds * 1000 : 10_000));
            long d = done.get();
            System.out.printf("dhe-stall: %d handshakes (%d in the last period), %d DH parameter sets generated%n",
                    d, d - last, paramsMade.get());
            last = d;
        }
        for (Thread w : workers) w.join();
        System.out.printf("dhe-stall: done, %d handshakes in %.0f s%n", done.get(), (System.nanoTime() - t0) / 1e9);
        System.exit(0);
    }

    /** The library's "fresh parameters for every key pair", holding the shared SecureRandom. */
    static KeyPair libraryKeyPair(SecureRandom random, int bits) throws Exception {
        DHParameters p;
        synchronized (random) {
            DHParametersGenerator gen = new DHParametersGenerator();
            gen.init(bits, 20, random);
            p = gen.generateParameters();
        }
        KeyPairGenerator kpg = KeyPairGenerator.getInstance("DH"); // BouncyCastle's: provider 1
        kpg.initialize(new DHParameterSpec(p.getP(), p.getG()), random);
        return kpg.generateKeyPair();
    }

    private static void request(SSLContext ctx, int port) throws Exception {
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), port)) {
            SSLParameters p = s.getSSLParameters();
            p.setProtocols(new String[] {"TLSv1.2"});
            p.setCipherSuites(new String[] {SUITE});
            p.setApplicationProtocols(new String[] {"http/1.1"});
            s.setSSLParameters(p);
            OutputStream out = s.getOutputStream();
            out.write("GET /quote HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[512];
            while (in.read(buf) >= 0) { /* until the server closes */ }
        }
    }

    private static void serve(SSLServerSocket server, SecureRandom shared, int bits, AtomicLong made) {
        while (true) {
            try (SSLSocket s = (SSLSocket) server.accept()) {
                // Runs on this handshake thread while the ClientHello is processed.
                s.setHandshakeApplicationProtocolSelector((sock, offered) -> {
                    try {
                        libraryKeyPair(shared, bits);
                        made.incrementAndGet();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    return offered.contains("http/1.1") ? "http/1.1" : "";
                });
                BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                String line;
                while ((line = r.readLine()) != null && !line.isEmpty()) { /* headers */ }
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n42\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
            } catch (Exception e) {
                if (server.isClosed()) return;
            }
        }
    }

    /** RSA key (DHE_RSA) and trust from the PKCS12 keystore packed into the jar by build.sh. */
    private static SSLContext sslContext(SecureRandom random) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = DheStall.class.getResourceAsStream("/dhe-stall.p12")) {
            if (in == null) throw new IllegalStateException("dhe-stall.p12 missing from the jar: build with examples/workloads/build.sh");
            ks.load(in, PASSWORD);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance("SunX509");
        kmf.init(ks, PASSWORD);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLSv1.2", "SunJSSE");
        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), random);
        return ctx;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
