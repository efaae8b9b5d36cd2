package dev.diagnostics.jvm.operator.reconciler;

import static dev.diagnostics.jvm.operator.Contract.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.diagnostics.jvm.operator.cache.Lean;
import dev.diagnostics.jvm.operator.cache.LeanStore;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import org.junit.jupiter.api.Test;

/** What the target cache keeps of a Deployment is all the reconciler reads of it. */
class LeanTargetTest {
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  /** A Deployment as kubectl apply and the controller leave it: managedFields, last-applied. */
  static String deploymentJson() throws IOException {
    try (InputStream in = LeanTargetTest.class.getResourceAsStream("/cache/deployment.json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static Deployment deployment() throws IOException {
    Deployment d = JSON.unmarshal(deploymentJson(), Deployment.class);
    var t = d.getSpec().getTemplate().getMetadata();
    t.setLabels(new HashMap<>(t.getLabels()));
    t.getLabels().put(INJECT_LABEL, "checkout");
    t.setAnnotations(new HashMap<>(t.getAnnotations()));
    t.getAnnotations().put(CONFIG_HASH, "abc123");
    return d;
  }

  @Test
  void theReconcilersViewOfALeanTargetIsTheFullOnes() throws IOException {
    Target full = Target.of(deployment());
    Deployment d = deployment();
    Lean.deployment(d);
    Target lean = Target.of(d);

    assertThat(lean.desiredPods()).isEqualTo(full.desiredPods()).isEqualTo(4);
    assertThat(lean.rolloutComplete()).isEqualTo(full.rolloutComplete()).isTrue();
    assertThat(lean.reportedPods()).isEqualTo(full.reportedPods());
    assertThat(lean.selector()).isEqualTo(full.selector());
    assertThat(lean.templateLabel(INJECT_LABEL)).isEqualTo("checkout");
    assertThat(lean.templateAnnotation(CONFIG_HASH)).isEqualTo("abc123");
    assertThat(lean.workload()).isEqualTo(full.workload());
    PodTemplateMarker marker = new PodTemplateMarker("checkout", "abc123");
    assertThat(marker.needsWrite(lean)).isFalse();
    assertThat(marker.withHash("def").needsWrite(lean)).isTrue();
    assertThat(PodTemplateMarker.present(lean)).isTrue();
  }

  @Test
  void dropsWhatNobodyReads() throws IOException {
    Deployment d = deployment();
    int before = JSON.asJson(d).length();
    Lean.deployment(d);
    String after = JSON.asJson(d);

    assertThat(d.getMetadata().getManagedFields()).isNullOrEmpty();
    // empty, not null: JOSDK reads them on every event
    assertThat(d.getMetadata().getAnnotations()).isNotNull().isEmpty();
    assertThat(d.getSpec().getTemplate().getSpec()).isNull();
    assertThat(d.getSpec().getTemplate().getMetadata().getLabels()).containsOnlyKeys(INJECT_LABEL);
    assertThat(d.getStatus().getConditions()).isNullOrEmpty();
    assertThat(after).doesNotContain("last-applied", "managedFields", "containers");
    // what a cached Deployment weighs: about a ninth of what the API server sends
    assertThat(after.length()).isLessThan(before / 8);
  }

  @Test
  void aLabelledPodKeepsWhatTheInspectionReads() {
    Pod p =
        new PodBuilder()
            .withNewMetadata()
            .withName("checkout-1")
            .addToLabels(INJECT_LABEL, "checkout")
            .addToAnnotations(INJECTED, "abc123")
            .addToAnnotations(Lean.LAST_APPLIED, "{}")
            .addNewManagedField()
            .withManager("kubelet")
            .endManagedField()
            .endMetadata()
            .withNewSpec()
            .addNewContainer()
            .withName("app")
            .endContainer()
            .endSpec()
            .withNewStatus()
            .withPhase("Running")
            .addNewContainerStatus()
            .withName("app")
            .endContainerStatus()
            .endStatus()
            .build();
    Lean.pod(p);
    assertThat(p.getMetadata().getManagedFields()).isNullOrEmpty();
    assertThat(p.getMetadata().getAnnotations()).containsOnlyKeys(INJECTED);
    assertThat(p.getMetadata().getLabels()).containsKey(INJECT_LABEL);
    assertThat(p.getSpec().getContainers()).hasSize(1);
    assertThat(p.getStatus().getPhase()).isEqualTo("Running");
    assertThat(p.getStatus().getContainerStatuses()).isNullOrEmpty();
  }

  @Test
  void theStoreStripsOnPut() throws IOException {
    LeanStore<Deployment> store = new LeanStore<>(Lean::deployment);
    Deployment d = deployment();
    store.put(store.getKey(d), d);
    Deployment cached = store.get("shop/checkout");
    assertThat(cached.getMetadata().getManagedFields()).isNullOrEmpty();
    assertThat(cached.getSpec().getTemplate().getSpec()).isNull();
    assertThat(store.size()).isEqualTo(1);
    assertThat(store.remove("shop/checkout")).isSameAs(cached);
    assertThat(store.size()).isZero();
  }
}
