package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.CONFIG_HASH;

import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsStatus.PodMissingInjection;
import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Whether to restart the target once more so that the webhook gets the pods it missed (it was down
 * or unreachable when they were created). The rules, all kept in the cluster so that a new leader
 * decides the same:
 *
 * <ul>
 *   <li>report first, heal on a later pass: the status names the missed pods before the restart;
 *   <li>only once the last rollout settled;
 *   <li>at most once per config hash: the template's hash becomes "&lt;hash&gt;.1", which says it
 *       happened; pods missed again from that template would be missed again, so it stops and says
 *       why ({@code stillMissing});
 *   <li>two heals of one resource (each for another hash) at least {@link #INTERVAL} apart
 *       (status.lastHealTime), so a spec edited again and again while the webhook is unreachable
 *       does not restart the workload at every edit.
 * </ul>
 *
 * @param healTo the hash value to write (a heal), or null
 * @param stillMissing pods missed after this configuration's heal: stop, and say so
 * @param requeue when to look again, or null
 */
record HealDecision(String healTo, List<String> stillMissing, Duration requeue) {
  static final Duration INTERVAL = Duration.ofSeconds(60);
  static final Duration REPORT_FIRST = Duration.ofSeconds(3);
  static final HealDecision NONE = new HealDecision(null, List.of(), null);

  /**
   * @param current the marker's hash value as written (null: Manual rollout, nothing to heal)
   * @param hash the configuration's hash
   * @param missing the pods missing the injection now
   * @param reported the pods the status already names
   * @param pods the target's pods
   * @param rolloutComplete the target's last rollout settled
   * @param lastHeal status.lastHealTime, or null
   */
  static HealDecision decide(
      String current,
      String hash,
      List<PodMissingInjection> missing,
      List<PodMissingInjection> reported,
      List<Pod> pods,
      boolean rolloutComplete,
      Instant lastHeal,
      Instant now) {
    if (current == null) return NONE;
    Set<String> missed = Set.copyOf(missed(missing));
    Set<String> named =
        reported == null
            ? Set.of()
            : reported.stream().map(m -> m.name).collect(Collectors.toSet());
    // the status lists only the first entries by name and counts the others: reported means every
    // missed pod among those it lists is named, and the status has been written with the list
    boolean reportedAll =
        named.containsAll(missed(JvmDiagnosticsStatus.listed(missing)))
            && (missed.isEmpty() || !named.isEmpty());
    Duration requeue = !missed.isEmpty() && !reportedAll ? REPORT_FIRST : null;
    if (current.startsWith(hash + ".")) {
      // healed once for this hash: pods made from the healed template and still missed mean the
      // webhook is still unreachable
      List<String> again =
          pods.stream()
              .filter(p -> missed.contains(p.getMetadata().getName()))
              .filter(p ->
                  p.getMetadata().getAnnotations() != null
                      && current.equals(p.getMetadata().getAnnotations().get(CONFIG_HASH)))
              .map(p -> p.getMetadata().getName())
              .sorted()
              .toList();
      return new HealDecision(
          null, again,
          requeue); // none: the heal's rollout is still replacing the pods missed before it
    }
    if (missed.isEmpty() || !reportedAll || !rolloutComplete)
      return new HealDecision(null, List.of(), requeue);
    if (lastHeal != null && Duration.between(lastHeal, now).compareTo(INTERVAL) < 0) {
      return new HealDecision(null, List.of(), INTERVAL.minus(Duration.between(lastHeal, now)));
    }
    return new HealDecision(hash + ".1", List.of(), null);
  }

  /**
   * The missed pods a heal restarts for, by name: the webhook did not mutate them, or one of
   * another configuration did.
   */
  static List<String> missed(List<PodMissingInjection> missing) {
    return missing.stream()
        .filter(m ->
            m.reason.equals(PodInspector.Reason.WebhookUnavailable.name())
                || m.reason.equals(PodInspector.Reason.OtherConfiguration.name()))
        .map(m -> m.name)
        .sorted()
        .toList();
  }
}
