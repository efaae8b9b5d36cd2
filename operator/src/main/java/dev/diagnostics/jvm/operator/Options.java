package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.api.JvmOptionPolicy;
import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.logging.LogFormat;
import dev.diagnostics.jvm.operator.logging.LogLevel;
import dev.diagnostics.jvm.operator.reconciler.OperatorRollout;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.PeerRateLimit;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import dev.diagnostics.jvm.operator.webhook.WebhookServer;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The operator's flags (the command without a subcommand, mixed into {@link Main}): their names,
 * defaults and help, the checks picocli cannot make, and what they mean for each part ({@link
 * #settings()}). The chart, hack/ and e2e/ pass these flags and the operator suite checks their
 * help and errors: names, defaults and texts are the product's interface.
 */
final class Options {
  /** The command the flags belong to: a flag's error prints its usage after the message. */
  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  @Option(
      names = "--kubeconfig",
      paramLabel = "FILE",
      description = "kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
  Path kubeconfig;

  @Option(
      names = "--namespace",
      paramLabel = "NS",
      defaultValue = "${env:POD_NAMESPACE:-jvm-diagnostics}",
      description =
          "namespace of the operator: holds the webhook certificate Secret, excluded from injection (default: $POD_NAMESPACE or ${DEFAULT-VALUE})")
  String namespace;

  @Option(
      names = "--agent-image",
      paramLabel = "IMAGE",
      defaultValue = Contract.DEFAULT_AGENT_IMAGE,
      description =
          "node agent image run as the sidecar for collection: Sidecar (default: ${DEFAULT-VALUE})")
  String agentImage;

  @Option(
      names = "--webhook-bind",
      paramLabel = "HOST:PORT",
      defaultValue = "0.0.0.0:9443",
      description =
          "where the HTTPS webhook listens; port 0 picks a free one (default: ${DEFAULT-VALUE})")
  String webhookBind;

  @Option(
      names = "--webhook-service",
      paramLabel = "NAME",
      defaultValue = "jvmdiag-operator",
      description =
          "Service in --namespace that fronts the webhook; registered as service:NAME.NS:443 (default: ${DEFAULT-VALUE})")
  String webhookService;

  @Option(
      names = "--webhook-url",
      paramLabel = "URL",
      description =
          "register this base URL instead of the Service, e.g. https://127.0.0.1:9443 for a local control plane")
  String webhookUrl;

  @Option(
      names = "--webhook-secret",
      paramLabel = "NAME",
      defaultValue = "jvmdiag-operator-webhook-tls",
      description =
          "Secret in --namespace holding the webhook CA and serving certificate, shared by replicas (default: ${DEFAULT-VALUE})")
  String webhookSecret;

  @Option(
      names = "--webhook-config",
      paramLabel = "NAME",
      defaultValue = "jvmdiag-operator",
      description =
          "name of the MutatingWebhookConfiguration the operator applies (default: ${DEFAULT-VALUE})")
  String webhookConfig;

  @Option(
      names = "--manage-webhook-config",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "apply the MutatingWebhookConfiguration with the current caBundle (default: ${DEFAULT-VALUE})")
  boolean manageWebhookConfig;

  @Option(
      names = "--webhook",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description = "serve the pod mutating webhook (default: ${DEFAULT-VALUE})")
  boolean webhook;

  @Option(
      names = "--reconciler",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description = "run the JvmDiagnostics reconciler (default: ${DEFAULT-VALUE})")
  boolean reconciler;

  @Option(
      names = "--metrics-bind",
      paramLabel = "HOST:PORT",
      defaultValue = "0.0.0.0:8080",
      description = "where /metrics listens; empty: nowhere (default: ${DEFAULT-VALUE})")
  String metricsBind;

  @Option(
      names = "--probe-bind",
      paramLabel = "HOST:PORT",
      defaultValue = "0.0.0.0:8081",
      description =
          "where the kubelet's probes listen, on a port of their own: /healthz (alive) and /readyz (the webhook serves); "
              + "empty: nowhere (default: ${DEFAULT-VALUE})")
  String probeBind;

  @Option(
      names = "--watch-namespaces",
      paramLabel = "NS,NS",
      split = ",",
      description = "reconcile only these namespaces (default: all)")
  List<String> watchNamespaces;

  @Option(
      names = "--cert-check-interval",
      paramLabel = "DURATION",
      defaultValue = "PT1H",
      description =
          "how often the webhook certificate is checked for rotation, ISO-8601, besides the watch"
              + " on its Secret and registrations that acts within seconds; previous CAs stay in the"
              + " caBundle twice this long after a CA change (default: ${DEFAULT-VALUE})")
  Duration certCheckInterval;

  @Option(
      names = "--cache-sync-timeout",
      paramLabel = "DURATION",
      defaultValue = "PT60S",
      description =
          "how long the reconciler waits for the first LIST of its caches (resources, workloads, labelled pods), ISO-8601;"
              + " past it the start is given up and tried again (with leader election: the Lease is given up first),"
              + " while the webhook keeps serving (default: ${DEFAULT-VALUE})")
  Duration cacheSyncTimeout;

  @Option(
      names = "--webhook-warmup",
      paramLabel = "N",
      defaultValue = "5000",
      description =
          "synthetic admissions run through the webhook's handler before it listens, so the JIT has compiled "
              + "the path before the first real pod (about a second of CPU; 0: none) (default: ${DEFAULT-VALUE})")
  int webhookWarmup;

  @Option(
      names = "--webhook-pod-limit",
      paramLabel = "RATE/BURST",
      defaultValue = "200/400",
      description =
          "pod admissions answered per second from one peer address, and how many at once; one over it is "
              + "admitted unchanged at once (no injection: its JvmDiagnostics names it) and counted; 0: no limit "
              + "(default: ${DEFAULT-VALUE})")
  String webhookPodLimit;

  @Option(
      names = "--webhook-validation-limit",
      paramLabel = "RATE/BURST",
      defaultValue = "50/100",
      description =
          "JvmDiagnostics validations answered per second from one peer address, and how many at once; one "
              + "over it is denied at once with 429 (no SubjectAccessReview) and counted; 0: no limit "
              + "(default: ${DEFAULT-VALUE})")
  String webhookValidationLimit;

  @Option(
      names = "--leader-election",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "only the holder of a Lease reconciles, so replicas never reconcile twice; the webhook serves on every replica (default: ${DEFAULT-VALUE})")
  boolean leaderElection;

  @Option(
      names = "--leader-election-namespace",
      paramLabel = "NS",
      description =
          "namespace of the Lease (default: the pod's namespace from the service account, $POD_NAMESPACE, else 'default')")
  String leaderElectionNamespace;

  @Option(
      names = "--leader-election-lease",
      paramLabel = "NAME",
      defaultValue = "jvmdiag-operator",
      description = "name of the Lease (default: ${DEFAULT-VALUE})")
  String leaderElectionLease;

  @Option(
      names = "--allow-jvm-option",
      paramLabel = "PREFIX",
      description =
          "the cluster administrator's exception to the diagnostic-options allowlist: JvmDiagnostics may put options "
              + "starting with PREFIX into spec.jvmOptions.extra; only Java agents (-javaagent:, -agentpath:, -agentlib:) and system "
              + "properties (-D) can be allowed, e.g. --allow-jvm-option=-javaagent:/opt/otel/opentelemetry-javaagent.jar (repeatable; default: none)")
  List<String> allowJvmOptions;

  @Option(
      names = "--max-rollouts-per-minute",
      paramLabel = "N",
      defaultValue = "60",
      description =
          "cluster-wide limit on pod-template writes that restart pods (a new config hash, a heal, a removal): "
              + "1,000 resources changed at once restart their workloads N per minute; 0: no limit (default: ${DEFAULT-VALUE})")
  int maxRolloutsPerMinute;

  @Option(
      names = "--webhook-drain-seconds",
      paramLabel = "N",
      description =
          "after SIGTERM the webhook keeps serving this long before the process stops: behind a Service the API server "
              + "learns that a replica is stopping a moment after it does, and must not send it an admission it can no longer answer "
              + "(default: 5 behind --webhook-service, 0 with --webhook-url)")
  Integer webhookDrainSeconds;

  @Option(
      names = "--operator-deployment",
      paramLabel = "NAME",
      description =
          "the Deployment in --namespace this replica belongs to (its pod is $POD_NAME): while it rolls out, replicas of "
              + "its previous pod template still answer the webhook with their version's injection, so the leader writes pod templates "
              + "(new configurations, heals) only once none of them is ready or stopping (default: none, no such wait)")
  String operatorDeployment;

  @Option(
      names = "--log-format",
      paramLabel = "FORMAT",
      defaultValue = "logfmt",
      description =
          "log lines on stderr, as the node agent writes them: logfmt (ts=… level=info target=… msg=\"…\") or json "
              + "(one object per line: timestamp, level, message, the resource being reconciled, target, error) "
              + "(default: ${DEFAULT-VALUE})")
  LogFormat logFormat;

  @Option(
      names = "--log-level",
      paramLabel = "LEVEL",
      defaultValue = "info",
      description =
          "least severe events logged: error, warn, info, debug or trace; other libraries (java-operator-sdk, "
              + "fabric8, Jetty) log warn and above unless debug or trace (default: ${DEFAULT-VALUE})")
  LogLevel logLevel;

  /**
   * The checks picocli cannot make, before anything connects. Each failure is a ParameterException
   * naming the flag: picocli prints it and the usage, and the process exits 2.
   */
  void validate() {
    if (webhookWarmup < 0) {
      throw invalid("--webhook-warmup must be 0 or more (0: no warm-up), got " + webhookWarmup);
    }
    if (webhookDrainSeconds() < 0) {
      throw invalid("--webhook-drain-seconds must be 0 or more, got " + webhookDrainSeconds());
    }
    webhookPeerLimits(); // each names its flag when it cannot be read
    if (cacheSyncTimeout.isNegative() || cacheSyncTimeout.isZero()) {
      throw invalid("--cache-sync-timeout must be positive, e.g. PT60S, got " + cacheSyncTimeout);
    }
    if (maxRolloutsPerMinute < 0) {
      throw invalid(
          "--max-rollouts-per-minute must be 0 (no limit) or more, got " + maxRolloutsPerMinute);
    }
    for (String prefix : allowedJvmOptions()) {
      String problem = JvmOptionPolicy.adminPrefixProblem(prefix);
      if (problem != null) throw invalid("--allow-jvm-option=" + prefix + ": " + problem);
    }
    if (operatorDeployment != null && ThisPod.name() == null) {
      throw invalid(
          "--operator-deployment needs this replica's pod name in "
              + "$POD_NAME (env: POD_NAME from fieldRef metadata.name)");
    }
  }

  /**
   * What each part runs with (null for a part that is off), from flags that {@link #validate()}
   * passed.
   */
  OperatorApp.Settings settings() {
    List<String> allowed = allowedJvmOptions();
    LeaderElection election =
        leaderElection
            ? LeaderElection.defaults(
                leaderElectionNamespace != null ? leaderElectionNamespace : ThisPod.namespace(),
                leaderElectionLease,
                ThisPod.identity())
            : null;
    return new OperatorApp.Settings(
        webhook
            ? new WebhookSettings(
                agentImage,
                namespace,
                address(webhookBind, "--webhook-bind"),
                webhookTarget(),
                webhookHosts(),
                webhookSecret,
                webhookConfig,
                manageWebhookConfig,
                certCheckInterval,
                webhookWarmup,
                allowed,
                webhookPeerLimits())
            : null,
        reconciler
            ? new ReconcilerSettings(
                agentImage,
                allowed,
                watchNamespaces == null ? Set.of() : Set.copyOf(watchNamespaces),
                maxRolloutsPerMinute,
                election,
                WebhookRegistration.excludedNamespaces(namespace),
                Duration.ofMinutes(1),
                operatorRollout(),
                cacheSyncTimeout)
            : null,
        metricsBind.isEmpty() ? null : address(metricsBind, "--metrics-bind"),
        probeBind.isEmpty() ? null : address(probeBind, "--probe-bind"));
  }

  /** --webhook-pod-limit and --webhook-validation-limit. */
  WebhookServer.PeerLimits webhookPeerLimits() {
    return new WebhookServer.PeerLimits(
        peerLimit("--webhook-pod-limit", webhookPodLimit),
        peerLimit("--webhook-validation-limit", webhookValidationLimit));
  }

  private PeerRateLimit peerLimit(String flag, String value) {
    try {
      return PeerRateLimit.parse(value);
    } catch (IllegalArgumentException e) {
      throw invalid(flag + ": " + e.getMessage());
    }
  }

  /** --webhook-drain-seconds, or its default: 5 behind the Service, 0 with --webhook-url. */
  int webhookDrainSeconds() {
    if (webhookDrainSeconds != null) return webhookDrainSeconds;
    return webhookUrl == null ? 5 : 0;
  }

  /** What the registrations call: --webhook-url, else the Service on port 443. */
  String webhookTarget() {
    return webhookUrl != null ? webhookUrl : "service:" + webhookService + "." + namespace + ":443";
  }

  /**
   * The names the serving certificate is issued for: the URL's host and localhost, or the names the
   * Service is called by inside the cluster.
   */
  List<String> webhookHosts() {
    if (webhookUrl != null) return List.of(URI.create(webhookUrl).getHost(), "localhost");
    return List.of(
        webhookService + "." + namespace + ".svc",
        webhookService + "." + namespace + ".svc.cluster.local",
        webhookService + "." + namespace);
  }

  /** The administrator's exceptions to the options allowlist, as given (empty: none). */
  List<String> allowedJvmOptions() {
    return allowJvmOptions == null ? List.of() : List.copyOf(allowJvmOptions);
  }

  /**
   * This replica and its Deployment, for the wait on the operator's own rollout; null without
   * --operator-deployment.
   */
  private OperatorRollout.Self operatorRollout() {
    if (operatorDeployment == null) return null;
    return new OperatorRollout.Self(namespace, operatorDeployment, ThisPod.name());
  }

  private InetSocketAddress address(String hostPort, String flag) {
    int i = hostPort.lastIndexOf(':');
    if (i < 0) throw invalid(flag + " must be HOST:PORT, got \"" + hostPort + "\"");
    return new InetSocketAddress(
        hostPort.substring(0, i), Integer.parseInt(hostPort.substring(i + 1)));
  }

  private ParameterException invalid(String message) {
    return new ParameterException(command.commandLine(), message);
  }
}
