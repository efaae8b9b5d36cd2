package dev.diagnostics.jvm.operator.reconciler.dependent;

import dev.diagnostics.jvm.operator.alerts.RuleRenderer;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.processing.dependent.kubernetes.CRUDKubernetesDependentResource;
import io.javaoperatorsdk.operator.processing.event.ResourceID;

/**
 * The resource's PrometheusRule: spec.alerts rendered through the alert templates, owned by the
 * resource (garbage-collected with it), applied by server-side apply. Active only while the
 * Prometheus Operator's CRD is served ({@link PrometheusRuleCrdPresent}), reconciled only while
 * spec.alerts sets a threshold ({@link AlertsConfigured}; otherwise the rule is deleted).
 */
public class PrometheusRuleDependent
    extends CRUDKubernetesDependentResource<PrometheusRule, JvmDiagnostics> {
  public static final String NAME = "prometheusrule";
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  private final RuleRenderer renderer;

  public PrometheusRuleDependent() {
    this(RuleRenderer.fromClasspath());
  }

  PrometheusRuleDependent(RuleRenderer renderer) {
    super(PrometheusRule.class, NAME);
    this.renderer = renderer;
  }

  @Override
  protected PrometheusRule desired(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    GenericKubernetesResource rule = renderer.render(r);
    return rule == null ? null : JSON.convertValue(rule, PrometheusRule.class);
  }

  /**
   * The rule's name follows from the resource's: no need to render it (there is none to render once
   * spec.alerts is emptied).
   */
  @Override
  protected ResourceID targetSecondaryResourceID(JvmDiagnostics r, Context<JvmDiagnostics> ctx) {
    return new ResourceID(RuleRenderer.ruleName(r), r.getMetadata().getNamespace());
  }
}
