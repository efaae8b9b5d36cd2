/**
 * Benchmark workload: start and join N platform threads (default 100,000), 4 starters in
 * parallel, and print the wall and CPU time of the storm only.
 *
 * Arguments: N, then how to start the measured part ({@code BenchStart}):
 * <ul>
 *   <li>{@code stdin} (what {@code hack/bench.d/agent.sh} uses): print {@code READY <pid>} once
 *       the JVM is up, then wait for a line on standard input. The benchmark sends it after the
 *       same minimum idle time in every configuration and, with the agent, only once the agent
 *       reports this JVM attached, so attaching never overlaps the measured part. Lines
 *       {@code threads N} before it start N warm-up threads ({@code BenchStart}).</li>
 *   <li>a number of milliseconds (default 800): print {@code READY <pid>}, sleep that long, then
 *       run. With a long sleep this is the idle JVM the benchmark runs beside a storm.</li>
 * </ul>
 * Prints "WALL_MS CPU_MS PRE_CPU_MS WAIT_CPU_MS WAIT_MS": wall and process CPU time (user +
 * system, every thread) of the storm; the process CPU time from the JVM's start to the start of
 * the storm; the part of it spent while waiting (READY, or the end of the warm-up, to go); and
 * the wait's length.
 */
public class ThreadStorm {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        String start = args.length > 1 ? args[1] : "800";
        int starters = 4;
        BenchStart go = BenchStart.await(start);
        long c0 = go.processCpuNs();
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
        System.out.println(go.line((System.nanoTime() - t0) / 1_000_000, (go.processCpuNs() - c0) / 1_000_000));
    }
}
