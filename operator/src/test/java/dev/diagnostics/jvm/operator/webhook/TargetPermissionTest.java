package dev.diagnostics.jvm.operator.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.TargetRef;
import io.fabric8.kubernetes.api.model.authentication.UserInfo;
import io.fabric8.kubernetes.api.model.authentication.UserInfoBuilder;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The access review's answers, kept briefly per question (fake clock, counted reviews): first the
 * namespace-wide question (no name), then the one workload's. sent: the reviews that name a
 * workload; everyOne: the namespace-wide ones.
 */
class TargetPermissionTest {
  final AtomicLong now = new AtomicLong(5_000_000_000L);
  final List<SubjectAccessReview> sent = new ArrayList<>();
  final List<SubjectAccessReview> everyOne = new ArrayList<>();
  boolean allow = true; // on the one workload
  boolean allowEveryOne = false; // on every workload of the kind in the namespace
  final TargetPermission permission =
      new TargetPermission(
          r -> {
            if (r.getSpec().getResourceAttributes().getName() == null) {
              everyOne.add(r);
              return allowEveryOne;
            }
            sent.add(r);
            return allow;
          },
          now::get);

  static UserInfo user(String name, String... groups) {
    return new UserInfoBuilder()
        .withUsername(name)
        .withGroups(groups)
        .withUid("uid-" + name)
        .build();
  }

  static TargetRef target(String name) {
    TargetRef ref = new TargetRef();
    ref.kind = TargetRef.Kind.Deployment;
    ref.name = name;
    return ref;
  }

  void advanceSeconds(double s) {
    now.addAndGet((long) (s * 1e9));
  }

  @Test
  void sendsTheRequestsUserAndTheTarget() {
    UserInfo dev = user("dev", "team-a");
    dev.setExtra(Map.of("scopes", List.of("x")));
    assertThat(permission.missing(dev, "shop", target("checkout"))).isNull();
    var spec = sent.get(0).getSpec();
    assertThat(spec.getUser()).isEqualTo("dev");
    assertThat(spec.getGroups()).containsExactly("team-a");
    assertThat(spec.getUid()).isEqualTo("uid-dev");
    assertThat(spec.getExtra()).isEqualTo(Map.of("scopes", List.of("x")));
    var attrs = spec.getResourceAttributes();
    assertThat(
            List.of(attrs.getNamespace(), attrs.getVerb(), attrs.getGroup(), attrs.getResource()))
        .containsExactly("shop", "patch", "apps", "deployments");
    assertThat(attrs.getName()).isEqualTo("checkout");
  }

  @Test
  void theSameQuestionIsAskedOnceWhileTheAnswerIsFresh() {
    for (int i = 0; i < 1000; i++)
      assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNull();
    assertThat(sent).hasSize(1);
    advanceSeconds(TargetPermission.ALLOWED_FOR.toSeconds() + 0.001);
    permission.missing(user("dev"), "shop", target("checkout"));
    assertThat(sent).hasSize(2);
  }

  @Test
  void anyDifferenceIsAnotherQuestion() {
    permission.missing(user("dev"), "shop", target("checkout"));
    permission.missing(user("dev", "team-a"), "shop", target("checkout"));
    permission.missing(user("ops"), "shop", target("checkout"));
    permission.missing(user("dev"), "bank", target("checkout"));
    permission.missing(user("dev"), "shop", target("ledger"));
    TargetRef sts = target("checkout");
    sts.kind = TargetRef.Kind.StatefulSet;
    permission.missing(user("dev"), "shop", sts);
    assertThat(sent).hasSize(6);
  }

  @Test
  void aRefusalIsNeverKept() {
    allow = false;
    assertThat(permission.missing(user("dev"), "shop", target("checkout")))
        .contains("may not patch deployments.apps \"checkout\"");
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNotNull();
    assertThat(sent).hasSize(2);
    // the author is granted the Role and retries at once
    allow = true;
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNull();
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNull();
    assertThat(sent).hasSize(3);
  }

  @Test
  void aPermissionRevokedIsHonouredNoLongerThanTheAnswerIsKept() {
    permission.missing(user("dev"), "shop", target("checkout"));
    allow = false;
    advanceSeconds(TargetPermission.ALLOWED_FOR.toSeconds() - 0.001);
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNull();
    advanceSeconds(0.002);
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNotNull();
    assertThat(sent).hasSize(2);
  }

  @Test
  void keepsAtMostItsBoundOfAnswers() {
    for (int i = 0; i <= TargetPermission.MAX_ANSWERS; i++)
      permission.missing(user("dev"), "shop", target("w-" + i));
    // the first one was dropped, the last is kept
    permission.missing(user("dev"), "shop", target("w-0"));
    permission.missing(user("dev"), "shop", target("w-" + TargetPermission.MAX_ANSWERS));
    assertThat(sent).hasSize(TargetPermission.MAX_ANSWERS + 2);
  }

  @Test
  void asksForEveryWorkloadOfTheNamespaceFirst() {
    UserInfo dev = user("dev", "team-a");
    assertThat(permission.missing(dev, "shop", target("checkout"))).isNull();
    assertThat(everyOne).hasSize(1);
    var attrs = everyOne.get(0).getSpec().getResourceAttributes();
    assertThat(
            List.of(attrs.getNamespace(), attrs.getVerb(), attrs.getGroup(), attrs.getResource()))
        .containsExactly("shop", "patch", "apps", "deployments");
    assertThat(attrs.getName()).isNull();
    assertThat(everyOne.get(0).getSpec().getUser()).isEqualTo("dev");
    assertThat(everyOne.get(0).getSpec().getGroups()).containsExactly("team-a");
    // no to it: then the one workload, exactly
    assertThat(sent).hasSize(1);
  }

  @Test
  void anAuthorWhoMayPatchEveryWorkloadCostsOneReviewForAnyNumberOfTargets() {
    allowEveryOne = true;
    allow = false; // never asked
    for (int i = 0; i < 1000; i++)
      assertThat(permission.missing(user("dev"), "shop", target("w-" + i))).isNull();
    assertThat(everyOne).hasSize(1);
    assertThat(sent).isEmpty();
    // kept no longer than a yes for one workload
    advanceSeconds(TargetPermission.ALLOWED_FOR.toSeconds() + 0.001);
    allowEveryOne = false;
    assertThat(permission.missing(user("dev"), "shop", target("w-0")))
        .contains("may not patch deployments.apps \"w-0\"");
    assertThat(everyOne).hasSize(2);
    assertThat(sent).hasSize(1);
    // another kind, namespace or user is another question
    TargetRef sts = target("w-0");
    sts.kind = TargetRef.Kind.StatefulSet;
    allowEveryOne = true;
    permission.missing(user("dev"), "shop", sts);
    permission.missing(user("dev"), "bank", target("w-0"));
    permission.missing(user("ops"), "shop", target("w-0"));
    assertThat(everyOne).hasSize(5);
    assertThat(everyOne.get(2).getSpec().getResourceAttributes().getResource())
        .isEqualTo("statefulsets");
  }

  @Test
  void aNoForEveryWorkloadIsKeptButTheOneWorkloadIsAskedEachTime() {
    allow = false;
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNotNull();
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNotNull();
    assertThat(everyOne).hasSize(1);
    assertThat(sent).hasSize(2);
    // granted patch on every Deployment of the namespace meanwhile: the exact question says yes
    allow = true;
    assertThat(permission.missing(user("dev"), "shop", target("checkout"))).isNull();
    assertThat(everyOne).hasSize(1);
  }
}
