/**
 * Usage: SafepointBurst GCS THREADS [PAUSE_MS [START_DELAY_MS]].
 * Sidecar and Kubernetes-mode test workload: N safepoints (System.gc(), each a G1 full-GC VM operation) spread
 * over time so the -Xlog:safepoint file rotates several times, plus T thread starts; then
 * prints IDLE and sleeps, so its counters stand still while the test compares them.
 */
public class SafepointBurst {
    public static void main(String[] args) throws Exception {
        int gcs = Integer.parseInt(args[0]);
        int threads = Integer.parseInt(args[1]);
        long pauseMs = args.length > 2 ? Long.parseLong(args[2]) : 10;
        // Optional: wait before starting (a tracer attaching after start-up misses nothing).
        if (args.length > 3) Thread.sleep(Long.parseLong(args[3]));
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {}, "burst-" + i);
            t.start();
            t.join();
        }
        for (int i = 0; i < gcs; i++) {
            System.gc();
            Thread.sleep(pauseMs);
        }
        System.out.println("IDLE");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
