import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads that park (or wait in Object.wait) and stay so, for e2e/agent_locks.py (the agent's
 * in-flight tables).
 * Usage: ParkHold CTL_DIR HOLDERS [park|wait]
 * Waits for CTL_DIR/go; starts HOLDERS threads named holder-<i>, each calling LockSupport.park()
 * (park, the default) or, owning an object of its own, Object.wait() on it (wait) until released,
 * counting its own calls and timing each with System.nanoTime. Once every holder is WAITING
 * writes "parks <calls so far>" to CTL_DIR/parked; on CTL_DIR/release wakes them all and, when
 * they have returned, writes "parks <n> parked_ns <sum>" to CTL_DIR/done; waits for CTL_DIR/quit.
 */
public class ParkHold {
    static volatile boolean released;

    public static void main(String[] a) throws Exception {
        Path ctl = Path.of(a[0]);
        int holders = Integer.parseInt(a[1]);
        boolean wait = a.length > 2 && a[2].equals("wait");
        Files.writeString(ctl.resolve("ready"), ProcessHandle.current().pid() + "\n");
        while (!Files.exists(ctl.resolve("go"))) Thread.sleep(20);
        AtomicLong parks = new AtomicLong(), parkedNs = new AtomicLong();
        Thread[] ts = new Thread[holders];
        Object[] locks = new Object[holders];
        for (int i = 0; i < holders; i++) {
            Object lock = locks[i] = new Object();
            ts[i] = new Thread(() -> {
                long sum = 0;
                synchronized (lock) {
                    while (!released) {
                        parks.incrementAndGet();
                        long t0 = System.nanoTime();
                        if (wait) {
                            try {
                                lock.wait();
                            } catch (InterruptedException e) {
                                return;
                            }
                        } else {
                            LockSupport.park();
                        }
                        sum += System.nanoTime() - t0;
                    }
                }
                parkedNs.addAndGet(sum);
            }, "holder-" + i);
        }
        for (Thread t : ts) t.start();
        // HotSpot fires thread__park__begin and monitor__wait before the thread turns WAITING.
        for (Thread t : ts) {
            while (t.getState() != Thread.State.WAITING) Thread.sleep(5);
        }
        publish(ctl, "parked", "parks " + parks.get() + "\n");
        while (!Files.exists(ctl.resolve("release"))) Thread.sleep(20);
        released = true;
        for (int i = 0; i < holders; i++) {
            if (wait) {
                synchronized (locks[i]) {
                    locks[i].notifyAll();
                }
            } else {
                LockSupport.unpark(ts[i]);
            }
        }
        for (Thread t : ts) t.join();
        publish(ctl, "done", "parks " + parks.get() + " parked_ns " + parkedNs.get() + "\n");
        while (!Files.exists(ctl.resolve("quit"))) Thread.sleep(20);
    }

    /** Writes a file whole (the test never reads a half-written one). */
    static void publish(Path ctl, String name, String text) throws Exception {
        Files.writeString(ctl.resolve(name + ".tmp"), text);
        Files.move(ctl.resolve(name + ".tmp"), ctl.resolve(name));
    }
}
