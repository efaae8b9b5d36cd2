package dev.diagnostics.jvm.operator.mutator;

/**
 * Something the mutation could not do, or chose not to. {@code blocking} findings mean the
 * container did not get the injection; the status lists the pod with the reason.
 */
public record Finding(String container, Reason reason, String message) {

  public enum Reason {
    /**
     * JAVA_TOOL_OPTIONS comes from valueFrom and JDK_JAVA_OPTIONS cannot take the flags either
     * (valueFrom too, or envFrom may set it): left untouched (never the $(VAR) trick).
     */
    ValueFromNotMerged(true),
    /**
     * JAVA_TOOL_OPTIONS comes from valueFrom: the flags went into JDK_JAVA_OPTIONS (java launcher
     * only).
     */
    FlagsInJdkJavaOptions(false),
    /** No JAVA_TOOL_OPTIONS in env but envFrom may define it: an env entry would override it. */
    EnvFromNotMerged(true),
    /** spec.containers names a container the pod does not have. */
    ContainerNotFound(true),
    /** Another volume is already mounted at /tmp or /tmp/jvmdiag. */
    TmpAlreadyMounted(true),
    /** A known proxy sidecar was skipped by the default container choice. */
    ProxySkipped(false),
    /** Sidecar mode: the app's user is unknown, the sidecar may not read its hsperfdata. */
    SidecarUserUnknown(false),
    /**
     * An entry of jvmOptions.extra is not allowed (JvmOptionPolicy): left out, the rest injected.
     */
    OptionRefused(false);

    public final boolean blocking;

    Reason(boolean blocking) {
      this.blocking = blocking;
    }
  }

  public boolean blocking() {
    return reason.blocking;
  }
}
