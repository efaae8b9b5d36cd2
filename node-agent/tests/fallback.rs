//! The fallback chain against real JVMs whose libjvm.so lost its USDT notes (`objcopy
//! --remove-section .note.stapsdt`), also its symbols (`--strip-all`), and with
//! -XX:-UsePerfData: each lands in its mode and what that mode gives is exact against the
//! JVM's own hsperfdata counters as jcmd PerfCounter.print reports them.
//! Root only (eBPF): run by hack/suites/25-agent-jit.sh (`cargo test --test fallback -- --ignored`).
mod jit_common;

use std::path::Path;
use std::time::Duration;

use jit_common::*;

/// Agent value of one series, bracketed by two jcmd reads of `counter` (the JVM may move
/// on while we look): before <= agent <= after.
fn assert_bracketed(
    jdk: &Path,
    pid: u32,
    port: u16,
    counter: &str,
    agent: impl Fn(&str) -> Option<f64>,
    scale: f64,
) {
    let before = perf_counters(jdk, pid)[counter] as f64 * scale;
    std::thread::sleep(Duration::from_millis(700)); // > one agent poll (200 ms)
    let text = scrape(port);
    let after = perf_counters(jdk, pid)[counter] as f64 * scale;
    let got =
        agent(&text).unwrap_or_else(|| panic!("agent has no series for {counter} of pid {pid}"));
    let eps = 1e-6 * after.abs().max(1.0);
    assert!(
        before - eps <= got && got <= after + eps,
        "{counter}: agent {got}, JVM {before}..{after}"
    );
}

fn hsperf_seconds(jdk: &Path, pid: u32) -> f64 {
    let c = perf_counters(jdk, pid);
    1.0 / c["sun.os.hrt.frequency"] as f64
}

fn hist_sum(text: &str, name: &str, pid: u32) -> Option<f64> {
    by_label(text, name, pid, "vm_operation").get("unknown").copied()
}

/// Counters of a JVM and the agent's matching sums, read while the JVM is quiet.
struct Baseline {
    jvm: (i64, i64, i64),
    agent: (f64, f64, f64),
}

/// (thread starts, safepoints, pause seconds) the agent shows for a uprobe-mode JVM.
fn agent_sums(text: &str, pid: u32) -> (f64, f64, f64) {
    let sum = |name: &str, label: &str| by_label(text, name, pid, label).values().sum::<f64>();
    (
        sum("jvmdiag_thread_starts_total", "thread_name"),
        sum("jvmdiag_safepoint_pause_seconds_count", "vm_operation"),
        sum("jvmdiag_safepoint_pause_seconds_sum", "vm_operation"),
    )
}

fn jvm_counters(jdk: &Path, pid: u32) -> (i64, i64, i64) {
    let c = perf_counters(jdk, pid);
    (c["java.threads.started"], c["sun.rt.safepoints"], c["sun.rt.safepointTime"])
}

impl Baseline {
    /// jcmd (which itself starts the JVM's Attach Listener thread, seen by both), then the
    /// agent, then jcmd again: equal reads show the JVM was quiet in between.
    fn take(jdk: &Path, pid: u32, port: u16) -> Baseline {
        let before = jvm_counters(jdk, pid);
        std::thread::sleep(Duration::from_millis(700)); // > one agent poll
        let agent = agent_sums(&scrape(port), pid);
        let after = jvm_counters(jdk, pid);
        assert_eq!(
            before, after,
            "the uprobe JVM was not quiet while the baseline was read (machine too slow?)"
        );
        Baseline { jvm: before, agent }
    }

    /// Agent deltas equal the JVM's: counts exactly, the pause sum within 1 %.
    fn check(&self, jdk: &Path, pid: u32, port: u16) {
        let now = Baseline::take(jdk, pid, port);
        let hz = 1.0 / hsperf_seconds(jdk, pid);
        let jvm = (
            (now.jvm.0 - self.jvm.0) as f64,
            (now.jvm.1 - self.jvm.1) as f64,
            (now.jvm.2 - self.jvm.2) as f64 / hz,
        );
        let agent =
            (now.agent.0 - self.agent.0, now.agent.1 - self.agent.1, now.agent.2 - self.agent.2);
        eprintln!("uprobe mode deltas (starts, safepoints, pause s): agent {agent:?}, JVM {jvm:?}");
        assert_eq!(
            agent.0, jvm.0,
            "thread starts since the baseline: agent vs java.threads.started"
        );
        assert_eq!(agent.1, jvm.1, "safepoints since the baseline: agent vs sun.rt.safepoints");
        assert!(jvm.0 >= 30.0 && jvm.1 >= 6.0, "the workload ran: {jvm:?}");
        assert!(
            (agent.2 - jvm.2).abs() <= 0.01 * jvm.2,
            "pause sum: agent {} s vs sun.rt.safepointTime {} s",
            agent.2,
            jvm.2
        );
    }
}

