package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.JAVA_TOOL_OPTIONS;
import static dev.diagnostics.jvm.operator.Contract.JDK_JAVA_OPTIONS;
import static dev.diagnostics.jvm.operator.reconciler.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarSourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Which pods the status reads, and what it says about each. */
class PodObserverTest {
  final JvmDiagnostics r = resource("cart");
  final String hash = config(r).hash();
  final AtomicInteger lists = new AtomicInteger();

  List<Pod> listed(List<Pod> all) {
    return PodObserver.podsOf(
        marked("cart", hash),
        List.of(),
        () -> {
          lists.incrementAndGet();
          return all;
        });
  }

  @Test
  void theCacheWhenItHoldsEveryPodTheWorkloadCounts() {
    List<Pod> cached =
        List.of(pod("cart-a", "cart", hash, hash), pod("cart-b", "cart", hash, hash));
    assertThat(
            PodObserver.podsOf(
                marked("cart", hash),
                cached,
                () -> {
                  lists.incrementAndGet();
                  return List.of();
                }))
        .hasSize(2);
    assertThat(lists).hasValue(0);
  }

  @Test
  void aListWhenTheWorkloadCountsPodsTheCacheCannotName() {
    List<Pod> all = List.of(pod("cart-a", "cart", hash, hash), pod("cart-b", "cart", hash, hash));
    assertThat(listed(all)).hasSize(2);
    assertThat(lists).hasValue(1);
  }

  @Test
  void aContainerThatCouldNotBeInjectedIsNamed() {
    r.getSpec().jvmOptions.extra = List.of("-XX:ReservedCodeCacheSize=256m"); // a flag to append
    String hash = config(r).hash();
    Pod p = pod("cart-d", "cart", hash, hash);
    p.getSpec()
        .getContainers()
        .get(0)
        .setEnv(
            List.of(
                new EnvVar(
                    JAVA_TOOL_OPTIONS,
                    null,
                    new EnvVarSourceBuilder().withNewConfigMapKeyRef("opts", "jvm", false).build()),
                new EnvVar(
                    JDK_JAVA_OPTIONS,
                    null,
                    new EnvVarSourceBuilder()
                        .withNewConfigMapKeyRef("opts", "launcher", false)
                        .build())));
    PodInspector.Report report =
        PodInspector.inspect(List.of(p), "cart", r.getMetadata().getCreationTimestamp(), config(r));
    assertThat(report.missing())
        .singleElement()
        .satisfies(m -> {
          assertThat(m.reason).isEqualTo("ValueFromNotMerged");
          assertThat(m.container).isEqualTo("app");
          assertThat(m.toString()).isEqualTo("cart-d (ValueFromNotMerged in container app)");
        });
  }

  @Test
  void flagsOnlyTheLauncherReadsAreInjectedButNamed() {
    r.getSpec().jvmOptions.extra = List.of("-XX:ReservedCodeCacheSize=256m");
    String hash = config(r).hash();
    Pod p = pod("cart-e", "cart", hash, hash);
    p.getSpec()
        .getContainers()
        .get(0)
        .setEnv(
            List.of(
                new EnvVar(
                    JAVA_TOOL_OPTIONS,
                    null,
                    new EnvVarSourceBuilder().withNewConfigMapKeyRef("opts", "jvm", false).build()),
                new EnvVar(JDK_JAVA_OPTIONS, config(r).flagString(), null)));
    PodInspector.Report report =
        PodInspector.inspect(List.of(p), "cart", r.getMetadata().getCreationTimestamp(), config(r));
    assertThat(report.missing()).isEmpty();
    assertThat(report.injected()).isEqualTo(1);
    assertThat(report.launcherOnly()).containsExactly("cart-e (container app)");
    Conditions.Builder c = Conditions.builder(r);
    assertThat(TargetInjection.InjectedCondition.of(c, report, null, true).getMessage())
        .isEqualTo(
            "1 pod(s) carry the current injection; JAVA_TOOL_OPTIONS comes from valueFrom, so the flags are in "
                + "JDK_JAVA_OPTIONS, which only the java launcher reads (not a JVM created through JNI), in cart-e (container app)");
  }

  @Test
  void eachPodMissingTheInjectionIsNamedWithItsReason() {
    List<Pod> pods =
        List.of(
            pod("cart-a", "cart", hash, hash),
            pod("cart-b", "cart", hash, null),
            pod("cart-c", "cart", "old", "old"));
    PodInspector.Report report =
        PodInspector.inspect(pods, "cart", r.getMetadata().getCreationTimestamp(), config(r));
    assertThat(report.live()).isEqualTo(3);
    assertThat(report.injected()).isEqualTo(1);
    assertThat(report.missing())
        .extracting(m -> m.name + "/" + m.reason)
        .containsExactly("cart-b/WebhookUnavailable", "cart-c/Outdated");
  }

  @Test
  void aPodMadeFromTheCurrentTemplateButInjectedWithAnotherConfigurationIsHealedLikeAMiss() {
    // a replica of the previous operator admitted it while the operator itself was upgraded
    List<Pod> pods =
        List.of(
            pod("cart-a", "cart", hash, "older"),
            pod("cart-b", "cart", hash + ".1", "older"),
            pod("cart-c", "cart", "older", "older"));
    PodInspector.Report report =
        PodInspector.inspect(pods, "cart", r.getMetadata().getCreationTimestamp(), config(r));
    assertThat(report.missing())
        .extracting(m -> m.name + "/" + m.reason)
        .containsExactly(
            "cart-a/OtherConfiguration", "cart-b/OtherConfiguration", "cart-c/Outdated");
    assertThat(HealDecision.missed(report.missing()))
        .as("what a heal restarts for")
        .containsExactly("cart-a", "cart-b");
  }
}
