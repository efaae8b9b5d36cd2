//! The compilation collector against real JVMs (JDK 17 and 25), checked against the JVM's
//! own accounts: -XX:+PrintCompilation lines, jcmd Compiler.codecache (used, full_count).
//! Root only (eBPF): run by hack/suites/25-agent-jit.sh (`cargo test --test jit -- --ignored`).
mod jit_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jit_common::*;
use jvmdiag_agent::collector::REGISTRY;
use jvmdiag_agent::metrics;

/// PrintCompilation lines that are compilations, not the "made not entrant" / "made zombie"
/// notes about earlier ones, nor failure notes.
fn compilation_lines(out: &str) -> impl Iterator<Item = &str> {
    out.lines().filter(|l| {
        !l.contains("made not entrant")
            && !l.contains("made zombie")
            && !l.contains("COMPILE SKIPPED")
    })
}

/// Compilations of `method` (`pkg.Class::name`) in -XX:+PrintCompilation output.
fn print_compilation_count(out: &str, method: &str) -> u64 {
    compilation_lines(out)
        .filter(|l| l.contains(&format!(" {method} ")) || l.ends_with(&format!(" {method}")))
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
    let port2 = start_agent_with(
        &mut procs,
        &work.0,
        "Recompile",
        &["--max-methods", "5", "--jvm-limits", "Recompile:maxMethods=2"],
    );
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
    let expected =
        print_compilation_count(&std::fs::read_to_string(&out).unwrap(), "jitwork.Recompile::hot");
    assert!(
        expected >= 25,
        "the workload should recompile hot() every round; PrintCompilation shows {expected}"
    );
    assert_eq!(
        methods.get("jitwork.Recompile.hot").copied(),
        Some(expected as f64),
        "agent vs -XX:+PrintCompilation for jitwork.Recompile::hot; agent's methods: {methods:?}"
    );
    let hot = methods["jitwork.Recompile.hot"];
    let rivals: Vec<_> = methods
        .iter()
        .filter(|(m, n)| *m != "other" && *m != "jitwork.Recompile.hot" && **n >= hot)
        .collect();
    assert!(
        rivals.is_empty(),
        "the recompiled method tops the list alone, not {rivals:?}: {methods:?}"
    );
    assert!(methods.len() <= 21, "at most --max-methods (20) names plus other: {methods:?}");

    let two = by_label(&scrape(port2), "jvmdiag_method_compilations_total", pid, "method");
    assert_eq!(two.len(), 3, "maxMethods=2 for this JVM: two names and other: {two:?}");
    assert_eq!(two.get("jitwork.Recompile.hot").copied(), Some(expected as f64), "{two:?}");

    let compilers = by_label(&text, "jvmdiag_compilations_total", pid, "compiler");
    assert!(
        compilers.get("c1").copied().unwrap_or(0.0) > 0.0
            && compilers.get("c2").copied().unwrap_or(0.0) > 0.0,
        "{compilers:?}"
    );
    let total: f64 = compilers.values().sum();
    let timed: f64 =
        by_label(&text, "jvmdiag_compilation_seconds_count", pid, "compiler").values().sum();
    assert!(
        timed <= total && timed >= total - 4.0,
        "compilations timed {timed} of {total} (only those in flight at attach lack a start)"
    );

    // Used per code heap vs jcmd Compiler.codecache, within 10 % (idle JVM: both are now).
    let logs: String = std::fs::read_dir(&work.0)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("agent-"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(
        !logs.contains("layout not recognised"),
        "the code heap layout of this JDK is decoded: {logs}"
    );
    let (jheaps, _) = codecache(jdk, pid);
    let used = by_label(&scrape(port), "jvmdiag_code_cache_used_bytes", pid, "code_heap");
    assert_eq!(
        used.keys().collect::<Vec<_>>(),
        jheaps.keys().collect::<Vec<_>>(),
        "code heaps agent vs jcmd"
    );
    for (heap, kb) in &jheaps {
        let agent_kb = used[heap] / 1024.0;
        let diff = (agent_kb - *kb as f64).abs();
        assert!(diff <= 0.10 * (*kb as f64) + 1.0, "{heap}: agent {agent_kb:.0} KB, jcmd {kb} KB");
    }
    // Every family the compilation collector registers is on the page, as the contract says.
    let compilation =
        REGISTRY.iter().find(|r| r.name == "compilation").expect("compilation is registered");
    let required: Vec<&str> =
        compilation.families.iter().map(|d| d.name).chain([metrics::JVM_INFO.name]).collect();
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
            .find(|(n, l, _)| {
                n == "jvmdiag_agent_map_entries"
                    && l.get("map").map(|m| m == "compilation").unwrap_or(false)
            })
            .map(|(_, _, v)| v);
        if left == Some(0.0)
            && by_label(&text, "jvmdiag_compilations_total", pid, "compiler").is_empty()
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "compilation map entries after the JVM exited: {left:?}"
        );
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
    let full =
        value(&text, "jvmdiag_code_cache_full_total", pid).expect("jvmdiag_code_cache_full_total");
    assert!(before >= 1, "jcmd full_count {before}");
    assert!(
        before as f64 <= full && full <= after as f64,
        "agent full {full}, jcmd full_count {before}..{after}"
    );

    let used: f64 =
        by_label(&text, "jvmdiag_code_cache_used_bytes", pid, "code_heap").values().sum();
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
    let (top, n) =
        methods.iter().filter(|(m, _)| *m != "other").max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
    assert_eq!(top, "jitwork.CodeCacheFill$Worker.applyAsLong", "{methods:?}");
    let expected = print_compilation_count(&output, "jitwork.CodeCacheFill$Worker::applyAsLong");
    assert_eq!(*n, expected as f64, "agent vs -XX:+PrintCompilation for Worker::applyAsLong");
}

