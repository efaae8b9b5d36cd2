/**
 * A JVM that does nothing until it is killed: it holds one of the agent's JVM slots
 * (e2e/agent_standalone.py, the capacity test). Its main class names it (`jvm` label).
 */
public class SlotHolder {
    public static void main(String[] args) throws Exception {
        Thread.sleep(Long.MAX_VALUE);
    }
}
