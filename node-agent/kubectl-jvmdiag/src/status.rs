//! `kubectl jvmdiag status`: the JvmDiagnostics resources, their target, injected/desired pods,
//! conditions with reasons and the pods that missed the injection (docs/operator.md: status).
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::Client;
use serde_json::Value;

use crate::cluster::{api_err, Req};
use crate::table;

pub const RESOURCE: &str = "jvmdiagnostics.jvm.diagnostics.dev";

pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("jvm.diagnostics.dev", "v1alpha1", "JvmDiagnostics"),
        "jvmdiagnostics",
    )
}

/// Every JvmDiagnostics of `namespace` (None: all namespaces), sorted by namespace and name.
pub async fn list(client: &Client, namespace: Option<&str>) -> anyhow::Result<Vec<DynamicObject>> {
    let ar = api_resource();
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        if let kube::Error::Api(s) = &e {
            if s.code == 404 {
                return anyhow::anyhow!(
                    "the API server has no {RESOURCE}: the CRD is not installed (helm install … charts/jvm-diagnostics)"
                );
            }
        }
        api_err(Req::new("list", RESOURCE, namespace), e)
    })?;
    let mut items = list.items;
    items.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    Ok(items)
}

/// spec.targetRef as (kind, name).
pub fn target_ref(o: &DynamicObject) -> (String, String) {
    let t = &o.data["spec"]["targetRef"];
    (t["kind"].as_str().unwrap_or("").to_string(), t["name"].as_str().unwrap_or("").to_string())
}

fn conditions(status: &Value) -> Vec<(String, String, String, String)> {
    status["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                    (s("type"), s("status"), s("reason"), s("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One table row (and the notes under the table) of a resource; `now` in Unix seconds.
pub fn row(o: &DynamicObject, all_namespaces: bool, now: i64) -> (Vec<String>, Vec<String>) {
    let name = o.metadata.name.clone().unwrap_or_default();
    let st = &o.data["status"];
    let (kind, tname) = target_ref(o);
    let target =
        st["target"].as_str().map(str::to_string).unwrap_or_else(|| format!("{kind}/{tname}"));
    let injected = match (st["injectedPods"].as_i64(), st["desiredPods"].as_i64()) {
        (Some(i), Some(d)) => format!("{i}/{d}"),
        _ => "-".into(),
    };
    let conds = conditions(st);
    let ready = conds
        .iter()
        .find(|c| c.0 == "Ready")
        .map(|c| {
            if c.2.is_empty() || c.1 == "True" {
                c.1.clone()
            } else {
                format!("{} ({})", c.1, c.2)
            }
        })
        .unwrap_or_else(|| "-".into());
    let not_true: Vec<String> = conds
        .iter()
        .filter(|c| c.0 != "Ready" && c.1 != "True")
        .map(|c| {
            if c.2.is_empty() {
                format!("{}={}", c.0, c.1)
            } else {
                format!("{}={} ({})", c.0, c.1, c.2)
            }
        })
        .collect();
    let others = if conds.is_empty() {
        "-".to_string()
    } else if not_true.is_empty() {
        "all True".to_string()
    } else {
        not_true.join(", ")
    };
    let missing: Vec<String> = st["podsMissingInjection"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let mut s = format!(
                        "{} ({}",
                        p["name"].as_str().unwrap_or("?"),
                        p["reason"].as_str().unwrap_or("?")
                    );
                    if let Some(c) = p["container"].as_str() {
                        s.push_str(&format!(", container {c}"));
                    }
                    s.push(')');
                    s
                })
                .collect()
        })
        .unwrap_or_default();
    let truncated = st["podsMissingInjectionTruncated"].as_i64().unwrap_or(0);
    let missing_cell = if missing.is_empty() {
        "-".to_string()
    } else {
        let n = missing.len() as i64 + truncated;
        let shown: Vec<String> = missing.iter().take(2).cloned().collect();
        let rest = n - shown.len() as i64;
        format!(
            "{}{}",
            shown.join(", "),
            if rest > 0 { format!(" +{rest} more") } else { String::new() }
        )
    };
    let age = o
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| table::age(now - t.0.as_second()))
        .unwrap_or_else(|| "-".into());
    let mut cells = Vec::new();
    if all_namespaces {
        cells.push(o.metadata.namespace.clone().unwrap_or_default());
    }
    cells.extend([
        table::cell(&name, 63),
        table::cell(&target, 80),
        injected,
        ready,
        table::cell(&others, 100),
        table::cell(&missing_cell, 100),
        age,
    ]);
    // Notes: the message of every condition that is not True, and every missing pod beyond the two
    // shown in the table.
    let who = match (&o.metadata.namespace, all_namespaces) {
        (Some(ns), true) => format!("{ns}/{name}"),
        _ => name.clone(),
    };
    let mut notes: Vec<String> = conds
        .iter()
        .filter(|c| c.1 != "True" && !c.3.is_empty())
        .map(|c| format!("{who}: {}={}: {}", c.0, c.1, table::cell(&c.3, 400)))
        .collect();
    if missing.len() > 2 || truncated > 0 {
        let mut s = format!("{who}: pods missing the injection: {}", missing.join(", "));
        if truncated > 0 {
            s.push_str(&format!(", and {truncated} more (status.podsMissingInjectionTruncated)"));
        }
        notes.push(s);
    }
    (cells, notes)
}

