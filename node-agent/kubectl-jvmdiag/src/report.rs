//! What `top` shows for one pod, computed from rows that either source gives: two scrapes of an
//! agent's page ([`rows_from_scrapes`]) or Prometheus' `increase(...)` and current values.
//!
//! A row is one series (summed over the pod's JVMs and containers by the labels that matter):
//! its increase over the window and its current value. Rates are increases over the window.
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::expo::Sample;
use crate::table;

/// Names shown per culprit list in the table (the JSON output has them all).
pub const TOP_N: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub labels: Vec<(String, String)>,
    /// Increase over the window (counters, histogram series); 0 for a gauge.
    pub increase: f64,
    /// The value now (a counter's total since the JVM was attached, a gauge's value).
    pub value: f64,
}

impl Row {
    fn label(&self, name: &str) -> &str {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("")
    }
}

/// A counter's increase between two scrapes; a value that went down was reset (the JVM or the
/// agent restarted) and counts from zero, as Prometheus' `increase` does.
pub fn counter_increase(before: Option<f64>, after: f64) -> f64 {
    match before {
        Some(b) if after >= b => after - b,
        Some(_) => after,
        // A series that appeared between the scrapes (a new thread name, a JVM attached meanwhile)
        None => after,
    }
}

/// One row per series of the second scrape, its increase since the first.
pub fn rows_from_scrapes(first: &[Sample], second: &[Sample]) -> Vec<Row> {
    let before: HashMap<String, f64> = first.iter().map(|s| (s.key(), s.value)).collect();
    second
        .iter()
        .map(|s| Row {
            name: s.name.clone(),
            labels: s.labels.clone(),
            increase: counter_increase(before.get(&s.key()).copied(), s.value),
            value: s.value,
        })
        .collect()
}

/// Where the worst pause was found: in the window, or (none in it) since the JVM was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Window,
    SinceAttach,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    pub vm_operation: String,
    /// The worst pause lies in (lower, upper] seconds (histogram bucket bounds).
    pub lower: f64,
    pub upper: f64,
    pub count: f64,
    pub seconds: f64,
    pub scope: Scope,
    /// The thread that requested this VM operation most (in the same scope), if the agent knows.
    pub requester: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodReport {
    pub pod: String,
    pub node: String,
    /// Where the numbers came from: "agent NS/POD", "sidecar", "prometheus".
    pub source: String,
    pub window_seconds: f64,
    pub jvms: Vec<String>,
    /// Thread starts per second by thread name, highest first.
    pub thread_starts: Vec<(String, f64)>,
    pub thread_starts_total: f64,
    pub threads_live: Option<f64>,
    pub pause: Option<Pause>,
    /// Seconds blocked per second by monitor class, highest first.
    pub blocked: Vec<(String, f64)>,
    /// Seconds parked per second by thread name, highest first.
    pub parked: Vec<(String, f64)>,
    pub code_cache_used: Option<f64>,
    pub code_cache_max: Option<f64>,
    pub code_cache_full: Option<f64>,
    /// JIT compilations per second (all compilers).
    pub compilations: Option<f64>,
    /// Why there is nothing (no series for this pod): said in the table.
    pub note: Option<String>,
}

