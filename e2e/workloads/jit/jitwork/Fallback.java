package jitwork;

/**
 * Something for every fallback counter: thread starts, safepoints spaced further apart
 * than the agent's poll interval (System.gc(): one safepoint each), compilations.
 * Usage: Fallback THREADS GCS [START_DELAY_MS]; prints "done" and idles until killed.
 */
public class Fallback {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int gcs = Integer.parseInt(args[1]);
        Thread.sleep(args.length > 2 ? Long.parseLong(args[2]) : 3000);
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> sink++, "fallback-worker-" + i);
            t.start();
            t.join();
        }
        for (int i = 0; i < gcs; i++) {
            System.gc();
            long s = 0;
            for (int k = 0; k < 2_000_000; k++) {
                s += Long.numberOfTrailingZeros(k * 31L + i);
            }
            sink += s;
            Thread.sleep(400);
        }
        System.out.println("done");
        Thread.sleep(Long.MAX_VALUE);
    }
}
