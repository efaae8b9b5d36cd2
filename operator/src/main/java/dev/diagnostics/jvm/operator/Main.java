package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.logging.Logging;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * The jar's entry point: runs the operator (no subcommand), render-rules or uninstall. Running the
 * operator: check the flags ({@link Options}), connect ({@link ApiConnection}), start the parts
 * ({@link OperatorApp}), then serve until SIGTERM.
 */
@Command(
    name = "jvmdiag-operator",
    mixinStandardHelpOptions = true,
    version = "jvmdiag-operator 0.1.0",
    description = "Reconciles JvmDiagnostics resources and serves the pod mutating webhook.",
    subcommands = {RenderRules.class, Uninstall.class},
    footer = {
      "",
      "Examples:",
      "  java -jar jvmdiag-operator.jar --kubeconfig ~/.kube/config --webhook-url https://127.0.0.1:8443 --webhook-bind 127.0.0.1:8443",
      "  java -jar jvmdiag-operator.jar render-rules examples/checkout.yaml",
      "  java -jar jvmdiag-operator.jar uninstall --namespace jvm-diagnostics --deployment jd-jvm-diagnostics-operator --webhook-config jd-jvm-diagnostics-webhook"
    })
public final class Main implements Callable<Integer> {
  @Mixin Options options;

  public static void main(String[] args) {
    CommandLine cl = new CommandLine(new Main());
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      System.err.println("error: " + Errors.oneLine(e));
      return 1;
    });
    System.exit(cl.execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Logging.configure(options.logFormat, options.logLevel);
    options.validate();
    KubernetesClient client = ApiConnection.connect(options.kubeconfig);
    OperatorApp.Settings settings = options.settings();
    OperatorApp app = new OperatorApp(client, settings).start();
    CountDownLatch stopped = new CountDownLatch(1);
    int drainSeconds = settings.webhook() != null ? options.webhookDrainSeconds() : 0;
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              drainWebhook(drainSeconds);
              app.close();
              client.close();
              stopped.countDown();
            }));
    log().info(runningLine(client, settings));
    stopped.await();
    return 0;
  }

  /** Not a static field: --help and the subcommands need no logging set up. */
  private static Logger log() {
    return LoggerFactory.getLogger(Main.class);
  }

  /** The one line that says the operator is up, against which API server, with which parts. */
  private static String runningLine(KubernetesClient client, OperatorApp.Settings settings) {
    LeaderElection election =
        settings.reconciler() != null ? settings.reconciler().leaderElection() : null;
    return "jvmdiag-operator running against "
        + client.getMasterUrl()
        + " (webhook "
        + (settings.webhook() != null ? settings.webhook().target() : "off")
        + ", reconciler "
        + (settings.reconciler() != null ? "on" : "off")
        + (election != null ? ", leader election Lease " + election.lease() : "")
        + ")";
  }

  /**
   * A stopping pod leaves the Service's endpoints a moment after SIGTERM: until the API server has
   * seen that, admissions still arrive here and must be answered, not cut off.
   */
  private static void drainWebhook(int seconds) {
    if (seconds <= 0) return;
    log()
        .info(
            "jvmdiag-operator stopping: the webhook serves {} s more (--webhook-drain-seconds)",
            seconds);
    try {
      Thread.sleep(seconds * 1000L);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