fn sorted_desc(m: BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<_> = m.into_iter().filter(|(_, r)| *r > 0.0).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Sum of a family's rows' `f` by one label.
fn by_label(
    rows: &[Row],
    name: &str,
    label: &str,
    f: impl Fn(&Row) -> f64,
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for r in rows.iter().filter(|r| r.name == name) {
        *m.entry(r.label(label).to_string()).or_insert(0.0) += f(r);
    }
    m
}

fn sum(rows: &[Row], name: &str) -> Option<f64> {
    let mut it = rows.iter().filter(|r| r.name == name).peekable();
    it.peek()?;
    Some(it.map(|r| r.value).sum())
}

/// The bucket of the worst observation: from cumulative (le, count) pairs, the first bound whose
/// count is the total. None when there is no observation.
pub fn worst_bucket(buckets: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let mut b = buckets.to_vec();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = b.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let mut lower = 0.0;
    for (le, count) in &b {
        if *count >= total {
            return Some((lower, *le, total));
        }
        lower = *le;
    }
    None
}

fn worst_pause(rows: &[Row], scope: Scope) -> Option<Pause> {
    let pick = |r: &Row| if scope == Scope::Window { r.increase } else { r.value };
    let mut buckets: BTreeMap<String, BTreeMap<String, (f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.name == "jvmdiag_safepoint_pause_seconds_bucket") {
        let le = match r.label("le") {
            "+Inf" => f64::INFINITY,
            s => match s.parse::<f64>() {
                Ok(v) => v,
                Err(_) => continue,
            },
        };
        let e = buckets.entry(r.label("vm_operation").to_string()).or_default();
        e.entry(r.label("le").to_string()).or_insert((le, 0.0)).1 += pick(r);
    }
    let seconds = by_label(rows, "jvmdiag_safepoint_pause_seconds_sum", "vm_operation", pick);
    let mut best: Option<Pause> = None;
    for (op, b) in buckets {
        let pairs: Vec<(f64, f64)> = b.into_values().collect();
        let Some((lower, upper, count)) = worst_bucket(&pairs) else { continue };
        let p = Pause {
            seconds: seconds.get(&op).copied().unwrap_or(0.0),
            vm_operation: op,
            lower,
            upper,
            count,
            scope,
            requester: None,
        };
        let better = match &best {
            None => true,
            Some(b) => p.upper > b.upper || (p.upper == b.upper && p.seconds > b.seconds),
        };
        if better {
            best = Some(p);
        }
    }
    let mut best = best?;
    let mut req = BTreeMap::new();
    for r in rows.iter().filter(|r| {
        r.name == "jvmdiag_vm_operation_requests_total"
            && r.label("vm_operation") == best.vm_operation
    }) {
        *req.entry(r.label("requester").to_string()).or_insert(0.0) += pick(r);
    }
    best.requester = sorted_desc(req).into_iter().next().map(|(n, _)| n);
    Some(best)
}

/// The report of one pod from its rows (every row of this pod, any JVM or container in it).
pub fn pod_report(
    pod: &str,
    node: &str,
    source: &str,
    window_seconds: f64,
    rows: &[Row],
) -> PodReport {
    let w = window_seconds.max(1e-9);
    let rate = |r: &Row| r.increase / w;
    let mut jvms: Vec<String> = rows
        .iter()
        .filter(|r| r.name == "jvmdiag_jvm_info")
        .map(|r| {
            let about: Vec<&str> =
                [r.label("java_version"), r.label("vendor"), r.label("probe_mode")]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect();
            format!("{} ({})", r.label("jvm"), about.join(", "))
        })
        .collect();
    jvms.sort();
    jvms.dedup();
    let note = if rows
        .iter()
        .any(|r| r.name.starts_with("jvmdiag_") && !r.name.starts_with("jvmdiag_agent_"))
    {
        None
    } else {
        Some("no series for this pod: not injected yet, or its JVM not traced (kubectl jvmdiag status)".to_string())
    };
    PodReport {
        pod: pod.to_string(),
        node: node.to_string(),
        source: source.to_string(),
        window_seconds,
        jvms,
        thread_starts: sorted_desc(by_label(
            rows,
            "jvmdiag_thread_starts_total",
            "thread_name",
            rate,
        )),
        thread_starts_total: sum(rows, "jvmdiag_thread_starts_total").unwrap_or(0.0),
        threads_live: sum(rows, "jvmdiag_threads_live"),
        pause: worst_pause(rows, Scope::Window).or_else(|| worst_pause(rows, Scope::SinceAttach)),
        blocked: sorted_desc(by_label(
            rows,
            "jvmdiag_monitor_blocked_seconds_sum",
            "monitor_class",
            rate,
        )),
        parked: sorted_desc(by_label(
            rows,
            "jvmdiag_thread_parked_seconds_total",
            "thread_name",
            rate,
        )),
        code_cache_used: sum(rows, "jvmdiag_code_cache_used_bytes"),
        code_cache_max: sum(rows, "jvmdiag_code_cache_max_bytes"),
        code_cache_full: sum(rows, "jvmdiag_code_cache_full_total"),
        compilations: rows
            .iter()
            .any(|r| r.name == "jvmdiag_compilations_total")
            .then(|| by_label(rows, "jvmdiag_compilations_total", "compiler", rate).values().sum()),
        note,
    }
}

fn total(v: &[(String, f64)]) -> f64 {
    v.iter().map(|(_, r)| r).sum()
}

fn pause_text(p: &Pause) -> String {
    let lower = if p.lower == 0.0 { "0".to_string() } else { table::duration(p.lower) };
    let mut s =
        format!("{} {}–{}", table::cell(&p.vm_operation, 40), lower, table::duration(p.upper));
    if p.scope == Scope::SinceAttach {
        s.push_str(" (since attach)");
    }
    s
}

fn code_cache_text(r: &PodReport) -> String {
    match (r.code_cache_used, r.code_cache_max) {
        (Some(u), Some(m)) if m > 0.0 => {
            format!("{}/{} ({:.0}%)", table::mib(u), table::mib(m), 100.0 * u / m)
        }
        (Some(u), _) => table::mib(u),
        _ => "-".into(),
    }
}

fn top_list(v: &[(String, f64)], unit: &str) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let mut parts: Vec<String> = v
        .iter()
        .take(TOP_N)
        .map(|(n, r)| format!("{}{unit} {}", table::num(*r), table::cell(n, 40)))
        .collect();
    if v.len() > TOP_N {
        parts.push(format!("(+{} more)", v.len() - TOP_N));
    }
    parts.join(", ")
}

