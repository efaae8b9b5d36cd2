package dev.diagnostics.jvm.operator.reconciler;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's own rollout, as the pod templates it writes must see it. Every replica serves the
 * webhook, and while the operator's Deployment rolls out, replicas of the previous pod template
 * still answer admissions with the injection their version computes. A workload rolled then gets
 * pods injected the previous way; healed, it may meet such a replica again. So the leader writes a
 * pod template (a new configuration or a heal) only while no replica of another pod template may
 * still answer: none that is ready, and none that is stopping.
 *
 * <p>Checked against the API server at most every {@link #RECHECK}, for all resources at once.
 */
public final class OperatorRollout {
  private static final Logger LOG = LoggerFactory.getLogger(OperatorRollout.class);
  static final String TEMPLATE_HASH = "pod-template-hash";
  static final Duration RECHECK = Duration.ofSeconds(2);

  /** How soon a waiting resource looks again. */
  static final Duration REQUEUE = Duration.ofSeconds(5);

  /** This replica: its namespace, the Deployment it belongs to and its own pod's name. */
  public record Self(String namespace, String deployment, String pod) {}

  /**
   * Why templates wait: the replicas of another pod template that may still answer the webhook.
   *
   * @param pods their names, sorted
   * @param ownTemplate this replica's pod-template-hash
   */
  record Wait(Self self, List<String> pods, String ownTemplate) {
    String describe() {
      return "replica(s) "
          + String.join(", ", pods.stream().limit(5).toList())
          + (pods.size() > 5 ? " and " + (pods.size() - 5) + " more" : "")
          + " of another pod template of deployment/"
          + self.deployment()
          + " in namespace "
          + self.namespace()
          + " (this replica's is "
          + ownTemplate
          + ")";
    }

    /** The command that shows the operator's rollout. */
    String statusCommand() {
      return "kubectl -n " + self.namespace() + " rollout status deployment/" + self.deployment();
    }
  }

  private final Self self;
  private LabelSelector selector;
  private String ownTemplate;
  private Instant checked;
  private Wait last;

  /** self: null for a rollout that never waits. */
  OperatorRollout(Self self) {
    this.self = self;
  }

  /** null: a pod template may be written now; else why not yet. */
  synchronized Wait waitFor(KubernetesClient client, Instant now) {
    if (self == null) return null;
    if (checked != null && Duration.between(checked, now).compareTo(RECHECK) < 0) return last;
    if (selector == null) {
      Pod own = client.pods().inNamespace(self.namespace()).withName(self.pod()).get();
      Deployment d =
          client
              .apps()
              .deployments()
              .inNamespace(self.namespace())
              .withName(self.deployment())
              .get();
      if (own == null || d == null) {
        throw new IllegalStateException(
            "cannot find the operator's own "
                + (own == null ? "pod " + self.pod() : "Deployment " + self.deployment())
                + " in namespace "
                + self.namespace()
                + " (--operator-deployment, $POD_NAME): pod templates are"
                + " written only once every replica runs this replica's pod template");
      }
      String hash = labels(own).get(TEMPLATE_HASH);
      if (hash == null) {
        throw new IllegalStateException(
            "the operator's pod "
                + self.pod()
                + " has no "
                + TEMPLATE_HASH
                + " label: it was not made by"
                + " Deployment "
                + self.deployment()
                + " (--operator-deployment)");
      }
      selector = d.getSpec().getSelector(); // immutable in apps/v1
      ownTemplate = hash;
    }
    List<Pod> pods =
        client.pods().inNamespace(self.namespace()).withLabelSelector(selector).list().getItems();
    List<String> others = others(pods, ownTemplate);
    Wait wait = others.isEmpty() ? null : new Wait(self, others, ownTemplate);
    if ((wait == null) != (last == null) || checked == null) {
      if (wait != null)
        LOG.info(
            "pod templates wait for the operator's own rollout: {} may still answer the webhook",
            wait.describe());
      else if (checked != null)
        LOG.info(
            "the operator's rollout is done: every replica serving the webhook runs pod template {}",
            ownTemplate);
    }
    checked = now;
    last = wait;
    return wait;
  }

  /**
   * The replicas of another pod template that may still answer admissions: ready (in the Service's
   * endpoints), or stopping (a replica that drains keeps serving for a while, and the API server's
   * view of the endpoints lags). A replica that never became ready serves nothing.
   */
  static List<String> others(List<Pod> pods, String ownTemplate) {
    return pods.stream()
        .filter(p -> !ownTemplate.equals(labels(p).get(TEMPLATE_HASH)))
        .filter(p ->
            !PodInspector.finished(p)
                && (p.getMetadata().getDeletionTimestamp() != null || ready(p)))
        .map(p -> p.getMetadata().getName())
        .sorted()
        .toList();
  }

  private static boolean ready(Pod p) {
    return p.getStatus() != null
        && p.getStatus().getConditions() != null
        && p.getStatus().getConditions().stream()
            .anyMatch(c -> "Ready".equals(c.getType()) && "True".equals(c.getStatus()));
  }

  private static Map<String, String> labels(Pod p) {
    return p.getMetadata().getLabels() == null ? Map.of() : p.getMetadata().getLabels();
  }
}
