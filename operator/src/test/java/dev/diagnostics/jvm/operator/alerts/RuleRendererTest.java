package dev.diagnostics.jvm.operator.alerts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.diagnostics.jvm.operator.api.Alerts;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import dev.diagnostics.jvm.operator.mutator.PodMutatorTest;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RuleRendererTest {
  static RuleRenderer fixture() {
    return RuleRenderer.fromYaml(
        RuleRendererTest.class.getResourceAsStream("/alert-templates-fixture.yaml"));
  }

  static JvmDiagnostics resource() {
    JvmDiagnostics r = new JvmDiagnostics();
    r.setMetadata(
        new ObjectMetaBuilder().withName("checkout").withNamespace("shop").withUid("u-1").build());
    r.setSpec(PodMutatorTest.spec());
    r.getSpec().alerts.safepointPause = new Alerts.DurationAlert("500ms", "0m", "page");
    r.getSpec().alerts.timeToSafepoint = new Alerts.DurationAlert("1s", "5m", "ticket");
    r.getSpec().alerts.threadStartRate = new Alerts.NumberAlert(50, "10m", "info");
    r.getSpec().alerts.codeCacheUsage = new Alerts.NumberAlert(90.5, "15m", "critical");
    return r;
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> rules(GenericKubernetesResource rule) {
    Map<String, Object> spec = (Map<String, Object>) rule.getAdditionalProperties().get("spec");
    Map<String, Object> group = ((List<Map<String, Object>>) spec.get("groups")).get(0);
    assertThat(group.get("name")).isEqualTo("jvmdiag-shop-checkout");
    return (List<Map<String, Object>>) group.get("rules");
  }

  @Test
  void rendersOneRulePerConfiguredAlertWithExactBucketBounds() {
    GenericKubernetesResource rule = fixture().render(resource());
    assertThat(rule.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
    assertThat(rule.getKind()).isEqualTo("PrometheusRule");
    assertThat(rule.getMetadata().getName()).isEqualTo("jvmdiag-checkout");
    assertThat(rule.getMetadata().getNamespace()).isEqualTo("shop");
    assertThat(rule.getMetadata().getOwnerReferences())
        .singleElement()
        .satisfies(o -> assertThat(o.getUid()).isEqualTo("u-1"));
    List<Map<String, Object>> rules = rules(rule);
    assertThat(rules)
        .extracting(m -> m.get("alert"))
        .containsExactly(
            "JvmDiagSafepointPauseHigh",
            "JvmDiagTimeToSafepointHigh",
            "JvmDiagThreadStartRateHigh",
            "JvmDiagCodeCacheNearlyFull");
    assertThat((String) rules.get(0).get("expr"))
        .contains("le=\"0.5\"")
        .contains("namespace=\"shop\", jvmdiagnostics=\"checkout\"")
        .doesNotContain("${");
    assertThat(rules.get(0).get("for")).isEqualTo("0m");
    // page and ticket are aliases: the label is what kube-prometheus-stack's routes and inhibit
    // rules speak
    assertThat(rules)
        .extracting(m -> (Object) ((Map<?, ?>) m.get("labels")).get("severity"))
        .containsExactly("critical", "warning", "info", "critical");
    assertThat((String) rules.get(1).get("expr")).contains("le=\"1.0\"");
    assertThat(((Map<?, ?>) rules.get(1).get("annotations")).get("summary"))
        .isEqualTo("Time to safepoint above 1s");
    assertThat((String) rules.get(2).get("expr")).endsWith("> 50");
    assertThat((String) rules.get(3).get("expr")).endsWith("> 90.5");
    assertThat(rules.get(3).get("for")).isEqualTo("15m");
  }

  @Test
  void everyBoundOfDocsMetricsIsAccepted() {
    assertThat(Durations.LE.values())
        .containsExactly(
            "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
            "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0");
    assertThatThrownBy(() -> Durations.le("spec.alerts.safepointPause", "300ms"))
        .hasMessageContaining("spec.alerts.safepointPause.threshold")
        .hasMessageContaining("250ms 500ms");
  }

  @Test
  void noAlertsNoRule() {
    JvmDiagnostics r = resource();
    r.getSpec().alerts = new Alerts();
    assertThat(fixture().render(r)).isNull();
  }

  @Test
  void theShippedTemplatesCoverEveryAlertField() {
    JvmDiagnostics r = resource();
    r.getSpec().alerts.compilationRate = new Alerts.NumberAlert(100, "15m", "ticket");
    r.getSpec().alerts.monitorContention = new Alerts.NumberAlert(0.5, "5m", "warning");
    r.getSpec().alerts.poolSaturation = new Alerts.NumberAlert(8, "5m", "warning");
    GenericKubernetesResource rule = RuleRenderer.fromClasspath().render(r);
    List<Map<String, Object>> rules = rules(rule);
    assertThat(rules).hasSize(7);
    for (Map<String, Object> m : rules) {
      assertThat(m.toString()).doesNotContain("${");
      assertThat(m).containsKeys("alert", "expr", "for", "labels", "annotations");
      assertThat((Map<String, Object>) m.get("annotations"))
          .containsKeys("summary", "description", "runbook_url");
    }
  }

  @Test
  void monitorContentionIsRenderedFromTheGeneratedTemplatePerMonitorClass() {
    JvmDiagnostics r = resource();
    r.getSpec().alerts = new Alerts();
    r.getSpec().alerts.monitorContention = new Alerts.NumberAlert(0.5, "5m", "page");
    Map<String, Object> rule = rules(RuleRenderer.fromClasspath().render(r)).get(0);
    assertThat(rule.get("alert")).isEqualTo("JvmDiagMonitorContentionHigh");
    assertThat((String) rule.get("expr"))
        .isEqualTo(
            "rate(jvmdiag_monitor_blocked_seconds_sum{namespace=\"shop\", jvmdiagnostics=\"checkout\", monitor_class!=\"other\"}[5m]) > 0.5");
    assertThat(rule.get("for")).isEqualTo("5m");
    assertThat(((Map<?, ?>) rule.get("labels")).get("severity")).isEqualTo("critical");
    Map<?, ?> annotations = (Map<?, ?>) rule.get("annotations");
    assertThat((String) annotations.get("description"))
        .contains("$labels.monitor_class")
        .contains("$labels.pod")
        .contains("threshold 0.5s/s");
    assertThat((String) annotations.get("runbook_url"))
        .endsWith("/docs/runbooks/JvmDiagMonitorContentionHigh.md");
  }

  @Test
  void poolSaturationIsRenderedPerPoolOfTheResourceAndNeedsResourceWaitStacks() {
    JvmDiagnostics r = resource();
    r.getSpec().alerts = new Alerts();
    r.getSpec().alerts.poolSaturation = new Alerts.NumberAlert(16, "10m", "ticket");
    Map<String, Object> rule = rules(RuleRenderer.fromClasspath().render(r)).get(0);
    assertThat(rule.get("alert")).isEqualTo("JvmDiagPoolSaturated");
    String expr = (String) rule.get("expr");
    assertThat(expr)
        .startsWith(
            "sum by (namespace, pod, container, jvm, jvmdiagnostics, host, pid, thread_name) (\n"
                + "  rate(jvmdiag_thread_parked_seconds_total{namespace=\"shop\", jvmdiagnostics=\"checkout\", via=\"park\", thread_name!=\"other\"}[5m])\n"
                + ") > 16\n"
                + "and on (namespace, pod, container, jvm, jvmdiagnostics, host, pid, thread_name)\n")
        // the pool's own park stacks at frames other than a pool's wait for work: a regex with
        // [.] and [$], no backslash to escape on the way
        .contains(
            "jvmdiag_culprit_stack_samples_total{namespace=\"shop\", jvmdiagnostics=\"checkout\", kind=\"park\", frame!~\"none|")
        .contains("org[.]eclipse[.]jetty[.]util[.]thread[.]AutoLock[$]WithCondition[.]awaitNanos")
        .doesNotContain("${")
        .doesNotContain("\\");
    assertThat(rule.get("for")).isEqualTo("10m");
    assertThat(((Map<?, ?>) rule.get("labels")).get("severity")).isEqualTo("warning");
    Map<?, ?> annotations = (Map<?, ?>) rule.get("annotations");
    assertThat((String) annotations.get("description"))
        .contains("$labels.thread_name")
        // the frame named is the pool's own: the query matches the alert's thread_name
        .contains("thread_name=%[7]q")
        .contains("$labels.pod")
        .contains("threshold 16,")
        .contains("kind=\\\"park\\\"");
    assertThat((String) annotations.get("runbook_url"))
        .endsWith("/docs/runbooks/JvmDiagPoolSaturated.md");
  }
}