/// The table (one row per pod) and, under it, each pod's culprits.
pub fn render(reports: &[PodReport]) -> String {
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            vec![
                r.pod.clone(),
                r.node.clone(),
                r.threads_live.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into()),
                table::num(total(&r.thread_starts)),
                r.pause.as_ref().map(|p| table::duration(p.upper)).unwrap_or_else(|| "-".into()),
                table::num(total(&r.blocked)),
                table::num(total(&r.parked)),
                code_cache_text(r),
            ]
        })
        .collect();
    let mut out = table::render(
        &[
            "POD",
            "NODE",
            "THREADS",
            "STARTS/S",
            "WORST PAUSE ≤",
            "BLOCKED S/S",
            "PARKED S/S",
            "CODE CACHE",
        ],
        &rows,
    );
    for r in reports {
        out.push('\n');
        out.push_str(&format!("{}  (from {}, over {:.1} s)\n", r.pod, r.source, r.window_seconds));
        if let Some(n) = &r.note {
            out.push_str(&format!("  {n}\n"));
            continue;
        }
        if !r.jvms.is_empty() {
            out.push_str(&format!("  jvm             {}\n", table::cell(&r.jvms.join(", "), 120)));
        }
        out.push_str(&format!(
            "  thread starts   {} ({:.0} since attach)\n",
            top_list(&r.thread_starts, "/s"),
            r.thread_starts_total
        ));
        let pause = match &r.pause {
            None => "-".to_string(),
            Some(p) => {
                let mut s = pause_text(p);
                let plural = if p.count == 1.0 { "" } else { "s" };
                s.push_str(&format!(
                    ", {:.0} pause{plural}, {} s in all",
                    p.count,
                    table::num(p.seconds)
                ));
                if let Some(q) = &p.requester {
                    s.push_str(&format!(", requested by {}", table::cell(q, 40)));
                }
                s
            }
        };
        out.push_str(&format!("  worst pause     {pause}\n"));
        out.push_str(&format!("  blocked         {}\n", top_list(&r.blocked, " s/s")));
        out.push_str(&format!("  parked          {}\n", top_list(&r.parked, " s/s")));
        let full = r.code_cache_full.map(|f| format!(", full {f:.0} times")).unwrap_or_default();
        let comp = r
            .compilations
            .map(|c| format!(", {} compilations/s", table::num(c)))
            .unwrap_or_default();
        out.push_str(&format!("  code cache      {}{full}{comp}\n", code_cache_text(r)));
    }
    out
}

