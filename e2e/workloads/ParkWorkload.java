import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Parks with known counts, for e2e/agent_locks.py.
 * Usage: ParkWorkload CTL_DIR PARKERS PARKS PARK_NS [BENCH_SECONDS]
 * Waits for CTL_DIR/go; PARKERS threads named parker-<i> each call LockSupport.parkNanos(PARK_NS)
 * PARKS times, measuring each park with System.nanoTime; writes "parks <n> parked_ns <sum>" to
 * CTL_DIR/done and waits for CTL_DIR/quit. With BENCH_SECONDS (no go/quit): parks for that long
 * and prints "ops <parks per second>".
 */
public class ParkWorkload {
    public static void main(String[] a) throws Exception {
        Path ctl = Path.of(a[0]);
        int parkers = Integer.parseInt(a[1]);
        long parks = Long.parseLong(a[2]), ns = Long.parseLong(a[3]);
        if (a.length > 4) {
            bench(parkers, ns, Double.parseDouble(a[4]));
            return;
        }
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);
        AtomicLong total = new AtomicLong();
        Thread[] ts = new Thread[parkers];
        for (int i = 0; i < parkers; i++) {
            ts[i] = new Thread(() -> {
                long sum = 0;
                for (long p = 0; p < parks; p++) {
                    long t0 = System.nanoTime();
                    LockSupport.parkNanos(ns);
                    sum += System.nanoTime() - t0;
                }
                total.addAndGet(sum);
            }, "parker-" + i);
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        Files.writeString(ctl.resolve("done.tmp"), "parks " + parkers * parks + " parked_ns " + total.get() + "\n");
        Files.move(ctl.resolve("done.tmp"), ctl.resolve("done"));
        while (!Files.exists(ctl.resolve("quit"))) Thread.sleep(20);
    }

    static void bench(int parkers, long ns, double seconds) throws Exception {
        AtomicLong ops = new AtomicLong();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        Thread[] ts = new Thread[parkers];
        for (int i = 0; i < parkers; i++) {
            ts[i] = new Thread(() -> {
                long n = 0;
                while (System.nanoTime() < end) {
                    LockSupport.parkNanos(ns);
                    n++;
                }
                ops.addAndGet(n);
            }, "bench-parker-" + i);
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        System.out.println("ops " + (long) (ops.get() / seconds));
    }
}
