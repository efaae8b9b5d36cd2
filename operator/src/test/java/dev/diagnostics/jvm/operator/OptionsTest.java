package dev.diagnostics.jvm.operator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.diagnostics.jvm.operator.logging.LogFormat;
import dev.diagnostics.jvm.operator.logging.LogLevel;
import dev.diagnostics.jvm.operator.webhook.PeerRateLimit;
import dev.diagnostics.jvm.operator.webhook.WebhookServer;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The operator's flags as a user types them: defaults, the checks, what each part gets. */
class OptionsTest {
  static Options parse(String... args) {
    Main m = new Main();
    new CommandLine(m).parseArgs(args);
    return m.options;
  }

  /** The message validate() refuses these flags with (picocli prints it before the usage). */
  static String refusal(String... args) {
    Options o = parse(args);
    try {
      o.validate();
    } catch (CommandLine.ParameterException e) {
      assertThat(e.getCommandLine().getCommandName()).isEqualTo("jvmdiag-operator");
      return e.getMessage();
    }
    throw new AssertionError("accepted: " + String.join(" ", args));
  }

  @Test
  void leaderElectionIsOnByDefaultWithTheDefaultLeaseName() {
    Options o = parse();
    assertThat(o.leaderElection).isTrue();
    assertThat(o.leaderElectionLease).isEqualTo("jvmdiag-operator");
    assertThat(o.leaderElectionNamespace).isNull(); // resolved from the pod at start
  }

  @Test
  void leaderElectionOffWithEitherSpelling() {
    assertThat(parse("--leader-election=false").leaderElection).isFalse();
    assertThat(parse("--no-leader-election").leaderElection).isFalse();
    assertThat(parse("--leader-election-namespace", "ops").leaderElectionNamespace)
        .isEqualTo("ops");
  }

  @Test
  void cacheSyncTimeoutIsAMinuteByDefaultAndReachesTheReconciler() {
    assertThat(parse().cacheSyncTimeout).isEqualTo(java.time.Duration.ofSeconds(60));
    assertThat(parse("--cache-sync-timeout=PT5M").settings().reconciler().cacheSyncTimeout())
        .isEqualTo(java.time.Duration.ofMinutes(5));
    assertThat(refusal("--cache-sync-timeout=PT0S"))
        .isEqualTo("--cache-sync-timeout must be positive, e.g. PT60S, got PT0S");
  }

  @Test
  void refusesNegativeCountsAndDisallowedPrefixesNamingTheFlag() {
    assertThat(refusal("--webhook-warmup=-1"))
        .isEqualTo("--webhook-warmup must be 0 or more (0: no warm-up), got -1");
    assertThat(refusal("--webhook-drain-seconds=-1"))
        .isEqualTo("--webhook-drain-seconds must be 0 or more, got -1");
    assertThat(refusal("--max-rollouts-per-minute=-1"))
        .isEqualTo("--max-rollouts-per-minute must be 0 (no limit) or more, got -1");
    assertThat(refusal("--allow-jvm-option=-Xmx1g")).startsWith("--allow-jvm-option=-Xmx1g: ");
  }

  @Test
  void acceptsTheDefaultsAndAnAllowedAgent() {
    parse().validate();
    parse("--allow-jvm-option=-javaagent:/opt/otel/opentelemetry-javaagent.jar").validate();
  }

  @Test
  void drainsFiveSecondsBehindTheServiceNoneWithAUrlUnlessGiven() {
    assertThat(parse().webhookDrainSeconds()).isEqualTo(5);
    assertThat(parse("--webhook-url", "https://127.0.0.1:9443").webhookDrainSeconds()).isZero();
    assertThat(parse("--webhook-drain-seconds", "12").webhookDrainSeconds()).isEqualTo(12);
  }

