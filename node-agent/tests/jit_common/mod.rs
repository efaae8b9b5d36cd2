//! Shared by tests/jit.rs and tests/fallback.rs: real JVMs, the real agent, independent
//! sources (jcmd PerfCounter.print, jcmd Compiler.codecache, -XX:+PrintCompilation).
//! Every process started here is killed when its guard drops, also when a test fails.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

pub fn jdk17() -> PathBuf {
    PathBuf::from(std::env::var("JDK17").unwrap_or_else(|_| JDK17.into()))
}

pub fn jdk25() -> PathBuf {
    if let Ok(j) = std::env::var("JDK25") {
        return j.into();
    }
    std::fs::read_dir("/usr/lib/jvm")
        .expect("/usr/lib/jvm")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("temurin-25-jdk"))
                .unwrap_or(false)
        })
        .expect("Temurin 25 under /usr/lib/jvm (set JDK25=)")
}

pub fn cache_dir() -> PathBuf {
    match std::env::var("JVMDIAG_CACHE") {
        Ok(c) => c.into(),
        Err(_) => PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
            .join(".cache/jvm-diagnostics"),
    }
}

pub fn require_root() {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    assert_eq!(
        uid, 0,
        "these tests load eBPF programs: run them as root (hack/suites/25-agent-jit.sh)"
    );
}

/// Kills (SIGKILL) and reaps its children when dropped.
#[derive(Default)]
pub struct Procs(pub Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scratch directory for one test, removed at the end.
pub struct Work(pub PathBuf);

impl Work {
    /// Unique per call: the JDK 17 and JDK 25 variants of a test run at the same time in one
    /// process, and a shared directory would mix their JVMs' output files.
    pub fn new(name: &str) -> Work {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("jvmdiag-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Work(d)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles e2e/workloads/jit/jitwork/*.java (release 17, runs on 17 and 25) into `out`.
pub fn compile_workloads(out: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/workloads/jit/jitwork");
    let files: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map(|x| x == "java").unwrap_or(false))
        .collect();
    let cls = out.join("cls");
    let st = Command::new(jdk17().join("bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(&cls)
        .args(&files)
        .status()
        .expect("javac");
    assert!(st.success(), "javac failed");
    cls
}

/// Free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the agent (standalone, only JVMs whose name contains `matching`) and waits for /healthz.
pub fn start_agent(procs: &mut Procs, work: &Path, matching: &str) -> u16 {
    start_agent_with(procs, work, matching, &[])
}

pub fn start_agent_with(procs: &mut Procs, work: &Path, matching: &str, extra: &[&str]) -> u16 {
    let port = free_port();
    let log = std::fs::File::create(work.join(format!("agent-{port}.log"))).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_jvmdiag-agent"))
        .args([
            "--standalone",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--match-jvm",
            matching,
            "--exit-after",
            "600",
        ])
        .args(extra)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start jvmdiag-agent");
    procs.0.push(child);
    let t0 = Instant::now();
    while http_get(port, "/healthz").is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "agent did not come up: {}",
            std::fs::read_to_string(work.join(format!("agent-{port}.log"))).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    port
}

pub fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    let (_, b) = body.split_once("\r\n\r\n")?;
    Some(b.to_string())
}

pub fn scrape(port: u16) -> String {
    http_get(port, "/metrics").expect("scrape /metrics")
}

/// One sample: (name, labels, value).
pub type Sample = (String, BTreeMap<String, String>, f64);

pub fn samples(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (head, value) = match line.rsplit_once(' ') {
            Some(x) => x,
            None => continue,
        };
        let Ok(v) = value.parse::<f64>() else { continue };
        let (name, labels) = match head.split_once('{') {
            Some((n, rest)) => (n.to_string(), parse_labels(rest.trim_end_matches('}'))),
            None => (head.to_string(), BTreeMap::new()),
        };
        out.push((name, labels, v));
    }
    out
}

fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut rest = s;
    while let Some((k, r)) = rest.split_once("=\"") {
        let mut val = String::new();
        let mut chars = r.char_indices();
        let mut end = r.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        val.push(n);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => val.push(c),
            }
        }
        m.insert(k.trim_start_matches(',').to_string(), val);
        rest = &r[end..];
    }
    m
}

/// Samples of `name` for one pid, with the label `label` as key.
pub fn by_label(text: &str, name: &str, pid: u32, label: &str) -> BTreeMap<String, f64> {
    samples(text)
        .into_iter()
        .filter(|(n, l, _)| {
            n == name && l.get("pid").map(|p| p == &pid.to_string()).unwrap_or(false)
        })
        .map(|(_, l, v)| (l.get(label).cloned().unwrap_or_default(), v))
        .collect()
}

pub fn value(text: &str, name: &str, pid: u32) -> Option<f64> {
    by_label(text, name, pid, "").values().next().copied()
}

/// jvm_info's probe_mode of the pid, or "not traced: REASON" for a JVM the agent sees and
/// cannot trace (jvmdiag_agent_jvm_not_traced); None while the agent does not show it.
pub fn probe_mode(text: &str, pid: u32) -> Option<String> {
    samples(text).into_iter().find_map(|(n, l, _)| {
        if l.get("pid") != Some(&pid.to_string()) {
            return None;
        }
        match n.as_str() {
            "jvmdiag_jvm_info" => l.get("probe_mode").cloned(),
            "jvmdiag_agent_jvm_not_traced" => Some(format!("not traced: {}", l.get("reason")?)),
            _ => None,
        }
    })
}

