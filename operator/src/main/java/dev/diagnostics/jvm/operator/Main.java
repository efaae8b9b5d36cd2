package dev.diagnostics.jvm.operator;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.election.LeaderElection;
import dev.diagnostics.jvm.operator.reconciler.OperatorRollout;
import dev.diagnostics.jvm.operator.reconciler.ReconcilerSettings;
import dev.diagnostics.jvm.operator.webhook.WebhookRegistration;
import dev.diagnostics.jvm.operator.webhook.WebhookSettings;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.FileInputStream;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Command line: run the operator (default) or render a resource's alert rules. */
@Command(
    name = "jvmdiag-operator",
    mixinStandardHelpOptions = true,
    version = "jvmdiag-operator 0.1.0",
    description = "Reconciles JvmDiagnostics resources and serves the pod mutating webhook.",
    subcommands = {Main.RenderRules.class, Uninstall.class},
    footer = {
      "",
      "Examples:",
      "  java -jar jvmdiag-operator.jar --kubeconfig ~/.kube/config --webhook-url https://127.0.0.1:8443 --webhook-bind 127.0.0.1:8443",
      "  java -jar jvmdiag-operator.jar render-rules examples/checkout.yaml",
      "  java -jar jvmdiag-operator.jar uninstall --namespace jvm-diagnostics --deployment jd-jvm-diagnostics-operator --webhook-config jd-jvm-diagnostics-webhook"
    })
