//! `top --prometheus URL`: the same families from a Prometheus that scrapes the agents
//! (`/api/v1/query`, instant queries): for each counter `sum by (pod, LABELS) (increase(M[W]))` and
//! `sum by (pod, LABELS) (M)`, for each gauge the latter; the rows then make the same report as two
//! scrapes do.
use std::collections::BTreeMap;
use std::time::Duration;

use kube::{Client, Config};
use serde_json::Value;

use crate::cluster::get_raw;
use crate::report::{self, PodReport, Row};

/// Families `top` reads: name, labels kept (beyond `pod`), counter (else gauge).
pub const FAMILIES: &[(&str, &[&str], bool)] = &[
    ("jvmdiag_jvm_info", &["jvm", "java_version", "probe_mode"], false),
    ("jvmdiag_thread_starts_total", &["thread_name"], true),
    ("jvmdiag_threads_live", &[], false),
    ("jvmdiag_safepoint_pause_seconds_bucket", &["vm_operation", "le"], true),
    ("jvmdiag_safepoint_pause_seconds_sum", &["vm_operation"], true),
    ("jvmdiag_vm_operation_requests_total", &["vm_operation", "requester"], true),
    ("jvmdiag_monitor_blocked_seconds_sum", &["monitor_class"], true),
    ("jvmdiag_thread_parked_seconds_total", &["thread_name"], true),
    ("jvmdiag_code_cache_used_bytes", &[], false),
    ("jvmdiag_code_cache_max_bytes", &[], false),
    ("jvmdiag_code_cache_full_total", &[], true),
    ("jvmdiag_compilations_total", &["compiler"], true),
];

/// The selector of the workload's pods: `{namespace="NS",pod=~"a|b"}` (pod names are DNS names:
/// dots escaped for the regex; quotes and backslashes cannot occur but are escaped anyway).
pub fn selector(namespace: &str, pods: &[String]) -> String {
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let re: Vec<String> = pods.iter().map(|p| p.replace('.', r"\\.")).collect();
    format!("{{namespace=\"{}\",pod=~\"{}\"}}", q(namespace), re.join("|"))
}

/// The two queries of a family (the second only for counters): current value, increase.
pub fn queries(
    name: &str,
    labels: &[&str],
    counter: bool,
    sel: &str,
    window: Duration,
) -> (String, Option<String>) {
    let mut by = vec!["pod"];
    by.extend_from_slice(labels);
    let by = by.join(", ");
    let value = format!("sum by ({by}) ({name}{sel})");
    let increase = counter
        .then(|| format!("sum by ({by}) (increase({name}{sel}[{}s]))", window.as_secs().max(1)));
    (value, increase)
}

/// Percent-encoding of a query parameter (RFC 3986 unreserved characters kept).
pub fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An instant query's vector: (labels, value) pairs.
pub fn parse_vector(body: &str) -> anyhow::Result<Vec<(BTreeMap<String, String>, f64)>> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| anyhow::anyhow!("not a Prometheus API answer: {e}"))?;
    if v["status"] != "success" {
        anyhow::bail!(
            "Prometheus: {} {}",
            v["errorType"].as_str().unwrap_or(""),
            v["error"].as_str().unwrap_or("(no error text)")
        );
    }
    let mut out = Vec::new();
    for r in v["data"]["result"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let labels: BTreeMap<String, String> = r["metric"]
            .as_object()
            .map(|m| {
                m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect()
            })
            .unwrap_or_default();
        let value = match r["value"][1].as_str() {
            Some("+Inf") => f64::INFINITY,
            Some(s) => s.parse::<f64>().unwrap_or(f64::NAN),
            None => continue,
        };
        out.push((labels, value));
    }
    Ok(out)
}