pub fn render(items: &[DynamicObject], all_namespaces: bool, now: i64) -> String {
    let mut headers = Vec::new();
    if all_namespaces {
        headers.push("NAMESPACE");
    }
    headers.extend([
        "NAME",
        "TARGET",
        "INJECTED",
        "READY",
        "CONDITIONS",
        "MISSING INJECTION",
        "AGE",
    ]);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for o in items {
        let (r, n) = row(o, all_namespaces, now);
        rows.push(r);
        notes.extend(n);
    }
    let mut out = table::render(&headers, &rows);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            out.push_str(&n);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    fn checkout() -> DynamicObject {
        obj(serde_json::json!({
            "apiVersion": "jvm.diagnostics.dev/v1alpha1", "kind": "JvmDiagnostics",
            "metadata": {"name": "checkout", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"targetRef": {"kind": "Deployment", "name": "checkout"}},
            "status": {
                "target": "Deployment/checkout", "injected": "2/4", "injectedPods": 2, "desiredPods": 4,
                "conditions": [
                    {"type": "TargetFound", "status": "True", "reason": "Found"},
                    {"type": "Injected", "status": "False", "reason": "PodsMissingInjection", "message": "2 of 4 pods lack the injection"},
                    {"type": "AlertsReady", "status": "True", "reason": "NoAlerts"},
                    {"type": "Ready", "status": "False", "reason": "NotInjected", "message": "waiting for 2 pods"}
                ],
                "podsMissingInjection": [
                    {"name": "checkout-7d9-x2", "reason": "WebhookUnavailable"},
                    {"name": "checkout-7d9-y3", "reason": "ValueFromNotMerged", "container": "app"},
                    {"name": "checkout-7d9-z4", "reason": "Outdated"}
                ],
                "podsMissingInjectionTruncated": 7
            }
        }))
    }

    #[test]
    fn a_row_has_target_injected_ready_with_reason_and_missing_pods() {
        let now = 1_767_225_600 + 300; // 2026-01-01T00:05:00Z
        let (cells, notes) = row(&checkout(), false, now);
        assert_eq!(cells[0], "checkout");
        assert_eq!(cells[1], "Deployment/checkout");
        assert_eq!(cells[2], "2/4");
        assert_eq!(cells[3], "False (NotInjected)");
        assert_eq!(cells[4], "Injected=False (PodsMissingInjection)");
        assert_eq!(cells[5], "checkout-7d9-x2 (WebhookUnavailable), checkout-7d9-y3 (ValueFromNotMerged, container app) +8 more");
        assert_eq!(cells[6], "5m");
        assert!(
            notes.iter().any(|n| n == "checkout: Injected=False: 2 of 4 pods lack the injection"),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.contains("checkout-7d9-z4 (Outdated), and 7 more")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_ready_resource_and_one_without_status() {
        let ready = obj(serde_json::json!({
            "apiVersion": "jvm.diagnostics.dev/v1alpha1", "kind": "JvmDiagnostics",
            "metadata": {"name": "jto", "namespace": "lifecycle"},
            "spec": {"targetRef": {"kind": "Deployment", "name": "jto"}},
            "status": {"injectedPods": 1, "desiredPods": 1, "target": "Deployment/jto",
                       "conditions": [{"type": "Ready", "status": "True", "reason": "Ready"},
                                      {"type": "Injected", "status": "True", "reason": "AllInjected"}]}
        }));
        let fresh = obj(serde_json::json!({
            "apiVersion": "jvm.diagnostics.dev/v1alpha1", "kind": "JvmDiagnostics",
            "metadata": {"name": "new", "namespace": "other"},
            "spec": {"targetRef": {"kind": "StatefulSet", "name": "ledger"}}
        }));
        let out = render(&[ready, fresh], true, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("NAMESPACE   NAME   TARGET"), "{out}");
        assert!(
            lines[1].contains("lifecycle")
                && lines[1].contains("1/1")
                && lines[1].contains("all True"),
            "{out}"
        );
        assert!(lines[2].contains("StatefulSet/ledger") && lines[2].contains(" -"), "{out}");
        assert_eq!(lines.len(), 3, "no notes: {out}");
    }
}
