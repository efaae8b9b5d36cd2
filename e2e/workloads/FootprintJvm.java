import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A quiet service JVM for the agent's footprint benchmark (hack/bench.d/agent-footprint.sh).
 * Usage: FootprintJvm DIR. Waits for DIR/go (the agent has attached), then does once what a
 * service does in its first minutes: starts threads under 10 pool-like names, runs a GC and a
 * thread dump (safepoints and VM operations), compiles a few methods; writes DIR/done-PID and
 * sleeps until killed. So each JVM adds to the agent's maps what a real one adds.
 */
public class FootprintJvm {
    static final String[] NAMES = {
        "http-nio-8080-exec-", "pool-1-thread-", "scheduling-", "kafka-producer-network-thread-",
        "HikariPool-1-housekeeper-", "grpc-default-executor-", "RxComputationThreadPool-",
        "lettuce-epollEventLoop-4-", "OkHttp ConnectionPool-", "ForkJoinPool.commonPool-worker-",
    };

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        while (!Files.exists(dir.resolve("go"))) Thread.sleep(50);
        for (String n : NAMES) {
            for (int k = 1; k <= 3; k++) {
                Thread t = new Thread(() -> { }, n + k);
                t.start();
                t.join();
            }
        }
        System.gc();
        Thread.getAllStackTraces();
        long s = 0;
        for (int i = 0; i < 200_000; i++) s += work(i);
        Files.writeString(dir.resolve("done-" + ProcessHandle.current().pid()), Long.toString(s));
        Thread.sleep(Long.MAX_VALUE);
    }

    static long work(int i) {
        return Integer.toString(i).hashCode() + Long.toString(i * 31L).length();
    }
}
