package dev.diagnostics.jvm.operator.mutator;

import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.api.CollectorsSpec;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.api.JvmOptionPolicy;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Collection;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The part of a spec that changes what is injected into a pod, and its hash. Alerts and the
 * rollout mode are not in it: changing them must not restart pods.
 *
 * <p>{@code refusedOptions} are the entries of {@code jvmOptions.extra} that {@link JvmOptionPolicy}
 * refuses ("option: why"): never injected and not in the hash. The API server refuses them
 * already; this is the last line for a resource that got in another way (no validating webhook,
 * or an administrator's exception withdrawn since).
 */
public record InjectionConfig(
    List<String> containers,
    List<String> collectors,
    int maxThreadNames,
    int maxMethods,
    Collection collection,
    List<String> flags,
    String agentImage,
    List<String> refusedOptions) {

  /** Without any exception of the cluster administrator's. */
  public static InjectionConfig of(JvmDiagnosticsSpec spec, String agentImage) {
    return of(spec, agentImage, List.of());
  }

  /** allowedOptions: the option prefixes the cluster administrator allowed (--allow-jvm-option). */
  public static InjectionConfig of(JvmDiagnosticsSpec spec, String agentImage, List<String> allowedOptions) {
    CollectorsSpec c = spec.collectors == null ? new CollectorsSpec() : spec.collectors;
    var opts = spec.jvmOptions == null ? new dev.diagnostics.jvm.operator.api.JvmOptions() : spec.jvmOptions;
    Collection collection = spec.collection == null ? Collection.NodeAgent : spec.collection;
    List<String> flags = new ArrayList<>();
    if (opts.preserveFramePointer) flags.add("-XX:+PreserveFramePointer");
    if (opts.safepointLog || collection == Collection.Sidecar) flags.add(Contract.SAFEPOINT_LOG_FLAG);
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
        collection,
        List.copyOf(flags),
        // the image only matters when it runs in the pod
        collection == Collection.Sidecar ? agentImage : "",
        List.copyOf(refused));
  }

  /** The flags as appended to JAVA_TOOL_OPTIONS ("" when none). */
  public String flagString() {
    return String.join(" ", flags);
  }

  /** True when the JVM must find /tmp/jvmdiag (the safepoint log's directory). */
  public boolean needsLogDir() {
    return flags.contains(Contract.SAFEPOINT_LOG_FLAG);
  }

  /**
   * 16 hex digits of SHA-256 over a canonical text of the config; stable across releases.
   *
   * <p>The agent image is not in it: the hash is what rolls a workload, and a new agent image
   * (a `helm upgrade`) must not restart every Sidecar workload of the cluster at once. Pods get
   * the new sidecar image at their next rollout. The line stays, always empty, so hashes written
   * before the image was left out stay the same for NodeAgent resources.
   */
  public String hash() {
    String canonical = "v1\ncontainers=" + String.join(",", containers)
        + "\ncollectors=" + String.join(",", collectors)
        + "\nmaxThreadNames=" + maxThreadNames
        + "\nmaxMethods=" + maxMethods
        + "\ncollection=" + collection
        + "\nflags=" + String.join("\u0000", flags)
        + "\nagentImage=";
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(d, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