fn chain(jdk: &Path) {
    require_root();
    let work = Work::new("fallback");
    let cls = compile_workloads(&work.0);
    let cp = cls.to_str().unwrap().to_string();
    let nostapsdt = jdk_variant(jdk, "nostapsdt");
    let stripped = jdk_variant(jdk, "stripped");
    let mut procs = Procs::default();
    let port = start_agent(&mut procs, &work.0, "Fallback");
    let args = |extra: &[&str], delay: &str| -> Vec<String> {
        let mut v: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        v.extend([
            "-cp".into(),
            cp.clone(),
            "jitwork.Fallback".into(),
            "30".into(),
            "6".into(),
            delay.into(),
        ]);
        v
    };
    let run = |procs: &mut Procs, home: &Path, tag: &str, extra: &[&str], delay: &str| {
        let a = args(extra, delay);
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        start_java(procs, home, &work.0, tag, &a)
    };
    // The uprobe and USDT JVMs wait longer: every probe must be attached before their
    // threads start (the uprobe JVM's attach reads its ELF symbols), and the uprobe JVM's
    // baseline is read while it is quiet.
    let (p_uprobe, o_uprobe) = run(&mut procs, &nostapsdt, "uprobe", &[], "9000");
    let (p_usdt, o_usdt) = run(&mut procs, jdk, "usdt", &[], "9000");
    let (p_hsperf, o_hsperf) = run(&mut procs, &stripped, "hsperf", &[], "3000");
    let (p_none, o_none) = run(&mut procs, &stripped, "none", &["-XX:-UsePerfData"], "3000");
    for p in [p_usdt, p_uprobe, p_hsperf, p_none] {
        wait_attached(port, p);
    }
    let base = Baseline::take(jdk, p_uprobe, port);
    for o in [&o_usdt, &o_uprobe, &o_hsperf, &o_none] {
        wait_for_output(o, "done", Duration::from_secs(180));
    }
    std::thread::sleep(Duration::from_secs(1));
    let text = scrape(port);
    let modes: Vec<String> = [p_usdt, p_uprobe, p_hsperf, p_none]
        .iter()
        .map(|p| probe_mode(&text, *p).unwrap_or_default())
        .collect();
    assert_eq!(
        modes,
        ["usdt", "uprobe", "hsperfdata", "not traced: no_probes_no_hsperfdata"].map(String::from).to_vec(),
        "probe modes of (full JDK, no .note.stapsdt, also no .symtab, also -XX:-UsePerfData): {modes:?}"
    );

    // No USDT: threads, safepoints and VM operations by uprobes on .symtab symbols, exact
    // against the JVM's counters since the baseline; compilations by uprobe (per compiler),
    // code heaps by uprobe.
    base.check(jdk, p_uprobe, port);
    let workers = by_label(&text, "jvmdiag_thread_starts_total", p_uprobe, "thread_name");
    assert_eq!(
        workers.get("fallback-worker-N").copied(),
        Some(30.0),
        "uprobe mode names threads: {workers:?}"
    );
    let usdt_workers = by_label(&text, "jvmdiag_thread_starts_total", p_usdt, "thread_name");
    assert_eq!(
        usdt_workers.get("fallback-worker-N").copied(),
        Some(30.0),
        "USDT mode: {usdt_workers:?}"
    );
    // Operation names as USDT mode gives them on the same JDK (System.gc() -> G1CollectFull).
    let ops = by_label(&text, "jvmdiag_safepoint_pause_seconds_count", p_uprobe, "vm_operation");
    let usdt_ops = by_label(&text, "jvmdiag_safepoint_pause_seconds_count", p_usdt, "vm_operation");
    assert!(!ops.contains_key("unknown"), "every safepoint named: {ops:?}");
    assert!(ops.get("G1CollectFull").copied().unwrap_or(0.0) >= 6.0, "uprobe mode: {ops:?}");
    assert!(
        usdt_ops.get("G1CollectFull").copied().unwrap_or(0.0) >= 6.0,
        "USDT mode: {usdt_ops:?}"
    );
    let vmops = |pid: u32| -> std::collections::BTreeSet<(String, String)> {
        samples(&text)
            .into_iter()
            .filter(|(n, l, _)| {
                n == "jvmdiag_vm_operation_seconds_count" && l.get("pid") == Some(&pid.to_string())
            })
            .map(|(_, l, _)| (l["vm_operation"].clone(), l["at_safepoint"].clone()))
            .collect()
    };
    let (up, us) = (vmops(p_uprobe), vmops(p_usdt));
    eprintln!("safepoints by operation: uprobe {ops:?}, USDT {usdt_ops:?}\nvm operations: uprobe {up:?}, USDT {us:?}");
    assert!(
        up.contains(&("G1CollectFull".into(), "true".into())),
        "uprobe mode vm operations: {up:?}"
    );
    for (op, at) in &up {
        assert!(
            !op.is_empty() && op != "unknown" && !op.starts_with("VM_"),
            "uprobe mode names {op}"
        );
        // The same operation is never at a safepoint in one mode and not in the other.
        assert!(
            !us.iter().any(|(o, a)| o == op && a != at),
            "{op} at_safepoint={at} (uprobe) vs USDT {us:?}"
        );
    }
    let comp = by_label(&text, "jvmdiag_compilations_total", p_uprobe, "compiler");
    assert!(
        comp.get("c1").copied().unwrap_or(0.0) > 0.0
            && comp.get("c2").copied().unwrap_or(0.0) > 0.0,
        "uprobe mode compilers: {comp:?}"
    );
    let all = perf_counters(jdk, p_uprobe)["sun.ci.totalCompiles"] as f64;
    assert!(
        comp.values().sum::<f64>() <= all,
        "uprobe compilations {comp:?} <= sun.ci.totalCompiles {all}"
    );
    assert!(
        by_label(&text, "jvmdiag_method_compilations_total", p_uprobe, "method").is_empty(),
        "no method names without USDT"
    );
    assert!(
        !by_label(&text, "jvmdiag_code_cache_used_bytes", p_uprobe, "code_heap").is_empty(),
        "code heaps need only .symtab"
    );
    {
        let pid = p_hsperf;
        assert_bracketed(
            jdk,
            pid,
            port,
            "java.threads.started",
            |t| {
                by_label(t, "jvmdiag_thread_starts_total", pid, "thread_name")
                    .get("unknown")
                    .copied()
            },
            1.0,
        );
        assert_bracketed(
            jdk,
            pid,
            port,
            "sun.rt.safepoints",
            |t| hist_sum(t, "jvmdiag_safepoint_pause_seconds_count", pid),
            1.0,
        );
        let s = hsperf_seconds(jdk, pid);
        assert_bracketed(
            jdk,
            pid,
            port,
            "sun.rt.safepointTime",
            |t| hist_sum(t, "jvmdiag_safepoint_pause_seconds_sum", pid),
            s,
        );
        assert_bracketed(
            jdk,
            pid,
            port,
            "sun.rt.safepointSyncTime",
            |t| hist_sum(t, "jvmdiag_safepoint_sync_seconds_sum", pid),
            s,
        );
        let n = perf_counters(jdk, pid)["sun.rt.safepoints"];
        assert!(n >= 6, "the workload's System.gc() calls are safepoints: {n}");
    }
    // Only hsperfdata: compilations are its total.
    assert_bracketed(
        jdk,
        p_hsperf,
        port,
        "sun.ci.totalCompiles",
        |t| by_label(t, "jvmdiag_compilations_total", p_hsperf, "compiler").get("unknown").copied(),
        1.0,
    );
    assert!(by_label(&text, "jvmdiag_code_cache_used_bytes", p_hsperf, "code_heap").is_empty());

    // Nothing: seen, counted with its reason, named by jvmdiag_agent_jvm_not_traced, and
    // no series but that and the agent's word that the monitors collector cannot see it
    // (it runs without the flag); no jvm_info, whose probe_mode says how a JVM is traced.
    let untraced = samples(&text)
        .into_iter()
        .find(|(n, l, _)| {
            n == "jvmdiag_agent_jvms_untraced"
                && l.get("reason").map(|r| r == "no_probes_no_hsperfdata").unwrap_or(false)
        })
        .map(|(_, _, v)| v);
    assert_eq!(
        untraced,
        Some(1.0),
        "jvmdiag_agent_jvms_untraced{{reason=\"no_probes_no_hsperfdata\"}}"
    );
    let other: Vec<String> = samples(&text)
        .into_iter()
        .filter(|(n, _, _)| {
            n != "jvmdiag_agent_jvm_not_traced" && n != "jvmdiag_agent_collector_unavailable"
        })
        .filter(|(_, l, _)| l.get("pid").map(|p| p == &p_none.to_string()).unwrap_or(false))
        .map(|(n, _, _)| n)
        .collect();
    assert!(other.is_empty(), "a JVM not traced has no other series: {other:?}");
    check_contract(
        port,
        &[
            "jvmdiag_jvm_info",
            "jvmdiag_thread_starts_total",
            "jvmdiag_safepoint_pause_seconds",
            "jvmdiag_compilations_total",
        ],
    );
    check_promtool(port);
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn each_jvm_lands_in_its_mode_with_exact_counts_jdk17() {
    chain(&jdk17());
}

#[test]
#[ignore = "needs root (eBPF) and the JDKs: hack/suites/25-agent-jit.sh"]
fn each_jvm_lands_in_its_mode_with_exact_counts_jdk25() {
    chain(&jdk25());
}
