import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Threads start threads from known Java stacks (e2e/agent_stacks.py, the agent's culprit
 * stacks); then threads wait on a monitor and park from known stacks (StackWaiters). Usage:
 * StackStarters DIR A B WARM [ROUNDS].
 *
 * Chain A: runA -> levelA1 -> ... -> levelA12 -> startA -> Thread.start; chain B the same with
 * levelB* and startB. First, if WARM > 0, `warm-A` and `warm-B` start WARM threads each
 * (`warm-aR-N`, `warm-bR-N`, two rounds R with a pause of 1 s after each) through the same
 * chains so that the JIT compiles (and inlines) them, and `warm-W` runs StackWaiters' chains
 * 2 WARM times each per round. Then DIR/ready. On DIR/trigger, `trigger` starts short
 * `storm-N` threads from stormStart (another stack) as fast as it can until DIR/go: the start
 * rate that opens the agent's starter window. Then `starter-A` starts A threads `worker-a-N`
 * through chain A and `starter-B` B threads `worker-b-N` through chain B, both at once. Then
 * StackWaiters' ROUNDS (default 0: none) measured rounds of contended enters and parks.
 * DIR/done gets "A B STORM WA WB UNBLOCKED" (StackWaiters.measure's counts). Lives until
 * DIR/stop.
 */
public class StackStarters {
    /** Waits for p; exits if DIR/stop comes first (the test gave up). */
    static void waitFor(Path p) throws InterruptedException {
        while (!Files.exists(p)) {
            if (Files.exists(p.resolveSibling("stop"))) {
                System.exit(3);
            }
            Thread.sleep(10);
        }
    }

    /** Writes DIR/name whole: the test sees the file only with its content. */
    static void publish(Path dir, String name, String text) throws java.io.IOException {
        Path tmp = dir.resolve(name + ".tmp");
        Files.write(tmp, text.getBytes());
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }

    static final Runnable NOTHING = new Runnable() {
        @Override
        public void run() {
        }
    };

    // Each start is joined in batches of 50: the machine never holds more than 50 of them.
    static final class Batch {
        final List<Thread> threads = new ArrayList<>();

        void add(Thread t) throws InterruptedException {
            threads.add(t);
            if (threads.size() == 50) {
                join();
            }
        }

        void join() throws InterruptedException {
            for (Thread t : threads) {
                t.join();
            }
            threads.clear();
        }
    }

    static Thread startA(String name) {
        Thread t = new Thread(NOTHING, name);
        t.start();
        return t;
    }

    static Thread levelA12(String n) { return startA(n); }
    static Thread levelA11(String n) { return levelA12(n); }
    static Thread levelA10(String n) { return levelA11(n); }
    static Thread levelA9(String n) { return levelA10(n); }
    static Thread levelA8(String n) { return levelA9(n); }
    static Thread levelA7(String n) { return levelA8(n); }
    static Thread levelA6(String n) { return levelA7(n); }
    static Thread levelA5(String n) { return levelA6(n); }
    static Thread levelA4(String n) { return levelA5(n); }
    static Thread levelA3(String n) { return levelA4(n); }
    static Thread levelA2(String n) { return levelA3(n); }
    static Thread levelA1(String n) { return levelA2(n); }

    static Thread startB(String name) {
        Thread t = new Thread(NOTHING, name);
        t.start();
        return t;
    }

    static Thread levelB12(String n) { return startB(n); }
    static Thread levelB11(String n) { return levelB12(n); }
    static Thread levelB10(String n) { return levelB11(n); }
    static Thread levelB9(String n) { return levelB10(n); }
    static Thread levelB8(String n) { return levelB9(n); }
    static Thread levelB7(String n) { return levelB8(n); }
    static Thread levelB6(String n) { return levelB7(n); }
    static Thread levelB5(String n) { return levelB6(n); }
    static Thread levelB4(String n) { return levelB5(n); }
    static Thread levelB3(String n) { return levelB4(n); }
    static Thread levelB2(String n) { return levelB3(n); }
    static Thread levelB1(String n) { return levelB2(n); }

    static int runA(String prefix, int n) throws InterruptedException {
        Batch batch = new Batch();
        for (int i = 0; i < n; i++) {
            batch.add(levelA1(prefix + "-" + i));
        }
        batch.join();
        return n;
    }

    static int runB(String prefix, int n) throws InterruptedException {
        Batch batch = new Batch();
        for (int i = 0; i < n; i++) {
            batch.add(levelB1(prefix + "-" + i));
        }
        batch.join();
        return n;
    }

    static Thread stormStart(String name) {
        Thread t = new Thread(NOTHING, name);
        t.start();
        return t;
    }

    /** A thread that runs chain A (a) or B (!a) n times, naming the threads it starts prefix-i. */
    static Thread starter(String name, final boolean a, final String prefix, final int n,
                          final int[] out, final int slot) {
        return new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    out[slot] = a ? runA(prefix, n) : runB(prefix, n);
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
        }, name);
    }

    public static void main(String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        int a = Integer.parseInt(args[1]);
        int b = Integer.parseInt(args[2]);
        int warm = Integer.parseInt(args[3]);
        int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        int[] counts = new int[2];
        // Two rounds with a pause after each: the compilations the first one queued are done
        // (C2 compiles in the background), the second one runs (and profiles) their code.
        for (int round = 0; warm > 0 && round < 2; round++) {
            Thread wa = starter("warm-A", true, "warm-a" + round, warm / 2, counts, 0);
            Thread wb = starter("warm-B", false, "warm-b" + round, warm / 2, counts, 1);
            // Cheap, and enough for C2 under load (see StackWaiters.warmUp).
            final int warmWaits = warm * 2;
            Thread ww = new Thread(new Runnable() {
                @Override
                public void run() {
                    StackWaiters.warmUp(warmWaits);
                }
            }, "warm-W");
            wa.start();
            wb.start();
            ww.start();
            wa.join();
            wb.join();
            ww.join();
            Thread.sleep(1000);
        }
        Files.write(dir.resolve("ready"), new byte[0]);
        waitFor(dir.resolve("trigger"));
        final int[] storm = new int[1];
        Thread trigger = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    Batch batch = new Batch();
                    while (!Files.exists(dir.resolve("go"))) {
                        if (Files.exists(dir.resolve("stop"))) {
                            System.exit(3);
                        }
                        for (int i = 0; i < 50; i++) {
                            batch.add(stormStart("storm-" + storm[0]++));
                        }
                    }
                    batch.join();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
        }, "trigger");
        trigger.start();
        trigger.join();
        Thread sa = starter("starter-A", true, "worker-a", a, counts, 0);
        Thread sb = starter("starter-B", false, "worker-b", b, counts, 1);
        sa.start();
        sb.start();
        sa.join();
        sb.join();
        String waits = StackWaiters.measure(rounds);
        publish(dir, "done", counts[0] + " " + counts[1] + " " + storm[0] + " " + waits);
        waitFor(dir.resolve("stop"));
    }
}
