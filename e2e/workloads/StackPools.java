import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * Two pools parking at known frames, for e2e/agent_stacks.py (park samples by pool).
 * Usage: StackPools CTL_DIR PARKS
 * Writes its pid to CTL_DIR/ready and waits for CTL_DIR/go; then two threads named alpha-1 and
 * alpha-2 each park PARKS times in parkAlpha and PARKS times in parkShared, and two named
 * beta-1 and beta-2 PARKS times in parkBeta and PARKS times in parkShared, alternating, each park
 * a LockSupport.parkNanos of 1 ms; writes "alpha <parks in parkAlpha> beta <parks in parkBeta>
 * shared_alpha <n> shared_beta <n>" to CTL_DIR/done and waits for CTL_DIR/stop.
 * parkShared is one method, so its stack is the same in both pools: only the thread's name
 * tells them apart.
 */
public class StackPools {
    static final long PARK_NS = 1_000_000;

    static void parkAlpha() {
        LockSupport.parkNanos(PARK_NS);
    }

    static void parkBeta() {
        LockSupport.parkNanos(PARK_NS);
    }

    static void parkShared() {
        LockSupport.parkNanos(PARK_NS);
    }

    public static void main(String[] a) throws Exception {
        Path ctl = Path.of(a[0]);
        int parks = Integer.parseInt(a[1]);
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);
        Thread[] ts = new Thread[4];
        for (int i = 0; i < 4; i++) {
            boolean alpha = i < 2;
            ts[i] = new Thread(() -> {
                for (int p = 0; p < parks; p++) {
                    if (alpha) parkAlpha();
                    else parkBeta();
                    parkShared();
                }
            }, (alpha ? "alpha-" : "beta-") + (i % 2 + 1));
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        long n = 2L * parks;
        Files.writeString(ctl.resolve("done"), "alpha " + n + " beta " + n + " shared_alpha " + n + " shared_beta " + n + "\n");
        while (!Files.exists(ctl.resolve("stop"))) Thread.sleep(20);
    }
}
