import java.util.concurrent.locks.LockSupport;

/**
 * Parks in a method chosen by the pod's name, for e2e/agent-kube.sh: each replica of one image
 * shows its own culprit stack.
 * Usage: PodParks NAME (the pod's name, from the downward API). The method is park + "ABCDEFGH"
 * at (the sum of NAME's chars) mod 8; a thread named parker calls LockSupport.parkNanos(100 ms)
 * from it forever. Prints "IDLE <method>".
 */
public class PodParks {
    public static void main(String[] a) throws Exception {
        int i = a[0].chars().sum() % 8;
        Runnable r = switch (i) {
            case 0 -> PodParks::parkA;
            case 1 -> PodParks::parkB;
            case 2 -> PodParks::parkC;
            case 3 -> PodParks::parkD;
            case 4 -> PodParks::parkE;
            case 5 -> PodParks::parkF;
            case 6 -> PodParks::parkG;
            default -> PodParks::parkH;
        };
        Thread t = new Thread(r, "parker");
        t.start();
        System.out.println("IDLE park" + "ABCDEFGH".charAt(i));
        t.join();
    }

    // One loop per method: the parking frame is the method itself, whatever the JIT inlines.
    static void parkA() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkB() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkC() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkD() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkE() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkF() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkG() { while (true) LockSupport.parkNanos(100_000_000L); }
    static void parkH() { while (true) LockSupport.parkNanos(100_000_000L); }
}