/// Starts a JVM with stdout+stderr to `work/<tag>.out`.
pub fn start_java(
    procs: &mut Procs,
    java_home: &Path,
    work: &Path,
    tag: &str,
    args: &[&str],
) -> (u32, PathBuf) {
    let out = work.join(format!("{tag}.out"));
    let f = std::fs::File::create(&out).unwrap();
    let child = Command::new(java_home.join("bin/java"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(f.try_clone().unwrap())
        .stderr(f)
        .spawn()
        .expect("start java");
    let pid = child.id();
    procs.0.push(child);
    (pid, out)
}

/// Waits until `file` contains `needle` (the workload's own output).
pub fn wait_for_output(file: &Path, needle: &str, timeout: Duration) {
    let t0 = Instant::now();
    loop {
        let s = std::fs::read_to_string(file).unwrap_or_default();
        if s.contains(needle) {
            return;
        }
        assert!(
            t0.elapsed() < timeout,
            "{} did not print {needle:?} within {timeout:?}; output:\n{}",
            file.display(),
            tail(&s)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Waits until the agent shows the pid in jvmdiag_jvm_info.
pub fn wait_attached(port: u16, pid: u32) -> String {
    let t0 = Instant::now();
    loop {
        let t = scrape(port);
        if probe_mode(&t, pid).is_some() {
            return t;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "agent never showed pid {pid}:\n{t}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `jcmd PID <cmd>` with the JDK's own jcmd (an independent view of the JVM).
pub fn jcmd(java_home: &Path, pid: u32, cmd: &str) -> String {
    let o = Command::new(java_home.join("bin/jcmd"))
        .arg(pid.to_string())
        .arg(cmd)
        .output()
        .expect("jcmd");
    assert!(o.status.success(), "jcmd {pid} {cmd}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `jcmd PID PerfCounter.print` as name -> integer.
pub fn perf_counters(java_home: &Path, pid: u32) -> BTreeMap<String, i64> {
    jcmd(java_home, pid, "PerfCounter.print")
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            Some((k.to_string(), v.trim().parse::<i64>().ok()?))
        })
        .collect()
}

/// `jcmd PID Compiler.codecache`: (used KB per code heap, full_count).
pub fn codecache(java_home: &Path, pid: u32) -> (BTreeMap<String, u64>, u64) {
    let text = jcmd(java_home, pid, "Compiler.codecache");
    let mut heaps = BTreeMap::new();
    let kb = |l: &str, key: &str| -> Option<u64> {
        let i = l.find(key)? + key.len();
        l[i..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    let segmented = text.contains("CodeHeap '");
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("CodeHeap '") {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            heaps.insert(name, kb(l, "used=").unwrap_or(0));
        } else if !segmented && l.starts_with("CodeCache:") {
            heaps.insert("CodeCache".to_string(), kb(l, "used=").unwrap_or(0));
        }
    }
    let full = text.lines().find_map(|l| kb(l, "full_count=")).unwrap_or(0);
    (heaps, full)
}

/// The metrics contract checker (docs/contracts.md) against the agent's page.
pub fn check_contract(port: u16, require: &[&str]) {
    let tool = std::env::var("CONTRACT_TOOL")
        .unwrap_or_else(|_| "/work/shared/tools/check-metrics-contract.py".into());
    let o = Command::new("python3")
        .arg(&tool)
        .arg(format!("http://127.0.0.1:{port}/metrics"))
        .arg("--require")
        .args(require)
        .output()
        .expect("python3 check-metrics-contract.py");
    assert!(
        o.status.success(),
        "metrics contract: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `promtool check metrics` (Prometheus' own linter) on the agent's page.
pub fn check_promtool(port: u16) {
    use std::io::Write as _;
    let page = scrape(port);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (make setup installs it)");
    child.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A copy of a JDK whose libjvm.so lost its USDT notes (`nostapsdt`) or also its symbol
/// table (`stripped`), made once in the cache: hard links for everything but libjvm.so.
pub fn jdk_variant(jdk: &Path, kind: &str) -> PathBuf {
    let real = std::fs::canonicalize(jdk).unwrap();
    let name = real.file_name().unwrap().to_string_lossy().to_string();
    let dir = cache_dir().join("jdk-variants").join(format!("jit-{name}-{kind}"));
    if dir.join("bin/java").exists() {
        return dir;
    }
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.parent().unwrap()).unwrap();
    assert!(
        Command::new("cp").arg("-al").arg(&real).arg(&tmp).status().unwrap().success(),
        "cp -al {}",
        real.display()
    );
    let lib = tmp.join("lib/server/libjvm.so");
    let new = tmp.join("lib/server/libjvm.so.new");
    let mut cmd = Command::new("objcopy");
    cmd.args(["--remove-section", ".note.stapsdt"]);
    if kind == "stripped" {
        cmd.arg("--strip-all");
    }
    assert!(
        cmd.arg(&lib).arg(&new).status().expect("objcopy (binutils)").success(),
        "objcopy {}",
        lib.display()
    );
    std::fs::rename(&new, &lib).unwrap(); // replaces the hard link, not the original
    std::fs::rename(&tmp, &dir).unwrap();
    dir
}
