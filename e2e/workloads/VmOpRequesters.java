import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Threads with known names request known numbers of VM operations (the requester test of
 * e2e/agent_standalone.py): `gc-caller` calls System.gc() GCS times (G1: one G1CollectFull
 * each), then `dumper` calls ThreadMXBean.dumpAllThreads DUMPS times (one ThreadDump each),
 * one after the other so neither's allocation triggers a GC the other would count; then, when
 * the JVM runs with this class as its Java agent (-javaagent: a jar whose manifest names it
 * Premain-Class, with Can-Retransform-Classes), `retransformer` retransforms one class
 * RETRANSFORMS times (one RedefineClasses each), as an APM agent's background thread does.
 * Usage: VmOpRequesters DIR GCS DUMPS [RETRANSFORMS]. Writes DIR/ready, waits for DIR/go, runs,
 * writes DIR/done, then lives until DIR/stop (for a jcmd from outside: the Attach Listener).
 */
public class VmOpRequesters {
    static volatile Instrumentation inst;

    /** The class retransformed: nothing else touches it. */
    static final class Target {
        static int f() {
            return 1;
        }
    }

    public static void premain(String options, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int gcs = Integer.parseInt(args[1]);
        int dumps = Integer.parseInt(args[2]);
        int retransforms = args.length > 3 ? Integer.parseInt(args[3]) : 0;
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
        int[] done = new int[1];
        if (retransforms > 0) {
            if (inst == null || !inst.isRetransformClassesSupported()) {
                throw new IllegalStateException("retransforms asked for, but no Instrumentation that can retransform (-javaagent)");
            }
            Target.f();
            Thread retransformer = new Thread(() -> {
                try {
                    for (int i = 0; i < retransforms; i++) {
                        inst.retransformClasses(Target.class);
                        done[0]++;
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "retransformer");
            retransformer.start();
            retransformer.join();
        }
        // Whole or not at all: the test reads it as soon as it exists.
        Files.writeString(dir.resolve("done.tmp"), gcs + " " + dumps + " " + frames[0] + " " + done[0]);
        Files.move(dir.resolve("done.tmp"), dir.resolve("done"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        while (!Files.exists(dir.resolve("stop"))) {
            Thread.sleep(20);
        }
    }
}
