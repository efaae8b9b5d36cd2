package dev.diagnostics.jvm.operator;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * What this replica knows about its own pod: the service account's namespace file and the variables
 * the chart sets from the downward API (POD_NAMESPACE, POD_NAME), with the fallbacks a run outside
 * a pod gets.
 */
final class ThisPod {
  static final Path SA_NAMESPACE =
      Path.of("/var/run/secrets/kubernetes.io/serviceaccount/namespace");

  private ThisPod() {}

  /** The pod's own namespace: the service account's file, $POD_NAMESPACE, else "default". */
  static String namespace() {
    try {
      if (Files.isReadable(SA_NAMESPACE)) {
        String ns = Files.readString(SA_NAMESPACE).trim();
        if (!ns.isEmpty()) return ns;
      }
    } catch (IOException e) {
      // fall through to the environment
    }
    String env = System.getenv("POD_NAMESPACE");
    return env != null && !env.isBlank() ? env.trim() : "default";
  }

  /** The pod's name: $POD_NAME, else $HOSTNAME (a pod's host name); null when neither is set. */
  static String name() {
    String pod = System.getenv("POD_NAME");
    if (pod == null || pod.isBlank()) pod = System.getenv("HOSTNAME");
    return pod == null || pod.isBlank() ? null : pod.trim();
  }

  /**
   * This process's name as a Lease holder: the host name and a random suffix, unique per process
   * (also across restarts of one container).
   */
  static String identity() {
    String host = System.getenv("HOSTNAME");
    if (host == null || host.isBlank()) {
      try {
        host = InetAddress.getLocalHost().getHostName();
      } catch (IOException e) {
        host = "jvmdiag-operator";
      }
    }
    return host + "_" + UUID.randomUUID().toString().substring(0, 8);
  }
}
