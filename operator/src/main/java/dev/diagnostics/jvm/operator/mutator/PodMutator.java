package dev.diagnostics.jvm.operator.mutator;

import static dev.diagnostics.jvm.operator.Contract.*;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec.Collection;
import dev.diagnostics.jvm.operator.mutator.Finding.Reason;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The whole injection as one pure function: (pod, config) → (mutated copy, findings). No I/O, so
 * the webhook, the reconciler's status and the tests all run the same code.
 *
 * <p>Idempotent: running it on its own output changes nothing (webhook reinvocation).
 */
public final class PodMutator {
  /** Container names of service-mesh proxies and other non-JVM sidecars never chosen by default. */
  static final Set<String> PROXY_NAMES =
      Set.of(
          "istio-proxy",
          "istio-init",
          "istio-validation",
          "linkerd-proxy",
          "linkerd-init",
          "envoy",
          "envoy-sidecar",
          "consul-dataplane",
          "consul-connect-envoy",
          "cloud-sql-proxy",
          "vault-agent",
          "vault-agent-init",
          SIDECAR_NAME);

  /** Proxy images, in case a proxy runs under another name. */
  static final Pattern PROXY_IMAGE =
      Pattern.compile(
          ".*/(proxyv2|linkerd/proxy|linkerd2?-proxy|envoy|envoyproxy/envoy[^/]*|consul-dataplane|cloud-sql-proxy)(:.*|@.*)?$");

  private PodMutator() {}

  public static MutationResult mutate(Pod input, InjectionConfig config) {
    // a builder copy (no JSON round trip); every part changed below gets a new list or map
    Pod pod = new PodBuilder(input).build();
    List<Finding> findings = new ArrayList<>();
    List<Container> selected = select(pod.getSpec().getContainers(), config, findings);
    for (String refused : config.refusedOptions()) {
      findings.add(
          new Finding(
              null, Reason.OptionRefused, "spec.jvmOptions.extra: not injected: " + refused));
    }
    boolean sidecar = config.collection() == Collection.Sidecar;
    List<String> injected = new ArrayList<>();

    for (Container c : selected) {
      if (config.needsLogDir() || sidecar) {
        // the JVM refuses to start when the -Xlog file's directory is missing: mount it or skip
        if (!mountTmp(c, sidecar, findings)) continue;
      }
      if (appendFlags(c, config.flagString(), findings)) injected.add(c.getName());
    }
    if (sidecar && !selected.isEmpty()) addSidecar(pod, selected, config, findings);
    if (config.needsLogDir() || sidecar) addTmpVolume(pod);

    Map<String, String> ann =
        pod.getMetadata().getAnnotations() == null
            ? new LinkedHashMap<>()
            : new LinkedHashMap<>(pod.getMetadata().getAnnotations());
    ann.put(INJECTED, config.hash());
    ann.put(COLLECTORS, String.join(",", config.collectors()));
    ann.put(CONTAINERS, String.join(",", injected));
    ann.put(LIMITS, config.limits());
    pod.getMetadata().setAnnotations(ann);

    boolean changed = !PodChanges.between(input, pod).isEmpty();
    return new MutationResult(pod, changed, List.copyOf(injected), List.copyOf(findings));
  }

  /** spec.containers when given (missing names reported), else every non-proxy container. */
  static List<Container> select(
      List<Container> containers, InjectionConfig config, List<Finding> findings) {
    List<Container> out = new ArrayList<>();
    if (!config.containers().isEmpty()) {
      for (String name : config.containers()) {
        containers.stream()
            .filter(c -> name.equals(c.getName()))
            .findFirst()
            .ifPresentOrElse(
                out::add,
                () ->
                    findings.add(
                        new Finding(
                            name,
                            Reason.ContainerNotFound,
                            "spec.containers names \""
                                + name
                                + "\" but the pod has no such container")));
      }
      return out;
    }
    for (Container c : containers) {
      if (isProxy(c)) {
        if (!SIDECAR_NAME.equals(c.getName())) {
          findings.add(
              new Finding(
                  c.getName(),
                  Reason.ProxySkipped,
                  "proxy sidecar skipped; name it in spec.containers to instrument it anyway"));
        }
      } else {
        out.add(c);
      }
    }
    return out;
  }

