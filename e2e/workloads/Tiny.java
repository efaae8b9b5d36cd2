/** A short-lived JVM for the churn test: starts a few threads, lives as long as it is told (ms), exits. */
public class Tiny {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 3; i++) {
            Thread t = new Thread(() -> { }, "tiny-" + i);
            t.start();
            t.join();
        }
        Thread.sleep(Long.parseLong(args.length > 0 ? args[0] : "500"));
    }
}
