import java.lang.management.ManagementFactory;

/**
 * Benchmark workload: N rounds of safepoints of several kinds (thread dumps through two
 * APIs, a full GC every 10th round) while 8 threads keep allocating.
 *
 * Arguments: N (default 3000), then how to start the measured part, as in {@code ThreadStorm}:
 * {@code stdin} prints {@code READY <pid>} and waits for a line on standard input; a number of
 * milliseconds (default 800) prints {@code READY <pid>} and sleeps that long.
 * Prints "WALL_MS CPU_MS PRE_CPU_MS WAIT_CPU_MS WAIT_MS": wall and process CPU time (user +
 * system, every thread) of the storm; the process CPU time from the JVM's start to the start of
 * the storm; the part of it spent while waiting (READY to go); and the wait's length.
 */
public class SafepointStorm {
    static volatile boolean stop;

    static java.lang.management.OperatingSystemMXBean mx_os() {
        return ManagementFactory.getOperatingSystemMXBean();
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        String start = args.length > 1 ? args[1] : "800";
        var mx = ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) mx_os();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        long w0 = System.nanoTime(), cw0 = os.getProcessCpuTime();
        if (start.equals("stdin")) {
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        } else {
            Thread.sleep(Long.parseLong(start));
        }
        long cg = os.getProcessCpuTime(), tg = System.nanoTime();
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
        System.out.println(ms + " " + cpu + " " + cg / 1_000_000 + " " + (cg - cw0) / 1_000_000 + " " + (tg - w0) / 1_000_000);
    }
}