public final class Main implements Callable<Integer> {
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
      description = "where /metrics and /healthz listen (default: ${DEFAULT-VALUE})")
  String metricsBind;

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
          "how often the webhook certificate is checked for rotation, ISO-8601 (default: ${DEFAULT-VALUE})")
  Duration certCheckInterval;

  @Option(
      names = "--webhook-warmup",
      paramLabel = "N",
      defaultValue = "5000",
      description =
          "synthetic admissions run through the webhook's handler before it listens, so the JIT has compiled "
              + "the path before the first real pod (about a second of CPU; 0: none) (default: ${DEFAULT-VALUE})")
  int webhookWarmup;

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
      defaultValue = "text",
      description =
          "log lines on stderr: text ([thread] LEVEL logger - message) or json (one object per line: time, level, "
              + "logger, thread, message, exception) (default: ${DEFAULT-VALUE})")
  dev.diagnostics.jvm.operator.logging.LogFormat logFormat;

  static final Path SA_NAMESPACE =
      Path.of("/var/run/secrets/kubernetes.io/serviceaccount/namespace");

  /** The pod's own namespace: the service account's file, $POD_NAMESPACE, else "default". */
  static String podNamespace() {
    try {
      if (Files.isReadable(SA_NAMESPACE)) {
        String ns = Files.readString(SA_NAMESPACE).trim();
        if (!ns.isEmpty()) return ns;
      }
    } catch (java.io.IOException e) {
      // fall through to the environment
    }
    String env = System.getenv("POD_NAMESPACE");
    return env != null && !env.isBlank() ? env.trim() : "default";
  }

  static String identity() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.io.IOException e) {
        host = "jvmdiag-operator";
      }
    }
    return host + "_" + java.util.UUID.randomUUID().toString().substring(0, 8);
  }

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
    dev.diagnostics.jvm.operator.logging.LogFormat.use(logFormat);
    if (webhookWarmup < 0) {
      throw new CommandLine.ParameterException(
          new CommandLine(new Main()),
          "--webhook-warmup must be 0 or more (0: no warm-up), got " + webhookWarmup);
    }
    if (webhookDrainSeconds == null) webhookDrainSeconds = webhookUrl == null ? 5 : 0;
    if (webhookDrainSeconds < 0) {
      throw new CommandLine.ParameterException(
          new CommandLine(new Main()),
          "--webhook-drain-seconds must be 0 or more, got " + webhookDrainSeconds);
    }
    if (maxRolloutsPerMinute < 0) {
      throw new CommandLine.ParameterException(
          new CommandLine(new Main()),
          "--max-rollouts-per-minute must be 0 (no limit) or more, got " + maxRolloutsPerMinute);
    }
    List<String> allowed = allowJvmOptions == null ? List.of() : List.copyOf(allowJvmOptions);
    for (String prefix : allowed) {
      String problem = dev.diagnostics.jvm.operator.api.JvmOptionPolicy.adminPrefixProblem(prefix);
      if (problem != null) {
        throw new CommandLine.ParameterException(
            new CommandLine(new Main()), "--allow-jvm-option=" + prefix + ": " + problem);
      }
    }
    OperatorRollout.Self self = null;
    if (operatorDeployment != null) {
      String pod = System.getenv("POD_NAME");
      if (pod == null || pod.isBlank()) pod = System.getenv("HOSTNAME");
      if (pod == null || pod.isBlank()) {
        throw new CommandLine.ParameterException(
            new CommandLine(new Main()),
            "--operator-deployment needs this replica's pod name in "
                + "$POD_NAME (env: POD_NAME from fieldRef metadata.name)");
      }
      self = new OperatorRollout.Self(namespace, operatorDeployment, pod.trim());
    }
    KubernetesClient client = connect(kubeconfig);
    String target =
        webhookUrl != null ? webhookUrl : "service:" + webhookService + "." + namespace + ":443";
    List<String> hosts =
        webhookUrl != null
            ? List.of(java.net.URI.create(webhookUrl).getHost(), "localhost")
            : List.of(
                webhookService + "." + namespace + ".svc",
                webhookService + "." + namespace + ".svc.cluster.local",
                webhookService + "." + namespace);
    LeaderElection election =
        leaderElection
            ? LeaderElection.defaults(
                leaderElectionNamespace != null ? leaderElectionNamespace : podNamespace(),
                leaderElectionLease,
                identity())
            : null;
    OperatorApp.Settings settings =
        new OperatorApp.Settings(
            webhook
                ? new WebhookSettings(
                    agentImage,
                    namespace,
                    address(webhookBind, "--webhook-bind"),
                    target,
                    hosts,
                    webhookSecret,
                    webhookConfig,
                    manageWebhookConfig,
                    certCheckInterval,
                    webhookWarmup,
                    allowed)
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
                    self)
                : null,
            metricsBind.isEmpty() ? null : address(metricsBind, "--metrics-bind"));
    OperatorApp app = new OperatorApp(client, settings).start();
    CountDownLatch stop = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> {
              // A stopping pod leaves the Service's endpoints a moment after SIGTERM: until the API
              // server has seen that, admissions still arrive here and must be answered, not cut
              // off.
              if (webhook && webhookDrainSeconds > 0) {
                System.err.println(
                    "jvmdiag-operator stopping: the webhook serves "
                        + webhookDrainSeconds
                        + " s more (--webhook-drain-seconds)");
                try {
                  Thread.sleep(webhookDrainSeconds * 1000L);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
              app.close();
              client.close();
              stop.countDown();
            }));
    System.err.println(
        "jvmdiag-operator running against "
            + client.getMasterUrl()
            + " (webhook "
            + (webhook ? target : "off")
            + ", reconciler "
            + (reconciler ? "on" : "off")
            + (reconciler && election != null ? ", leader election Lease " + election.lease() : "")
            + ")");
    stop.await();
    return 0;
  }

  static InetSocketAddress address(String hostPort, String flag) {
    int i = hostPort.lastIndexOf(':');
    if (i < 0)
      throw new CommandLine.ParameterException(
          new CommandLine(new Main()), flag + " must be HOST:PORT, got \"" + hostPort + "\"");
    return new InetSocketAddress(
        hostPort.substring(0, i), Integer.parseInt(hostPort.substring(i + 1)));
  }

  /** A client that has been checked: reachable, authenticated, and the CRD installed. */
  static KubernetesClient connect(Path kubeconfig) {
    return connect(kubeconfig, true);
  }

  /** requireCrd false: reachable and authenticated only. */
  static KubernetesClient connect(Path kubeconfig, boolean requireCrd) {
    Config config;
    if (kubeconfig != null) {
      if (!Files.isReadable(kubeconfig))
        throw new Errors.Fatal(
            "kubeconfig " + kubeconfig + " does not exist or is not readable (--kubeconfig)");
      try {
        config = Config.fromKubeconfig(null, Files.readString(kubeconfig), kubeconfig.toString());
      } catch (Exception e) {
        throw new Errors.Fatal("cannot read kubeconfig " + kubeconfig + ": " + Errors.oneLine(e));
      }
    } else {
      String env = System.getenv("KUBECONFIG");
      boolean inCluster = System.getenv("KUBERNETES_SERVICE_HOST") != null;
      boolean home = Files.exists(Path.of(System.getProperty("user.home"), ".kube", "config"));
      if (!inCluster && !home && (env == null || env.isBlank())) {
        throw new Errors.Fatal(
            "no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (or run in a cluster)");
      }
      if (env != null
          && !env.isBlank()
          && Arrays.stream(env.split(":")).noneMatch(p -> Files.exists(Path.of(p)))) {
        throw new Errors.Fatal(
            "KUBECONFIG=" + env + " does not exist: pass --kubeconfig FILE or fix KUBECONFIG");
      }
      config = Config.autoConfigure(null);
    }
    config = new ConfigBuilder(config).withRequestRetryBackoffLimit(1).build();
    KubernetesClient client = new KubernetesClientBuilder().withConfig(config).build();
    String url = config.getMasterUrl();
    try {
      client.getKubernetesVersion();
      if (requireCrd && !client.supports(JvmDiagnostics.class)) {
        throw new Errors.Fatal(
            "the JvmDiagnostics CRD is not installed on " + url + ": kubectl apply -f crds/");
      }
    } catch (KubernetesClientException e) {
      client.close();
      if (e.getCode() == 401 || e.getCode() == 403) {
        throw new Errors.Fatal(
            "the API server at "
                + url
                + " refused our credentials (HTTP "
                + e.getCode()
                + "): check the kubeconfig user/token");
      }
      throw new Errors.Fatal(
          "cannot reach the API server at "
              + url
              + " ("
              + Errors.oneLine(e)
              + "): is it running, and is this the right kubeconfig?");
    }
    return client;
  }

  /** Prints the PrometheusRule the operator would create for a JvmDiagnostics file. */
  @Command(
      name = "render-rules",
      mixinStandardHelpOptions = true,
      description =
          "Print the PrometheusRule YAML for the JvmDiagnostics in FILE (namespace 'default' when unset).")
  static final class RenderRules implements Callable<Integer> {
    @Parameters(paramLabel = "FILE", description = "a JvmDiagnostics YAML file")
    Path file;

    @Option(
        names = "--templates",
        paramLabel = "FILE",
        description =
            "alert templates to use instead of the ones in the jar (as monitoring/generate.py writes them)")
    Path templates;

    @Override
    public Integer call() throws Exception {
      KubernetesSerialization yaml = new KubernetesSerialization();
      JvmDiagnostics r;
      try (InputStream in = Files.newInputStream(file)) {
        r = yaml.unmarshal(in, JvmDiagnostics.class);
      }
      if (r == null || r.getSpec() == null)
        throw new Errors.Fatal(file + " holds no JvmDiagnostics spec");
      if (r.getMetadata().getNamespace() == null) r.getMetadata().setNamespace("default");
      RuleRenderer renderer;
      if (templates != null) {
        try (InputStream in = new FileInputStream(templates.toFile())) {
          renderer = RuleRenderer.fromYaml(in);
        }
      } else {
        renderer = RuleRenderer.fromClasspath();
      }
      GenericKubernetesResource rule = renderer.render(r);
      if (rule == null) {
        System.err.println(file + ": spec.alerts sets no thresholds, no PrometheusRule");
        return 0;
      }
      System.out.print(yaml.asYaml(rule));
      return 0;
    }
  }
}
