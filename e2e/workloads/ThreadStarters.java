import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Threads with known names start known numbers of threads (the starter tests of
 * e2e/agent_standalone.py and e2e/agent-kube.sh). Usage: ThreadStarters DIR A B MORE [RATE].
 *
 * Writes DIR/ready. On DIR/trigger, `trigger` starts short `warmup-N` threads (the storm that
 * makes the agent attach its starter probe) until DIR/go: as fast as it can, or with RATE at
 * most RATE a second (one at a time, a pause of 1/RATE s after each). Then `starter-A` starts
 * A threads `worker-a-N` and `starter-B` B threads `worker-b-N`, both at once; DIR/done gets
 * "A B WARMUPS STORM_MS" (STORM_MS: how long the storm ran) and DIR/times one line "PREFIX NS"
 * per worker thread: System.nanoTime() as the first statement of its run() minus just before
 * its Thread.start() (the time the agent's jvmdiag_thread_start_seconds measures from inside
 * this interval). On DIR/more, `starter-A` starts
 * MORE `late-N` threads (after the probe is detached) and writes DIR/more-done. Lives until
 * DIR/stop.
 */
public class ThreadStarters {
    static void waitFor(Path p) throws InterruptedException {
        while (!Files.exists(p)) {
            Thread.sleep(10);
        }
    }

    /** Writes DIR/name whole: the test sees the file only with its content. */
    static void publish(Path dir, String name, String text) throws java.io.IOException {
        Path tmp = dir.resolve(name + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }

    /** Starts n threads named prefix-i from the current thread, each joined before the next batch. */
    static int startMany(String prefix, int n) throws InterruptedException {
        return startMany(prefix, n, null);
    }

    /**
     * startMany; with times (n longs) each thread's start time in it: System.nanoTime() as the
     * first statement of its run() minus just before its Thread.start(). Thread.start() makes
     * the write before it visible to the thread, join() the thread's write to this one.
     */
    static int startMany(String prefix, int n, long[] times) throws InterruptedException {
        List<Thread> batch = new ArrayList<>();
        long[] before = new long[n];
        int started = 0;
        for (int i = 0; i < n; i++) {
            int at = i;
            Runnable run = times == null ? () -> { } : () -> {
                times[at] = System.nanoTime() - before[at];
            };
            Thread t = new Thread(run, prefix + "-" + i);
            before[i] = System.nanoTime();
            t.start();
            started++;
            batch.add(t);
            if (batch.size() == 50) {
                for (Thread b : batch) b.join();
                batch.clear();
            }
        }
        for (Thread b : batch) b.join();
        return started;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int a = Integer.parseInt(args[1]);
        int b = Integer.parseInt(args[2]);
        int more = Integer.parseInt(args[3]);
        int rate = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        Files.writeString(dir.resolve("ready"), "");
        waitFor(dir.resolve("trigger"));
        int[] warmups = new int[1];
        Thread trigger = new Thread(() -> {
            try {
                while (!Files.exists(dir.resolve("go"))) {
                    if (rate > 0) {
                        Thread t = new Thread(() -> { }, "warmup-" + warmups[0]);
                        t.start();
                        t.join();
                        warmups[0]++;
                        Thread.sleep(1000 / rate);
                    } else {
                        warmups[0] += startMany("warmup", 50);
                    }
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "trigger");
        long t0 = System.nanoTime();
        trigger.start();
        trigger.join();
        long stormMs = (System.nanoTime() - t0) / 1_000_000;
        int[] counts = new int[2];
        long[] timesA = new long[a];
        long[] timesB = new long[b];
        Thread sa = new Thread(() -> {
            try {
                counts[0] = startMany("worker-a", a, timesA);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "starter-A");
        Thread sb = new Thread(() -> {
            try {
                counts[1] = startMany("worker-b", b, timesB);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "starter-B");
        sa.start();
        sb.start();
        sa.join();
        sb.join();
        StringBuilder times = new StringBuilder();
        for (long ns : timesA) times.append("worker-a ").append(ns).append('\n');
        for (long ns : timesB) times.append("worker-b ").append(ns).append('\n');
        publish(dir, "times", times.toString());
        publish(dir, "done", counts[0] + " " + counts[1] + " " + warmups[0] + " " + stormMs);
        while (!Files.exists(dir.resolve("more"))) {
            if (Files.exists(dir.resolve("stop"))) {
                return; // the test ended early
            }
            Thread.sleep(10);
        }
        int[] late = new int[1];
        Thread sa2 = new Thread(() -> {
            try {
                late[0] = startMany("late", more);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "starter-A");
        sa2.start();
        sa2.join();
        publish(dir, "more-done", String.valueOf(late[0]));
        waitFor(dir.resolve("stop"));
    }
}
