#![no_main]
//! Label values built from strings the JVM hands the probes (a hostile JVM chooses them):
//! a BPF `name_key` (VM operation, method, compiler, code heap, monitor class names) decoded
//! from its raw bytes, then the collectors' label builders, then the exposition. Never
//! panics; each label stays bounded and plain where its builder promises it; and the whole
//! rendered scrape has exactly the lines a harmless name gives (no quote, backslash or
//! newline ends a value, adds a line or forges a series).
use std::collections::HashMap;

use jvmdiag_agent::collector::{compilation, monitors};
use jvmdiag_agent::exposition;
use jvmdiag_agent::labels::JvmLabels;
use jvmdiag_agent::maps;
use jvmdiag_agent::metrics;
use jvmdiag_agent::model::{Family, Hist, Value};
use libfuzzer_sys::fuzz_target;

/// `struct name_key`: slot, flags, name[64].
const KEY: usize = 72;
const NAME_MAX: usize = 64;

fn unescape(v: &str) -> String {
    let mut out = String::new();
    let mut it = v.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some(c) => out.push(c),
                None => panic!("escaped value ends with a lone backslash: {v:?}"),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every series of one JVM, labelled from `raw` (as the collectors build them).
fn scrape(raw: &str, jvm: &str) -> String {
    let mut fams = Vec::new();
    let mut f = Family::of(&metrics::COMPILATIONS);
    f.jvm(0, vec![("compiler", compilation::compiler_label(raw))], Value::Counter(1));
    fams.push(f);
    let mut f = Family::of(&metrics::METHOD_COMPILATIONS);
    f.jvm(0, vec![("method", compilation::method_label(raw))], Value::Counter(1));
    fams.push(f);
    let mut f = Family::of(&metrics::CODE_CACHE_MAX);
    f.jvm(0, vec![("code_heap", compilation::heap_label(raw))], Value::Gauge(1.0));
    fams.push(f);
    let mut f = Family::of(&metrics::VM_OPERATION);
    f.jvm(
        0,
        vec![("vm_operation", raw.to_string()), ("at_safepoint", "true".into())],
        Value::Histogram(Hist::default()),
    );
    fams.push(f);
    let mut f = Family::of(&metrics::THREAD_STARTS);
    f.jvm(0, vec![("thread_name", raw.to_string())], Value::Counter(1));
    fams.push(f);
    let mut f = Family::of(&metrics::MONITOR_CONTENDED);
    f.jvm(0, vec![("monitor_class", monitors::class_label(raw))], Value::Counter(1));
    fams.push(f);
    let jvms = HashMap::from([(0u32, JvmLabels::standalone("node", 42, jvm))]);
    exposition::render(fams, &jvms)
}

fn shape(text: &str) -> Vec<String> {
    // Each line up to its first '{' (metric name or comment), and the number of lines.
    text.lines().map(|l| l.split('{').next().unwrap_or("").to_string()).collect()
}

fuzz_target!(|data: &[u8]| {
    let (key, rest) = data.split_at(data.len().min(KEY));
    let mut k = [0u8; KEY];
    k[..key.len()].copy_from_slice(key);
    let nk = maps::name_key(&k).expect("72 bytes decode");
    if nk.vtable.is_some() {
        assert!(nk.name.is_empty()); // named by its vtable (uprobe mode), resolved from symbols
    }
    assert!(nk.name.chars().count() <= NAME_MAX);
    assert!(!nk.name.contains('\0'));

    // The probes' names are at most 64 bytes; the builders must also hold on longer text.
    let long = String::from_utf8_lossy(rest);
    for raw in [nk.name.as_str(), long.as_ref()] {
        let c = compilation::compiler_label(raw);
        assert!(!c.is_empty() && c.len() <= 32);
        assert!(
            c == "unknown"
                || c.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'-'
                    || b == b'_')
        );
        let m = compilation::method_label(raw);
        assert!(m.len() <= raw.len());
        assert!(!m.contains('/'));
        assert!(compilation::heap_label(raw).len() <= raw.len());
        let cl = monitors::class_label(raw);
        assert!(!cl.contains('/') && cl.len() == raw.len());

        let e = exposition::escape_label_value(raw);
        assert!(!e.contains('\n'));
        assert_eq!(unescape(&e), raw);

        let got = scrape(raw, raw);
        let want = scrape("x", "x");
        assert_eq!(shape(&got), shape(&want), "a label value changed the scrape's lines:\n{got}");
    }
});
