package dev.diagnostics.jvm.operator.election;

import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import java.time.Duration;

/**
 * Only the holder of the Lease reconciles; the webhook serves on every replica. A replica that
 * loses the Lease while running exits (exitOnLostLease) so it can never reconcile next to the new
 * leader; in-process tests turn that off and only see /healthz go red.
 */
public record LeaderElection(
    String namespace,
    String leaseName,
    String identity,
    Duration leaseDuration,
    Duration renewDeadline,
    Duration retryPeriod,
    boolean exitOnLostLease) {
  public static LeaderElection defaults(String namespace, String leaseName, String identity) {
    return new LeaderElection(
        namespace,
        leaseName,
        identity,
        LeaderElectionConfiguration.LEASE_DURATION_DEFAULT_VALUE,
        LeaderElectionConfiguration.RENEW_DEADLINE_DEFAULT_VALUE,
        LeaderElectionConfiguration.RETRY_PERIOD_DEFAULT_VALUE,
        true);
  }

  public String lease() {
    return namespace + "/" + leaseName;
  }
}
