import java.lang.management.ManagementFactory;

/**
 * Benchmark workload: N rounds of safepoints of several kinds (thread dumps through two
 * APIs, a full GC every 10th round) while 8 threads keep allocating.
 *
 * Arguments: N (default 3000), then how to start the measured part ({@code BenchStart}):
 * {@code stdin} prints {@code READY <pid>} and waits for a line on standard input; a number of
 * milliseconds (default 800) prints {@code READY <pid>} and sleeps that long.
 * Prints "WALL_MS CPU_MS PRE_CPU_MS WAIT_CPU_MS WAIT_MS": wall and process CPU time (user +
 * system, every thread) of the storm; the process CPU time from the JVM's start to the start of
 * the storm; the part of it spent while waiting (READY to go); and the wait's length.
 */
public class SafepointStorm {
    static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        String start = args.length > 1 ? args[1] : "800";
        var mx = ManagementFactory.getThreadMXBean();
        BenchStart go = BenchStart.await(start);
        Thread[] load = new Thread[8];
        for (int k = 0; k < load.length; k++) {
            load[k] = new Thread(() -> {
                long sink = 0;
                while (!stop) { byte[] b = new byte[256]; sink += b.length; }
                if (sink == 42) System.out.print("");
            }, "alloc-" + k);
            load[k].setDaemon(true);
            load[k].start();
        }
        long c0 = go.processCpuNs();
        long t0 = System.nanoTime();
        for (int i = 0; i < rounds; i++) {
            Thread.getAllStackTraces();
            mx.dumpAllThreads(false, false);
            if (i % 10 == 0) System.gc();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long cpu = (go.processCpuNs() - c0) / 1_000_000;
        stop = true;
        System.out.println(go.line(ms, cpu));
    }
}
