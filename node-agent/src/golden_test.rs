//! The whole /metrics page for fixed input, compared with tests/golden/standalone.prom
//! (regenerate with UPDATE_GOLDEN=1 cargo test). hack/suites/20-agent.sh also runs the
//! golden file through `promtool check metrics` and the metrics contract checker.
use std::collections::{BTreeMap, HashMap};

use crate::collector::Health;
use crate::exposition::{render, to_prometheus_text};
use crate::labels::JvmLabels;
use crate::metrics::{self, ProbeMode};
use crate::model::{Hist, Value};
use crate::report::{agent_families, jvm_families, AgentReport, CollectorReport, JvmReport};

/// A histogram from (le label, observations in that bucket) pairs.
fn hist(per_bucket: &[(&str, u64)], sum_ns: u64) -> Value {
    let mut h = Hist::default();
    for &(le, n) in per_bucket {
        h.buckets[Hist::slot_le(le)] = n;
        h.count += n;
    }
    h.sum_ns = sum_ns;
    Value::Histogram(h)
}

fn fixture() -> String {
    let mut fams = Vec::new();
    let mut t = metrics::THREAD_STARTS.family();
    t.jvm(0, vec![("thread_name", "pool-N-thread-N".into())], Value::Counter(10_400));
    t.jvm(0, vec![("thread_name", "other".into())], Value::Counter(3));
    t.jvm(
        1,
        vec![("thread_name", "HandshakeCompletedNotify-Thread".into())],
        Value::Counter(1_000_000),
    );
    fams.push(t);
    let mut p = metrics::SAFEPOINT_PAUSE.family();
    p.jvm(0, vec![("vm_operation", "ThreadDump".into())], hist(&[("0.00025", 20)], 4_000_000));
    p.jvm(
        1,
        vec![("vm_operation", "RedefineClasses".into())],
        hist(&[("10.0", 1), ("+Inf", 1)], 71_500_000_000),
    );
    fams.push(p);
    let mut s = metrics::SAFEPOINT_SYNC.family();
    s.jvm(0, vec![("vm_operation", "ThreadDump".into())], hist(&[("0.0001", 20)], 200_000));
    fams.push(s);
    let mut v = metrics::VM_OPERATION.family();
    v.jvm(
        0,
        vec![("vm_operation", "G1CollectFull".into()), ("at_safepoint", "true".into())],
        hist(&[("0.01", 5)], 41_000_000),
    );
    v.jvm(
        0,
        vec![("vm_operation", "HandshakeAllThreads".into()), ("at_safepoint", "false".into())],
        hist(&[("0.0001", 4)], 312_000),
    );
    fams.push(v);
    fams.extend(jvm_families(&[
        JvmReport {
            slot: 0,
            threads_live: Some(12),
            java_version: "17.0.15".into(),
            vendor: "Debian".into(),
            probe_mode: Some(ProbeMode::Usdt),
        },
        JvmReport {
            slot: 1,
            threads_live: None,
            java_version: "25.0.3".into(),
            vendor: "Eclipse Adoptium".into(),
            probe_mode: Some(ProbeMode::Uprobe),
        },
    ]));
    let health = Health {
        events: vec![("thread__start", 10_403), ("JVM_StartThread", 0)],
        map_errors: 0,
        names_overflow: 3,
        filtered: 6,
        entries: 2,
        inflight_lost: Vec::new(),
        evictions: Vec::new(),
    };
    // A JVM parked more threads at once than its share of park_inflight.
    let parking = Health {
        events: vec![("thread__park__begin", 5_150), ("thread__park__end", 5_000)],
        inflight_lost: vec![("park_inflight", "jvm_share", 86), ("park_inflight", "full", 0)],
        ..Health::default()
    };
    // A JVM compiled more distinct methods than the staging table holds.
    let compilation = Health { evictions: vec![("method_seen", 1_741)], ..Health::default() };
    let mut evicted = metrics::AGENT_JVM_MAP_EVICTIONS.family();
    evicted.jvm(
        0,
        vec![("collector", "compilation".into()), ("map", "method_seen".into())],
        Value::Counter(1_741),
    );
    fams.push(evicted);
    let mut lost = metrics::AGENT_JVM_INFLIGHT_LOST.family();
    lost.jvm(
        1,
        vec![
            ("collector", "parking".into()),
            ("map", "park_inflight".into()),
            ("reason", "jvm_share".into()),
        ],
        Value::Counter(86),
    );
    fams.push(lost);
    let mut failures = BTreeMap::new();
    failures.insert(("identity_mismatch".to_string(), String::new()), 1);
    failures.insert(("collector_failed".to_string(), "safepoints".to_string()), 2);
    fams.extend(agent_families(&AgentReport {
        collectors: vec![
            CollectorReport { name: "threads", seconds: 0.00025, ok: true, health: Some(health) },
            CollectorReport { name: "parking", seconds: 0.00012, ok: true, health: Some(parking) },
            CollectorReport {
                name: "compilation",
                seconds: 0.0004,
                ok: true,
                health: Some(compilation),
            },
        ],
        traced_pids_entries: 2,
        jvms_attached: 2,
        jvms_seen: 7,
        libjvm_files: 2,
        links: 14,
        attach_seconds: 0.25,
        proc_unreadable: 1,
        failures,
        last_scrape_seconds: Some(0.0015),
        resident_bytes: Some(7_340_032),
        bpf_map_bytes: Some(23_592_960),
    }));
    // The parked families, each from its own collector, merged into one family of one label
    // set: parks (monitor_class empty) and Object.wait by the waited-on class.
    let mut parked = crate::collector::parking::waited_families();
    crate::collector::parking::push_waited(
        &mut parked,
        0,
        "pool-N-thread-N".into(),
        "park",
        String::new(),
        5_000,
        41_000_000_000,
    );
    fams.extend(parked);
    let mut waited = crate::collector::parking::waited_families();
    crate::collector::parking::push_waited(
        &mut waited,
        0,
        "pool-N-thread-N".into(),
        "object_wait",
        "com.acme.ConnectionPool".into(),
        812,
        196_500_000_000,
    );
    fams.extend(waited);
    // Slot 2 has no labels (released JVM): its samples must not appear.
    let mut gone = metrics::THREAD_STARTS.family();
    gone.jvm(2, vec![("thread_name", "x".into())], Value::Counter(1));
    fams.push(gone);
    to_prometheus_text(&render(fams, &two_jvms()))
}

