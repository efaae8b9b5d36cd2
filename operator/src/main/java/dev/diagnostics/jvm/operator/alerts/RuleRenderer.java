package dev.diagnostics.jvm.operator.alerts;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.diagnostics.jvm.operator.Contract;
import dev.diagnostics.jvm.operator.api.Alerts;
import dev.diagnostics.jvm.operator.api.JvmDiagnostics;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Renders spec.alerts into a PrometheusRule using the alert templates (written by the alerts
 * work, one entry per spec.alerts field) by substituting ${namespace} ${name} ${threshold}
 * ${thresholdLe} ${for} ${severity}.
 */
public final class RuleRenderer {
  public static final String TEMPLATES_RESOURCE = "jvmdiag/alert-templates.yaml";
  public static final String API_VERSION = "monitoring.coreos.com/v1";
  public static final String KIND = "PrometheusRule";

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private final Map<String, Map<String, Object>> templates;

  public RuleRenderer(Map<String, Map<String, Object>> templates) {
    this.templates = templates;
  }

  @SuppressWarnings("unchecked")
  public static RuleRenderer fromYaml(InputStream in) {
    try {
      return new RuleRenderer(YAML.readValue(in, LinkedHashMap.class));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read alert templates: " + e.getMessage(), e);
    }
  }

  /** The templates shipped in the jar. */
  public static RuleRenderer fromClasspath() {
    InputStream in = RuleRenderer.class.getClassLoader().getResourceAsStream(TEMPLATES_RESOURCE);
    if (in == null) throw new IllegalStateException("alert templates " + TEMPLATES_RESOURCE + " are missing from the jar");
    return fromYaml(in);
  }

  public static String ruleName(JvmDiagnostics r) {
    return "jvmdiag-" + r.getMetadata().getName();
  }

  /** The PrometheusRule for the resource, or null when spec.alerts sets none. */
  public GenericKubernetesResource render(JvmDiagnostics r) {
    Map<String, Alerts.Alert> configured = r.getSpec().alerts == null ? Map.of() : r.getSpec().alerts.configured();
    if (configured.isEmpty()) return null;
    String ns = r.getMetadata().getNamespace();
    String name = r.getMetadata().getName();
    List<Object> rules = new ArrayList<>();
    configured.forEach((field, alert) -> rules.add(renderOne(field, alert, ns, name)));

    GenericKubernetesResource rule = new GenericKubernetesResource();
    rule.setApiVersion(API_VERSION);
    rule.setKind(KIND);
    var meta = new ObjectMetaBuilder()
        .withName(ruleName(r))
        .withNamespace(ns)
        .addToLabels("app.kubernetes.io/managed-by", Contract.FIELD_MANAGER)
        .addToLabels("jvm.diagnostics.dev/resource", name);
    if (r.getMetadata().getUid() != null) {
      meta.withOwnerReferences(new OwnerReferenceBuilder()
          .withApiVersion(JvmDiagnostics.API_VERSION).withKind("JvmDiagnostics")
          .withName(name).withUid(r.getMetadata().getUid())
          .withController(true).withBlockOwnerDeletion(true).build());
    }
    rule.setMetadata(meta.build());
    Map<String, Object> group = new LinkedHashMap<>();
    group.put("name", "jvmdiag-" + ns + "-" + name);
    group.put("rules", rules);
    rule.setAdditionalProperty("spec", Map.of("groups", List.of(group)));
    return rule;
  }

  private Map<String, Object> renderOne(String field, Alerts.Alert alert, String ns, String name) {
    Map<String, Object> template = templates.get(field);
    if (template == null) throw new IllegalStateException("alert templates have no entry for spec.alerts." + field);
    Map<String, String> vars = new LinkedHashMap<>();
    vars.put("namespace", ns);
    vars.put("name", name);
    if (alert instanceof Alerts.DurationAlert d) {
      String le = Durations.le("spec.alerts." + field, d.threshold);
      vars.put("threshold", plain(new BigDecimal(le)));
      vars.put("thresholdLe", le);
    } else {
      String t = plain(BigDecimal.valueOf(((Alerts.NumberAlert) alert).threshold));
      vars.put("threshold", t);
      vars.put("thresholdLe", t);
    }
    vars.put("for", alert.forDuration);
    vars.put("severity", alert.severityLabel());
    @SuppressWarnings("unchecked")
    Map<String, Object> out = (Map<String, Object>) substitute(template, vars);
    Map<String, Object> ordered = new LinkedHashMap<>();
    ordered.put("alert", out.get("alert"));
    ordered.put("expr", out.get("expr"));
    ordered.put("for", out.getOrDefault("for", alert.forDuration));
    out.forEach(ordered::putIfAbsent);
    return ordered;
  }

  private static String plain(BigDecimal d) {
    String s = d.stripTrailingZeros().toPlainString();
    return s;
  }

  private static Object substitute(Object node, Map<String, String> vars) {
    if (node instanceof String s) {
      for (var e : vars.entrySet()) s = s.replace("${" + e.getKey() + "}", e.getValue());
      return s;
    }
    if (node instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, v) -> out.put(String.valueOf(k), substitute(v, vars)));
      return out;
    }
    if (node instanceof List<?> l) return l.stream().map(v -> substitute(v, vars)).toList();
    return node;
  }
}