  static boolean isProxy(Container c) {
    return PROXY_NAMES.contains(c.getName())
        || (c.getImage() != null && PROXY_IMAGE.matcher(c.getImage()).matches());
  }

  /**
   * Extends a literal JAVA_TOOL_OPTIONS (user's flags first); never touches valueFrom/envFrom. When
   * JAVA_TOOL_OPTIONS comes from valueFrom, the flags go into JDK_JAVA_OPTIONS instead (extended
   * when literal, added when absent), which the java launcher reads on JDK 9+; only when that one
   * comes from valueFrom too (or may come from envFrom) is the container left alone and reported.
   */
  static boolean appendFlags(Container c, String flags, List<Finding> findings) {
    if (flags.isEmpty()) return true;
    List<EnvVar> env = c.getEnv() == null ? new ArrayList<>() : new ArrayList<>(c.getEnv());
    boolean envFrom = c.getEnvFrom() != null && !c.getEnvFrom().isEmpty();
    int idx = lastIndexOf(env, JAVA_TOOL_OPTIONS);
    if (idx < 0) {
      if (envFrom) {
        findings.add(
            new Finding(
                c.getName(),
                Reason.EnvFromNotMerged,
                "container \""
                    + c.getName()
                    + "\" uses envFrom, which may set JAVA_TOOL_OPTIONS; an env entry would "
                    + "override it, so nothing was added: set JAVA_TOOL_OPTIONS under env (literal value) to get the flags"));
        return false;
      }
      env.add(new EnvVar(JAVA_TOOL_OPTIONS, flags, null));
    } else if (env.get(idx).getValueFrom() == null) {
      extend(env, idx, flags);
    } else {
      int jdk = lastIndexOf(env, JDK_JAVA_OPTIONS);
      if (jdk >= 0 && env.get(jdk).getValueFrom() != null) {
        findings.add(
            new Finding(
                c.getName(),
                Reason.ValueFromNotMerged,
                "JAVA_TOOL_OPTIONS and JDK_JAVA_OPTIONS of container \""
                    + c.getName()
                    + "\" both come from valueFrom and were "
                    + "left untouched: make one of them a literal value, or add these flags to its source: "
                    + flags));
        return false;
      }
      if (jdk < 0 && envFrom) {
        findings.add(
            new Finding(
                c.getName(),
                Reason.ValueFromNotMerged,
                "JAVA_TOOL_OPTIONS of container \""
                    + c.getName()
                    + "\" comes from valueFrom, and envFrom may set JDK_JAVA_OPTIONS "
                    + "(an env entry would override it), so nothing was added: make JAVA_TOOL_OPTIONS or JDK_JAVA_OPTIONS a "
                    + "literal value under env, or add these flags to its source: "
                    + flags));
        return false;
      }
      if (jdk < 0) env.add(new EnvVar(JDK_JAVA_OPTIONS, flags, null));
      else extend(env, jdk, flags);
      findings.add(
          new Finding(
              c.getName(),
              Reason.FlagsInJdkJavaOptions,
              "JAVA_TOOL_OPTIONS of container \""
                  + c.getName()
                  + "\" comes from valueFrom, so the flags went into JDK_JAVA_OPTIONS, "
                  + "which only the java launcher reads (JDK 9 or later; not a JVM created through JNI): "
                  + flags));
    }
    c.setEnv(env);
    return true;
  }

  /** The last entry of that name: the one Kubernetes uses. */
  private static int lastIndexOf(List<EnvVar> env, String name) {
    int idx = -1;
    for (int i = 0; i < env.size(); i++) {
      if (name.equals(env.get(i).getName())) idx = i;
    }
    return idx;
  }

