//! The real libjvm.so of each installed JDK, cross-checked with binutils (`nm`, `objcopy`).
mod common;
use std::collections::BTreeSet;
use std::process::Command;

use jvmdiag_inspect::elf;

fn tool(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().expect(args[0]);
    assert!(out.status.success(), "{args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn symbols_match_nm() {
    // Symbols the code-cache-full uprobe and thread tracking look for; nm reads .symtab.
    let pick = |n: &str| {
        n.contains("CodeCache")
            || n.starts_with("JVM_StartThread")
            || n.contains("report_codemem_full")
    };
    for jdk in common::jdks() {
        let path = common::libjvm(&jdk);
        let b = std::fs::read(&path).unwrap();
        let ours: BTreeSet<(String, u64)> = elf::symbols(&b, &pick)
            .unwrap()
            .into_iter()
            .filter(|s| s.from_symtab)
            .map(|s| (s.name, s.value))
            .collect();
        let nm = tool(&["nm", "--defined-only", path.to_str().unwrap()]);
        let theirs: BTreeSet<(String, u64)> = nm
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.splitn(3, ' ').collect();
                (f.len() == 3 && pick(f[2]) && f[1] != "a" && f[1] != "A")
                    .then(|| (f[2].to_string(), u64::from_str_radix(f[0], 16).unwrap()))
            })
            .collect();
        assert!(theirs.len() > 20, "{}: nm found only {}", path.display(), theirs.len());
        assert_eq!(ours, theirs, "{}", path.display());
        // .dynsym (what a stripped libjvm still has): JVM_StartThread is exported.
        let nm_d = tool(&["nm", "-D", "--defined-only", path.to_str().unwrap()]);
        let want = nm_d
            .lines()
            .find(|l| l.contains(" JVM_StartThread@") || l.ends_with(" JVM_StartThread"))
            .unwrap();
        let want = u64::from_str_radix(want.split(' ').next().unwrap(), 16).unwrap();
        let all = elf::symbols(&b, &|n| n == "JVM_StartThread").unwrap();
        assert_eq!(all.len(), 1, "one entry: .dynsym duplicates of .symtab names are dropped");
        assert_eq!(all[0].value, want);
        assert_eq!(all[0].kind, 2, "a function");
    }
}

#[test]
fn stripped_copy_keeps_dynsym_only() {
    // objcopy --strip-all (drops .symtab) and without .note.stapsdt: a JDK built without
    // DTrace support and stripped, the issue-5 fallback cases.
    let tmp = common::TempDir::new("strip");
    let jdk = &common::jdks()[0];
    let out = tmp.path().join("libjvm.so");
    let st = Command::new("objcopy")
        .args(["--strip-all", "--remove-section", ".note.stapsdt"])
        .arg(common::libjvm(jdk))
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let b = std::fs::read(&out).unwrap();
    let syms = elf::symbols(&b, &|n| n == "JVM_StartThread").unwrap();
    assert_eq!(syms.len(), 1);
    assert!(!syms[0].from_symtab);
    assert!(elf::symbols(&b, &|n| n.contains("report_codemem_full")).unwrap().is_empty());
}

#[test]
fn file_reader_matches_the_slice_reader() {
    // symbols_in_file / read_vaddr read only the headers, symbol and string tables and the
    // bytes asked for; they must give what the whole-file parser gives.
    let pick = |n: &str| n.starts_with("_ZTV") || n.contains("CodeHeap") || n.starts_with("JVM_");
    for jdk in common::jdks() {
        let path = common::libjvm(&jdk);
        let b = std::fs::read(&path).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let want = elf::symbols(&b, &pick).unwrap();
        assert!(want.len() > 1000, "{}: only {} symbols", path.display(), want.len());
        assert_eq!(elf::symbols_in_file(&f, &pick).unwrap(), want, "{}", path.display());
        for s in want.iter().filter(|s| s.kind == 2 && s.size > 0).take(50) {
            let off = elf::file_offset(&b, s.value).unwrap().unwrap() as usize;
            let code = elf::read_vaddr(&f, s.value, s.size).unwrap().unwrap();
            assert_eq!(code, &b[off..off + s.size as usize], "{}", s.name);
        }
        assert_eq!(elf::read_vaddr(&f, u64::MAX - 8, 8).unwrap(), None, "no segment there");
        assert!(
            elf::read_vaddr(&f, want[0].value, b.len() as u64).is_err(),
            "past the end of the file"
        );
    }
}

#[test]
fn thread_tls_matches_readelf() {
    for jdk in common::jdks() {
        let path = common::libjvm(&jdk);
        let b = std::fs::read(&path).unwrap();
        let ours = elf::thread_tls(&b).unwrap().expect("no Thread::_thr_current or DTPMOD64");
        let from_file = elf::thread_tls_in_file(&std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(Some(ours), from_file);
        let syms = tool(&["readelf", "-sW", path.to_str().unwrap()]);
        let value = syms
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 8 && f[3] == "TLS" && f[7] == elf::THR_CURRENT)
                    .then(|| u64::from_str_radix(f[1], 16).unwrap())
            })
            .unwrap();
        let relocs = tool(&["readelf", "-rW", path.to_str().unwrap()]);
        let got = relocs
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 3 && f[2] == "R_X86_64_DTPMOD64")
                    .then(|| u64::from_str_radix(f[0], 16).unwrap())
            })
            .unwrap();
        assert_eq!((ours.offset, ours.dtpmod_got), (value, got), "{}", path.display());
    }
    // A library without the symbol: None, not an error.
    assert_eq!(elf::thread_tls(&common::sample_elf().bytes).unwrap(), None);
}
