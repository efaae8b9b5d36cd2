//! The compilation collector against real JVMs (JDK 17 and 25), checked against the JVM's
//! own accounts: -XX:+PrintCompilation lines, jcmd Compiler.codecache (used, full_count).
//! Root only (eBPF): run by hack/suites/25-agent-jit.sh (`cargo test --test jit -- --ignored`).
mod jit_common;

use std::path::Path;
use std::time::Duration;

use jit_common::*;
use jvmdiag_agent::collector::REGISTRY;
use jvmdiag_agent::metrics;

/// PrintCompilation lines that are compilations of `method` (`pkg.Class::name`), not the
/// "made not entrant" / "made zombie" notes about earlier ones, nor failure notes.
fn print_compilation_count(out: &str, method: &str) -> u64 {
    out.lines()
        .filter(|l| l.contains(&format!(" {method} ")) || l.ends_with(&format!(" {method}")))
        .filter(|l| !l.contains("made not entrant") && !l.contains("made zombie") && !l.contains("COMPILE SKIPPED"))
        .count() as u64
}

fn recompilation_storm(jdk: &Path) {
    require_root();
    let work = Work::new("jit-storm");
    let cls = compile_workloads(&work.0);
    let mut procs = Procs::default();
    let port = start_agent(&mut procs, &work.0, "Recompile");
    // A second agent whose budget is 5 names, lowered to 2 for this JVM by its own limits (as a
    // pod's jvm.diagnostics.dev/limits annotation does): the storm is still named, the rest is "other".
    let port2 = start_agent_with(&mut procs, &work.0, "Recompile", &["--max-methods", "5", "--jvm-limits", "Recompile:maxMethods=2"]);
    let (pid, out) = start_java(
        &mut procs,
        jdk,
        &work.0,
        "storm",
        // hot() is kept out of main(): inlined there, main's OSR compilations would depend on
        // the call site too and be recompiled as often as hot() (a tie the top check can lose).
        &[
            "-XX:+PrintCompilation",
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,jitwork.Recompile::hot",
            "-cp",
            cls.to_str().unwrap(),
            "jitwork.Recompile",
            "25",
            "3000",
        ],
    );
    wait_attached(port, pid);
    wait_attached(port2, pid);
    wait_for_output(&out, "done", Duration::from_secs(180));
    std::thread::sleep(Duration::from_secs(2)); // compilations in flight finish, the JVM idles

    let text = scrape(port);
    let methods = by_label(&text, "jvmdiag_method_compilations_total", pid, "method");
    let expected = print_compilation_count(&std::fs::read_to_string(&out).unwrap(), "jitwork.Recompile::hot");
    assert!(expected >= 25, "the workload should recompile hot() every round; PrintCompilation shows {expected}");
    assert_eq!(
        methods.get("jitwork.Recompile.hot").copied(),
        Some(expected as f64),
        "agent vs -XX:+PrintCompilation for jitwork.Recompile::hot; agent's methods: {methods:?}"
    );
    let hot = methods["jitwork.Recompile.hot"];
    let rivals: Vec<_> = methods.iter().filter(|(m, n)| *m != "other" && *m != "jitwork.Recompile.hot" && **n >= hot).collect();
    assert!(rivals.is_empty(), "the recompiled method tops the list alone, not {rivals:?}: {methods:?}");
    assert!(methods.len() <= 21, "at most --max-methods (20) names plus other: {methods:?}");

    let two = by_label(&scrape(port2), "jvmdiag_method_compilations_total", pid, "method");
    assert_eq!(two.len(), 3, "maxMethods=2 for this JVM: two names and other: {two:?}");
    assert_eq!(two.get("jitwork.Recompile.hot").copied(), Some(expected as f64), "{two:?}");

    let compilers = by_label(&text, "jvmdiag_compilations_total", pid, "compiler");
    assert!(compilers.get("c1").copied().unwrap_or(0.0) > 0.0 && compilers.get("c2").copied().unwrap_or(0.0) > 0.0, "{compilers:?}");
    let total: f64 = compilers.values().sum();
    let timed: f64 = by_label(&text, "jvmdiag_compilation_seconds_count", pid, "compiler").values().sum();
    assert!(timed <= total && timed >= total - 4.0, "compilations timed {timed} of {total} (only those in flight at attach lack a start)");

    // Used per code heap vs jcmd Compiler.codecache, within 10 % (idle JVM: both are now).
    let logs: String = std::fs::read_dir(&work.0)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("agent-"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(!logs.contains("layout not recognised"), "the code heap layout of this JDK is decoded: {logs}");
    let (jheaps, _) = codecache(jdk, pid);
    let used = by_label(&scrape(port), "jvmdiag_code_cache_used_bytes", pid, "code_heap");
    assert_eq!(used.keys().collect::<Vec<_>>(), jheaps.keys().collect::<Vec<_>>(), "code heaps agent vs jcmd");
    for (heap, kb) in &jheaps {
        let agent_kb = used[heap] / 1024.0;
        let diff = (agent_kb - *kb as f64).abs();
        assert!(diff <= 0.10 * (*kb as f64) + 1.0, "{heap}: agent {agent_kb:.0} KB, jcmd {kb} KB");
    }
    // Every family the compilation collector registers is on the page, as the contract says.
    let compilation = REGISTRY.iter().find(|r| r.name == "compilation").expect("compilation is registered");
    let required: Vec<&str> = compilation.families.iter().map(|d| d.name).chain([metrics::JVM_INFO.name]).collect();
    check_contract(port, &required);
    check_promtool(port);

    // The JVM exits: its series are shown once more, then its kernel entries are released.
    for c in &mut procs.0[2..] {
        let _ = c.kill();
        let _ = c.wait();
    }
    std::thread::sleep(Duration::from_secs(1));
    scrape(port);
    let t0 = std::time::Instant::now();
    loop {
        let text = scrape(port);
        let left = samples(&text)
            .into_iter()
            .find(|(n, l, _)| n == "jvmdiag_agent_map_entries" && l.get("map").map(|m| m == "compilation").unwrap_or(false))
            .map(|(_, _, v)| v);
        if left == Some(0.0) && by_label(&text, "jvmdiag_compilations_total", pid, "compiler").is_empty() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "compilation map entries after the JVM exited: {left:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn code_cache_full(jdk: &Path) {
    require_root();
    let work = Work::new("jit-full");
    let cls = compile_workloads(&work.0);
    let mut procs = Procs::default();
    let port = start_agent(&mut procs, &work.0, "CodeCacheFill");
    // 4 MB, unsegmented; no flushing, so the cache fills and the compiler switches off.
    let (pid, out) = start_java(
        &mut procs,
        jdk,
        &work.0,
        "fill",
        &[
            "-XX:ReservedCodeCacheSize=4m",
            "-XX:-UseCodeCacheFlushing",
            "-XX:+PrintCompilation",
            "-cp",
            cls.to_str().unwrap(),
            "jitwork.CodeCacheFill",
            "20000",
            "3000",
        ],
    );
    wait_attached(port, pid);
    // The JVM's own warning: "CodeCache is full. Compiler has been disabled."
    wait_for_output(&out, "is full. Compiler has been disabled", Duration::from_secs(240));
    std::thread::sleep(Duration::from_secs(1));

    let (_, before) = codecache(jdk, pid);
    let text = scrape(port);
    let (heaps, after) = codecache(jdk, pid);
    let full = value(&text, "jvmdiag_code_cache_full_total", pid).expect("jvmdiag_code_cache_full_total");
    assert!(before >= 1, "jcmd full_count {before}");
    assert!(before as f64 <= full && full <= after as f64, "agent full {full}, jcmd full_count {before}..{after}");

    let used: f64 = by_label(&text, "jvmdiag_code_cache_used_bytes", pid, "code_heap").values().sum();
    let max: f64 = by_label(&text, "jvmdiag_code_cache_max_bytes", pid, "code_heap").values().sum();
    assert_eq!(max, 4.0 * 1024.0 * 1024.0, "max is -XX:ReservedCodeCacheSize");
    assert!(used / max > 0.8, "used approaches max: {used} of {max}");
    let jused: u64 = heaps.values().sum::<u64>() * 1024;
    assert!((used - jused as f64).abs() <= 0.10 * jused as f64, "used: agent {used}, jcmd {jused}");
    let output = std::fs::read_to_string(&out).unwrap();
    let printed = output.matches("warning: CodeCache is full").count();
    assert!(printed >= 1 && full >= 1.0, "the JVM warned {printed} time(s), agent counted {full}");

    // The compiler is off now: the most-compiled method (every class copy's applyAsLong has
    // the same name) is named with the count -XX:+PrintCompilation shows.
    let methods = by_label(&text, "jvmdiag_method_compilations_total", pid, "method");
    let (top, n) = methods.iter().filter(|(m, _)| *m != "other").max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    assert_eq!(top, "jitwork.CodeCacheFill$Worker.applyAsLong", "{methods:?}");
    let expected = print_compilation_count(&output, "jitwork.CodeCacheFill$Worker::applyAsLong");
    assert_eq!(*n, expected as f64, "agent vs -XX:+PrintCompilation for Worker::applyAsLong");
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn recompilation_storm_names_its_method_jdk17() {
    recompilation_storm(&jdk17());
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn recompilation_storm_names_its_method_jdk25() {
    recompilation_storm(&jdk25());
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn code_cache_full_is_counted_jdk17() {
    code_cache_full(&jdk17());
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn code_cache_full_is_counted_jdk25() {
    code_cache_full(&jdk25());
}
