import java.lang.management.ManagementFactory;

/**
 * Benchmark workload: N rounds of safepoints of several kinds (thread dumps through two
 * APIs, a full GC every 10th round) while 8 threads keep allocating. Prints "WALL_MS CPU_MS"
 * (CPU: the whole process, user + system, over the storm).
 */
public class SafepointStorm {
    static volatile boolean stop;

    static java.lang.management.OperatingSystemMXBean mx_os() {
        return ManagementFactory.getOperatingSystemMXBean();
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        long delay = args.length > 1 ? Long.parseLong(args[1]) : 800;
        Thread.sleep(delay);
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
        var mx = ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) mx_os();
        long c0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        for (int i = 0; i < rounds; i++) {
            Thread.getAllStackTraces();
            mx.dumpAllThreads(false, false);
            if (i % 10 == 0) System.gc();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long cpu = (os.getProcessCpuTime() - c0) / 1_000_000;
        stop = true;
        System.out.println(ms + " " + cpu);
    }
}