/// The staging flood (generated Java): FLOOD methods in package `flood`, each called 10,000
/// times (compiled once, or not at all when the compile queue raised the threshold), in chunks of CHUNK; and HOT_COPIES copies of `flood.Hot` (one class
/// defined by as many class loaders: one method name, each copy compiled once), half before
/// the flood and half after.
const FLOOD: usize = 1500;
const CHUNK: usize = 100;
const HOT_COPIES: usize = 8;

/// Writes the staging workload and compiles it: `StagingLauncher DIR HOT_CLASSES` (on the
/// class path returned, outside `flood`, so never compiled) waits for DIR/go, runs the copies
/// and the flood, and prints "done"; `flood.Hot` is compiled into HOT_CLASSES, off the class
/// path, so that each class loader defines its own copy. Returns (class path, HOT_CLASSES).
fn staging_workload(dir: &Path) -> (PathBuf, PathBuf) {
    use std::fmt::Write as _;
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("flood")).unwrap();
    let mut methods = String::from("package flood;\npublic class Methods {\n");
    for i in 0..FLOOD {
        writeln!(methods, "    static long m{i}(long x) {{ return x * {i} + {}; }}", i % 7)
            .unwrap();
    }
    for c in 0..FLOOD / CHUNK {
        write!(
            methods,
            "    public static long c{c}() {{ long s = 0; for (int k = 0; k < 10000; k++) {{"
        )
        .unwrap();
        for i in c * CHUNK..(c + 1) * CHUNK {
            write!(methods, " s += m{i}(k);").unwrap();
        }
        writeln!(methods, " }} return s; }}").unwrap();
    }
    methods.push_str("}\n");
    let hot = "package flood;\npublic class Hot implements java.util.function.LongUnaryOperator {\n    public long applyAsLong(long x) { return x * 31 + 7; }\n}\n";
    let chunks: String =
        (0..FLOOD / CHUNK).map(|c| format!("        s += flood.Methods.c{c}();\n")).collect();
    let half = HOT_COPIES / 2;
    let launcher = format!(
        "import java.net.URL;\nimport java.net.URLClassLoader;\nimport java.nio.file.Files;\nimport java.nio.file.Path;\nimport java.util.function.LongUnaryOperator;\n\n\
public class StagingLauncher {{\n\
    static long copies(Path hot, int n) throws Exception {{\n\
        long s = 0;\n\
        for (int c = 0; c < n; c++) {{\n\
            URLClassLoader l = new URLClassLoader(new URL[] {{hot.toUri().toURL()}}, StagingLauncher.class.getClassLoader());\n\
            LongUnaryOperator op = (LongUnaryOperator) l.loadClass(\"flood.Hot\").getDeclaredConstructor().newInstance();\n\
            for (int i = 0; i < 5000; i++) s += op.applyAsLong(i);\n\
            Thread.sleep(200); // compiled before the next copy\n\
        }}\n\
        return s;\n\
    }}\n\n\
    public static void main(String[] a) throws Exception {{\n\
        Path go = Path.of(a[0]), hot = Path.of(a[1]);\n\
        while (!Files.exists(go)) Thread.sleep(50);\n\
        long s = copies(hot, {half});\n{chunks}\
        s += copies(hot, {});\n\
        System.out.println(\"done \" + s);\n\
        Thread.sleep(Long.MAX_VALUE);\n\
    }}\n\
}}\n",
        HOT_COPIES - half
    );
    std::fs::write(src.join("flood/Methods.java"), methods).unwrap();
    std::fs::write(src.join("flood/Hot.java"), hot).unwrap();
    std::fs::write(src.join("StagingLauncher.java"), launcher).unwrap();
    let (cls, hot_cls) = (dir.join("cls"), dir.join("hot"));
    for (out, files) in [
        (&cls, vec![src.join("flood/Methods.java"), src.join("StagingLauncher.java")]),
        (&hot_cls, vec![src.join("flood/Hot.java")]),
    ] {
        let st = std::process::Command::new(jdk17().join("bin/javac"))
            .args(["--release", "17", "-d"])
            .arg(out)
            .args(&files)
            .status()
            .expect("javac");
        assert!(st.success(), "javac failed");
    }
    (cls, hot_cls)
}

