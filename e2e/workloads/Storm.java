import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Thread storm + safepoints of several kinds, for the agent's accuracy test.
 * Usage: Storm THREADS_PER_NAME DIR. Waits for DIR/go, runs, writes DIR/expected
 * (folded name -> count started), then waits for DIR/stop.
 */
public class Storm {
    // Names as a real service would make them; the agent folds digit runs to N.
    static final String[] PATTERNS = {"pool-%d-thread-%d", "worker-%d", "HandshakeCompletedNotify-Thread", "io-%d-%d-x"};
    static final String[] FOLDED = {"pool-N-thread-N", "worker-N", "HandshakeCompletedNotify-Thread", "io-N-N-x"};

    public static void main(String[] args) throws Exception {
        int perName = Integer.parseInt(args[0]);
        Path dir = Path.of(args[1]);
        Files.writeString(dir.resolve("ready"), "");
        while (!Files.exists(dir.resolve("go"))) Thread.sleep(20);

        StringBuilder expected = new StringBuilder();
        for (int p = 0; p < PATTERNS.length; p++) {
            List<Thread> batch = new ArrayList<>();
            for (int i = 0; i < perName; i++) {
                String name = String.format(PATTERNS[p], i % 17, i);
                Thread t = new Thread(() -> { }, name);
                if (i % 3 == 0) t.setDaemon(true);
                t.start();
                batch.add(t);
                if (batch.size() == 200) { for (Thread b : batch) b.join(); batch.clear(); }
            }
            for (Thread b : batch) b.join();
            expected.append(FOLDED[p]).append(' ').append(perName).append('\n');
        }
        // Safepoints of several kinds: full GCs, thread dumps (two APIs), a heap histogram-ish walk.
        var mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 5; i++) System.gc();
        for (int i = 0; i < 20; i++) Thread.getAllStackTraces();
        for (int i = 0; i < 10; i++) mx.dumpAllThreads(true, true);
        byte[][] junk = new byte[2000][];
        for (int i = 0; i < 200_000; i++) junk[i % 2000] = new byte[1024];
        Files.writeString(dir.resolve("expected"), expected.toString());
        Files.writeString(dir.resolve("done"), "");
        while (!Files.exists(dir.resolve("stop"))) Thread.sleep(20);
    }
}
