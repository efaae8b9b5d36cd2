//! Test support: temp dirs, real JVMs, and builders for hand-made (hostile) inputs.
#![allow(
    dead_code,
    clippy::type_complexity,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct TempDir(pub PathBuf);
impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let p =
            std::env::temp_dir().join(format!("jvmdiag-inspect-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JDKs to test: $JDK17 and $JDK25 (hack/lib.sh exports them), else the usual paths.
pub fn jdks() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let j17 =
        std::env::var("JDK17").unwrap_or_else(|_| "/usr/lib/jvm/java-17-openjdk-amd64".into());
    v.push(PathBuf::from(j17));
    let j25 =
        std::env::var("JDK25").ok().filter(|s| !s.is_empty()).map(PathBuf::from).or_else(|| {
            std::fs::read_dir("/usr/lib/jvm").ok()?.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("temurin-25-jdk"))
            })
        });
    v.extend(j25);
    for j in &v {
        assert!(j.join("bin/java").exists(), "JDK missing: {} (set JDK17/JDK25)", j.display());
    }
    v
}

pub fn libjvm(jdk: &Path) -> PathBuf {
    jdk.join("lib/server/libjvm.so")
}

/// A running JVM, killed on drop; `lines` is what it printed on stdout so far; `classes` the
/// directory of its classes when it is the JVM's own (removed after it).
pub struct Jvm {
    pub child: Child,
    pub lines: Arc<Mutex<Vec<String>>>,
    pub classes: Option<TempDir>,
}
impl Jvm {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Compiles `source` (public class `class`) with `javac` (a JDK's bin/javac) and `javac_opts`
/// into a new directory.
pub fn compile(javac: &Path, class: &str, source: &str, javac_opts: &[&str]) -> TempDir {
    let dir = TempDir::new("jvm");
    let file = dir.path().join(format!("{class}.java"));
    std::fs::write(&file, source).unwrap();
    let st =
        Command::new(javac).args(javac_opts).arg("-d").arg(dir.path()).arg(&file).status().unwrap();
    assert!(st.success(), "javac failed");
    dir
}

/// Starts `java <flags> -cp <dir> <class>` and waits until it prints a line containing
/// "ready" on stdout (so its hsperfdata file exists and it has done its work); every line it
/// prints is kept in `lines`.
pub fn launch(jdk: &Path, dir: &Path, class: &str, flags: &[&str]) -> Jvm {
    let mut child = Command::new(jdk.join("bin/java"))
        .args(flags)
        .arg("-cp")
        .arg(dir)
        .arg(class)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let keep = lines.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let ready = l.contains("ready");
            keep.lock().unwrap().push(l);
            if ready {
                let _ = tx.send(());
            }
        }
    });
    let jvm = Jvm { child, lines, classes: None };
    rx.recv_timeout(Duration::from_secs(60)).expect("JVM did not print 'ready' in 60 s");
    jvm
}

/// Starts `java <flags> Main` from a compiled copy of `source` (class `Main`), and waits until
/// it prints "ready".
pub fn start_jvm(jdk: &Path, source: &str, flags: &[&str]) -> Jvm {
    let dir = compile(&jdk.join("bin/javac"), "Main", source, &[]);
    let mut jvm = launch(jdk, dir.path(), "Main", flags);
    jvm.classes = Some(dir);
    jvm
}

/// `jcmd PID PerfCounter.print` → name → raw value (strings without quotes).
pub fn jcmd_counters(jdk: &Path, pid: u32) -> std::collections::BTreeMap<String, String> {
    let out = Command::new(jdk.join("bin/jcmd"))
        .arg(pid.to_string())
        .arg("PerfCounter.print")
        .output()
        .unwrap();
    assert!(out.status.success(), "jcmd failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut m = std::collections::BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((k, v)) = l.split_once('=') {
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            m.insert(k.to_string(), v.to_string());
        }
    }
    assert!(m.len() > 50, "jcmd printed too few counters: {}", m.len());
    m
}

pub fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------- hsperfdata builder

/// One hand-made hsperfdata entry.
pub struct PerfEntry {
    pub name: Vec<u8>,
    pub kind: PerfKind,
}
pub enum PerfKind {
    Long(i64),
    Str(Vec<u8>, usize),
}

