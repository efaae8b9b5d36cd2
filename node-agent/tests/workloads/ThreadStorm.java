/**
 * Benchmark workload: start and join N platform threads (default 100,000), 4 starters in
 * parallel, and print the elapsed milliseconds of the storm only. Waits DELAY ms first so
 * an agent polling /proc has attached before the measured part (every configuration waits).
 * Prints "WALL_MS CPU_MS" (CPU: the whole process, user + system, over the storm).
 */
public class ThreadStorm {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        long delay = args.length > 1 ? Long.parseLong(args[1]) : 800;
        Thread.sleep(delay);
        int starters = 4;
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long c0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        Thread[] s = new Thread[starters];
        for (int k = 0; k < starters; k++) {
            final int id = k;
            s[k] = new Thread(() -> {
                for (int i = 0; i < n / starters; i++) {
                    Thread t = new Thread(() -> { }, "pool-" + id + "-thread-" + i);
                    t.start();
                    try { t.join(); } catch (InterruptedException e) { throw new RuntimeException(e); }
                }
            }, "starter-" + k);
            s[k].start();
        }
        for (Thread t : s) t.join();
        System.out.println((System.nanoTime() - t0) / 1_000_000 + " " + (os.getProcessCpuTime() - c0) / 1_000_000);
    }
}
