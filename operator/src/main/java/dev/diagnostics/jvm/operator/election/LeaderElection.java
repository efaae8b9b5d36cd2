package dev.diagnostics.jvm.operator.election;

import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import java.time.Duration;

/**
 * Only the holder of the Lease reconciles; the webhook serves on every replica whether it leads or
 * not. A replica that loses the Lease stops reconciling at once and stays up as a candidate.
 */
public record LeaderElection(
    String namespace,
    String leaseName,
    String identity,
    Duration leaseDuration,
    Duration renewDeadline,
    Duration retryPeriod) {
  public static LeaderElection defaults(String namespace, String leaseName, String identity) {
    return new LeaderElection(
        namespace,
        leaseName,
        identity,
        LeaderElectionConfiguration.LEASE_DURATION_DEFAULT_VALUE,
        LeaderElectionConfiguration.RENEW_DEADLINE_DEFAULT_VALUE,
        LeaderElectionConfiguration.RETRY_PERIOD_DEFAULT_VALUE);
  }

  public String lease() {
    return namespace + "/" + leaseName;
  }
}