async fn query(
    client: &Client,
    base_path: &str,
    q: &str,
) -> anyhow::Result<Vec<(BTreeMap<String, String>, f64)>> {
    let path = format!("{base_path}/api/v1/query?query={}", encode(q));
    let (code, body) = get_raw(client, &path, "application/json", 32 << 20).await?;
    if code != 200 && !body.trim_start().starts_with('{') {
        anyhow::bail!(
            "Prometheus answered HTTP {code} to {q}: {}",
            crate::table::cell(body.trim(), 300)
        );
    }
    parse_vector(&body).map_err(|e| anyhow::anyhow!("{e} (query: {q})"))
}

pub async fn reports(
    url: &str,
    namespace: &str,
    pods: &[(String, String)],
    window: Duration,
) -> anyhow::Result<Vec<PodReport>> {
    let uri: http::Uri = url.parse().map_err(|e| anyhow::anyhow!("--prometheus {url}: {e}"))?;
    let base_path = uri.path().trim_end_matches('/').to_string();
    let mut config = Config::new(uri);
    config.read_timeout = Some(Duration::from_secs(30));
    let client =
        Client::try_from(config).map_err(|e| anyhow::anyhow!("--prometheus {url}: {e}"))?;
    let names: Vec<String> = pods.iter().map(|(p, _)| p.clone()).collect();
    let sel = selector(namespace, &names);
    // rows by (name, labels)
    let mut rows: BTreeMap<(String, Vec<(String, String)>), Row> = BTreeMap::new();
    for (name, labels, counter) in FAMILIES {
        let (vq, iq) = queries(name, labels, *counter, &sel, window);
        for (i, q) in [Some(vq), iq].into_iter().flatten().enumerate() {
            for (l, v) in query(&client, &base_path, &q).await? {
                let key: Vec<(String, String)> = l.into_iter().collect();
                let row = rows.entry((name.to_string(), key.clone())).or_insert_with(|| Row {
                    name: name.to_string(),
                    labels: key,
                    increase: 0.0,
                    value: 0.0,
                });
                if i == 0 {
                    row.value = v;
                } else {
                    row.increase = v;
                }
            }
        }
    }
    let all: Vec<Row> = rows.into_values().collect();
    Ok(pods
        .iter()
        .map(|(pod, node)| {
            let mine: Vec<Row> = all
                .iter()
                .filter(|r| r.labels.iter().any(|(k, v)| k == "pod" && v == pod))
                .cloned()
                .collect();
            report::pod_report(pod, node, "prometheus", window.as_secs_f64(), &mine)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_of_a_counter_and_a_gauge() {
        let sel = selector("shop", &["checkout-7d9-x2".into(), "a.b".into()]);
        assert_eq!(sel, r#"{namespace="shop",pod=~"checkout-7d9-x2|a\\.b"}"#);
        let (v, i) = queries(
            "jvmdiag_thread_starts_total",
            &["thread_name"],
            true,
            &sel,
            Duration::from_secs(300),
        );
        assert_eq!(v, format!("sum by (pod, thread_name) (jvmdiag_thread_starts_total{sel})"));
        assert_eq!(
            i.unwrap(),
            format!("sum by (pod, thread_name) (increase(jvmdiag_thread_starts_total{sel}[300s]))")
        );
        let (_, i) = queries("jvmdiag_threads_live", &[], false, &sel, Duration::from_secs(300));
        assert!(i.is_none());
    }

    #[test]
    fn encoding_and_answers() {
        assert_eq!(
            encode("sum by (pod) (m{a=\"b\"}[5s])"),
            "sum%20by%20%28pod%29%20%28m%7Ba%3D%22b%22%7D%5B5s%5D%29"
        );
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"pod":"p","thread_name":"pool-N-thread-N"},"value":[1700000000.1,"12.5"]},
            {"metric":{"pod":"p","le":"+Inf"},"value":[1700000000.1,"+Inf"]}]}}"#;
        let v = parse_vector(body).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0["thread_name"], "pool-N-thread-N");
        assert_eq!(v[0].1, 12.5);
        assert_eq!(v[1].1, f64::INFINITY);
        let err =
            parse_vector(r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#)
                .unwrap_err();
        assert!(err.to_string().contains("bad_data parse error"));
        assert!(parse_vector("<html>").is_err());
    }
}
