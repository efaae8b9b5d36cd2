import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * Many distinct park stacks first, one new one after, for e2e/agent_stacks_deopt.py (a JVM's
 * share of the agent's stack table is given back at each read, so a stack that appears after
 * the share was used is still counted).
 * Usage: StackChurn CTL_DIR
 * Parks in ready() until CTL_DIR/churn; then parks ROUNDS times from each of the SITES call
 * sites of churn() (each its own line, so its own stack) and writes CTL_DIR/churned; waits for
 * CTL_DIR/go, then parks in culprit() every 10 ms until CTL_DIR/stop.
 */
public class StackChurn {
    static final int SITES = 20, ROUNDS = 5;

    public static void main(String[] a) throws Exception {
        Path ctl = Path.of(a[0]);
        while (!Files.exists(ctl.resolve("churn"))) ready();
        for (int r = 0; r < ROUNDS; r++) for (int s = 0; s < SITES; s++) churn(s);
        Files.writeString(ctl.resolve("churned"), "");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(10);
        while (!Files.exists(ctl.resolve("stop"))) culprit();
    }

    static void ready() throws InterruptedException {
        LockSupport.parkNanos(1_000_000);
        Thread.sleep(10);
    }

    static void culprit() throws InterruptedException {
        LockSupport.parkNanos(1_000_000);
        Thread.sleep(10);
    }

    static void churn(int site) {
        switch (site) {
            case 0: LockSupport.parkNanos(100_000); break;
            case 1: LockSupport.parkNanos(100_000); break;
            case 2: LockSupport.parkNanos(100_000); break;
            case 3: LockSupport.parkNanos(100_000); break;
            case 4: LockSupport.parkNanos(100_000); break;
            case 5: LockSupport.parkNanos(100_000); break;
            case 6: LockSupport.parkNanos(100_000); break;
            case 7: LockSupport.parkNanos(100_000); break;
            case 8: LockSupport.parkNanos(100_000); break;
            case 9: LockSupport.parkNanos(100_000); break;
            case 10: LockSupport.parkNanos(100_000); break;
            case 11: LockSupport.parkNanos(100_000); break;
            case 12: LockSupport.parkNanos(100_000); break;
            case 13: LockSupport.parkNanos(100_000); break;
            case 14: LockSupport.parkNanos(100_000); break;
            case 15: LockSupport.parkNanos(100_000); break;
            case 16: LockSupport.parkNanos(100_000); break;
            case 17: LockSupport.parkNanos(100_000); break;
            case 18: LockSupport.parkNanos(100_000); break;
            default: LockSupport.parkNanos(100_000); break;
        }
    }
}
