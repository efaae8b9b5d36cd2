//! The whole /metrics page for fixed input, compared with tests/golden/standalone.prom
//! (regenerate with UPDATE_GOLDEN=1 cargo test). hack/suites/20-agent.sh also runs the
//! golden file through `promtool check metrics` and the metrics contract checker.
use std::collections::{BTreeMap, HashMap};

use crate::collector::{safepoints, threads, vmops, Health};
use crate::exposition::{render, to_prometheus_text};
use crate::labels::JvmLabels;
use crate::model::{Hist, Value};
use crate::report::{agent_families, jvm_families, AgentReport, CollectorReport, JvmReport};

fn hist(per_bucket: &[(usize, u64)], sum_ns: u64) -> Value {
    let mut h = Hist::default();
    for &(i, n) in per_bucket {
        h.buckets[i] = n;
        h.count += n;
    }
    h.sum_ns = sum_ns;
    Value::Histogram(h)
}

fn fixture() -> String {
    let mut fams = Vec::new();
    let mut t = threads::family();
    t.jvm(0, vec![("thread_name", "pool-N-thread-N".into())], Value::Counter(10_400));
    t.jvm(0, vec![("thread_name", "other".into())], Value::Counter(3));
    t.jvm(1, vec![("thread_name", "HandshakeCompletedNotify-Thread".into())], Value::Counter(1_000_000));
    fams.push(t);
    let mut p = safepoints::pause_family();
    p.jvm(0, vec![("vm_operation", "ThreadDump".into())], hist(&[(0, 20)], 4_000_000));
    p.jvm(1, vec![("vm_operation", "RedefineClasses".into())], hist(&[(12, 1), (15, 1)], 71_500_000_000));
    fams.push(p);
    let mut s = safepoints::sync_family();
    s.jvm(0, vec![("vm_operation", "ThreadDump".into())], hist(&[(0, 20)], 200_000));
    fams.push(s);
    let mut v = vmops::family();
    v.jvm(0, vec![("vm_operation", "G1CollectFull".into()), ("at_safepoint", "true".into())], hist(&[(3, 5)], 41_000_000));
    v.jvm(0, vec![("vm_operation", "HandshakeAllThreads".into()), ("at_safepoint", "false".into())], hist(&[(0, 4)], 312_000));
    fams.push(v);
    fams.extend(jvm_families(&[
        JvmReport { slot: 0, threads_live: Some(12), java_version: "17.0.15".into(), vendor: "Debian".into(), probe_mode: "usdt" },
        JvmReport { slot: 1, threads_live: None, java_version: "25.0.3".into(), vendor: "Eclipse Adoptium".into(), probe_mode: "uprobe" },
    ]));
    let health = Health {
        events: vec![("thread__start", 10_403), ("JVM_StartThread", 0)],
        map_errors: 0,
        names_overflow: 3,
        filtered: 6,
        entries: 2,
    };
    let mut failures = BTreeMap::new();
    failures.insert(("identity_mismatch".to_string(), String::new()), 1);
    failures.insert(("collector_failed".to_string(), "safepoints".to_string()), 2);
    fams.extend(agent_families(&AgentReport {
        collectors: vec![CollectorReport { name: "threads", seconds: 0.00025, ok: true, health: Some(health) }],
        traced_pids_entries: 2,
        jvms_attached: 2,
        jvms_seen: 7,
        libjvm_files: 2,
        links: 14,
        proc_unreadable: 1,
        failures,
        last_scrape_seconds: Some(0.0015),
    }));
    // Slot 2 has no labels (released JVM): its samples must not appear.
    let mut gone = threads::family();
    gone.jvm(2, vec![("thread_name", "x".into())], Value::Counter(1));
    fams.push(gone);
    let mut jvms = HashMap::new();
    jvms.insert(0, JvmLabels::standalone("node-1", 4242, "Storm"));
    jvms.insert(1, JvmLabels::standalone("node-1", 77, "app.jar"));
    to_prometheus_text(&render(fams, &jvms))
}

#[test]
fn metrics_page_matches_golden_file() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/standalone.prom");
    let got = fixture();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &got).unwrap();
    }
    let want = std::fs::read_to_string(path).expect("golden file (UPDATE_GOLDEN=1 creates it)");
    assert_eq!(got, want, "exposition changed; if intended, regenerate with UPDATE_GOLDEN=1");
}

#[test]
fn bucket_bounds_are_printed_as_docs_metrics_md_says() {
    let page = fixture();
    for le in ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0", "+Inf"] {
        assert!(page.contains(&format!("le=\"{le}\"")), "missing le={le}");
    }
}

#[test]
fn openmetrics_keeps_eof_and_prometheus_text_drops_it() {
    let mut jvms = HashMap::new();
    jvms.insert(0, JvmLabels::standalone("h", 1, "M"));
    let mut t = threads::family();
    t.jvm(0, vec![("thread_name", "a".into())], Value::Counter(1));
    let om = render(vec![t], &jvms);
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# TYPE jvmdiag_thread_starts counter"));
    let text = to_prometheus_text(&om);
    assert!(!text.contains("# EOF"));
    assert!(text.contains("# TYPE jvmdiag_thread_starts_total counter"));
}

#[test]
fn label_values_from_containers_are_escaped_and_forge_nothing() {
    let mut jvms = HashMap::new();
    jvms.insert(0, JvmLabels::standalone("h", 1, "app\"\n# TYPE x counter\\.jar"));
    let mut t = threads::family();
    let hostile = ["x\"y", "back\\slash", "nl\nforged_total{namespace=\"kube-system\"} 1", "# TYPE jvmdiag_forged counter"];
    for name in hostile {
        t.jvm(0, vec![("thread_name", name.into())], Value::Counter(1));
    }
    let text = to_prometheus_text(&render(vec![t], &jvms));
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(samples.len(), hostile.len(), "one line per sample, none forged:\n{text}");
    assert!(samples.iter().all(|l| l.starts_with("jvmdiag_thread_starts_total{") && l.ends_with("} 1")), "{text}");
    assert!(text.contains(r#"thread_name="x\"y""#), "{text}");
    assert!(text.contains(r#"thread_name="back\\slash""#), "{text}");
    assert!(text.contains(r#"thread_name="nl\nforged_total{namespace=\"kube-system\"} 1""#), "{text}");
    assert!(text.contains(r#"jvm="app\"\n# TYPE x counter\\.jar""#), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), 1, "{text}");
}