  /** Appends the flags to the literal value at idx, unless it holds them already. */
  private static void extend(List<EnvVar> env, int idx, String flags) {
    EnvVar v = env.get(idx);
    String value = Objects.requireNonNullElse(v.getValue(), "");
    if (!containsFlags(value, flags)) {
      env.set(
          idx,
          new EnvVar(
              v.getName(), value.isBlank() ? flags : value.stripTrailing() + " " + flags, null));
    }
  }

  static boolean containsFlags(String value, String flags) {
    return (" " + value + " ").contains(" " + flags + " ");
  }

  /**
   * The only mounts the mutation reads: one at a path it mounts its own volume at (another volume
   * there makes it skip the container), or its own volume's. Other mounts (a service account's
   * token, with a name of its own in every pod) do not change what it does.
   */
  public static boolean readsMount(VolumeMount m) {
    String path = trim(m.getMountPath());
    return TMP_VOLUME.equals(m.getName()) || "/tmp".equals(path) || SAFEPOINT_LOG_DIR.equals(path);
  }

  /** The only volume the mutation reads: its own (added once). */
  public static boolean readsVolume(Volume v) {
    return TMP_VOLUME.equals(v.getName());
  }

  /**
   * Sidecar: the emptyDir at /tmp (hsperfdata) and its subdirectory at /tmp/jvmdiag (the log).
   * NodeAgent with the safepoint log: an emptyDir at /tmp/jvmdiag only.
   */
  static boolean mountTmp(Container c, boolean sidecar, List<Finding> findings) {
    List<VolumeMount> mounts =
        c.getVolumeMounts() == null ? new ArrayList<>() : new ArrayList<>(c.getVolumeMounts());
    List<VolumeMount> wanted =
        sidecar
            ? List.of(mount("/tmp", null), mount(SAFEPOINT_LOG_DIR, "jvmdiag"))
            : List.of(mount(SAFEPOINT_LOG_DIR, null));
    for (VolumeMount w : wanted) {
      for (VolumeMount m : mounts) {
        if (trim(m.getMountPath()).equals(w.getMountPath()) && !TMP_VOLUME.equals(m.getName())) {
          findings.add(
              new Finding(
                  c.getName(),
                  Reason.TmpAlreadyMounted,
                  "volume \""
                      + m.getName()
                      + "\" is already mounted at "
                      + w.getMountPath()
                      + " in container \""
                      + c.getName()
                      + "\"; the JVM flags need jvmdiag's own volume there, so this container was skipped"));
          return false;
        }
      }
    }
    for (VolumeMount w : wanted) {
      if (mounts.stream().noneMatch(m -> trim(m.getMountPath()).equals(w.getMountPath())))
        mounts.add(w);
    }
    c.setVolumeMounts(mounts);
    return true;
  }

  private static String trim(String path) {
    return path != null && path.length() > 1 && path.endsWith("/")
        ? path.substring(0, path.length() - 1)
        : String.valueOf(path);
  }

  private static VolumeMount mount(String path, String subPath) {
    return new VolumeMountBuilder()
        .withName(TMP_VOLUME)
        .withMountPath(path)
        .withSubPath(subPath)
        .build();
  }

  static void addTmpVolume(Pod pod) {
    List<Volume> volumes =
        pod.getSpec().getVolumes() == null
            ? new ArrayList<>()
            : new ArrayList<>(pod.getSpec().getVolumes());
    if (volumes.stream().noneMatch(v -> TMP_VOLUME.equals(v.getName()))) {
      volumes.add(
          new VolumeBuilder()
              .withName(TMP_VOLUME)
              .withNewEmptyDir()
              .withSizeLimit(new Quantity("256Mi"))
              .endEmptyDir()
              .build());
      pod.getSpec().setVolumes(volumes);
    }
  }

