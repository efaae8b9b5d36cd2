//! Real JVMs on both installed JDKs: their hsperfdata (cross-checked with `jcmd
//! PerfCounter.print`), their /proc files, and their -Xlog:safepoint output (cross-checked
//! with the JVM's own safepoint counters).
mod common;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use jvmdiag_inspect::hsperfdata::{self, Value};
use jvmdiag_inspect::root::{read_host_file, ProcRoot};
use jvmdiag_inspect::{limits, procfs, safepoint_log};

/// Does a few full GCs and a thread dump (safepoints), starts 5 threads, then idles.
const MAIN: &str = r#"
public class Main {
    public static void main(String[] a) throws Exception {
        for (int i = 0; i < 4; i++) { System.gc(); }
        Thread.getAllStackTraces();
        for (int i = 0; i < 5; i++) { Thread t = new Thread(() -> {}); t.start(); t.join(); }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(120_000);
    }
}
"#;

fn user() -> String {
    let st = procfs::parse_status(&std::fs::read("/proc/self/status").unwrap()).unwrap();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.get(2) == Some(&st.uid_effective.to_string().as_str())).then(|| f[0].to_string())
        })
        .unwrap()
}

fn ours_as_jcmd(v: &Value) -> String {
    match v {
        Value::Long { value, .. } => value.to_string(),
        Value::String(s) => s.clone(),
        Value::Unsupported { .. } => "?".into(),
    }
}

#[test]
fn hsperfdata_matches_jcmd() {
    for jdk in common::jdks() {
        let jvm = common::start_jvm(&jdk, MAIN, &["-Xmx64m"]);
        let pid = jvm.pid();
        // Read it the way the agent does: through the process's root, by its innermost pid.
        let st = procfs::parse_status(
            &read_host_file(Path::new(&format!("/proc/{pid}/status")), limits::STATUS_MAX_BYTES)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(st.innermost_pid(), pid);
        let root = ProcRoot::open(pid).unwrap();
        let path = hsperfdata::path_for(&user(), st.innermost_pid());
        let before = common::jcmd_counters(&jdk, pid);
        let bytes = root.read_file(&path, limits::HSPERFDATA_MAX_BYTES).unwrap();
        let after = common::jcmd_counters(&jdk, pid);
        let pd = hsperfdata::parse(&bytes).unwrap();
        assert!(pd.accessible);
        assert_eq!((pd.major_version, pd.minor_version), (2, 0));
        let ours: BTreeMap<String, String> =
            pd.iter().map(|(n, v)| (n.to_string(), ours_as_jcmd(v))).collect();
        // jcmd derives sun.perfdata.* from the prologue: an independent reading of ours.
        assert_eq!(before["sun.perfdata.majorVersion"], pd.major_version.to_string());
        assert_eq!(before["sun.perfdata.minorVersion"], pd.minor_version.to_string());
        assert_eq!(before["sun.perfdata.size"], bytes.len().to_string());
        assert_eq!(before["sun.perfdata.overflow"], pd.overflow.to_string());
        if before["sun.perfdata.used"] == after["sun.perfdata.used"] {
            assert_eq!(before["sun.perfdata.used"], pd.used.to_string());
        }
        let counters: Vec<&String> =
            after.keys().filter(|k| !k.starts_with("sun.perfdata.")).collect();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            counters,
            "{}: the same counter names as jcmd",
            jdk.display()
        );
        let mut compared = 0;
        for (name, v) in &before {
            if after.get(name) == Some(v) && !name.starts_with("sun.perfdata.") {
                assert_eq!(ours.get(name), Some(v), "{}: {name}", jdk.display());
                compared += 1;
            }
        }
        assert!(compared > 100, "only {compared} stable counters compared");
        // The counters the hsperfdata fallback mode uses, read by name.
        let started = pd.long("java.threads.started").unwrap();
        assert!(started > 5, "java.threads.started = {started}");
        assert!(pd.long("sun.rt.safepoints").unwrap() >= 5);
        assert!(pd.ticks_to_seconds(pd.long("sun.rt.safepointTime").unwrap()).unwrap() > 0.0);
        assert_eq!(pd.string("sun.rt.javaCommand"), Some("Main"));
        let ver = pd.string("java.property.java.version").unwrap();
        let major = jdk.file_name().unwrap().to_str().unwrap().contains("-25-") as u8;
        assert!(ver.starts_with(if major == 1 { "25" } else { "17" }), "version {ver}");
    }
}

#[test]
fn proc_files_of_a_real_jvm() {
    for jdk in common::jdks() {
        let jvm = common::start_jvm(&jdk, MAIN, &["-Xmx64m", "-Dfoo=bar"]);
        let pid = jvm.pid();
        let maps = read_host_file(Path::new(&format!("/proc/{pid}/maps")), limits::MAPS_MAX_BYTES)
            .unwrap();
        let entries = procfs::parse_maps(&maps).unwrap();
        assert_eq!(entries.len(), maps.split(|&c| c == b'\n').filter(|l| !l.is_empty()).count());
        let lib = procfs::find_libjvm(&entries).unwrap();
        let want = std::fs::canonicalize(common::libjvm(&jdk)).unwrap();
        assert_eq!(lib.path.as_deref(), Some(want.to_str().unwrap()));
        assert_eq!(lib.offset, 0);
        // The inode matches the file on disk (an independent check of the fields' order).
        use std::os::unix::fs::MetadataExt;
        assert_eq!(lib.inode, std::fs::metadata(&want).unwrap().ino());
        let cmd =
            procfs::parse_cmdline(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap()).unwrap();
        assert_eq!(cmd.last().map(String::as_str), Some("Main"));
        assert_eq!(procfs::jvm_short_name(&cmd), "Main");
        let st =
            procfs::parse_status(&std::fs::read(format!("/proc/{pid}/status")).unwrap()).unwrap();
        assert_eq!(st.name, "java");
        assert_eq!(st.tgid, pid);
        assert_eq!(st.ppid, std::process::id());
        assert!(st.threads.unwrap() > 5);
    }
}

