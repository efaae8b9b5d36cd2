package dev.diagnostics.jvm.operator.webhook;

import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.authentication.UserInfo;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Whether the author of a JvmDiagnostics may change its target themselves: {@code patch} on the
 * workload, asked of the API server with a SubjectAccessReview for the admission request's user
 * (name, groups, uid, extra). The operator changes the target's pod template with its own
 * cluster-wide rights; without this check, anyone who may create a JvmDiagnostics in a namespace
 * could roll, and add JVM flags to, any workload there.
 *
 * <p>Two questions, the second only when the first says no: may the user patch every workload of
 * that kind in the namespace (a review without a name), and may they patch this one. RBAC can
 * restrict a rule to names ({@code resourceNames}) but never exclude one, so a yes to the first is
 * a yes for every name; the first is what most authors hold, and its answer (either way) is kept
 * for {@link #ALLOWED_FOR} per user and namespace, so creating a thousand resources for a thousand
 * workloads costs one review, not a thousand. A no to it costs at most that second, exact question.
 *
 * <p>"May" for one workload is kept for {@link #ALLOWED_FOR} per question (user, groups, uid,
 * extra, namespace, kind, name); at most {@link #MAX_ANSWERS} answers are kept, the least recently
 * asked dropped first: the same request sent again (a retry, an apply loop, or a forged
 * AdmissionReview repeated by a pod that reaches the webhook) costs no second review. A permission
 * revoked a moment ago can still be honoured for that long, as the API server's own webhook
 * authorizer caches its answers. "May not" for one workload is never kept: an author who has just
 * been granted the Role retries at once and must pass (a forger who varies the question defeats any
 * cache anyway; the webhook's limit per peer address bounds what that costs).
 */
public final class TargetPermission {
  public static final String VERB = "patch";
  static final Duration ALLOWED_FOR = Duration.ofSeconds(10);
  static final int MAX_ANSWERS = 4096;

  private final Predicate<SubjectAccessReview> ask;
  private final LongSupplier nanos;

  /** The question, as sent; name null: every object of the resource in the namespace. */
  private record Question(
      String user,
      List<String> groups,
      String uid,
      Map<String, List<String>> extra,
      String namespace,
      String resource,
      String name) {}

  /** The answer, kept until then (nanos). */
  private record Answer(boolean allowed, long until) {}

  private final LinkedHashMap<Question, Answer> answers =
      new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Question, Answer> eldest) {
          return size() > MAX_ANSWERS;
        }
      };

  public TargetPermission(KubernetesClient client) {
    this(
        review -> {
          SubjectAccessReview answer =
              client.authorization().v1().subjectAccessReview().create(review);
          return answer.getStatus() != null && Boolean.TRUE.equals(answer.getStatus().getAllowed());
        },
        System::nanoTime);
  }

  /** ask: sends one review and says whether it was allowed; nanos: the clock of the cache. */
  TargetPermission(Predicate<SubjectAccessReview> ask, LongSupplier nanos) {
    this.ask = ask;
    this.nanos = nanos;
  }

  /** Null when the user holds patch on the target, else what is missing and how to get it. */
  public String missing(UserInfo user, String namespace, TargetRef ref) {
    String resource = resource(ref.kind);
    if (allowed(question(user, namespace, resource, null), true)) return null;
    if (allowed(question(user, namespace, resource, ref.name), false)) return null;
    return message(user.getUsername(), namespace, ref);
  }

  private static Question question(UserInfo user, String namespace, String resource, String name) {
    return new Question(
        user.getUsername(),
        user.getGroups() == null ? List.of() : List.copyOf(user.getGroups()),
        user.getUid(),
        user.getExtra() == null ? Map.of() : Map.copyOf(user.getExtra()),
        namespace,
        resource,
        name);
  }

  /** The kept answer while fresh, else the API server's; keepNo: keep a no as well. */
  private boolean allowed(Question q, boolean keepNo) {
    long now = nanos.getAsLong();
    Answer known;
    synchronized (answers) {
      known = answers.get(q);
    }
    if (known != null && now - known.until() < 0) return known.allowed();
    boolean allowed = ask.test(review(q));
    synchronized (answers) {
      if (allowed || keepNo)
        answers.put(q, new Answer(allowed, nanos.getAsLong() + ALLOWED_FOR.toNanos()));
      else answers.remove(q);
    }
    return allowed;
  }

  private static SubjectAccessReview review(Question q) {
    return new SubjectAccessReviewBuilder()
        .withNewSpec()
        .withUser(q.user())
        .withGroups(q.groups())
        .withUid(q.uid())
        .withExtra(q.extra())
        .withNewResourceAttributes()
        .withNamespace(q.namespace())
        .withVerb(VERB)
        .withGroup("apps")
        .withResource(q.resource())
        .withName(q.name())
        .endResourceAttributes()
        .endSpec()
        .build();
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
