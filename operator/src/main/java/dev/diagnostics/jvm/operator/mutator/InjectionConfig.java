package dev.diagnostics.jvm.operator.mutator;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.api.CollectorsSpec;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Collection;
import dev.diagnostics.jvm.operator.api.JvmOptionPolicy;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The part of a spec that changes what is injected into a pod, and its hash. Alerts and the rollout
 * mode are not in it: changing them must not restart pods.
 *
 * <p>{@code threadStartRate} is the resource's {@code alerts.threadStartRate} threshold rounded up
 * to whole threads per second (0: none): the node agent attaches its on-demand starter probe to a
 * JVM that starts threads faster. It travels in the limits annotation but not in the hash (an alert
 * threshold must not restart pods): a pod gets a changed threshold when it is next created.
 *
 * <p>{@code stackSamplesPerSecond} is {@code stacks.samplesPerSecond} (0: unset, the agent's own
 * budget). Unlike threadStartRate it is in the hash: like maxThreadNames it is a budget that
 * changes what the agent collects from the pod's JVMs, so a change reaches the running pods.
 *
 * <p>{@code refusedOptions} are the entries of {@code jvmOptions.extra} that {@link
 * JvmOptionPolicy} refuses ("option: why"): never injected and not in the hash. The API server
 * refuses them already; this is the last line for a resource that got in another way (no validating
 * webhook, or an administrator's exception withdrawn since).
 */
public record InjectionConfig(
    List<String> containers,
    List<String> collectors,
    int maxThreadNames,
    int maxMethods,
    int maxClasses,
    int threadStartRate,
    int stackSamplesPerSecond,
    Collection collection,
    List<String> flags,
    String agentImage,
    List<String> refusedOptions) {

  /** The collectors the hash's "collectors=" line has named since its first version. */
  private static final java.util.Set<String> ORIGINAL_COLLECTORS =
      java.util.Set.of("threads", "safepoints", "vmOperations", "compilation");

  /** Without any exception of the cluster administrator's. */
  public static InjectionConfig of(JvmDiagnosticsSpec spec, String agentImage) {
    return of(spec, agentImage, List.of());
  }

  /** allowedOptions: the option prefixes the cluster administrator allowed (--allow-jvm-option). */
  public static InjectionConfig of(
      JvmDiagnosticsSpec spec, String agentImage, List<String> allowedOptions) {
    CollectorsSpec c = spec.collectors == null ? new CollectorsSpec() : spec.collectors;
    var opts =
        spec.jvmOptions == null
            ? new dev.diagnostics.jvm.operator.api.JvmOptions()
            : spec.jvmOptions;
    Collection collection = spec.collection == null ? Collection.NodeAgent : spec.collection;
    List<String> flags = new ArrayList<>();
    if (opts.preserveFramePointer) flags.add("-XX:+PreserveFramePointer");
    if (opts.safepointLog || collection == Collection.Sidecar)
      flags.add(Contract.SAFEPOINT_LOG_FLAG);
    boolean monitorFlagInExtra =
        opts.extra != null && opts.extra.contains(Contract.MONITOR_PROBES_FLAG);
    if (c.monitorsEnabled() && !monitorFlagInExtra) flags.add(Contract.MONITOR_PROBES_FLAG);
    List<String> refused = new ArrayList<>();
    if (opts.extra != null) {
      for (String o : opts.extra) {
        String why = JvmOptionPolicy.refusal(o, allowedOptions);
        if (why == null) flags.add(o);
        else refused.add(o + ": " + why);
      }
    }
    return new InjectionConfig(
        spec.containers == null ? List.of() : List.copyOf(spec.containers),
        List.copyOf(c.enabledNames()),
        c.threads == null ? 50 : c.threads.maxThreadNames,
        c.compilation == null ? 20 : c.compilation.maxMethods,
        c.monitors == null ? 20 : c.monitors.maxClasses,
        threadStartRate(spec),
        spec.stacks == null || spec.stacks.samplesPerSecond == null
            ? 0
            : spec.stacks.samplesPerSecond,
        collection,
        List.copyOf(flags),
        // the image only matters when it runs in the pod
        collection == Collection.Sidecar ? agentImage : "",
        List.copyOf(refused));
  }

  /** alerts.threadStartRate's threshold in whole threads per second, rounded up; 0 without one. */
  static int threadStartRate(JvmDiagnosticsSpec spec) {
    if (spec.alerts == null
        || spec.alerts.threadStartRate == null
        || spec.alerts.threadStartRate.threshold == null) return 0;
    double t = spec.alerts.threadStartRate.threshold;
    return t > 0 ? (int) Math.min(Integer.MAX_VALUE, Math.max(1, Math.ceil(t))) : 0;
  }

  /** The flags as appended to JAVA_TOOL_OPTIONS ("" when none). */
  public String flagString() {
    return String.join(" ", flags);
  }

  /**
   * The jvm.diagnostics.dev/limits annotation: the limits of the enabled collectors only, the
   * threshold of the agent's on-demand starter probe where the resource has a threadStartRate
   * alert, and the culprit stacks' budget where the resource sets one (it bounds several
   * collectors' stacks, so it is not tied to one of them).
   */
  public String limits() {
    StringBuilder b = new StringBuilder();
    if (collectors.contains("threads")) b.append(",maxThreadNames=").append(maxThreadNames);
    if (collectors.contains("threads") && threadStartRate > 0)
      b.append(",threadStartRate=").append(threadStartRate);
    if (collectors.contains("compilation")) b.append(",maxMethods=").append(maxMethods);
    if (collectors.contains("monitors")) b.append(",maxClasses=").append(maxClasses);
    if (stackSamplesPerSecond > 0)
      b.append(",stackSamplesPerSecond=").append(stackSamplesPerSecond);
    return b.isEmpty() ? "" : b.substring(1);
  }

  /** True when the JVM must find /tmp/jvmdiag (the safepoint log's directory). */
  public boolean needsLogDir() {
    return flags.contains(Contract.SAFEPOINT_LOG_FLAG);
  }

  /**
   * 16 hex digits of SHA-256 over a canonical text of the config; stable across releases.
   *
   * <p>The agent image is not in it: the hash is what rolls a workload, and a new agent image (a
   * `helm upgrade`) must not restart every Sidecar workload of the cluster at once. Pods get the
   * new sidecar image at their next rollout. The line stays, always empty, so hashes written before
   * the image was left out stay the same for NodeAgent resources.
   *
   * <p>The text follows what the pod gets, never which fields the resource spells out. The
   * collectors added after the first version add a line only in the state that version did not
   * inject: {@code monitors} when on (its flag and limit), {@code parking} when off. So a resource
   * that sets {@code monitors.enabled} either way keeps the hash earlier releases wrote, while one
   * that leaves it unset gets a new hash once, when the operator that turns monitors on by default
   * first reconciles it: its pods now get -XX:+DTraceMonitorProbes and must roll to get it. Pods
   * injected before {@code parking} existed name it in their collectors annotation from their next
   * rollout on. {@code stacks.samplesPerSecond} adds a line only when set, so resources without it
   * keep their hash.
   */
  public String hash() {
    List<String> original = collectors.stream().filter(ORIGINAL_COLLECTORS::contains).toList();
    String canonical =
        "v1\ncontainers="
            + String.join(",", containers)
            + "\ncollectors="
            + String.join(",", original)
            + "\nmaxThreadNames="
            + maxThreadNames
            + "\nmaxMethods="
            + maxMethods
            + "\ncollection="
            + collection
            + "\nflags="
            + String.join("\u0000", flags)
            + "\nagentImage="
            + (collectors.contains("monitors") ? "\nmonitors=maxClasses=" + maxClasses : "")
            + (collectors.contains("parking") ? "" : "\nparking=off")
            + (stackSamplesPerSecond > 0
                ? "\nstacks=samplesPerSecond=" + stackSamplesPerSecond
                : "");
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