fn pairs(v: &[(String, f64)]) -> Value {
    Value::Array(v.iter().map(|(n, r)| json!({"name": n, "perSecond": r})).collect())
}

/// `-o json`: every pod with every name, and the raw totals a script can compare.
pub fn to_json(reports: &[PodReport]) -> Value {
    let pods: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "pod": r.pod,
                "node": r.node,
                "source": r.source,
                "windowSeconds": r.window_seconds,
                "jvms": r.jvms,
                "threadsLive": r.threads_live,
                "threadStarts": pairs(&r.thread_starts),
                "threadStartsTotal": r.thread_starts_total,
                "worstPause": r.pause.as_ref().map(|p| json!({
                    "vmOperation": p.vm_operation,
                    "lowerSeconds": p.lower,
                    "upperSeconds": if p.upper.is_finite() { json!(p.upper) } else { json!("+Inf") },
                    "count": p.count,
                    "seconds": p.seconds,
                    "scope": if p.scope == Scope::Window { "window" } else { "sinceAttach" },
                    "requester": p.requester,
                })),
                "blockedSecondsPerSecond": pairs(&r.blocked),
                "parkedSecondsPerSecond": pairs(&r.parked),
                "codeCacheUsedBytes": r.code_cache_used,
                "codeCacheMaxBytes": r.code_cache_max,
                "codeCacheFullTotal": r.code_cache_full,
                "compilationsPerSecond": r.compilations,
                "note": r.note,
            })
        })
        .collect();
    json!({ "pods": pods })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expo::{parse, Limits};

    const GOLDEN: &str = include_str!("../../tests/golden/maps.prom");

    /// The golden page as a Kubernetes-mode agent would label the Storm JVM: pod "storm-0".
    fn golden_as_pod(scale: f64) -> Vec<Sample> {
        let page = parse(GOLDEN, Limits::default(), |s| s.label("jvm") == Some("Storm")).unwrap();
        page.samples
            .into_iter()
            .map(|mut s| {
                for (k, v) in s.labels.iter_mut() {
                    if k == "pod" {
                        *v = "storm-0".into();
                    }
                    if k == "namespace" {
                        *v = "shop".into();
                    }
                }
                let gauge = s.name.ends_with("_bytes") || s.name == "jvmdiag_threads_live";
                if !gauge {
                    s.value *= scale;
                }
                s
            })
            .collect()
    }

    #[test]
    fn counter_increase_handles_resets_and_new_series() {
        assert_eq!(counter_increase(Some(10.0), 15.0), 5.0);
        assert_eq!(counter_increase(Some(10.0), 3.0), 3.0);
        assert_eq!(counter_increase(None, 4.0), 4.0);
        assert_eq!(counter_increase(Some(2.0), 2.0), 0.0);
    }

    #[test]
    fn rates_from_two_scrapes_of_a_real_page() {
        // The second scrape has every counter doubled: increase = the first value, over 5 s.
        let (a, b) = (golden_as_pod(1.0), golden_as_pod(2.0));
        let rows = rows_from_scrapes(&a, &b);
        let r = pod_report("storm-0", "node-1", "agent jd/agent-x", 5.0, &rows);
        assert_eq!(r.thread_starts, vec![("pool-N-thread-N".to_string(), 10400.0 / 5.0)]);
        assert_eq!(r.thread_starts_total, 20800.0);
        let p = r.pause.clone().unwrap();
        assert_eq!(p.scope, Scope::Window);
        assert_eq!(p.vm_operation, "G1CollectForAllocation");
        assert_eq!(p.count, 4.0);
        assert!((p.seconds - 61.01).abs() < 1e-9);
        // blocked: SecureRandom 1.25 s over 5 s
        assert_eq!(r.blocked[0].0, "java.security.SecureRandom");
        assert!((r.blocked[0].1 - 0.25).abs() < 1e-9);
        assert_eq!(r.parked[0].0, "parker-N");
        assert_eq!(r.code_cache_used, Some(1048576.0));
        assert_eq!(r.code_cache_max, Some(122912768.0));
        assert_eq!(r.note, None);
        let text = render(std::slice::from_ref(&r));
        assert!(text.starts_with("POD "), "{text}");
        assert!(text.contains("storm-0"), "{text}");
        assert!(text.contains("2.1k"), "starts/s in the table: {text}");
        assert!(text.contains("java.security.SecureRandom"), "{text}");
        assert!(text.contains("1.0Mi/117.2Mi (1%)"), "{text}");
        let j = to_json(&[r]);
        assert_eq!(j["pods"][0]["codeCacheMaxBytes"], json!(122912768.0));
        assert_eq!(j["pods"][0]["threadStarts"][0]["perSecond"], json!(2080.0));
    }

    #[test]
    fn worst_pause_is_the_bucket_of_the_largest_observation() {
        // cumulative counts: 2 pauses <= 10ms, 3 <= 2.5 s, all 3 <= +Inf: the worst is in (1 s, 2.5 s]
        let b = [(0.01, 2.0), (1.0, 2.0), (2.5, 3.0), (f64::INFINITY, 3.0)];
        assert_eq!(worst_bucket(&b), Some((1.0, 2.5, 3.0)));
        assert_eq!(worst_bucket(&[(0.01, 0.0), (f64::INFINITY, 0.0)]), None);
        assert_eq!(
            worst_bucket(&[(f64::INFINITY, 1.0), (0.5, 0.0)]),
            Some((0.5, f64::INFINITY, 1.0))
        );
    }

    fn row(name: &str, labels: &[(&str, &str)], increase: f64, value: f64) -> Row {
        Row {
            name: name.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            increase,
            value,
        }
    }

    #[test]
    fn no_pause_in_the_window_shows_the_worst_since_attach_with_its_requester() {
        let b = "jvmdiag_safepoint_pause_seconds_bucket";
        let rows = vec![
            row(b, &[("vm_operation", "RedefineClasses"), ("le", "2.5")], 0.0, 0.0),
            row(b, &[("vm_operation", "RedefineClasses"), ("le", "5.0")], 0.0, 2.0),
            row(b, &[("vm_operation", "RedefineClasses"), ("le", "+Inf")], 0.0, 2.0),
            row(
                "jvmdiag_safepoint_pause_seconds_sum",
                &[("vm_operation", "RedefineClasses")],
                0.0,
                7.5,
            ),
            row(b, &[("vm_operation", "G1CollectForAllocation"), ("le", "0.01")], 0.0, 40.0),
            row(b, &[("vm_operation", "G1CollectForAllocation"), ("le", "+Inf")], 0.0, 40.0),
            row(
                "jvmdiag_vm_operation_requests_total",
                &[("vm_operation", "RedefineClasses"), ("requester", "apm-retransform")],
                0.0,
                2.0,
            ),
            row(
                "jvmdiag_vm_operation_requests_total",
                &[("vm_operation", "RedefineClasses"), ("requester", "java")],
                0.0,
                1.0,
            ),
        ];
        let r = pod_report("p", "n", "prometheus", 300.0, &rows);
        let p = r.pause.unwrap();
        assert_eq!((p.vm_operation.as_str(), p.lower, p.upper), ("RedefineClasses", 2.5, 5.0));
        assert_eq!(p.scope, Scope::SinceAttach);
        assert_eq!(p.requester.as_deref(), Some("apm-retransform"));
        assert!(pause_text(&p).contains("RedefineClasses 2.5s–5s (since attach)"));
    }

    #[test]
    fn a_pod_without_series_says_why() {
        let r = pod_report("p", "n", "agent x", 5.0, &[]);
        assert!(r.note.is_some());
        assert!(render(&[r]).contains("no series for this pod"));
    }

    #[test]
    fn long_culprit_lists_are_cut_to_the_top_few() {
        let v: Vec<(String, f64)> = (0..5).map(|i| (format!("t{i}"), 5.0 - i as f64)).collect();
        assert_eq!(top_list(&v, "/s"), "5.00/s t0, 4.00/s t1, 3.00/s t2, (+2 more)");
        assert_eq!(top_list(&[], "/s"), "-");
    }
}
