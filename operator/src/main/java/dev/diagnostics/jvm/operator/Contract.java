package dev.diagnostics.jvm.operator;

/** Names fixed by docs/contracts.md, shared with the webhook, the node agent and the chart. */
public final class Contract {
  private Contract() {}

  public static final String PREFIX = "jvm.diagnostics.dev/";

  /** Pod-template label written by the reconciler; the webhook's objectSelector. */
  public static final String INJECT_LABEL = PREFIX + "inject";

  /** Pod-template annotation written by the reconciler (Automatic rollout only). */
  public static final String CONFIG_HASH = PREFIX + "config-hash";

  /** Stamped by the webhook on every pod it mutated. */
  public static final String INJECTED = PREFIX + "injected";

  public static final String COLLECTORS = PREFIX + "collectors";
  public static final String CONTAINERS = PREFIX + "containers";

  /**
   * The per-resource limits of the enabled collectors, for the agent and the sidecar: {@code
   * maxThreadNames=50,maxMethods=20,maxClasses=20} (only the enabled collectors' names).
   */
  public static final String LIMITS = PREFIX + "limits";

  /** The sidecar's copy of the {@link #LIMITS} annotation (it has no API access). */
  public static final String LIMITS_ENV = "JVMDIAG_LIMITS";

  public static final String FIELD_MANAGER = "jvmdiag-operator";
  public static final String JAVA_TOOL_OPTIONS = "JAVA_TOOL_OPTIONS";

  /** Read by the java launcher only (JDK 9+, not by JNI-created JVMs): the second choice. */
  public static final String JDK_JAVA_OPTIONS = "JDK_JAVA_OPTIONS";

  /** The monitor probes fire only with it (a product flag on JDK 11 to 25). */
  public static final String MONITOR_PROBES_FLAG = "-XX:+DTraceMonitorProbes";

  public static final String SIDECAR_NAME = "jvmdiag-sidecar";
  public static final String TMP_VOLUME = "jvmdiag-tmp";
  public static final String SAFEPOINT_LOG_DIR = "/tmp/jvmdiag";

  /**
   * One log per JVM (%p): a tool JVM started in the container with the same JAVA_TOOL_OPTIONS
   * (kubectl exec … jcmd) would otherwise rotate the application's log away at its start-up.
   */
  public static final String SAFEPOINT_LOG = SAFEPOINT_LOG_DIR + "/safepoint-%p.log";

  public static final String SAFEPOINT_LOG_FLAG =
      "-Xlog:safepoint=info:file=" + SAFEPOINT_LOG + ":uptime,level,tags:filecount=3,filesize=10m";
  public static final String DEFAULT_AGENT_IMAGE = "jvmdiag/agent:dev";
  public static final int SIDECAR_PORT = 9464;
}