  /**
   * The unprivileged collector; it runs as the app's user so it may read the 0600 hsperfdata files.
   */
  static void addSidecar(
      Pod pod, List<Container> selected, InjectionConfig config, List<Finding> findings) {
    List<Container> containers = new ArrayList<>(pod.getSpec().getContainers());
    if (containers.stream().anyMatch(c -> SIDECAR_NAME.equals(c.getName()))) return;
    Long uid = appUser(pod, selected.get(0));
    if (uid == null || uid == 0L) {
      findings.add(
          new Finding(
              SIDECAR_NAME,
              Reason.SidecarUserUnknown,
              "the app's user id is not set (or is root) in securityContext.runAsUser, so the sidecar runs as 65534 and "
                  + "may not read the JVM's hsperfdata: set a non-root runAsUser for the pod"));
      uid = 65534L;
    }
    containers.add(
        new ContainerBuilder()
            .withName(SIDECAR_NAME)
            .withImage(config.agentImage())
            .withArgs(sidecarArgs(config))
            .addNewEnv()
            .withName("JVMDIAG_POD_NAME")
            .withNewValueFrom()
            .withNewFieldRef()
            .withFieldPath("metadata.name")
            .endFieldRef()
            .endValueFrom()
            .endEnv()
            .addNewEnv()
            .withName("JVMDIAG_POD_NAMESPACE")
            .withNewValueFrom()
            .withNewFieldRef()
            .withFieldPath("metadata.namespace")
            .endFieldRef()
            .endValueFrom()
            .endEnv()
            // The sidecar labels its series with the app container and the resource
            // (docs/contracts.md labels).
            .addNewEnv()
            .withName("JVMDIAG_JVMDIAGNOSTICS")
            .withNewValueFrom()
            .withNewFieldRef()
            .withFieldPath("metadata.labels['" + INJECT_LABEL + "']")
            .endFieldRef()
            .endValueFrom()
            .endEnv()
            .addNewEnv()
            .withName("JVMDIAG_CONTAINERS")
            .withValue(
                selected.stream()
                    .map(Container::getName)
                    .collect(java.util.stream.Collectors.joining(",")))
            .endEnv()
            // the limits annotation, for what the sidecar has no flag for (maxClasses)
            .addNewEnv()
            .withName(LIMITS_ENV)
            .withValue(config.limits())
            .endEnv()
            .addNewPort()
            .withName("jvmdiag-metrics")
            .withContainerPort(SIDECAR_PORT)
            .withProtocol("TCP")
            .endPort()
            .addNewVolumeMount()
            .withName(TMP_VOLUME)
            .withMountPath("/tmp")
            .endVolumeMount()
            .withNewResources()
            .addToRequests("cpu", new Quantity("10m"))
            .addToRequests("memory", new Quantity("32Mi"))
            .addToLimits("memory", new Quantity("64Mi"))
            .endResources()
            .withNewSecurityContext()
            .withRunAsNonRoot(true)
            .withRunAsUser(uid)
            .withReadOnlyRootFilesystem(true)
            .withAllowPrivilegeEscalation(false)
            .withPrivileged(false)
            .withNewCapabilities()
            .withDrop("ALL")
            .endCapabilities()
            .withNewSeccompProfile()
            .withType("RuntimeDefault")
            .endSeccompProfile()
            .endSecurityContext()
            .build());
    pod.getSpec().setContainers(containers);
  }

  /** The agent's own flags for the limits it has flags for; the rest reach it in JVMDIAG_LIMITS. */
  static List<String> sidecarArgs(InjectionConfig config) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--sidecar",
                "--listen",
                "0.0.0.0:" + SIDECAR_PORT,
                "--safepoint-log",
                SAFEPOINT_LOG));
    if (config.collectors().contains("threads"))
      args.addAll(List.of("--max-thread-names", String.valueOf(config.maxThreadNames())));
    if (config.collectors().contains("compilation"))
      args.addAll(List.of("--max-methods", String.valueOf(config.maxMethods())));
    return args;
  }

  private static Long appUser(Pod pod, Container c) {
    if (c.getSecurityContext() != null && c.getSecurityContext().getRunAsUser() != null) {
      return c.getSecurityContext().getRunAsUser();
    }
    PodSecurityContext psc = pod.getSpec().getSecurityContext();
    return psc == null ? null : psc.getRunAsUser();
  }
}
