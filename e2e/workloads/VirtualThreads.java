import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Virtual threads that contend and pin, for e2e/agent_locks.py (Java 21+).
 * Usage: VirtualThreads CTL_DIR MODE THREADS ROUNDS HOLD_MS
 * Waits for CTL_DIR/go, then runs THREADS virtual threads, each ROUNDS times:
 *  - monitors: enters one shared VirtualThreads$Gamma and sleeps HOLD_MS inside it;
 *  - pinned-sync: parks HOLD_MS (LockSupport.parkNanos) inside a synchronized block of its own;
 *  - pinned-clinit: parks HOLD_MS while initializing a class of its own (THREADS <= 4);
 *  - wait: calls wait(HOLD_MS) on a VirtualThreads$Delta of its own that nobody notifies.
 * Writes "parks <n> parked_ns <sum>" (the parks it measured itself with System.nanoTime) to
 * CTL_DIR/done and waits for CTL_DIR/quit (so JFR dumps at exit after the agent was scraped).
 */
public class VirtualThreads {
    static final class Gamma {}
    static final class Delta {}

    static int rounds;
    static long holdNs;
    static final AtomicLong parks = new AtomicLong(), parkedNs = new AtomicLong();

    static void park() {
        long t0 = System.nanoTime();
        LockSupport.parkNanos(holdNs);
        parkedNs.addAndGet(System.nanoTime() - t0);
        parks.incrementAndGet();
    }

    static void parkRounds() {
        for (int r = 0; r < rounds; r++) park();
    }

    static final class Init0 { static { parkRounds(); } static void touch() {} }
    static final class Init1 { static { parkRounds(); } static void touch() {} }
    static final class Init2 { static { parkRounds(); } static void touch() {} }
    static final class Init3 { static { parkRounds(); } static void touch() {} }

    public static void main(String[] a) throws Exception {
        Path ctl = Path.of(a[0]);
        String mode = a[1];
        int threads = Integer.parseInt(a[2]);
        rounds = Integer.parseInt(a[3]);
        holdNs = Long.parseLong(a[4]) * 1_000_000L;
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);
        Object shared = new Gamma();
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int k = i;
            Runnable body = switch (mode) {
                case "monitors" -> () -> {
                    for (int r = 0; r < rounds; r++) {
                        synchronized (shared) {
                            try { Thread.sleep(holdNs / 1_000_000L); } catch (InterruptedException e) { return; }
                        }
                    }
                };
                case "pinned-sync" -> () -> {
                    Object own = new Object();
                    for (int r = 0; r < rounds; r++) {
                        synchronized (own) { park(); }
                    }
                };
                case "pinned-clinit" -> () -> {
                    switch (k) {
                        case 0 -> Init0.touch();
                        case 1 -> Init1.touch();
                        case 2 -> Init2.touch();
                        default -> Init3.touch();
                    }
                };
                case "wait" -> () -> {
                    Object own = new Delta();
                    for (int r = 0; r < rounds; r++) {
                        synchronized (own) {
                            try { own.wait(holdNs / 1_000_000L); } catch (InterruptedException e) { return; }
                        }
                    }
                };
                default -> throw new IllegalArgumentException(mode);
            };
            ts[i] = Thread.ofVirtual().name("vworker-" + i).start(body);
        }
        for (Thread t : ts) t.join();
        Files.writeString(ctl.resolve("done.tmp"), "parks " + parks.get() + " parked_ns " + parkedNs.get() + "\n");
        Files.move(ctl.resolve("done.tmp"), ctl.resolve("done"));
        while (!Files.exists(ctl.resolve("quit"))) Thread.sleep(20);
    }
}