#[test]
fn proc_self() {
    let maps = procfs::parse_maps(&std::fs::read("/proc/self/maps").unwrap()).unwrap();
    let exe = std::env::current_exe().unwrap();
    let f = proc_self as fn() as usize as u64;
    let m = maps.iter().find(|m| m.start <= f && f < m.end).unwrap();
    assert_eq!(m.path.as_deref(), exe.to_str());
    assert!(m.perms.starts_with("r-x"));
    assert!(maps.iter().any(|m| m.path.as_deref() == Some("[stack]")));
    assert!(procfs::find_libjvm(&maps).is_none());
    let st = procfs::parse_status(&std::fs::read("/proc/self/status").unwrap()).unwrap();
    assert_eq!(st.tgid, std::process::id());
    assert_eq!(st.ppid, std::os::unix::process::parent_id());
    let id_u: u32 =
        String::from_utf8(std::process::Command::new("id").arg("-u").output().unwrap().stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    assert_eq!(st.uid_real, id_u);
    let cmd = procfs::parse_cmdline(&std::fs::read("/proc/self/cmdline").unwrap()).unwrap();
    assert_eq!(cmd, std::env::args().collect::<Vec<_>>());
}

#[test]
fn safepoint_log_matches_jvm_counters() {
    for jdk in common::jdks() {
        let tmp = common::TempDir::new("splog");
        let log = tmp.path().join("safepoint.log");
        // safepoint* also writes the safepoint,stats and safepoint,cleanup lines: not records.
        let flag = format!("-Xlog:safepoint*=info:file={}:uptime,level,tags", log.display());
        let jvm = common::start_jvm(&jdk, MAIN, &["-Xmx64m", &flag]);
        let pid = jvm.pid();
        let read = || {
            let text = std::fs::read_to_string(&log).unwrap();
            let mut p = safepoint_log::Parser::new();
            text.lines().filter_map(|l| p.feed(l)).collect::<Vec<_>>()
        };
        // Settle: the counters and the log agree once no safepoint is in flight.
        let mut tries = 0;
        let (recs, c) = loop {
            let c1 = common::jcmd_counters(&jdk, pid);
            let recs = read();
            let c2 = common::jcmd_counters(&jdk, pid);
            let n1: usize = c1["sun.rt.safepoints"].parse().unwrap();
            let n2: usize = c2["sun.rt.safepoints"].parse().unwrap();
            if n1 == n2 && n1 == recs.len() {
                break (recs, c2);
            }
            tries += 1;
            assert!(
                tries < 10,
                "{}: log has {} records, JVM counted {n1}..{n2}",
                jdk.display(),
                recs.len()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(recs.len() >= 5, "{}: {} records", jdk.display(), recs.len());
        assert!(recs.iter().any(|r| r.vm_operation == "ThreadDump"));
        assert!(recs.iter().filter(|r| r.vm_operation.starts_with("G1Collect")).count() >= 4);
        for r in &recs {
            assert!(r.uptime_seconds.unwrap() > 0.0);
            assert!(r.total_ns >= r.reaching_ns + r.at_safepoint_ns, "{r:?}");
        }
        // sun.rt.safepointSyncTime counts "Reaching safepoint", sun.rt.safepointTime "At
        // safepoint" (both in ticks of sun.os.hrt.frequency): the totals agree within 1 %.
        let hz: f64 = c["sun.os.hrt.frequency"].parse().unwrap();
        let sync = c["sun.rt.safepointSyncTime"].parse::<f64>().unwrap() / hz * 1e9;
        let time = c["sun.rt.safepointTime"].parse::<f64>().unwrap() / hz * 1e9;
        let ours_sync: u64 = recs.iter().map(|r| r.reaching_ns).sum();
        // safepointTime is everything after the threads are stopped: At safepoint plus the
        // Cleanup (17/21 builds that print it) or Leaving (25) phases, i.e. Total - Reaching.
        let ours_at: u64 = recs.iter().map(|r| r.after_sync_ns()).sum();
        eprintln!(
            "{}: {} safepoints; sync {ours_sync} ns vs {sync}; at {ours_at} ns vs {time}",
            jdk.display(),
            recs.len()
        );
        assert!(
            (ours_sync as f64 - sync).abs() <= sync * 0.01 + 1000.0 * recs.len() as f64,
            "sync {ours_sync} vs {sync}"
        );
        assert!(
            (ours_at as f64 - time).abs() <= time * 0.01 + 1000.0 * recs.len() as f64,
            "at-safepoint {ours_at} vs {time}"
        );
    }
}

#[test]
fn jvm_without_perf_data_has_no_file() {
    // -XX:-UsePerfData (the fallback chain's "none" mode): the file is absent, reported as not found
    // (the agent's reason for "not traced"), not as a hostile input.
    let jdk = &common::jdks()[common::jdks().len() - 1];
    let jvm = common::start_jvm(jdk, MAIN, &["-Xmx64m", "-XX:-UsePerfData"]);
    let root = ProcRoot::open(jvm.pid()).unwrap();
    let e = root
        .read_file(&hsperfdata::path_for(&user(), jvm.pid()), limits::HSPERFDATA_MAX_BYTES)
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
}
