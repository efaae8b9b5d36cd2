import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * A pool full of waiting threads: an embedded Jetty 12 server (core API) whose handler takes
 * a connection from a HikariCP pool to an embedded H2 database and runs a query that takes
 * {@code queryMillis} (a real lookup on a small table plus an H2 function that sleeps, as a
 * remote database's round trip would). A load generator in the same JVM ({@code load-N}
 * threads, blocking {@code HttpURLConnection} with keep-alive) sends more concurrent requests
 * than the pool has connections: the request threads wait for a connection, parked in
 * {@code com.zaxxer.hikari.util.ConcurrentBag.borrow}, while the database is idle.
 *
 * <p>{@code platform}: Jetty's {@code QueuedThreadPool} (200 threads, {@code qtpNNN-N}) runs
 * the handler. {@code virtual}: the same pool hands the handler to virtual threads (Jetty's own
 * reflection, so this jar still targets Java 17). Each client's requests hold its session's
 * lock across the JDBC call (as Spring MVC's {@code synchronizeOnSession} does): never
 * contended, but on JDK 21 a virtual thread that waits inside it pins its carrier (JEP 491
 * lifts that on JDK 24+).
 *
 * <p>Everything is on 127.0.0.1. Usage:
 * {@code java -jar pool-wait.jar [mode=platform|virtual] [clients=250] [connections=8] [queryMillis=30] [seconds=0 (forever)]};
 * {@code clients=0} serves without load.
 */
public final class PoolWait {
    private static final int ITEMS = 1000;
    private static final String QUERY = "SELECT name, price, REMOTE_LATENCY(?) FROM item WHERE id = ?";

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "platform";
        int clients = args.length > 1 ? Integer.parseInt(args[1]) : 250;
        int connections = args.length > 2 ? Integer.parseInt(args[2]) : 8;
        int queryMillis = args.length > 3 ? Integer.parseInt(args[3]) : 30;
        long seconds = args.length > 4 ? Long.parseLong(args[4]) : 0;
        if (!mode.equals("platform") && !mode.equals("virtual")) {
            throw new IllegalArgumentException("mode must be platform or virtual, not " + mode);
        }
        if (clients < 0 || connections < 1 || queryMillis < 0) {
            throw new IllegalArgumentException("clients >= 0, connections >= 1 and queryMillis >= 0");
        }
        // Hikari and Jetty log through slf4j-simple: warnings only (a connection timeout shows).
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        // HttpURLConnection keeps 5 idle connections per host by default: the rest would be
        // closed and every request a new TCP connection.
        System.setProperty("http.maxConnections", String.valueOf(Math.max(5, clients)));

        HikariDataSource db = database(connections);
        QueuedThreadPool threads = new QueuedThreadPool(200);
        if (mode.equals("virtual")) {
            // What Jetty's threadpool-virtual module does; null before JDK 21.
            Executor virtual = VirtualThreads.getNamedVirtualThreadsExecutor(threads.getName() + "-virtual-");
            if (virtual == null) {
                System.err.println("pool-wait: virtual mode needs JDK 21 or later (this is " + System.getProperty("java.version") + ")");
                System.exit(2);
            }
            threads.setVirtualThreadsExecutor(virtual);
        }
        Server server = new Server(threads);
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        server.setHandler(new Shop(db, queryMillis));
        server.start();
        int port = connector.getLocalPort();
        System.out.printf("pool-wait: Jetty on 127.0.0.1:%d (%s threads, Java %s), HikariCP %d connections to H2, %d ms per query, %d clients%n",
                port, mode, System.getProperty("java.version"), connections, queryMillis, clients);

        Latencies stats = new Latencies();
        long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : Long.MAX_VALUE;
        Thread[] load = new Thread[clients];
        for (int c = 0; c < clients; c++) {
            String session = "load-" + c;
            load[c] = new Thread(() -> drive(port, session, deadline, stats), session);
            load[c].setDaemon(true);
            load[c].start();
        }
        HikariPoolMXBean pool = db.getHikariPoolMXBean();
        long[] last = new long[Latencies.BUCKETS];
        long lastErrors = 0, t0 = System.nanoTime(), total = 0;
        while (System.nanoTime() < deadline) {
            long periodStart = System.nanoTime();
            Thread.sleep(Math.min(10_000, seconds > 0 ? Math.max(1, (deadline - periodStart) / 1_000_000) : 10_000));
            double secs = (System.nanoTime() - periodStart) / 1e9;
            long[] now = stats.snapshot();
            long n = 0;
            for (int i = 0; i < now.length; i++) {
                long d = now[i] - last[i];
                last[i] = now[i];
                now[i] = d;
                n += d;
            }
            total += n;
            long errors = stats.errors.get();
            System.out.printf("pool-wait: %.1f req/s, latency p50 %.1f ms p99 %.1f ms max %.1f ms, %d errors;"
                            + " pool %d active %d idle %d waiting; jetty %d threads %d busy %d queued%n",
                    n / secs, Latencies.quantile(now, n, 0.50), Latencies.quantile(now, n, 0.99),
                    stats.max.getAndSet(0) / 1e6, errors - lastErrors,
                    pool.getActiveConnections(), pool.getIdleConnections(), pool.getThreadsAwaitingConnection(),
                    threads.getThreads(), threads.getBusyThreads(), threads.getQueueSize());
            lastErrors = errors;
        }
        System.out.printf("pool-wait: done, %d requests in %.0f s%n", total, (System.nanoTime() - t0) / 1e9);
        server.stop();
        db.close();
        System.exit(0);
    }

    /** The "remote" database: H2 in memory, a small table, and the round trip as a function. */
    private static HikariDataSource database(int connections) throws SQLException {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl("jdbc:h2:mem:shop;DB_CLOSE_DELAY=-1");
        cfg.setUsername("sa");
        cfg.setPassword("");
        cfg.setMaximumPoolSize(connections);
        cfg.setMinimumIdle(connections); // a fixed pool, as Hikari recommends
        HikariDataSource db = new HikariDataSource(cfg);
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE item(id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2) NOT NULL)");
            s.execute("INSERT INTO item SELECT X, CONCAT('item-', X), X * 0.25 FROM SYSTEM_RANGE(1, " + ITEMS + ")");
            s.execute("CREATE ALIAS REMOTE_LATENCY FOR 'PoolWait.remoteLatency'");
        }
        return db;
    }

    /**
     * The database's latency, called by H2 inside the query: the connection stays busy for that
     * long while this JVM burns no CPU, as a network round trip to a loaded database would (a
     * CPU-heavy query would make the incident CPU starvation on a small pod instead).
     */
    public static int remoteLatency(int millis) throws InterruptedException {
        if (millis > 0) Thread.sleep(millis);
        return millis;
    }

    static final class Shop extends Handler.Abstract {
        private final HikariDataSource db;
        private final int queryMillis;
        private final ConcurrentHashMap<String, Object> sessions = new ConcurrentHashMap<>();
        private final AtomicBoolean told = new AtomicBoolean();

        Shop(HikariDataSource db, int queryMillis) {
            this.db = db;
            this.queryMillis = queryMillis;
        }

        @Override
        public boolean handle(Request request, Response response, Callback callback) throws Exception {
            if (told.compareAndSet(false, true)) {
                System.out.println("pool-wait: requests run on " + Thread.currentThread());
            }
            Fields query = Request.extractQueryParameters(request);
            String id = query.getValue("id");
            String body;
            int status = 200;
            try {
                synchronized (session(query.getValue("session"))) {
                    body = lookup(id == null ? 1 : Integer.parseInt(id));
                }
                if (body == null) {
                    status = 404;
                    body = "no such item\n";
                }
            } catch (SQLException e) { // a connection timeout among them
                status = 503;
                body = e.getMessage() + "\n";
            }
            response.setStatus(status);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; charset=utf-8");
            Content.Sink.write(response, true, body, callback);
            return true;
        }

        /** The client's session object, shared by its requests (one at a time: never contended). */
        private Object session(String name) {
            if (name == null) return new Object();
            Object s = sessions.get(name); // lock-free once it exists
            return s != null ? s : sessions.computeIfAbsent(name, k -> new Object());
        }

        private String lookup(int id) throws SQLException {
            try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(QUERY)) {
                ps.setInt(1, queryMillis);
                ps.setInt(2, id);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getString(1) + " " + rs.getBigDecimal(2) + "\n" : null;
                }
            }
        }
    }

    /** One client: a request, then the next one as soon as the answer is read. */
    private static void drive(int port, String session, long deadline, Latencies stats) {
        int errorsShown = 0;
        while (System.nanoTime() < deadline) {
            int id = 1 + ThreadLocalRandom.current().nextInt(ITEMS);
            long t = System.nanoTime();
            try {
                URL url = URI.create("http://127.0.0.1:" + port + "/item?id=" + id + "&session=" + session).toURL();
                HttpURLConnection c = (HttpURLConnection) url.openConnection();
                c.setConnectTimeout(10_000);
                c.setReadTimeout(120_000);
                int status = c.getResponseCode();
                // Read to the end and close: the connection goes back to the keep-alive cache.
                InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
                if (in != null) {
                    try (in) {
                        in.readAllBytes();
                    }
                }
                stats.record(System.nanoTime() - t);
                if (status != 200) {
                    stats.errors.incrementAndGet();
                    if (errorsShown++ < 3) System.err.println("pool-wait: " + session + ": HTTP " + status);
                }
            } catch (IOException e) {
                if (System.nanoTime() >= deadline) return; // the server is stopping
                stats.record(System.nanoTime() - t);
                stats.errors.incrementAndGet();
                if (errorsShown++ < 3) System.err.println("pool-wait: " + session + ": " + e);
            }
        }
    }

    /**
     * Latencies in a log-linear histogram of microseconds (512 sub-buckets per power of two,
     * ~0.2 %), counted with atomic adds: the load threads never take a lock (that would park
     * them, or block them on a monitor, and blur what the server's threads show).
     */
    static final class Latencies {
        static final int SUB = 512;
        static final int BUCKETS = SUB * 64;
        final AtomicLongArray counts = new AtomicLongArray(BUCKETS);
        final AtomicLong max = new AtomicLong();
        final AtomicLong errors = new AtomicLong();

        void record(long nanos) {
            counts.incrementAndGet(bucket(Math.max(0, nanos / 1000)));
            max.accumulateAndGet(nanos, Math::max);
        }

        static int bucket(long micros) {
            if (micros < 2 * SUB) return (int) micros;
            int shift = 63 - Long.numberOfLeadingZeros(micros) - 9; // keeps the top 10 bits
            return (shift + 1) * SUB + (int) (micros >>> shift) - SUB;
        }

        static long lowerBound(int bucket) {
            if (bucket < 2 * SUB) return bucket;
            int shift = bucket / SUB - 1;
            return (long) (bucket - shift * SUB) << shift;
        }

        long[] snapshot() {
            long[] a = new long[BUCKETS];
            for (int i = 0; i < BUCKETS; i++) a[i] = counts.get(i);
            return a;
        }

        /** The q-quantile in milliseconds of the counts given (their total n). */
        static double quantile(long[] counts, long n, double q) {
            if (n == 0) return 0;
            long rank = (long) Math.ceil(q * n), seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank) return lowerBound(i) / 1000.0;
            }
            return 0;
        }
    }
}
