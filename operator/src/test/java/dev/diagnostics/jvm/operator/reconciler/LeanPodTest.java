package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.api.JvmDiagnosticsSpec;
import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.mutator.InjectionConfig;
import dev.diagnostics.jvm.operator.mutator.PodMutator;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarSourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The inspection of a lean labelled pod says what it says of the full pod. */
class LeanPodTest {
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  static Pod pod(InjectionConfig config, Consumer<Pod> change) throws IOException {
    Pod p = JSON.unmarshal(CacheFootprint.resource("/cache/pod.json"), Pod.class);
    p.getMetadata().setLabels(new HashMap<>(p.getMetadata().getLabels()));
    p.getMetadata().getLabels().put(INJECT_LABEL, "checkout");
    // as the webhook leaves it: mutated, stamped with this configuration
    p = PodMutator.mutate(p, config).pod();
    change.accept(p);
    return p;
  }

  static void sameReport(InjectionConfig config, Consumer<Pod> change) throws IOException {
    Pod full = pod(config, change);
    Pod lean = pod(config, change);
    Lean.pod(lean);
    var a = PodInspector.inspect(List.of(full), "checkout", null, config);
    var b = PodInspector.inspect(List.of(lean), "checkout", null, config);
    assertThat(b.injected()).isEqualTo(a.injected());
    assertThat(b.live()).isEqualTo(a.live()).isEqualTo(1);
    assertThat(b.missing()).usingRecursiveComparison().isEqualTo(a.missing());
    assertThat(b.launcherOnly()).isEqualTo(a.launcherOnly());
  }

  static InjectionConfig config(JvmDiagnosticsSpec.Collection collection) {
    JvmDiagnostics r = Fixtures.resource("checkout");
    r.getSpec().collection = collection;
    return Fixtures.config(r);
  }

  @Test
  void anInjectedPodReadsTheSameLean() throws IOException {
    for (var collection : JvmDiagnosticsSpec.Collection.values())
      sameReport(config(collection), p -> {});
  }

  @Test
  void flagsFromValueFromReadTheSameLean() throws IOException {
    sameReport(
        config(JvmDiagnosticsSpec.Collection.NodeAgent),
        p ->
            p.getSpec()
                .getContainers()
                .get(0)
                .setEnv(
                    List.of(
                        new EnvVar(
                            JAVA_TOOL_OPTIONS,
                            null,
                            new EnvVarSourceBuilder()
                                .withNewConfigMapKeyRef("opts", "jvm", false)
                                .build()))));
  }

  @Test
  void aForeignTmpMountReadsTheSameLean() throws IOException {
    sameReport(
        config(JvmDiagnosticsSpec.Collection.Sidecar),
        p ->
            p.getSpec()
                .getContainers()
                .get(0)
                .setVolumeMounts(
                    List.of(
                        new VolumeMountBuilder().withName("tmp").withMountPath("/tmp").build())));
  }

  @Test
  void aSidecarRunningAsTheAppsUserReadsTheSameLean() throws IOException {
    sameReport(
        config(JvmDiagnosticsSpec.Collection.Sidecar),
        p -> p.getSpec().getContainers().get(0).getSecurityContext().setRunAsUser(1001L));
  }

  @Test
  void keepsNoStatusBeyondThePhaseAndNoManagedFields() throws IOException {
    Pod p = pod(config(JvmDiagnosticsSpec.Collection.NodeAgent), x -> {});
    int before = JSON.asJson(p).length();
    Lean.pod(p);
    assertThat(p.getMetadata().getManagedFields()).isNullOrEmpty();
    assertThat(p.getStatus().getPhase()).isEqualTo("Running");
    assertThat(p.getStatus().getContainerStatuses()).isNullOrEmpty();
    assertThat(p.getSpec().getTolerations()).isNullOrEmpty();
    assertThat(p.getMetadata().getAnnotations())
        .containsKey(INJECTED)
        .doesNotContainKey("prometheus.io/port");
    assertThat(p.getSpec().getContainers().get(0).getEnv())
        .extracting(EnvVar::getName)
        .containsExactly(JAVA_TOOL_OPTIONS);
    assertThat(JSON.asJson(p).length()).isLessThan(before / 2);
  }

  /** As the API server makes a replica: its own name and service account token volume. */
  private static void replica(Pod p, String suffix) {
    p.getMetadata().setName("checkout-7d9f1c2b5-" + suffix);
    String token = "kube-api-access-" + suffix;
    p.getSpec().getVolumes().stream()
        .filter(v -> v.getName().startsWith("kube-api-access-"))
        .forEach(v -> v.setName(token));
    p.getSpec().getContainers().stream()
        .flatMap(c -> c.getVolumeMounts().stream())
        .filter(m -> m.getName().startsWith("kube-api-access-"))
        .forEach(m -> m.setName(token));
  }

  @Test
  void replicasOfOneTemplateShareWhatTheyHaveAlike() throws IOException {
    InjectionConfig config = config(JvmDiagnosticsSpec.Collection.NodeAgent);
    Pod a = pod(config, p -> replica(p, "aaaaa"));
    Pod b = pod(config, p -> replica(p, "bbbbb"));
    Pod other = pod(config, p -> p.getSpec().getContainers().get(0).setImage("checkout:next"));
    Lean.pod(a);
    Lean.pod(b);
    Lean.pod(other);
    assertThat(b.getSpec()).isSameAs(a.getSpec());
    assertThat(b.getMetadata().getLabels()).isSameAs(a.getMetadata().getLabels());
    assertThat(b.getMetadata().getAnnotations()).isSameAs(a.getMetadata().getAnnotations());
    assertThat(b.getStatus()).isSameAs(a.getStatus());
    assertThat(b.getMetadata().getName()).isEqualTo("checkout-7d9f1c2b5-bbbbb");
    // another template (here another image) keeps its own spec
    assertThat(other.getSpec()).isNotSameAs(a.getSpec()).isNotEqualTo(a.getSpec());
    assertThat(other.getSpec().getContainers().get(0).getImage()).isEqualTo("checkout:next");
    // what is shared cannot be changed through one pod
    assertThatThrownBy(() -> a.getMetadata().getLabels().put("x", "y"))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> a.getSpec().getContainers().get(0).getVolumeMounts().clear())
        .isInstanceOf(UnsupportedOperationException.class);
    // the inspection's re-run of the mutation copies before it changes anything
    PodMutator.mutate(a, config);
    assertThat(b.getSpec()).isEqualTo(a.getSpec());
  }
}