/// Compilations per method (`pkg.Class::name`) in -XX:+PrintCompilation output.
fn print_compilation_methods(out: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    // Native wrappers (method handle intrinsics) are made without a compilation.
    for l in compilation_lines(out).filter(|l| !l.contains("(native)")) {
        if let Some(name) = l.split_whitespace().find(|t| t.contains("::")) {
            *m.entry(name.to_string()).or_default() += 1;
        }
    }
    m
}

/// Entries of the BPF map named `name` that process `pid` holds (bpftool, the kernel's view).
fn bpf_map_entries(pid: u32, name: &str) -> usize {
    let mut ids = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap().flatten() {
        let info = std::fs::read_to_string(e.path()).unwrap_or_default();
        if let Some(id) = info.lines().find_map(|l| l.strip_prefix("map_id:")) {
            ids.insert(id.trim().to_string());
        }
    }
    let bpftool = |args: &[&str]| -> String {
        let o = std::process::Command::new("bpftool").args(args).output().expect("bpftool");
        assert!(o.status.success(), "bpftool {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // `bpftool map show id ID`: "ID: TYPE  name NAME  flags ..."; a dump ends "Found N
    // elements", or, for a map with BTF, is a list with one `"key":` line per element.
    let id = ids
        .into_iter()
        .find(|id| {
            bpftool(&["map", "show", "id", id])
                .split_whitespace()
                .skip_while(|w| *w != "name")
                .nth(1)
                == Some(name)
        })
        .unwrap_or_else(|| panic!("process {pid} holds no map named {name}"));
    let dump = bpftool(&["map", "dump", "id", &id]);
    let found = dump
        .lines()
        .find_map(|l| l.strip_prefix("Found ")?.strip_suffix(" elements")?.parse().ok());
    found.unwrap_or_else(|| dump.lines().filter(|l| l.trim_start().starts_with("\"key\":")).count())
}

/// More distinct methods than the staging table holds (shrunk to 256 entries): its evictions
/// equal the methods staged minus those promoted minus those still in it, as counted from the
/// JVM's own PrintCompilation lines and the kernel's map (bpftool); the promoted method's count
/// stays exact through the evictions.
fn staging_evictions(jdk: &Path) {
    require_root();
    let work = Work::new("jit-staging");
    let (cls, hot_cls) = staging_workload(&work.0);
    let mut procs = Procs::default();
    let port = start_agent_with(
        &mut procs,
        &work.0,
        "StagingLauncher",
        &["--method-staging-entries", "256"],
    );
    let agent_pid = procs.0[0].id();
    // Only the generated methods are compiled (the JDK's own stay interpreted), by C1 alone,
    // one compiler thread: each flood method and each copy of Hot.applyAsLong exactly once.
    let go = work.0.join("go");
    let (pid, out) = start_java(
        &mut procs,
        jdk,
        &work.0,
        "staging",
        &[
            "-XX:+PrintCompilation",
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=compileonly,flood.*::*",
            "-XX:CompileCommand=dontinline,flood.*::*",
            "-XX:TieredStopAtLevel=1",
            "-XX:CICompilerCount=1",
            "-cp",
            cls.to_str().unwrap(),
            "StagingLauncher",
            go.to_str().unwrap(),
            hot_cls.to_str().unwrap(),
        ],
    );
    wait_attached(port, pid);
    std::fs::write(&go, "").unwrap();
    wait_for_output(&out, "done", Duration::from_secs(240));
    std::thread::sleep(Duration::from_secs(2)); // compilations in flight finish, the JVM idles

    let log = print_compilation_methods(&std::fs::read_to_string(&out).unwrap());
    let others: Vec<_> = log.keys().filter(|m| !m.starts_with("flood.")).collect();
    assert!(others.is_empty(), "only the generated methods compile: {others:?}");
    let hot_n = log.get("flood.Hot::applyAsLong").copied().unwrap_or(0);
    assert_eq!(hot_n, HOT_COPIES as u64, "each copy of Hot.applyAsLong is compiled once: {hot_n}");
    let promoted = log.values().filter(|n| **n >= 3).count() as u64;
    assert_eq!(promoted, 1, "only Hot.applyAsLong is compiled often enough to get its own counter");
    assert!(
        log.values().all(|n| *n == 1 || *n == hot_n),
        "flood methods are compiled once each: {:?}",
        log.iter().filter(|(_, n)| **n != 1).collect::<Vec<_>>()
    );
    let staged = log.len() as u64;
    assert!(
        staged > 2 * 256,
        "the flood compiled {staged} distinct methods, more than twice the table"
    );

    let text = scrape(port);
    let present = bpf_map_entries(agent_pid, "method_seen") as u64;
    assert!(present <= 256, "the staging table holds at most its 256 entries: {present}");
    let evicted = samples(&text)
        .into_iter()
        .find(|(n, l, _)| {
            n == "jvmdiag_agent_jvm_map_evictions_total"
                && l.get("pid") == Some(&pid.to_string())
                && l.get("map").map(String::as_str) == Some("method_seen")
        })
        .map(|(_, _, v)| v)
        .expect("jvmdiag_agent_jvm_map_evictions_total{map=\"method_seen\"} of the JVM");
    assert_eq!(
        evicted,
        (staged - promoted - present) as f64,
        "evictions: {staged} methods staged (PrintCompilation) - {promoted} promoted - {present} in the table (bpftool)"
    );
    eprintln!("staging: {staged} methods staged, {promoted} promoted, {present} in the table, {evicted} evicted");
    let agent_wide = |t: &str| {
        samples(t)
            .into_iter()
            .find(|(n, l, _)| {
                n == "jvmdiag_agent_map_evictions_total"
                    && l.get("map").map(String::as_str) == Some("method_seen")
            })
            .map(|(_, _, v)| v)
    };
    assert_eq!(agent_wide(&text), Some(evicted), "one JVM traced: the agent's total is its count");
    let methods = by_label(&text, "jvmdiag_method_compilations_total", pid, "method");
    assert_eq!(
        methods.get("flood.Hot.applyAsLong").copied(),
        Some(hot_n as f64),
        "agent vs -XX:+PrintCompilation for Hot.applyAsLong: {methods:?}"
    );

    // The JVM exits and its slot is released: its evictions stay in the agent's total.
    procs.0[1].kill().unwrap();
    procs.0[1].wait().unwrap();
    let t0 = std::time::Instant::now();
    loop {
        let t = scrape(port);
        if probe_mode(&t, pid).is_none() && bpf_map_entries(agent_pid, "method_seen") == 0 {
            assert_eq!(agent_wide(&t), Some(evicted), "after the release");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "the JVM's slot was not released");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn staging_evictions_are_counted_exactly_jdk17() {
    staging_evictions(&jdk17());
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn staging_evictions_are_counted_exactly_jdk25() {
    staging_evictions(&jdk25());
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
