// The smoke test's workload: a JVM that says it started, then sleeps. Its arguments are
// echoed so the test can find this exact process from the host.
public class Sleep {
  public static void main(String[] args) throws InterruptedException {
    System.out.println("sleeping " + String.join(" ", args));
    Thread.sleep(Long.MAX_VALUE);
  }
}
