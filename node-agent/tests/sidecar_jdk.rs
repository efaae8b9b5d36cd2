//! Sidecar mode against real JVMs (JDK 17 and 25), on the host, unprivileged.
//!
//! A JVM writes `-Xlog:safepoint` with a tiny `filesize` so it rotates many times while the
//! sidecar (`jvmdiag-agent --sidecar`, as uid 65534 with no capabilities when the test runs
//! as root) follows it. Once the JVM idles, the sidecar's series are compared with the JVM's
//! own counters read by `jcmd <pid> PerfCounter.print` (the independent source): the
//! safepoint count exactly, the pause and time-to-safepoint totals within 1 %, thread starts,
//! live threads and compilations exactly.
//! With `%p` in the log's name (`safepoint-%p.log`, as the operator injects it), a tool JVM
//! started mid-run with the same `JAVA_TOOL_OPTIONS` (what `kubectl exec … jcmd` does in the
//! app container) writes a log of its own, and the counts stay exact.
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;
/// One JVM at a time: the sidecar reports the oldest JVM in /tmp/hsperfdata_* it can read.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
const GCS: u32 = 300;
const THREADS: u32 = 25;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The command, as uid/gid 65534 without capabilities when we are root.
fn unprivileged(prog: &str) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            prog,
        ]);
        c
    } else {
        Command::new(prog)
    }
}

fn workdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("jvmdiag-sidecar-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("log")).unwrap();
    for p in [d.clone(), d.join("log")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    d
}

fn compile(jdk: &Path, out: &Path) {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/workloads/sidecar/SafepointBurst.java");
    let st = Command::new(jdk.join("bin/javac")).arg("-d").arg(out).arg(&src).status().unwrap();
    assert!(st.success(), "javac failed");
    for e in std::fs::read_dir(out).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "class") {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    body.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// `name{labels} value` lines → (name, labels text) → value.
fn samples(text: &str) -> Vec<(String, String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, v) = l.rsplit_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n.to_string(), rest.trim_end_matches('}').to_string()),
                None => (series.to_string(), String::new()),
            };
            Some((name, labels, v.parse().ok()?))
        })
        .collect()
}

fn sum(s: &[(String, String, f64)], name: &str) -> f64 {
    s.iter().filter(|(n, _, _)| n == name).map(|(_, _, v)| v).sum()
}