/// A little-endian v2.0 hsperfdata file laid out like HotSpot does.
pub fn perf_file(entries: &[PerfEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let name_off = 20usize;
        let mut name = e.name.clone();
        name.push(0);
        let mut data_off = name_off + name.len();
        let pad = (8 - data_off % 8) % 8;
        data_off += pad;
        let (dtype, vlen, units, data): (u8, u32, u8, Vec<u8>) = match &e.kind {
            PerfKind::Long(v) => (b'J', 0, 4, v.to_le_bytes().to_vec()),
            PerfKind::Str(s, cap) => {
                let mut d = s.clone();
                d.resize(*cap, 0);
                (b'B', *cap as u32, 5, d)
            }
        };
        let mut len = data_off + data.len();
        len += (8 - len % 8) % 8;
        let mut ent = Vec::new();
        ent.extend((len as u32).to_le_bytes());
        ent.extend((name_off as u32).to_le_bytes());
        ent.extend(vlen.to_le_bytes());
        ent.extend([dtype, 0, units, 1]);
        ent.extend((data_off as u32).to_le_bytes());
        ent.extend(&name);
        ent.resize(data_off, 0);
        ent.extend(&data);
        ent.resize(len, 0);
        body.extend(ent);
    }
    let used = 32 + body.len();
    let mut f = vec![0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1];
    f.extend((used as u32).to_le_bytes());
    f.extend(0u32.to_le_bytes());
    f.extend(0i64.to_le_bytes());
    f.extend(32u32.to_le_bytes());
    f.extend((entries.len() as u32).to_le_bytes());
    f.extend(body);
    f
}

pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

// ---------------------------------------------------------------- ELF builder

pub struct Probe<'a> {
    pub provider: &'a str,
    pub name: &'a str,
    pub pc: u64,
    pub semaphore: u64,
    pub args: &'a str,
}

