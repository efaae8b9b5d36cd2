import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Threads with known names request known numbers of VM operations (the requester test of
 * e2e/agent_standalone.py): `gc-caller` calls System.gc() GCS times (G1: one G1CollectFull
 * each), then `dumper` calls ThreadMXBean.dumpAllThreads DUMPS times (one ThreadDump each),
 * one after the other so neither's allocation triggers a GC the other would count.
 * Usage: VmOpRequesters DIR GCS DUMPS. Writes DIR/ready, waits for DIR/go, runs, writes
 * DIR/done, then lives until DIR/stop (for a jcmd from outside: the Attach Listener).
 */
public class VmOpRequesters {
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int gcs = Integer.parseInt(args[1]);
        int dumps = Integer.parseInt(args[2]);
        Files.writeString(dir.resolve("ready"), "");
        while (!Files.exists(dir.resolve("go"))) {
            Thread.sleep(20);
        }
        Thread gc = new Thread(() -> {
            for (int i = 0; i < gcs; i++) {
                System.gc();
            }
        }, "gc-caller");
        gc.start();
        gc.join();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] frames = new long[1];
        Thread dumper = new Thread(() -> {
            for (int i = 0; i < dumps; i++) {
                frames[0] += mx.dumpAllThreads(false, false).length;
            }
        }, "dumper");
        dumper.start();
        dumper.join();
        Files.writeString(dir.resolve("done"), gcs + " " + dumps + " " + frames[0]);
        while (!Files.exists(dir.resolve("stop"))) {
            Thread.sleep(20);
        }
    }
}
