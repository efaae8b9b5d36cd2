import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Pools waiting with synchronized + Object.wait on instances of known classes, for
 * e2e/agent_locks.py (the monitors collector's object_wait series against JFR's
 * jdk.JavaMonitorWait).
 * Usage: WaitPool CTL_DIR TIMED ROUNDS WAIT_MS WORKERS ITEMS PRODUCE_MS
 * Waits for CTL_DIR/go, then at once:
 * - TIMED threads named timed-<i> each call idle.wait(WAIT_MS) ROUNDS times on a WaitPool$Idle
 *   of its own nobody notifies (each wait times out), and one thread named sweeper calls
 *   idle.wait(2 * WAIT_MS) ROUNDS / 2 times on another (own objects: the timed waits, which end
 *   together, do not queue to re-enter one monitor);
 * - WORKERS threads named worker-<i> take items from one java.util.ArrayDeque, waiting with
 *   queue.wait() while it is empty; a thread named producer adds ITEMS items, one every
 *   PRODUCE_MS, each with queue.notify() (leaving the monitor right after), then closes the
 *   queue with notifyAll().
 * Writes "idle_waits <n> queue_waits <n>" (the wait calls it made) to CTL_DIR/done once every
 * thread has ended and waits for CTL_DIR/quit.
 * Usage: WaitPool --bench PAIRS SECONDS: a wait storm, PAIRS pairs of threads handing a turn
 * back and forth on a WaitPool$Idle of their own (notify, then wait until it is back) for
 * SECONDS; prints "ops <waits per second>".
 */
public class WaitPool {
    static final class Idle {}

    public static void main(String[] a) throws Exception {
        if (a[0].equals("--bench")) {
            bench(Integer.parseInt(a[1]), Double.parseDouble(a[2]));
            return;
        }
        Path ctl = Path.of(a[0]);
        int timed = Integer.parseInt(a[1]), rounds = Integer.parseInt(a[2]);
        long waitMs = Long.parseLong(a[3]);
        int workers = Integer.parseInt(a[4]), items = Integer.parseInt(a[5]);
        long produceMs = Long.parseLong(a[6]);
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);

        ArrayDeque<Integer> queue = new ArrayDeque<>();
        boolean[] closed = {false};
        AtomicLong idleWaits = new AtomicLong(), queueWaits = new AtomicLong();
        Thread[] ts = new Thread[timed + 1 + workers + 1];
        int n = 0;
        for (int i = 0; i < timed; i++) {
            Idle idle = new Idle();
            ts[n++] = new Thread(() -> waitIdle(idle, rounds, waitMs, idleWaits), "timed-" + i);
        }
        Idle swept = new Idle();
        ts[n++] = new Thread(() -> waitIdle(swept, rounds / 2, 2 * waitMs, idleWaits), "sweeper");
        for (int i = 0; i < workers; i++) {
            ts[n++] = new Thread(() -> {
                while (true) {
                    synchronized (queue) {
                        while (queue.isEmpty() && !closed[0]) {
                            queueWaits.incrementAndGet();
                            try {
                                queue.wait();
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                        if (queue.poll() == null) return; // closed and empty
                    }
                }
            }, "worker-" + i);
        }
        ts[n++] = new Thread(() -> {
            try {
                for (int i = 0; i < items; i++) {
                    Thread.sleep(produceMs);
                    synchronized (queue) {
                        queue.add(i);
                        queue.notify();
                    }
                }
            } catch (InterruptedException e) {
                return;
            }
            synchronized (queue) {
                closed[0] = true;
                queue.notifyAll();
            }
        }, "producer");
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        Files.writeString(ctl.resolve("done.tmp"), "idle_waits " + idleWaits.get() + " queue_waits " + queueWaits.get() + "\n");
        Files.move(ctl.resolve("done.tmp"), ctl.resolve("done"));
        while (!Files.exists(ctl.resolve("quit"))) Thread.sleep(20);
    }

    static void waitIdle(Idle idle, int rounds, long ms, AtomicLong waits) {
        for (int r = 0; r < rounds; r++) {
            synchronized (idle) {
                waits.incrementAndGet();
                try {
                    idle.wait(ms);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    static void bench(int pairs, double seconds) throws Exception {
        AtomicLong waits = new AtomicLong();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        Thread[] ts = new Thread[2 * pairs];
        for (int i = 0; i < pairs; i++) {
            Idle turn = new Idle();
            int[] holder = {0};
            for (int side = 0; side < 2; side++) {
                int me = side;
                ts[2 * i + side] = new Thread(() -> {
                    long n = 0;
                    synchronized (turn) {
                        while (System.nanoTime() < end) {
                            holder[0] = 1 - me;
                            turn.notify();
                            while (holder[0] != me && System.nanoTime() < end) {
                                n++;
                                try {
                                    turn.wait(1);
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        }
                        turn.notify();
                    }
                    waits.addAndGet(n);
                }, "bench-waiter-" + i);
            }
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        System.out.println("ops " + (long) (waits.get() / seconds));
    }
}