  @Test
  void webhookIsRegisteredAsTheServiceOrTheUrl() {
    Options service = parse("--namespace", "ops", "--webhook-service", "jd");
    assertThat(service.webhookTarget()).isEqualTo("service:jd.ops:443");
    assertThat(service.webhookHosts())
        .containsExactly("jd.ops.svc", "jd.ops.svc.cluster.local", "jd.ops");

    Options url = parse("--webhook-url", "https://127.0.0.1:9443");
    assertThat(url.webhookTarget()).isEqualTo("https://127.0.0.1:9443");
    assertThat(url.webhookHosts()).containsExactly("127.0.0.1", "localhost");
  }

  @Test
  void settingsLeaveOutThePartsThatAreOff() {
    OperatorApp.Settings all = parse("--webhook-bind", "127.0.0.1:0").settings();
    assertThat(all.webhook().bind()).isEqualTo(new InetSocketAddress("127.0.0.1", 0));
    assertThat(all.reconciler().leaderElection().leaseName()).isEqualTo("jvmdiag-operator");
    assertThat(all.metricsBind()).isEqualTo(new InetSocketAddress("0.0.0.0", 8080));
    // the kubelet's probes on a port of their own
    assertThat(all.probeBind()).isEqualTo(new InetSocketAddress("0.0.0.0", 8081));

    OperatorApp.Settings none =
        parse("--no-webhook", "--no-reconciler", "--metrics-bind=", "--probe-bind=").settings();
    assertThat(none.webhook()).isNull();
    assertThat(none.reconciler()).isNull();
    assertThat(none.metricsBind()).isNull();
    assertThat(none.probeBind()).isNull();

    assertThat(parse("--no-leader-election").settings().reconciler().leaderElection()).isNull();
  }

  @Test
  void theWebhooksPeerLimitsDefaultAndChangeAndAreRefusedNamingTheFlag() {
    assertThat(parse("--webhook-bind", "127.0.0.1:0").settings().webhook().peerLimits())
        .isEqualTo(WebhookServer.PeerLimits.DEFAULT);
    assertThat(WebhookServer.PeerLimits.DEFAULT)
        .isEqualTo(
            new WebhookServer.PeerLimits(new PeerRateLimit(200, 400), new PeerRateLimit(50, 100)));
    assertThat(
            parse("--webhook-validation-limit=5/10", "--webhook-pod-limit=0")
                .settings()
                .webhook()
                .peerLimits())
        .isEqualTo(new WebhookServer.PeerLimits(PeerRateLimit.NONE, new PeerRateLimit(5, 10)));
    assertThat(refusal("--webhook-validation-limit=50"))
        .isEqualTo(
            "--webhook-validation-limit: \"50\" is not RATE/BURST (requests a second per peer"
                + " address above 0, then how many at once, at least 1), e.g. 50/100; or 0 for no"
                + " limit");
    assertThat(refusal("--webhook-pod-limit=10/0")).startsWith("--webhook-pod-limit: \"10/0\"");
  }

  @Test
  void aBindAddressWithoutAPortIsRefused() {
    assertThatThrownBy(() -> parse("--webhook-bind", "localhost").settings())
        .isInstanceOf(CommandLine.ParameterException.class)
        .hasMessage("--webhook-bind must be HOST:PORT, got \"localhost\"");
  }

  @Test
  void logsLogfmtAtInfoByDefaultAsTheAgentDoes() {
    assertThat(parse().logFormat).isEqualTo(LogFormat.logfmt);
    assertThat(parse().logLevel).isEqualTo(LogLevel.info);
    Options o = parse("--log-format=json", "--log-level", "debug");
    assertThat(o.logFormat).isEqualTo(LogFormat.json);
    assertThat(o.logLevel).isEqualTo(LogLevel.debug);
    assertThatThrownBy(() -> parse("--log-level=verbose"))
        .hasMessageContaining("--log-level")
        .hasMessageContaining("error, warn, info, debug, trace");
    assertThatThrownBy(() -> parse("--log-format=text")).hasMessageContaining("logfmt, json");
  }
}