fn perf_counters(jdk: &Path, pid: u32) -> HashMap<String, String> {
    let out = unprivileged(jdk.join("bin/jcmd").to_str().unwrap())
        .arg(pid.to_string())
        .arg("PerfCounter.print")
        .output()
        .unwrap();
    assert!(out.status.success(), "jcmd failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.split_once('=').map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        })
        .collect()
}

fn num(c: &HashMap<String, String>, k: &str) -> f64 {
    c.get(k).unwrap_or_else(|| panic!("{k} missing")).parse().unwrap()
}

fn check_jdk(jdk: &str, tag: &str, per_pid: bool) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let jdk = Path::new(jdk);
    if !jdk.join("bin/java").exists() {
        panic!("{} not installed", jdk.display());
    }
    let dir = workdir(tag);
    compile(jdk, &dir);
    let log = dir.join(if per_pid { "log/safepoint-%p.log" } else { "log/safepoint.log" });
    // filesize=4k: ~20 records per file, so GCS records rotate the file ~15 times.
    let xlog = format!(
        "-Xlog:safepoint=info:file={}:uptime,level,tags:filecount=3,filesize=4k",
        log.display()
    );
    let mut java = unprivileged(jdk.join("bin/java").to_str().unwrap());
    java.args([
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:GuaranteedSafepointInterval=0",
        "-Xmx64m",
        &xlog,
        "-cp",
    ])
    .arg(&dir)
    .args(["SafepointBurst", &GCS.to_string(), &THREADS.to_string(), "15"])
    .stdout(Stdio::piped());
    let mut jvm = Kill(java.spawn().unwrap());
    let pid = jvm.0.id();
    let port = free_port();
    let agent = env!("CARGO_BIN_EXE_jvmdiag-agent");
    let mut sc = unprivileged(agent);
    sc.args([
        "--sidecar",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--poll-interval-ms",
        "20",
        "--safepoint-log",
    ])
    .arg(&log)
    .env("JVMDIAG_POD_NAMESPACE", "ns1")
    .env("JVMDIAG_POD_NAME", "pod-1")
    .env("JVMDIAG_CONTAINERS", "app")
    .env("JVMDIAG_JVMDIAGNOSTICS", "burst");
    let sidecar = Kill(sc.spawn().unwrap());

    // The sidecar has no privilege: its own uid and capability sets say so.
    std::thread::sleep(Duration::from_millis(300));
    let mut tool_log = None;
    if per_pid {
        // A tool JVM with the app's JAVA_TOOL_OPTIONS, while the app makes safepoints.
        let mut t = unprivileged(jdk.join("bin/jcmd").to_str().unwrap())
            .arg(pid.to_string())
            .arg("VM.uptime")
            .env("JAVA_TOOL_OPTIONS", &xlog)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let tpid = t.id();
        let st = t.wait().unwrap();
        assert!(st.success(), "jcmd VM.uptime failed");
        tool_log = Some(dir.join(format!("log/safepoint-{tpid}.log")));
    }
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", sidecar.0.id())).unwrap_or_default();
    if is_root() {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("65534")),
            "{status}"
        );
        assert!(status.lines().any(|l| l == "CapEff:\t0000000000000000"), "{status}");
    }

    let mut out = BufReader::new(jvm.0.stdout.take().unwrap());
    let mut line = String::new();
    let t0 = Instant::now();
    while !line.contains("IDLE") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "JVM exited early");
        assert!(t0.elapsed() < Duration::from_secs(240), "JVM did not finish");
    }
    // The JVM idles: its counters stand still. Compare when jcmd reads the same before and after.
    let mut last = None;
    for _ in 0..5 {
        let before = perf_counters(jdk, pid);
        let text = scrape(port).expect("sidecar /metrics");
        let after = perf_counters(jdk, pid);
        let keys = [
            "sun.rt.safepoints",
            "sun.rt.safepointTime",
            "sun.ci.totalCompiles",
            "java.threads.started",
            "java.threads.live",
        ];
        if keys.iter().all(|k| before.get(*k) == after.get(*k)) {
            last = Some((after, text));
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (c, text) = last.expect("the JVM's counters never stood still");
    let s = samples(&text);
    let hz = num(&c, "sun.os.hrt.frequency");

    let count = sum(&s, "jvmdiag_safepoint_pause_seconds_count");
    assert_eq!(
        count,
        num(&c, "sun.rt.safepoints"),
        "safepoints: sidecar vs sun.rt.safepoints\n{text}"
    );
    assert!(count >= GCS as f64);
    let pause = sum(&s, "jvmdiag_safepoint_pause_seconds_sum");
    let jvm_pause = num(&c, "sun.rt.safepointTime") / hz;
    assert!(
        (pause - jvm_pause).abs() <= 0.01 * jvm_pause,
        "pause total {pause} vs sun.rt.safepointTime {jvm_pause}"
    );
    let sync = sum(&s, "jvmdiag_safepoint_sync_seconds_sum");
    let jvm_sync = num(&c, "sun.rt.safepointSyncTime") / hz;
    assert!(
        (sync - jvm_sync).abs() <= 0.01 * jvm_sync + 1e-6,
        "sync total {sync} vs sun.rt.safepointSyncTime {jvm_sync}"
    );
    assert_eq!(sum(&s, "jvmdiag_safepoint_sync_seconds_count"), count);
    // Buckets are cumulative: +Inf equals the count.
    let inf: f64 = s
        .iter()
        .filter(|(n, l, _)| {
            n == "jvmdiag_safepoint_pause_seconds_bucket" && l.contains("le=\"+Inf\"")
        })
        .map(|x| x.2)
        .sum();
    assert_eq!(inf, count);

    assert_eq!(sum(&s, "jvmdiag_thread_starts_total"), num(&c, "java.threads.started"));
    assert!(sum(&s, "jvmdiag_thread_starts_total") >= THREADS as f64);
    assert_eq!(sum(&s, "jvmdiag_threads_live"), num(&c, "java.threads.live"));
    assert_eq!(sum(&s, "jvmdiag_compilations_total"), num(&c, "sun.ci.totalCompiles"));

    // It really followed rotations, and nothing was skipped.
    let rotations = sum(&s, "jvmdiag_agent_sidecar_log_rotations_total");
    assert!(rotations >= 5.0, "rotations {rotations}\n{text}");
    assert_eq!(sum(&s, "jvmdiag_agent_sidecar_log_errors_total"), 0.0, "{text}");
    let app_log = if per_pid { dir.join(format!("log/safepoint-{pid}.log")) } else { log.clone() };
    assert!(app_log.with_extension("log.2").exists(), "the JVM did not rotate to .2");
    if let Some(t) = tool_log {
        assert!(t.exists(), "the tool JVM did not write a log of its own at {}", t.display());
    }

    // Labels per the contract.
    let info = s.iter().find(|(n, _, _)| n == "jvmdiag_jvm_info").expect("jvm_info").1.clone();
    for want in [
        "namespace=\"ns1\"",
        "pod=\"pod-1\"",
        "container=\"app\"",
        "jvm=\"SafepointBurst\"",
        "jvmdiagnostics=\"burst\"",
        "probe_mode=\"hsperfdata\"",
    ] {
        assert!(info.contains(want), "{want} missing in {info}");
    }
    assert!(
        s.iter().any(|(n, l, _)| n == "jvmdiag_safepoint_pause_seconds_count"
            && l.contains("vm_operation=\"G1CollectFull\"")),
        "{text}"
    );
    drop(sidecar);
    drop(jvm);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{tag}: {count} safepoints, {rotations} rotations, pause {pause:.6}s vs {jvm_pause:.6}s, sync {sync:.6}s vs {jvm_sync:.6}s");
}

#[test]
fn sidecar_matches_jdk17_counters_across_rotation() {
    check_jdk("/usr/lib/jvm/java-17-openjdk-amd64", "jdk17", false);
}

#[test]
fn sidecar_matches_jdk25_counters_across_rotation() {
    check_jdk("/usr/lib/jvm/temurin-25-jdk-amd64", "jdk25", false);
}

#[test]
fn sidecar_per_pid_log_exact_with_a_tool_jvm_jdk17() {
    check_jdk("/usr/lib/jvm/java-17-openjdk-amd64", "jdk17-pid", true);
}

#[test]
fn sidecar_per_pid_log_exact_with_a_tool_jvm_jdk25() {
    check_jdk("/usr/lib/jvm/temurin-25-jdk-amd64", "jdk25-pid", true);
}
