import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Monitor contention on instances of known classes, for e2e/agent_locks.py.
 * Usage: LockContention CTL_DIR THREADS_PER_CLASS ROUNDS HOLD_MS
 * Waits for CTL_DIR/go, then for each class (Alpha, Beta, java.util.BitSet: a JDK class, so its
 * internal name has slashes, that no JDK code locks on its own) THREADS threads
 * enter one shared instance ROUNDS times each, holding it HOLD_MS; writes CTL_DIR/done, waits
 * for CTL_DIR/quit (so JFR dumps at exit after the agent was scraped). The threads are named by
 * what they lock: "handshake-<n>" on Alpha, "reader-<n>" on Beta, and on the BitSet half of
 * each (the first half handshake-, the rest reader-).
 * Bench mode: LockContention --bench THREADS SECONDS [HOLD_US]: a lock storm, THREADS threads
 * entering one monitor and holding it HOLD_US (default 10; a busy loop) for SECONDS; prints
 * "ops <monitor enters per second> cpu_ns_per_op <process CPU time per enter>".
 */
public class LockContention {
    static final class Alpha {}
    static final class Beta {}

    static long counter;

    static void bench(int threads, double seconds, long holdNs) throws Exception {
        Object lock = new Object();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                while (System.nanoTime() < end) {
                    synchronized (lock) {
                        counter++;
                        long until = System.nanoTime() + holdNs;
                        while (System.nanoTime() < until) Thread.onSpinWait();
                    }
                }
            }, "storm-" + i);
        }
        long cpu0 = cpuNanos();
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        System.out.println("ops " + (long) (counter / seconds) + " cpu_ns_per_op " + (cpuNanos() - cpu0) / Math.max(1, counter));
    }

    /** CPU time of the whole process (every thread), as the JVM reports it. */
    static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    public static void main(String[] a) throws Exception {
        if (a[0].equals("--bench")) {
            bench(Integer.parseInt(a[1]), Double.parseDouble(a[2]), a.length > 3 ? Long.parseLong(a[3]) * 1000 : 10_000);
            return;
        }
        Path ctl = Path.of(a[0]);
        int threads = Integer.parseInt(a[1]), rounds = Integer.parseInt(a[2]);
        long hold = Long.parseLong(a[3]);
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);
        Object[] locks = {new Alpha(), new Beta(), new java.util.BitSet()};
        Thread[] all = new Thread[locks.length * threads];
        int k = 0;
        for (int c = 0; c < locks.length; c++) {
            Object lock = locks[c];
            for (int t = 0; t < threads; t++) {
                boolean handshake = c == 0 || (c == 2 && t < threads / 2);
                all[k++] = new Thread(() -> {
                    for (int r = 0; r < rounds; r++) {
                        synchronized (lock) {
                            try { Thread.sleep(hold); } catch (InterruptedException e) { return; }
                        }
                    }
                }, (handshake ? "handshake-" : "reader-") + k);
            }
        }
        for (Thread t : all) t.start();
        for (Thread t : all) t.join();
        Files.writeString(ctl.resolve("done"), "done\n");
        while (!Files.exists(ctl.resolve("quit"))) Thread.sleep(20);
    }
}
