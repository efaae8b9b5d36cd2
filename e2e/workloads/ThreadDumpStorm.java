// Test workload: long non-GC safepoints (thread dumps) and a thread storm, on a timetable.
//
//   java ThreadDumpStorm.java [--threads 2000] [--depth 200] [--dump-every 5] [--storm-rate 200]
//                            [--storm-start 10] [--storm-seconds 30] [--duration 120]
//
// - parks --threads threads, each --depth frames deep, then every --dump-every seconds takes a
//   full thread dump (ThreadMXBean.dumpAllThreads): a
//   "ThreadDump" VM operation at a safepoint whose pause grows with threads x depth;
// - from --storm-start for --storm-seconds starts --storm-rate short-lived threads per
//   second named "storm-worker-<n>" (the agent folds them to storm-worker-N);
// - keeps the JIT busy with a little arithmetic so compilation metrics move;
// - exits by itself after --duration seconds (it never needs to be killed).
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

public class ThreadDumpStorm {
    static final CountDownLatch RELEASE = new CountDownLatch(1);
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        Map<String, Integer> o = new HashMap<>(Map.of("threads", 2000, "depth", 200, "dump-every", 5,
                "storm-rate", 200, "storm-start", 10, "storm-seconds", 30, "duration", 120));
        for (int i = 0; i < args.length; i += 2) {
            String k = args[i].replaceFirst("^--", "");
            if (!o.containsKey(k) || i + 1 >= args.length) {
                System.err.println("unknown or valueless option " + args[i] + "; options: " + o.keySet());
                System.exit(2);
            }
            o.put(k, Integer.parseInt(args[i + 1]));
        }
        long start = System.nanoTime();
        int depth = o.get("depth");
        for (int i = 0; i < o.get("threads"); i++) {
            Thread t = new Thread(() -> deep(depth), "parked-" + i);
            t.setDaemon(true);
            t.start();
        }
        System.out.println("parked " + o.get("threads") + " threads, depth " + depth);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        AtomicLong started = new AtomicLong();
        long end = start + o.get("duration") * 1_000_000_000L;
        long nextDump = System.nanoTime();
        long stormFrom = start + o.get("storm-start") * 1_000_000_000L;
        long stormTo = stormFrom + o.get("storm-seconds") * 1_000_000_000L;
        double perNs = o.get("storm-rate") / 1e9;
        long stormStarted = 0;
        while (System.nanoTime() < end) {
            long now = System.nanoTime();
            if (now >= nextDump) {
                long t0 = System.nanoTime();
                int n = mx.dumpAllThreads(false, false).length;
                System.out.printf("thread dump of %d threads took %.0f ms%n", n, (System.nanoTime() - t0) / 1e6);
                nextDump += o.get("dump-every") * 1_000_000_000L;
            }
            if (now >= stormFrom && now < stormTo) {
                long due = (long) ((now - stormFrom) * perNs);
                for (; stormStarted < due; stormStarted++) {
                    Thread t = new Thread(() -> started.incrementAndGet(), "storm-worker-" + stormStarted);
                    t.start();
                }
            }
            work();
            Thread.sleep(5);
        }
        System.out.println("storm threads started: " + stormStarted + ", ran: " + started.get());
        RELEASE.countDown();
    }

    // Parks at the bottom of a deep stack so every thread dump walks `depth` frames.
    static void deep(int n) {
        if (n > 0) {
            deep(n - 1);
            return;
        }
        try {
            RELEASE.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void work() {
        long s = 0;
        for (int i = 0; i < 20_000; i++) {
            s += (i * 31L) ^ (s >>> 3);
        }
        sink = s;
    }
}
