package dev.diagnostics.jvm.operator.reconciler.dependent;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.ArrayList;
import java.util.List;

/**
 * The Prometheus Operator's PrometheusRule, as much of it as the operator writes. Typed, so that
 * its client and watch need no API discovery: the CRD may not be installed, and the dependent's
 * watch is set up (unstarted) before its activation condition says whether it is.
 */
@Group("monitoring.coreos.com")
@Version("v1")
@Kind("PrometheusRule")
@Plural("prometheusrules")
@JsonInclude(JsonInclude.Include.NON_NULL)
public class PrometheusRule extends CustomResource<PrometheusRule.Spec, Void>
    implements Namespaced {
  /** spec.groups, each {name, rules[]} as the alert templates render them. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public static class Spec {
    public List<Object> groups = new ArrayList<>();
  }

  @Override
  protected Spec initSpec() {
    return null;
  }

  @Override
  protected Void initStatus() {
    return null;
  }
}
