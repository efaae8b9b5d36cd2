package dev.diagnostics.jvm.operator.reconciler;

import dev.diagnostics.jvm.operator.election.LeaderElection;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The reconciler's settings.
 *
 * @param agentImage the sidecar image, as the webhook has it (part of nothing that rolls pods, but
 *     of the injection the status compares pods against)
 * @param allowedJvmOptions the cluster administrator's exceptions, as the webhook has them (the
 *     same hash)
 * @param watchNamespaces reconcile only these namespaces (empty: all)
 * @param maxRollouts the cluster-wide limit on pod-template writes that restart pods, per
 *     rolloutWindow (0: none)
 * @param leaderElection only the Lease holder reconciles (null: this replica always does)
 * @param excludedNamespaces where the webhook injects nothing: resources there are reported, never
 *     rolled
 * @param rolloutWindow the window of maxRollouts: a minute (--max-rollouts-per-minute); shorter
 *     only in tests
 * @param operator this replica and its Deployment: pod templates wait while replicas of another
 *     operator pod template may answer the webhook (null: none to wait for)
 * @param cacheSyncTimeout how long the reconciler waits for its caches' first LIST before it gives
 *     up this start and tries again (--cache-sync-timeout)
 */
public record ReconcilerSettings(
    String agentImage,
    List<String> allowedJvmOptions,
    Set<String> watchNamespaces,
    int maxRollouts,
    LeaderElection leaderElection,
    List<String> excludedNamespaces,
    Duration rolloutWindow,
    OperatorRollout.Self operator,
    Duration cacheSyncTimeout) {
  /** --cache-sync-timeout's default. */
  public static final Duration DEFAULT_CACHE_SYNC_TIMEOUT = Duration.ofSeconds(60);

  /** maxRolloutsPerMinute: the limit as --max-rollouts-per-minute and the chart give it. */
  public ReconcilerSettings(
      String agentImage,
      List<String> allowedJvmOptions,
      Set<String> watchNamespaces,
      int maxRolloutsPerMinute,
      LeaderElection leaderElection,
      List<String> excludedNamespaces) {
    this(
        agentImage,
        allowedJvmOptions,
        watchNamespaces,
        maxRolloutsPerMinute,
        leaderElection,
        excludedNamespaces,
        Duration.ofMinutes(1),
        null,
        null);
  }

  /** Tests: a shorter rollout window, no operator Deployment. */
  public ReconcilerSettings(
      String agentImage,
      List<String> allowedJvmOptions,
      Set<String> watchNamespaces,
      int maxRollouts,
      LeaderElection leaderElection,
      List<String> excludedNamespaces,
      Duration rolloutWindow) {
    this(
        agentImage,
        allowedJvmOptions,
        watchNamespaces,
        maxRollouts,
        leaderElection,
        excludedNamespaces,
        rolloutWindow,
        null,
        null);
  }

  /** The default cache-sync timeout. */
  public ReconcilerSettings(
      String agentImage,
      List<String> allowedJvmOptions,
      Set<String> watchNamespaces,
      int maxRollouts,
      LeaderElection leaderElection,
      List<String> excludedNamespaces,
      Duration rolloutWindow,
      OperatorRollout.Self operator) {
    this(
        agentImage,
        allowedJvmOptions,
        watchNamespaces,
        maxRollouts,
        leaderElection,
        excludedNamespaces,
        rolloutWindow,
        operator,
        null);
  }

  public ReconcilerSettings {
    rolloutWindow = rolloutWindow == null ? Duration.ofMinutes(1) : rolloutWindow;
    cacheSyncTimeout = cacheSyncTimeout == null ? DEFAULT_CACHE_SYNC_TIMEOUT : cacheSyncTimeout;
    excludedNamespaces = excludedNamespaces == null ? List.of() : List.copyOf(excludedNamespaces);
    allowedJvmOptions = allowedJvmOptions == null ? List.of() : List.copyOf(allowedJvmOptions);
    watchNamespaces = watchNamespaces == null ? Set.of() : Set.copyOf(watchNamespaces);
  }
}
