import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.locks.LockSupport;

/**
 * A C2-compiled frame deoptimized while it waits for its callee (e2e/agent_stacks_deopt.py, the
 * agent's culprit stacks). Usage: DeoptStacks DIR, with -XX:-TieredCompilation -Xbatch and the
 * CompileCommands the test gives (a() compiled and not inlined, Square.b inlined into it or
 * compiled on its own, outer(), waitHere() and Worker.run interpreted).
 *
 * `deopt-worker` calls a() 20,000 times (compiled then: its call s.b() is bound to Square.b, the
 * only implementation of Shape.b loaded, on that assumption: a class hierarchy dependency), then Worker.run -> outer -> a -> Square.b -> waitHere, which writes DIR/waiting
 * and parks at the line marked park-before until DIR/load. Then the main thread loads Circle, a
 * second implementation of Shape.b: the JVM invalidates a()'s nmethod and, since a() is on the
 * worker's stack and not on top, patches the return address waitHere holds to the nmethod's
 * deopt handler. DIR/loaded; the worker parks at the line marked park-after, with a()'s frame
 * still compiled but deoptimized, until DIR/stop (or 120 s).
 *
 * <p>Usage: DeoptStacks DIR entry: a frame the walk reaches past an entry frame (the VM calling
 * Java). `entry-worker` runs EntryWorker.run -> entryOuter, whose call of Lazy.touch() makes the
 * VM run Lazy's class initializer, which writes DIR/waiting-init and parks at the line marked
 * park-init (in parkInInit) until DIR/stop (or 120 s): below the initializer's frame lie the
 * VM's frames and then entryOuter's.
 */
public class DeoptStacks {
    abstract static class Shape {
        abstract int b(int x);
    }

    static final class Square extends Shape {
        @Override
        int b(int x) {
            waitHere(); // MARK b
            return x * 3 + 1;
        }
    }

    /** Loaded by name only (never named in code the verifier could load it for). */
    static final class Circle extends Shape {
        @Override
        int b(int x) {
            return x - 1;
        }
    }

    /** 0: warming up, 1: waiting before the load, 2: after it, 3: done. */
    static volatile int phase;
    static Path dir;
    static Shape shape = new Square();
    static volatile int sink;

    static int a(Shape s, int x) {
        return s.b(x) + 1; // MARK a
    }

    static int outer() {
        return a(shape, 7); // MARK outer
    }

    static void waitHere() {
        if (phase == 0) {
            return;
        }
        publish("waiting");
        while (phase == 1) LockSupport.parkNanos(2_000_000L); // MARK park-before
        publish("parked-after");
        while (phase == 2) LockSupport.parkNanos(2_000_000L); // MARK park-after
    }

    static void warm() {
        int sum = 0;
        for (int i = 0; i < 20_000; i++) {
            sum += a(shape, i);
        }
        sink = sum;
    }

    static final class Worker extends Thread {
        Worker() {
            super("deopt-worker");
        }

        @Override
        public void run() {
            warm();
            phase = 1;
            sink = outer(); // MARK run
        }
    }

    static final class Lazy {
        static {
            parkInInit(); // MARK clinit
        }

        static void touch() {}
    }

    static void parkInInit() {
        publish("waiting-init");
        long end = System.nanoTime() + 120_000_000_000L;
        while (!Files.exists(dir.resolve("stop")) && System.nanoTime() < end) {
            LockSupport.parkNanos(2_000_000L); // MARK park-init
        }
    }

    static void entryOuter() {
        Lazy.touch(); // MARK entry-outer
    }

    static final class EntryWorker extends Thread {
        EntryWorker() {
            super("entry-worker");
        }

        @Override
        public void run() {
            entryOuter(); // MARK entry-run
        }
    }

    /** Writes DIR/name whole. */
    static void publish(String name) {
        try {
            Path tmp = dir.resolve(name + ".tmp");
            Files.write(tmp, new byte[0]);
            Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Waits for DIR/name; false after `seconds` or on DIR/stop. */
    static boolean waitFor(String name, int seconds) throws InterruptedException {
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (!Files.exists(dir.resolve(name))) {
            if (System.nanoTime() > end || Files.exists(dir.resolve("stop"))) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
    }

    public static void main(String[] args) throws Exception {
        dir = Path.of(args[0]);
        if (args.length > 1 && args[1].equals("entry")) {
            EntryWorker e = new EntryWorker();
            e.start();
            e.join();
            return;
        }
        Worker w = new Worker();
        w.start();
        if (waitFor("load", 120)) {
            Class.forName(DeoptStacks.class.getName() + "$Circle");
            System.out.println("loaded Circle");
            System.out.flush();
            publish("loaded");
            phase = 2;
            waitFor("stop", 120);
        }
        phase = 3;
        w.join();
    }
}
