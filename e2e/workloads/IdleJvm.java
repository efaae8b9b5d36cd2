/**
 * A JVM that does nothing: prints {@code READY <pid>} and sleeps (the argument, in ms; default
 * a day). The benchmarks trace it (its main class is what the agent's --match-jvm selects) beside
 * a storm the agent must not trace, from the same JDK files: the untraced neighbour's case.
 */
public class IdleJvm {
    public static void main(String[] args) throws Exception {
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(args.length > 0 ? Long.parseLong(args[0]) : 86_400_000L);
    }
}