/// The labels of the fixtures' two JVMs (slots 0 and 1).
fn two_jvms() -> HashMap<u32, JvmLabels> {
    let mut jvms = HashMap::new();
    jvms.insert(0, JvmLabels::standalone("node-1", 4242, "Storm"));
    jvms.insert(1, JvmLabels::standalone("node-1", 77, "app.jar"));
    jvms
}

/// `got` equals tests/golden/<file> (UPDATE_GOLDEN=1 writes it).
fn assert_golden(file: &str, got: &str) {
    let path = format!("{}/tests/golden/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path).expect("golden file (UPDATE_GOLDEN=1 creates it)");
    assert_eq!(got, want, "{file} changed; if intended, regenerate with UPDATE_GOLDEN=1");
}

#[test]
fn metrics_page_matches_golden_file() {
    assert_golden("standalone.prom", &fixture());
}

#[test]
fn bucket_bounds_are_printed_as_monitoring_histogram_bounds_txt_writes_them() {
    let page = fixture();
    for le in crate::model::BOUNDS_LE.iter().copied().chain(["+Inf"]) {
        assert!(page.contains(&format!("le=\"{le}\"")), "missing le={le}");
    }
}

#[test]
fn openmetrics_keeps_eof_and_prometheus_text_drops_it() {
    let mut jvms = HashMap::new();
    jvms.insert(0, JvmLabels::standalone("h", 1, "M"));
    let mut t = metrics::THREAD_STARTS.family();
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
    let mut t = metrics::THREAD_STARTS.family();
    let hostile = [
        "x\"y",
        "back\\slash",
        "nl\nforged_total{namespace=\"kube-system\"} 1",
        "# TYPE jvmdiag_forged counter",
    ];
    for name in hostile {
        t.jvm(0, vec![("thread_name", name.into())], Value::Counter(1));
    }
    let text = to_prometheus_text(&render(vec![t], &jvms));
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(samples.len(), hostile.len(), "one line per sample, none forged:\n{text}");
    assert!(
        samples.iter().all(|l| l.starts_with("jvmdiag_thread_starts_total{") && l.ends_with("} 1")),
        "{text}"
    );
    assert!(text.contains(r#"thread_name="x\"y""#), "{text}");
    assert!(text.contains(r#"thread_name="back\\slash""#), "{text}");
    assert!(
        text.contains(r#"thread_name="nl\nforged_total{namespace=\"kube-system\"} 1""#),
        "{text}"
    );
    assert!(text.contains(r#"jvm="app\"\n# TYPE x counter\\.jar""#), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), 1, "{text}");
}

/// Map entries as the kernel writes them (the layouts of src/bpf/*.h, little-endian as on
/// x86-64 and arm64), decoded by src/maps.rs and the collectors, rendered, and compared with
/// tests/golden/maps.prom: a header change the decoding does not follow fails here.
mod raw_maps {
    use super::*;
    use crate::collector::{compilation, inflight, monitors, parking, threads};
    use crate::maps;
    use crate::model::HIST_BOUNDS;

    fn name_key(slot: u32, flags: u32, name: &str) -> Vec<u8> {
        let mut k = [slot.to_le_bytes(), flags.to_le_bytes()].concat();
        let mut n = [0u8; 64];
        n[..name.len()].copy_from_slice(name.as_bytes());
        k.extend(n);
        k
    }

    /// A VM operation named by its vtable (struct vtable_name in name_key.name).
    fn vtable_key(slot: u32, file: u32, rel: u64) -> Vec<u8> {
        let mut k =
            [slot.to_le_bytes(), 0u32.to_le_bytes(), [1, 0, 0, 0], file.to_le_bytes()].concat();
        k.extend(rel.to_le_bytes());
        k.resize(72, 0);
        k
    }

    /// struct hist's bytes from (le label, observations in that bucket) pairs.
    fn hist(buckets: &[(&str, u64)], sum_ns: u64) -> Vec<u8> {
        let mut b = [0u64; HIST_BOUNDS + 1];
        for &(le, n) in buckets {
            b[Hist::slot_le(le)] = n;
        }
        let count: u64 = b.iter().sum();
        b.iter().chain([sum_ns, count].iter()).flat_map(|v| v.to_le_bytes()).collect()
    }

    fn u64s(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn page() -> String {
        let mut fams = Vec::new();

        // threads_counts: struct name_hkey {slot, pad, hash} -> __u64; threads_names -> name_text.
        let hkey = |slot: u32, hash: u64| {
            [slot.to_le_bytes(), 0u32.to_le_bytes()]
                .concat()
                .into_iter()
                .chain(hash.to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let counts = vec![
            (hkey(0, 0xabc), u64s(&[10_400])),
            (hkey(1, 7), u64s(&[3])),
            (hkey(1, 8), u64s(&[5])),
        ];
        let names = |k: &[u8]| -> Option<Vec<u8>> {
            let text = match k {
                k if k == hkey(0, 0xabc) => "pool-N-thread-N",
                k if k == hkey(1, 7) => "other",
                _ => return None, // a name not stored (yet): no series
            };
            let mut t = text.as_bytes().to_vec();
            t.resize(64, 0);
            Some(t)
        };
        fams.push(threads::starts_family(&counts, names));

        // sp_pause: struct name_key -> struct hist; one name, one vtable nobody resolves.
        let mut pause = metrics::SAFEPOINT_PAUSE.family();
        let pause_entries = vec![
            (
                name_key(0, 0, "G1CollectForAllocation"),
                hist(&[("0.005", 3), ("+Inf", 1)], 61_010_000_000),
            ),
            (vtable_key(1, 0, 0x1234), hist(&[("0.001", 2)], 1_500_000)),
        ];
        maps::hist_family(&pause_entries, &mut pause, None, |k| {
            vec![("vm_operation", k.name.clone())]
        });
        fams.push(pause);

        // vmops_hist: flags = at_safepoint.
        let mut vm = metrics::VM_OPERATION.family();
        let vm_entries = vec![
            (name_key(0, 1, "G1CollectFull"), hist(&[("1.0", 1)], 800_000_000)),
            (name_key(0, 0, "HandshakeAllThreads"), hist(&[("0.0001", 4)], 312_000)),
        ];
        maps::hist_family(&vm_entries, &mut vm, None, |k| {
            vec![("vm_operation", k.name.clone()), ("at_safepoint", (k.flags != 0).to_string())]
        });
        fams.push(vm);

        // compilation: comp_stats {struct hist timed; __u64 untimed}, method_hot -> __u64,
        // heap_usage -> heap_value {memory_usage {init, used, committed, max}, pool, tgid, layout},
        // code_full: slot -> __u64.
        let comp =
            |b: &[(&str, u64)], sum: u64, untimed: u64| [hist(b, sum), u64s(&[untimed])].concat();
        let heap = |used: u64, max: u64| {
            [
                u64s(&[2_555_904, used, 2_555_904, max, 0x7f00_0000_1000]),
                4242u32.to_le_bytes().to_vec(),
                0u32.to_le_bytes().to_vec(),
            ]
            .concat()
        };
        let tables = compilation::Tables {
            comp_stats: vec![
                (name_key(0, 1, "C2"), comp(&[("0.001", 90), ("0.01", 10)], 150_000_000, 2)),
                (name_key(0, 1, "c2"), comp(&[("0.0005", 1)], 500_000, 0)),
                (name_key(0, 1, "C1"), comp(&[("0.0001", 400)], 40_000_000, 0)),
            ],
            method_hot: vec![
                (name_key(0, 0, "java/lang/String.hashCode"), u64s(&[7])),
                (name_key(0, 0, "app/Main$$Lambda/0x0000000800c03000.apply"), u64s(&[5])),
            ],
            heap_usage: vec![(
                name_key(0, 0, "CodeHeap 'non-profiled nmethods'"),
                heap(1_048_576, 122_912_768),
            )],
            code_full: vec![
                (0u32.to_le_bytes().to_vec(), u64s(&[0])),
                (1u32.to_le_bytes().to_vec(), u64s(&[2])),
            ],
        };
        fams.extend(compilation::families(&tables, 1, &|_| None));

        // monitors: mon_threads: struct mon_thread_key {struct name_key cls; char thread_name[16]}
        // -> __u64 enters; mon_stats: struct name_key -> struct mon_stat {struct hist blocked}.
        let pair = |slot: u32, class: &str, thread: &[u8]| {
            let mut k = name_key(slot, 0, class);
            let mut t = [0u8; 16];
            t[..thread.len()].copy_from_slice(thread);
            k.extend(t);
            k
        };
        let mon_threads = vec![
            (pair(0, "java/security/SecureRandom", b"handshake-N"), u64s(&[41])),
            (pair(0, "java/security/SecureRandom", b"other"), u64s(&[2])),
            (pair(0, "other", b"reader-N"), u64s(&[5])),
            // 15 bytes of a container's thread name: a quote, a newline, a cut UTF-8 sequence.
            (pair(1, "java/lang/Object", b"q\"\n# TYPE x \xc3"), u64s(&[1])),
        ];
        let mon_stats = vec![
            (
                name_key(0, 0, "java/security/SecureRandom"),
                hist(&[("0.025", 40), ("1.0", 3)], 1_250_000_000),
            ),
            (name_key(0, 0, "other"), hist(&[("0.0001", 5)], 400_000)),
        ];
        fams.extend(monitors::monitor_families(&mon_threads, &mon_stats, &[1]));

        // The parked families: park_counts: struct park_key {slot, pad, hash} -> park_count
        // {parks, parked_ns}, its name in park_names (char[16]); and Object.wait, mon_waits:
        // struct mon_thread_key -> mon_wait {waits, waited_ns}. One family, one label set.
        let park_counts = vec![(hkey(0, 0x5eed), u64s(&[1_200, 2_412_345_678]))];
        let park_name = |k: &[u8]| {
            (k == hkey(0, 0x5eed).as_slice()).then(|| [&b"parker-N"[..], &[0u8; 8]].concat())
        };
        fams.extend(parking::park_families(&park_counts, park_name));
        let mon_waits = vec![
            (pair(0, "java/util/ArrayDeque", b"worker-N"), u64s(&[63, 1_066_600_000])),
            (pair(0, "other", b"other"), u64s(&[3, 250_000])),
            // Waiting now: counted at monitor__wait, no time yet.
            (pair(1, "java/lang/ref/ReferenceQueue$Lock", b"Finalizer"), u64s(&[1, 0])),
        ];
        fams.extend(monitors::wait_families(&mon_waits));

        // start_seconds (the starter probe): struct name_key (a folded thread name) -> struct hist.
        fams.push(crate::starters::start_seconds_family(&[
            (
                name_key(0, 0, "worker-a-N"),
                hist(&[("0.0001", 2), ("0.00025", 2_900), ("0.001", 98)], 412_345_678),
            ),
            (name_key(0, 0, "other"), hist(&[("0.0005", 1)], 333_000)),
        ]));

        // inflight_lost: struct inflight_lost_key {slot, __u16 table, __u16 reason} -> __u64.
        let lost_key = |slot: u32, table: u16, reason: u16| {
            [&slot.to_le_bytes()[..], &table.to_le_bytes(), &reason.to_le_bytes()].concat()
        };
        let park = inflight::Table { map: "park_inflight", index: 0, per_jvm: 64, max: 65536 };
        fams.push(inflight::jvm_lost_family(
            "parking",
            &[(lost_key(1, 0, 0), u64s(&[86]))],
            &[park],
        ));

        to_prometheus_text(&render(fams, &two_jvms()))
    }

    #[test]
    fn raw_map_bytes_decode_to_the_golden_page() {
        assert_golden("maps.prom", &page());
    }

    #[test]
    fn raw_map_bytes_decode_to_the_values_written() {
        let p = page();
        for line in [
            r#"jvmdiag_thread_starts_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",thread_name="pool-N-thread-N"} 10400"#,
            r#"le="0.001",host="node-1",jvm="app.jar",pid="77",namespace="",pod="",container="",vm_operation="unknown"} 2"#,
            r#"vm_operation="G1CollectForAllocation"} 61.01"#,
            r#"le="1.0",host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",vm_operation="G1CollectFull",at_safepoint="true"} 1"#,
            r#"compiler="c2"} 103"#,
            r#"method="java.lang.String.hashCode"} 7"#,
            r#"method="other"} 496"#,
            r#"jvmdiag_code_cache_used_bytes{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",code_heap="non-profiled nmethods"} 1048576.0"#,
            r#"jvmdiag_code_cache_max_bytes{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",code_heap="non-profiled nmethods"} 122912768.0"#,
            r#"jvmdiag_code_cache_full_total{host="node-1",jvm="app.jar",pid="77",namespace="",pod="",container=""} 2"#,
            r#"jvmdiag_monitor_contended_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",monitor_class="java.security.SecureRandom",thread_name="handshake-N"} 41"#,
            r#"monitor_class="java.security.SecureRandom",thread_name="other"} 2"#,
            r#"monitor_class="other",thread_name="reader-N"} 5"#,
            r#"jvm="app.jar",pid="77",namespace="",pod="",container="",monitor_class="java.lang.Object",thread_name="q\"\n# TYPE x �"} 1"#,
            r#"jvmdiag_monitor_blocked_seconds_count{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",monitor_class="java.security.SecureRandom"} 43"#,
            r#"jvmdiag_monitor_blocked_seconds_sum{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",monitor_class="java.security.SecureRandom"} 1.25"#,
            r#"jvmdiag_agent_collector_unavailable{host="node-1",jvm="app.jar",pid="77",namespace="",pod="",container="",collector="monitors",reason="no_DTraceMonitorProbes"} 1"#,
            r#"jvmdiag_thread_parks_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",thread_name="parker-N",via="park",monitor_class=""} 1200"#,
            r#"jvmdiag_thread_parked_seconds_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",thread_name="parker-N",via="park",monitor_class=""} 2.412345678"#,
            r#"jvmdiag_thread_parks_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",thread_name="worker-N",via="object_wait",monitor_class="java.util.ArrayDeque"} 63"#,
            r#"jvmdiag_thread_parked_seconds_total{host="node-1",jvm="Storm",pid="4242",namespace="",pod="",container="",thread_name="worker-N",via="object_wait",monitor_class="java.util.ArrayDeque"} 1.0666"#,
            r#"thread_name="other",via="object_wait",monitor_class="other"} 3"#,
            r#"jvmdiag_thread_parks_total{host="node-1",jvm="app.jar",pid="77",namespace="",pod="",container="",thread_name="Finalizer",via="object_wait",monitor_class="java.lang.ref.ReferenceQueue$Lock"} 1"#,
        ] {
            assert!(p.contains(line), "missing {line} in:\n{p}");
        }
    }
}
