import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;

/**
 * Long non-GC safepoint incident: a Java agent (think APM or coverage tool) that
 * re-transforms every loaded class, in batches, every few seconds. Each
 * {@code retransformClasses} call is one {@code RedefineClasses} VM operation that stops
 * every application thread until the whole batch is redefined; with thousands of
 * classes per batch that is seconds. The transformer changes nothing, as many real
 * agents do for most classes.
 *
 * <p>Agent options ({@code -javaagent:retransform-agent.jar=batch=5000,period=20,delay=10,classes=0}):
 * batch = classes per retransformClasses call, period = seconds between rounds,
 * delay = seconds before the first round, classes = the first round waits (after delay)
 * until at least that many classes are loaded or the count stops growing (a fixed delay
 * either starts on a half-loaded application or wastes time on a fast one).
 *
 * <p>Measured (JDK 25, -Xlog:redefine+class+timer): the VM operation's prologue (parsing
 * the new class versions, run on this thread while the application runs) costs about 10x
 * its safepoint part, and both grow faster than linearly with the batch size: 10,000
 * classes per call pause 0.04-0.14 s, 100,000 in one call pause 1.6-2.1 s.
 */
public final class RetransformAgent {
    public static void premain(String options, Instrumentation inst) {
        int batch = option(options, "batch", 5000);
        int period = option(options, "period", 20);
        int delay = option(options, "delay", 10);
        int classes = option(options, "classes", 1);
        if (!inst.isRetransformClassesSupported()) {
            System.err.println("retransform-agent: the JVM does not support retransformation (Can-Retransform-Classes missing?)");
            return;
        }
        ClassFileTransformer noop = new ClassFileTransformer() {
            @Override
            public byte[] transform(ClassLoader loader, String name, Class<?> cls, ProtectionDomain pd, byte[] bytes) {
                return null; // "no change": the JVM still redefines the class at a safepoint
            }
        };
        inst.addTransformer(noop, true);
        Thread t = new Thread(() -> loop(inst, batch, period, delay, classes), "apm-retransformer");
        t.setDaemon(true);
        t.start();
        System.out.printf("retransform-agent: every %ds, batches of %d classes (first round in %ds)%n", period, batch, delay);
    }

    private static void loop(Instrumentation inst, int batch, int period, int delay, int classes) {
        try {
            Thread.sleep(delay * 1000L);
            for (int prev = -1, n; (n = inst.getAllLoadedClasses().length) < classes && n != prev; prev = n) {
                Thread.sleep(1000L);
            }
            while (true) {
                List<Class<?>> all = new ArrayList<>();
                for (Class<?> c : inst.getAllLoadedClasses()) {
                    if (inst.isModifiableClass(c) && !c.isHidden() && !c.isArray()) all.add(c);
                }
                int rounds = 0;
                long worst = 0;
                for (int i = 0; i < all.size(); i += batch) {
                    List<Class<?>> part = all.subList(i, Math.min(all.size(), i + batch));
                    long t0 = System.nanoTime();
                    try {
                        inst.retransformClasses(part.toArray(new Class<?>[0]));
                    } catch (Throwable e) {
                        // one unmodifiable class must not stop the round: retry one by one
                        for (Class<?> c : part) {
                            try { inst.retransformClasses(c); } catch (Throwable ignored) { }
                        }
                    }
                    worst = Math.max(worst, System.nanoTime() - t0);
                    rounds++;
                }
                System.out.printf("retransform-agent: retransformed %d classes in %d batches, slowest batch %d ms%n",
                        all.size(), rounds, worst / 1_000_000);
                Thread.sleep(period * 1000L);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static int option(String options, String key, int dflt) {
        if (options == null) return dflt;
        for (String kv : options.split(",")) {
            String[] p = kv.split("=", 2);
            if (p.length == 2 && p[0].trim().equals(key)) {
                try {
                    int v = Integer.parseInt(p[1].trim());
                    if (v > 0) return v;
                } catch (NumberFormatException ignored) { }
                throw new IllegalArgumentException("retransform-agent: option " + key + " must be a positive integer, got " + p[1]);
            }
        }
        return dflt;
    }
}
