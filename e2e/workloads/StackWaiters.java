import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads that wait from known Java stacks: a contended monitor enter and a park at the end of
 * two known chains (e2e/agent_stacks.py: the agent's monitor_wait and park stacks against JFR's
 * jdk.JavaMonitorEnter and jdk.ThreadPark). Run by StackStarters, in the same JVM.
 *
 * Chain A: waitA -> levelA1 -> ... -> levelA12, which calls lockA (a synchronized block on
 * LOCK) and then parkA (LockSupport.parkNanos, a timed park that blocks). Chain B the same with
 * levelB*, lockB and parkB (LockSupport.park with the thread's permit given first: it returns
 * at once, still one park to the JVM, through another JDK method).
 *
 * warmUp(N): `warm-W` runs each chain N times, uncontended, 1 in 64 with a real park (the others
 * pass 0 and do not park), so the JIT compiles the chains with every branch they take later.
 * N is larger than the thread starts' warm-up: C2 without tiers raises its thresholds while
 * its queue is long, and a chain called as fast as this one may otherwise stay partly
 * interpreted.
 *
 * measure(R): `holder` and four waiters, `waiter-a-0..2` on chain A and `waiter-b-0` on chain B,
 * R rounds. In round r the holder takes LOCK, opens the round, and lets LOCK go only once each
 * waiter is BLOCKED on it; so every waiter's enter is contended: it ran the
 * monitor__contended__enter probe (after the state change, in the same function) and JFR commits
 * a jdk.JavaMonitorEnter once it enters. The holder opens the next round once all four entered.
 * In all 3R and R contended enters and 3R and R parks, on chains A and B. The holder's own
 * enters are never contended (it waits for the waiters before taking LOCK again).
 */
public class StackWaiters {
    static final Object LOCK = new Object();
    /** The round the holder opened (set while it holds LOCK); the warm-up never waits. */
    static volatile int round = Integer.MAX_VALUE;
    /** Enters of LOCK through lockA and lockB (held: the same, under LOCK). */
    static final AtomicInteger ENTERED = new AtomicInteger();
    static int held;
    /** Measured parks: nanoseconds a chain A park lasts at most. */
    static final long PARK_NANOS = 20_000;

    static int lockA() {
        synchronized (LOCK) {
            held++;
        }
        return ENTERED.incrementAndGet(); // after the exit: the holder's next enter finds LOCK free
    }

    static void parkA(long nanos) {
        LockSupport.parkNanos(nanos); // 0: returns without parking
    }

    static int levelA12(long p) {
        int e = lockA();
        parkA(p);
        return e;
    }
    static int levelA11(long p) { return levelA12(p); }
    static int levelA10(long p) { return levelA11(p); }
    static int levelA9(long p) { return levelA10(p); }
    static int levelA8(long p) { return levelA9(p); }
    static int levelA7(long p) { return levelA8(p); }
    static int levelA6(long p) { return levelA7(p); }
    static int levelA5(long p) { return levelA6(p); }
    static int levelA4(long p) { return levelA5(p); }
    static int levelA3(long p) { return levelA4(p); }
    static int levelA2(long p) { return levelA3(p); }
    static int levelA1(long p) { return levelA2(p); }

    static int lockB() {
        synchronized (LOCK) {
            held++;
        }
        return ENTERED.incrementAndGet(); // after the exit: the holder's next enter finds LOCK free
    }

    static void parkB(boolean really) {
        if (really) {
            LockSupport.unpark(Thread.currentThread());
            LockSupport.park();
        }
    }

    static int levelB12(long p) {
        int e = lockB();
        parkB(p != 0);
        return e;
    }
    static int levelB11(long p) { return levelB12(p); }
    static int levelB10(long p) { return levelB11(p); }
    static int levelB9(long p) { return levelB10(p); }
    static int levelB8(long p) { return levelB9(p); }
    static int levelB7(long p) { return levelB8(p); }
    static int levelB6(long p) { return levelB7(p); }
    static int levelB5(long p) { return levelB6(p); }
    static int levelB4(long p) { return levelB5(p); }
    static int levelB3(long p) { return levelB4(p); }
    static int levelB2(long p) { return levelB3(p); }
    static int levelB1(long p) { return levelB2(p); }

    /**
     * Waits until the holder opened round r (never in the warm-up). Not inlined (the test's
     * CompileCommand): the warm-up never runs its loop, so compiled it traps on the first wait,
     * which must not deoptimize the chain's root.
     */
    static void awaitRound(int r) {
        while (round < r) {
            Thread.yield();
        }
    }

    /** Chain A `rounds` times; a real park (p) every (mask + 1)-th time, none in between. */
    static int waitA(int rounds, int mask) {
        int n = 0;
        for (int r = 1; r <= rounds; r++) {
            awaitRound(r);
            levelA1((r & mask) == 0 ? PARK_NANOS : 0);
            n++;
        }
        return n;
    }

    static int waitB(int rounds, int mask) {
        int n = 0;
        for (int r = 1; r <= rounds; r++) {
            awaitRound(r);
            levelB1((r & mask) == 0 ? 1 : 0);
            n++;
        }
        return n;
    }

    static void warmUp(int n) {
        waitA(n, 63);
        waitB(n, 63);
    }

    static Thread waiter(final String name, final boolean a, final int rounds, final int[] out,
                         final int slot) {
        return new Thread(new Runnable() {
            @Override
            public void run() {
                out[slot] = a ? waitA(rounds, 0) : waitB(rounds, 0);
            }
        }, name);
    }

    /** Until t is BLOCKED (on LOCK: the holder holds it); false after 30 s. */
    static boolean awaitBlocked(Thread t) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (t.getState() != Thread.State.BLOCKED) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.yield();
        }
        return true;
    }

    /** The holder's rounds; the rounds in which a waiter did not block. */
    static int hold(int rounds, Thread[] waiters) {
        int unblocked = 0;
        for (int r = 1; r <= rounds; r++) {
            synchronized (LOCK) {
                round = r;
                for (Thread w : waiters) {
                    if (!awaitBlocked(w)) {
                        unblocked++;
                        break;
                    }
                }
            }
            while (ENTERED.get() < r * waiters.length) {
                Thread.yield();
            }
        }
        return unblocked;
    }

    /**
     * R measured rounds: "A B UNBLOCKED", the contended enters (and parks) on chain A and B and
     * the rounds in which a waiter did not block (then the counts are off).
     */
    static String measure(final int rounds) throws InterruptedException {
        if (rounds == 0) {
            return "0 0 0";
        }
        // Each class the waiters and the holder use loaded first (LockSupport through chain A
        // without a park, Thread.State): without a warm-up, waiters loading one at once
        // contend on its class loader's lock, enters that are not the ones measured.
        waitA(1, 1);
        waitB(1, 1);
        Thread.currentThread().getState();
        round = 0;
        ENTERED.set(0);
        final int[] done = new int[4];
        final Thread[] waiters = {
            waiter("waiter-a-0", true, rounds, done, 0),
            waiter("waiter-a-1", true, rounds, done, 1),
            waiter("waiter-a-2", true, rounds, done, 2),
            waiter("waiter-b-0", false, rounds, done, 3),
        };
        final int[] unblocked = new int[1];
        Thread holder = new Thread(new Runnable() {
            @Override
            public void run() {
                unblocked[0] = hold(rounds, waiters);
            }
        }, "holder");
        for (Thread w : waiters) {
            w.start();
        }
        holder.start();
        holder.join();
        for (Thread w : waiters) {
            w.join();
        }
        return (done[0] + done[1] + done[2]) + " " + done[3] + " " + unblocked[0];
    }
}
