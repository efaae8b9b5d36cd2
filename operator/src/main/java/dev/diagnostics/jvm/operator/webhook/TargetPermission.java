package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.authentication.UserInfo;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.Map;

/**
 * Whether the author of a JvmDiagnostics may change its target themselves: {@code patch} on the
 * workload, asked of the API server with a SubjectAccessReview for the admission request's user
 * (name, groups, uid, extra). The operator changes the target's pod template with its own
 * cluster-wide rights; without this check, anyone who may create a JvmDiagnostics in a namespace
 * could roll, and add JVM flags to, any workload there.
 */
public final class TargetPermission {
  public static final String VERB = "patch";
  private final KubernetesClient client;

  public TargetPermission(KubernetesClient client) {
    this.client = client;
  }

  /** Null when the user holds patch on the target, else what is missing and how to get it. */
  public String missing(UserInfo user, String namespace, TargetRef ref) {
    String resource = resource(ref.kind);
    SubjectAccessReview review =
        new SubjectAccessReviewBuilder()
            .withNewSpec()
            .withUser(user.getUsername())
            .withGroups(user.getGroups())
            .withUid(user.getUid())
            .withExtra(user.getExtra() == null ? Map.of() : Map.copyOf(user.getExtra()))
            .withNewResourceAttributes()
            .withNamespace(namespace)
            .withVerb(VERB)
            .withGroup("apps")
            .withResource(resource)
            .withName(ref.name)
            .endResourceAttributes()
            .endSpec()
            .build();
    SubjectAccessReview answer = client.authorization().v1().subjectAccessReview().create(review);
    if (answer.getStatus() != null && Boolean.TRUE.equals(answer.getStatus().getAllowed()))
      return null;
    return message(user.getUsername(), namespace, ref);
  }

  static String message(String user, String namespace, TargetRef ref) {
    String what = resource(ref.kind) + ".apps";
    return "spec.targetRef: user \""
        + user
        + "\" may not "
        + VERB
        + " "
        + what
        + " \""
        + ref.name
        + "\" in namespace \""
        + namespace
        + "\" (missing permission: "
        + VERB
        + " on "
        + what
        + "): a JvmDiagnostics changes that workload's pods, so its author must be"
        + " allowed to change the workload; check with kubectl auth can-i "
        + VERB
        + " "
        + what
        + "/"
        + ref.name
        + " -n "
        + namespace
        + ", and ask for a Role granting it (or for someone who holds it to apply the resource)";
  }

  static String resource(TargetRef.Kind kind) {
    return switch (kind) {
      case Deployment -> "deployments";
      case StatefulSet -> "statefulsets";
      case DaemonSet -> "daemonsets";
    };
  }

  /** For tests and callers that decide without the API server. */
  public interface Check {
    String missing(UserInfo user, String namespace, TargetRef ref);
  }

  public Check asCheck() {
    return this::missing;
  }
}
