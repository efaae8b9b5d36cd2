/**
 * Usage: SafepointBurst GCS THREADS [PAUSE_MS [START_DELAY_MS [REQUEST_FILE]]].
 * Sidecar and Kubernetes-mode test workload: N safepoints (System.gc(), each a G1 full-GC VM operation) spread
 * over time so the -Xlog:safepoint file rotates several times, plus T thread starts; then
 * prints IDLE and sleeps, so its counters stand still while the test compares them.
 * With REQUEST_FILE, it then runs one more burst whenever that file appears holding
 * "THREADS GCS [NAMES]" and a newline (the file is deleted, then "BURST THREADS GCS" printed when
 * done), so a test can make a known number of thread starts and safepoints happen in a window it
 * chose. A request without its newline is still being written (a shell's `echo >` creates the
 * file before it writes): it is read again at the next poll.
 * With NAMES (1 to 26), the burst's threads take that many names, digits folded as the agent
 * folds them: "more-a-N", "more-b-N", ... (else all are "more-N").
 * A request "main CLASS ARGS..." instead runs CLASS's main(ARGS) (a class on the class path,
 * e.g. ThreadStarters) on a new thread named CLASS, in this JVM, and the loop goes on.
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
        if (args.length <= 4) Thread.sleep(Long.MAX_VALUE);
        java.nio.file.Path request = java.nio.file.Path.of(args[4]);
        while (true) {
            Thread.sleep(100);
            if (!java.nio.file.Files.exists(request)) continue;
            String text = java.nio.file.Files.readString(request);
            if (!text.endsWith("\n")) continue;
            String[] want = text.trim().split("\\s+");
            java.nio.file.Files.delete(request);
            if (want[0].equals("main")) {
                runMain(want[1], java.util.Arrays.copyOfRange(want, 2, want.length));
                continue;
            }
            int more = Integer.parseInt(want[0]), moreGcs = Integer.parseInt(want[1]);
            int names = want.length > 2 ? Integer.parseInt(want[2]) : 0;
            for (int i = 0; i < more; i++) {
                Thread t = new Thread(() -> {}, names > 0 ? "more-" + (char) ('a' + i % names) + "-" + i : "more-" + i);
                t.start();
                t.join();
            }
            for (int i = 0; i < moreGcs; i++) System.gc();
            System.out.println("BURST " + more + " " + moreGcs);
            System.out.flush();
        }
    }

    /** CLASS.main(args) on a new thread named CLASS (found by name: this file compiles alone). */
    static void runMain(String cls, String[] args) throws ReflectiveOperationException {
        java.lang.reflect.Method main = Class.forName(cls).getMethod("main", String[].class);
        new Thread(() -> {
            try {
                main.invoke(null, (Object) args);
            } catch (ReflectiveOperationException e) {
                e.printStackTrace();
            }
        }, cls).start();
    }
}
