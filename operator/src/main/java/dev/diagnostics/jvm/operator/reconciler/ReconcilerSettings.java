package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.election.LeaderElection;
import java.util.List;
import java.util.Set;

/**
 * The reconciler's settings.
 *
 * @param agentImage the sidecar image, as the webhook has it (part of nothing that rolls pods, but
 *     of the injection the status compares pods against)
 * @param allowedJvmOptions the cluster administrator's exceptions, as the webhook has them (the same hash)
 * @param watchNamespaces reconcile only these namespaces (empty: all)
 * @param maxRolloutsPerMinute the cluster-wide limit on pod-template writes that restart pods (0: none)
 * @param leaderElection only the Lease holder reconciles (null: this replica always does)
 * @param excludedNamespaces where the webhook injects nothing: resources there are reported, never rolled
 */
public record ReconcilerSettings(String agentImage, List<String> allowedJvmOptions, Set<String> watchNamespaces,
    int maxRolloutsPerMinute, LeaderElection leaderElection, List<String> excludedNamespaces) {
  public ReconcilerSettings {
    excludedNamespaces = excludedNamespaces == null ? List.of() : List.copyOf(excludedNamespaces);
    allowedJvmOptions = allowedJvmOptions == null ? List.of() : List.copyOf(allowedJvmOptions);
    watchNamespaces = watchNamespaces == null ? Set.of() : Set.copyOf(watchNamespaces);
  }
}
