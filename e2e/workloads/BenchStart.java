/**
 * The benchmark workloads' start handshake (ThreadStorm, SafepointStorm): print
 * {@code READY <pid>}, then wait for the go — a line on standard input when the argument is
 * {@code stdin} (hack/bench.d/agent.sh sends it after the same idle time in every configuration
 * and, with the agent, once it lists the JVM), else sleep that many milliseconds. Records the
 * process CPU time around the wait for the workload's output line.
 *
 * <p>Before the go, a line {@code threads N} makes the JVM start and join N short threads
 * ({@code warmup-<i>}, one at a time), print {@code WARMED N} and start its wait again: the
 * bench's way to make the thread start rate pass the agent's starter threshold before the
 * measured part, the same in every configuration.
 */
final class BenchStart {
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    private long waitStartNs, waitStartCpu, goNs, goCpu;

    /** Prints READY and waits for the go as {@code how} says ("stdin" or milliseconds). */
    static BenchStart await(String how) throws Exception {
        BenchStart b = new BenchStart();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        b.startWait();
        if (how.equals("stdin")) {
            var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
            for (String line = in.readLine(); line != null && line.startsWith("threads "); line = in.readLine()) {
                int n = Integer.parseInt(line.substring("threads ".length()).trim());
                for (int i = 0; i < n; i++) {
                    Thread t = new Thread(() -> { }, "warmup-" + i);
                    t.start();
                    t.join();
                }
                System.out.println("WARMED " + n);
                System.out.flush();
                b.startWait();
            }
        } else {
            Thread.sleep(Long.parseLong(how));
        }
        b.goCpu = b.os.getProcessCpuTime();
        b.goNs = System.nanoTime();
        return b;
    }

    private void startWait() {
        waitStartNs = System.nanoTime();
        waitStartCpu = os.getProcessCpuTime();
    }

    long processCpuNs() {
        return os.getProcessCpuTime();
    }

    /** "WALL_MS CPU_MS PRE_CPU_MS WAIT_CPU_MS WAIT_MS" for a storm that took these times. */
    String line(long wallMs, long cpuMs) {
        return wallMs + " " + cpuMs + " " + goCpu / 1_000_000 + " " + (goCpu - waitStartCpu) / 1_000_000 + " "
                + (goNs - waitStartNs) / 1_000_000;
    }
}