/// A minimal ELF64 LE shared object: PT_LOAD at vaddr 0x1000 for file offset 0x1000, sections
/// .shstrtab, .note.stapsdt, .stapsdt.base (addr `sdt_base_actual`), .symtab/.strtab,
/// .dynsym/.dynstr, .note.gnu.build-id. Returns the bytes and, for tests, the section offsets.
pub struct ElfParts<'a> {
    pub probes: Vec<Probe<'a>>,
    pub note_base: u64,
    pub sdt_base_actual: u64,
    pub symtab: Vec<(&'a str, u64, u64)>,
    pub dynsym: Vec<(&'a str, u64, u64)>,
    pub build_id: Vec<u8>,
}

pub struct BuiltElf {
    pub bytes: Vec<u8>,
    /// (name, offset of its section header)
    pub shdr_offsets: Vec<(String, usize)>,
    /// file offset of each section's data
    pub data_offsets: Vec<(String, usize)>,
}

fn note(owner: &str, ntype: u32, desc: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend((owner.len() as u32 + 1).to_le_bytes());
    n.extend((desc.len() as u32).to_le_bytes());
    n.extend(ntype.to_le_bytes());
    n.extend(owner.as_bytes());
    n.push(0);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n.extend(desc);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n
}

fn syms(list: &[(&str, u64, u64)]) -> (Vec<u8>, Vec<u8>) {
    let mut tab = vec![0u8; 24];
    let mut strs = vec![0u8];
    for (name, value, size) in list {
        let off = strs.len() as u32;
        strs.extend(name.as_bytes());
        strs.push(0);
        let mut s = Vec::new();
        s.extend(off.to_le_bytes());
        s.push(0x12); // GLOBAL FUNC
        s.push(0);
        s.extend(1u16.to_le_bytes()); // defined in some section
        s.extend(value.to_le_bytes());
        s.extend(size.to_le_bytes());
        tab.extend(s);
    }
    (tab, strs)
}

pub fn build_elf(p: &ElfParts) -> BuiltElf {
    let mut notes = Vec::new();
    for pr in &p.probes {
        let mut d = Vec::new();
        d.extend(pr.pc.to_le_bytes());
        d.extend(p.note_base.to_le_bytes());
        d.extend(pr.semaphore.to_le_bytes());
        for s in [pr.provider, pr.name, pr.args] {
            d.extend(s.as_bytes());
            d.push(0);
        }
        notes.extend(note("stapsdt", 3, &d));
    }
    let bid = note("GNU", 3, &p.build_id);
    let (symtab, strtab) = syms(&p.symtab);
    let (dynsym, dynstr) = syms(&p.dynsym);
    // (name, type, addr, data, link, entsize)
    let mut secs: Vec<(&str, u32, u64, Vec<u8>, u32, u64)> = vec![
        ("", 0, 0, vec![], 0, 0),
        (".shstrtab", 3, 0, vec![], 0, 0),
        (".note.stapsdt", 7, 0, notes, 0, 0),
        (".stapsdt.base", 1, p.sdt_base_actual, vec![0], 0, 0),
        (".symtab", 2, 0, symtab, 5, 24),
        (".strtab", 3, 0, strtab, 0, 0),
        (".dynsym", 11, 0, dynsym, 7, 24),
        (".dynstr", 3, 0, dynstr, 0, 0),
        (".note.gnu.build-id", 7, 0, bid, 0, 0),
    ];
    let mut shstr = vec![0u8];
    let mut name_offs = Vec::new();
    for s in &secs {
        if s.0.is_empty() {
            name_offs.push(0u32);
        } else {
            name_offs.push(shstr.len() as u32);
            shstr.extend(s.0.as_bytes());
            shstr.push(0);
        }
    }
    secs[1].3 = shstr;
    let mut out = vec![0u8; 64 + 56];
    let mut data_offsets = Vec::new();
    let mut placed = Vec::new();
    for s in &secs {
        while out.len() % 8 != 0 {
            out.push(0);
        }
        placed.push(out.len());
        data_offsets.push((s.0.to_string(), out.len()));
        out.extend(&s.3);
    }
    // a PT_LOAD covering [0x1000, 0x1000+0x10000) at file offset 0x1000 (content not needed)
    while out.len() % 8 != 0 {
        out.push(0);
    }
    let shoff = out.len();
    let mut shdr_offsets = Vec::new();
    for (i, s) in secs.iter().enumerate() {
        shdr_offsets.push((s.0.to_string(), out.len()));
        let mut h = Vec::new();
        h.extend(name_offs[i].to_le_bytes());
        h.extend(s.1.to_le_bytes());
        h.extend(0u64.to_le_bytes());
        h.extend(s.2.to_le_bytes());
        h.extend((if i == 0 { 0 } else { placed[i] } as u64).to_le_bytes());
        h.extend((s.3.len() as u64).to_le_bytes());
        h.extend(s.4.to_le_bytes());
        h.extend(0u32.to_le_bytes());
        h.extend(1u64.to_le_bytes());
        h.extend(s.5.to_le_bytes());
        out.extend(h);
    }
    let filesz = 0x10000u64;
    // header
    out[0..4].copy_from_slice(b"\x7fELF");
    out[4] = 2;
    out[5] = 1;
    out[6] = 1;
    out[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    out[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
    put_u64(&mut out, 0x20, 64);
    put_u64(&mut out, 0x28, shoff as u64);
    out[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    out[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
    out[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
    out[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    out[0x3c..0x3e].copy_from_slice(&(secs.len() as u16).to_le_bytes());
    out[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
    // PT_LOAD
    put_u32(&mut out, 64, 1);
    put_u32(&mut out, 68, 5);
    put_u64(&mut out, 64 + 8, 0x1000);
    put_u64(&mut out, 64 + 16, 0x1000);
    put_u64(&mut out, 64 + 24, 0x1000);
    put_u64(&mut out, 64 + 32, filesz);
    put_u64(&mut out, 64 + 40, filesz);
    BuiltElf { bytes: out, shdr_offsets, data_offsets }
}

pub fn sample_elf() -> BuiltElf {
    build_elf(&ElfParts {
        probes: vec![
            Probe {
                provider: "hotspot",
                name: "thread__start",
                pc: 0x1100,
                semaphore: 0,
                args: "8@%rax -4@%edx",
            },
            Probe {
                provider: "hs_private",
                name: "safepoint__begin",
                pc: 0x1200,
                semaphore: 0x2000,
                args: "",
            },
        ],
        note_base: 0x3000,
        sdt_base_actual: 0x3000,
        symtab: vec![
            ("JVM_StartThread", 0x1300, 64),
            ("_ZN9CodeCache17report_codemem_fullEiB", 0x1400, 32),
        ],
        dynsym: vec![("JVM_StartThread", 0x1300, 64), ("JNI_CreateJavaVM", 0x1500, 16)],
        build_id: vec![0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4],
    })
}

pub fn section_header(e: &BuiltElf, name: &str) -> usize {
    e.shdr_offsets.iter().find(|(n, _)| n == name).unwrap().1
}
pub fn section_data(e: &BuiltElf, name: &str) -> usize {
    e.data_offsets.iter().find(|(n, _)| n == name).unwrap().1
}
