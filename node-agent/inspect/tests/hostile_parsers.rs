//! Hand-made hostile inputs for every parser: truncated, huge counts, offsets past the end,
//! names without NUL. Each is refused with the right error (and, by construction of the
//! parsers, never panics: the fuzz targets check that part over random inputs).
mod common;
use common::{
    perf_file, put_u32, put_u64, sample_elf, section_data, section_header, PerfEntry, PerfKind,
};
use jvmdiag_inspect::{cgroup, elf, hsperfdata, procfs, safepoint_log, Error};

fn good_perf() -> Vec<u8> {
    perf_file(&[
        PerfEntry { name: b"sun.os.hrt.frequency".to_vec(), kind: PerfKind::Long(1_000_000_000) },
        PerfEntry { name: b"sun.rt.safepointTime".to_vec(), kind: PerfKind::Long(2_500_000_000) },
        PerfEntry {
            name: b"java.property.java.version".to_vec(),
            kind: PerfKind::Str(b"25.0.1".to_vec(), 32),
        },
    ])
}

#[test]
fn hsperfdata_hand_made_good_file() {
    let pd = hsperfdata::parse(&good_perf()).unwrap();
    assert_eq!(pd.len(), 3);
    assert_eq!(pd.string("java.property.java.version"), Some("25.0.1"));
    assert_eq!(pd.ticks_to_seconds(pd.long("sun.rt.safepointTime").unwrap()), Some(2.5));
    assert_eq!(pd.long("java.property.java.version"), None, "a string is not a long");
}

#[test]
fn hsperfdata_big_endian_file() {
    // A file written by a big-endian JVM (s390x): byte order 0, every int big-endian.
    let mut f = vec![0xca, 0xfe, 0xc0, 0xc0, 0, 2, 0, 1];
    let name = b"sun.rt.safepoints\0\0\0\0\0\0\0"; // 24 bytes
    let entry_len = 20 + name.len() + 8;
    f.extend(((32 + entry_len) as u32).to_be_bytes());
    f.extend(0u32.to_be_bytes());
    f.extend(0i64.to_be_bytes());
    f.extend(32u32.to_be_bytes());
    f.extend(1u32.to_be_bytes());
    f.extend((entry_len as u32).to_be_bytes());
    f.extend(20u32.to_be_bytes());
    f.extend(0u32.to_be_bytes());
    f.extend([b'J', 0, 4, 2]);
    f.extend(((20 + name.len()) as u32).to_be_bytes());
    f.extend(name);
    f.extend(42i64.to_be_bytes());
    assert_eq!(hsperfdata::parse(&f).unwrap().long("sun.rt.safepoints"), Some(42));
}

#[test]
fn hsperfdata_hostile() {
    let good = good_perf();
    let first_entry = 32usize;
    type Check = fn(&Error) -> bool;
    let cases: Vec<(&str, Vec<u8>, Check)> = vec![
        ("empty", vec![], |e| matches!(e, Error::Truncated { .. })),
        ("truncated prologue", good[..20].to_vec(), |e| matches!(e, Error::Truncated { .. })),
        ("truncated in the entries", good[..60].to_vec(), |e| matches!(e, Error::Truncated { .. })),
        (
            "bad magic",
            {
                let mut b = good.clone();
                b[0] = 0;
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "byte order 7",
            {
                let mut b = good.clone();
                b[4] = 7;
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "version 1",
            {
                let mut b = good.clone();
                b[5] = 1;
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "huge num_entries",
            {
                let mut b = good.clone();
                put_u32(&mut b, 28, 0x7fff_ffff);
                b
            },
            |e| matches!(e, Error::TooLarge { .. }),
        ),
        (
            "num_entries past the data",
            {
                let mut b = good.clone();
                put_u32(&mut b, 28, 4);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "entry offset past the end",
            {
                let mut b = good.clone();
                put_u32(&mut b, 24, 0xffff_fff0);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "entry offset in the prologue",
            {
                let mut b = good.clone();
                put_u32(&mut b, 24, 8);
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "used smaller than the entries",
            {
                let mut b = good.clone();
                put_u32(&mut b, 8, 40);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "entry length 0 (would loop)",
            {
                let mut b = good.clone();
                put_u32(&mut b, first_entry, 0);
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "entry length past the end",
            {
                let mut b = good.clone();
                put_u32(&mut b, first_entry, 0xffff_fff0);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "name offset past the entry",
            {
                let mut b = good.clone();
                put_u32(&mut b, first_entry + 4, 4000);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "data offset past the entry",
            {
                let mut b = good.clone();
                put_u32(&mut b, first_entry + 16, 4000);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "string vector longer than its entry",
            {
                let mut b = good.clone();
                // third entry: find it by walking two entry lengths
                let e1 = u32::from_le_bytes(b[32..36].try_into().unwrap()) as usize;
                let e2 = u32::from_le_bytes(b[32 + e1..36 + e1].try_into().unwrap()) as usize;
                put_u32(&mut b, 32 + e1 + e2 + 8, 60_000);
                b
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "string vector over the string bound",
            {
                let mut b = good.clone();
                let e1 = u32::from_le_bytes(b[32..36].try_into().unwrap()) as usize;
                let e2 = u32::from_le_bytes(b[32 + e1..36 + e1].try_into().unwrap()) as usize;
                put_u32(&mut b, 32 + e1 + e2 + 8, 0xffff_ffff);
                b
            },
            |e| matches!(e, Error::TooLarge { .. }),
        ),
        (
            "name without NUL",
            perf_file(&[PerfEntry { name: vec![b'a'; 2000], kind: PerfKind::Long(1) }]),
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "name without NUL inside its entry",
            {
                // overwrite the NUL and padding after the name, up to the data, with letters
                let mut b = perf_file(&[PerfEntry {
                    name: b"abc".to_vec(),
                    kind: PerfKind::Long(0x4141414141414141),
                }]);
                for x in &mut b[32 + 20..] {
                    if *x == 0 {
                        *x = b'A';
                    }
                }
                b
            },
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "file over 4 MiB (twice HotSpot's largest PerfDataMemorySize)",
            vec![0u8; (4 << 20) + 1],
            |e| matches!(e, Error::TooLarge { .. }),
        ),
    ];
    for (what, input, want) in cases {
        match hsperfdata::parse(&input) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => {
                assert!(want(&e), "{what}: wrong error: {e:?}");
                assert!(!e.to_string().contains('\n'), "{what}: one line: {e}");
            }
        }
    }
}

#[test]
fn elf_hand_made_good_file() {
    let e = sample_elf();
    let syms = elf::symbols(&e.bytes, &|_| true).unwrap();
    let names: Vec<(&str, bool)> = syms.iter().map(|s| (s.name.as_str(), s.from_symtab)).collect();
    assert_eq!(
        names,
        [
            ("JVM_StartThread", true),
            ("_ZN9CodeCache17report_codemem_fullEiB", true),
            ("JNI_CreateJavaVM", false)
        ]
    );
}

#[test]
fn elf_hostile() {
    let e = sample_elf();
    let sh_symtab = section_header(&e, ".symtab");
    let sh_strtab = section_header(&e, ".strtab");
    let strtab = section_data(&e, ".strtab");
    let symtab = section_data(&e, ".symtab");
    let real = std::fs::read(common::libjvm(&common::jdks()[0])).unwrap();
    type Check = fn(&Error) -> bool;
    let trunc: Check = |e| matches!(e, Error::Truncated { .. });
    let bad: Check = |e| matches!(e, Error::Malformed { .. });
    let big: Check = |e| matches!(e, Error::TooLarge { .. });
    let m = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = e.bytes.clone();
        f(&mut b);
        b
    };
    let cases: Vec<(&str, Vec<u8>, Check)> = vec![
        ("empty", vec![], trunc),
        ("not ELF", b"#!/bin/sh\necho hi\n".repeat(8), bad),
        ("ELF32", m(&|b| b[4] = 1), bad),
        ("big-endian", m(&|b| b[5] = 2), bad),
        (
            "real libjvm.so truncated to 64 KiB (section table past the end)",
            real[..65536].to_vec(),
            trunc,
        ),
        ("real libjvm.so cut short by 24 bytes", real[..real.len() - 24].to_vec(), trunc),
        ("section table offset past the end", m(&|b| put_u64(b, 0x28, u64::MAX - 10)), trunc),
        (
            "huge section count (extended numbering)",
            m(&|b| {
                b[0x3c] = 0;
                b[0x3d] = 0;
                let shoff = u64::from_le_bytes(b[0x28..0x30].try_into().unwrap()) as usize;
                put_u64(b, shoff + 32, 1 << 40);
            }),
            big,
        ),
        ("section header size 32", m(&|b| b[0x3a] = 32), bad),
        (
            "section name table index out of range",
            m(&|b| {
                b[0x3e] = 200;
            }),
            bad,
        ),
        ("symbol table entry size 0", m(&|b| put_u64(b, sh_symtab + 56, 0)), bad),
        ("symbol table string index out of range", m(&|b| put_u32(b, sh_symtab + 40, 999)), bad),
        (
            "symbol name offset past its string table",
            m(&|b| put_u32(b, symtab + 24, 0xffff)),
            trunc,
        ),
        (
            "string table without a final NUL",
            m(&|b| {
                let len = u64::from_le_bytes(b[sh_strtab + 32..sh_strtab + 40].try_into().unwrap())
                    as usize;
                b[strtab + len - 1] = b'X';
            }),
            bad,
        ),
        (
            "symbol table size past the end (its count is over the bound first)",
            m(&|b| put_u64(b, sh_symtab + 32, 1 << 50)),
            big,
        ),
        (
            "symbol table size past the end, count within the bound",
            m(&|b| put_u64(b, sh_symtab + 32, 24 * 900_000)),
            trunc,
        ),
    ];
    for (what, input, want) in cases {
        // Every entry point is an error or fine, and at least one says what is broken.
        let results = [
            elf::symbols(&input, &|_| true).map(|_| ()),
            elf::file_offset(&input, 0x1000).map(|_| ()),
        ];
        let errs: Vec<&Error> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(!errs.is_empty(), "{what}: accepted by every entry point");
        assert!(errs.iter().any(|e| want(e)), "{what}: wrong errors: {errs:?}");
        for e in errs {
            assert!(!e.to_string().contains('\n'), "{what}: one line: {e}");
        }
    }
}

/// The peak resident memory of this test process (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim();
    kib.parse::<u64>().unwrap() * 1024
}

/// A sparse file of `len` bytes holding `head` at its start (tmpfs and ext4 store no zeros).
fn sparse_file(dir: &common::TempDir, name: &str, head: &[u8], len: u64) -> std::fs::File {
    let path = dir.path().join(name);
    std::fs::write(&path, head).unwrap();
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    f.set_len(len).unwrap();
    f
}

#[test]
fn elf_sparse_512_mib_file_refused_from_its_headers_before_any_table_is_read() {
    // A 512 MiB libjvm.so (the size bound) that is all holes but its headers, whose symbol
    // and string tables claim the whole file. Reading them would take 500 MiB; the counts
    // and sizes in the section headers are checked first, so this test process's peak RSS
    // grows by far less (the other tests of this binary, running beside it, hold < 64 MiB).
    let dir = common::TempDir::new("sparse-elf");
    let e = sample_elf();
    let (symtab, strtab) = (section_header(&e, ".symtab"), section_header(&e, ".strtab"));
    let notes = section_header(&e, ".note.stapsdt");
    let len: u64 = 512 << 20;
    /// An edit of the ELF headers.
    type Edit<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;
    let cases: [(&str, Edit<'_>, &str); 3] = [
        (
            "symbols",
            Box::new(|b: &mut Vec<u8>| put_u64(b, symtab + 32, 500 << 20)),
            "ELF symbol count",
        ),
        (
            "strings",
            Box::new(|b: &mut Vec<u8>| put_u64(b, strtab + 32, 500 << 20)),
            "ELF symbol string table",
        ),
        (
            "notes",
            Box::new(|b: &mut Vec<u8>| put_u64(b, notes + 32, 100 << 20)),
            "ELF note section",
        ),
    ];
    let before = peak_rss();
    for (name, edit, what) in cases {
        let mut head = e.bytes.clone();
        edit(&mut head);
        let f = sparse_file(&dir, name, &head, len);
        let errs = [elf::check_file(&f).err(), elf::symbols_in_file(&f, &|_| true).err()];
        let checked = errs[0].as_ref().unwrap_or_else(|| panic!("{name}: check_file accepted it"));
        assert!(
            matches!(checked, Error::TooLarge { what: w, .. } if w == what),
            "{name}: {checked}"
        );
        if name != "notes" {
            let read =
                errs[1].as_ref().unwrap_or_else(|| panic!("{name}: symbols_in_file accepted it"));
            assert!(matches!(read, Error::TooLarge { what: w, .. } if w == what), "{name}: {read}");
        }
    }
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 256 << 20, "peak RSS grew by {} MiB reading sparse 512 MiB files", grew >> 20);
    // The same file at the bound + 1 byte is refused from its size alone.
    let f = sparse_file(&dir, "over", &e.bytes, len + 1);
    assert!(matches!(elf::check_file(&f), Err(Error::TooLarge { .. })));
    // And the real libjvm.so passes the check.
    let real = std::fs::File::open(common::libjvm(&common::jdks()[0])).unwrap();
    elf::check_file(&real).unwrap();
}

#[test]
fn elf_check_file_refuses_section_data_past_the_end() {
    // A real libjvm.so cut short: its section table is gone (truncated), or, with the section
    // table kept, sections point past the end. Either is refused before libbpf reads it.
    let dir = common::TempDir::new("cut-elf");
    let real = std::fs::read(common::libjvm(&common::jdks()[0])).unwrap();
    let f = sparse_file(&dir, "cut", &real[..1 << 20], 1 << 20);
    assert!(
        matches!(elf::check_file(&f), Err(Error::Truncated { .. })),
        "{:?}",
        elf::check_file(&f)
    );
    let e = sample_elf();
    let mut b = e.bytes.clone();
    put_u64(&mut b, section_header(&e, ".strtab") + 24, 1 << 30); // offset past the end
    let f = sparse_file(&dir, "past", &b, b.len() as u64);
    assert!(
        matches!(elf::check_file(&f), Err(Error::Truncated { .. })),
        "{:?}",
        elf::check_file(&f)
    );
}

#[test]
fn proc_text_files_hostile() {
    // maps: paths may hold spaces and anything the container chose; structure is checked.
    let ok = b"7f00-7f10 r-xp 00000000 fd:01 1234    /opt/my jdk/lib/server/libjvm.so (deleted)\n";
    let m = procfs::parse_maps(ok).unwrap();
    assert_eq!(m[0].path.as_deref(), Some("/opt/my jdk/lib/server/libjvm.so"));
    assert!(m[0].deleted);
    assert_eq!(procfs::find_libjvm(&m).map(|e| e.inode), Some(1234));
    let not_jvm = b"7f00-7f10 r-xp 00000000 fd:01 1234    /tmp/x/libjvm.so.evil\n7f10-7f20 r-xp 0 0:0 0    [anon:libjvm.so]\n";
    assert!(procfs::find_libjvm(&procfs::parse_maps(not_jvm).unwrap()).is_none());
    for bad in [
        &b"7f00 r-xp 0 fd:01 1 /x\n"[..],
        b"zz-7f10 r-xp 0 fd:01 1 /x\n",
        b"7f10-7f00 r-xp 0 fd:01 1 /x\n",
        b"7f00-7f10 rwzp 0 fd:01 1 /x\n",
        b"7f00-7f10 r-xp 0 fd01 1 /x\n",
        b"7f00-7f10 r-xp 0 fd:01 -1 /x\n",
        b"7f00-7f10 r-xp 0 fd:01\n",
        b"11111111111111111-7f10 r-xp 0 fd:01 1 /x\n",
    ] {
        assert!(
            matches!(procfs::parse_maps(bad), Err(Error::Malformed { .. })),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    let long_path = format!("7f00-7f10 r-xp 0 fd:01 1 /{}\n", "a".repeat(10_000));
    assert!(matches!(procfs::parse_maps(long_path.as_bytes()), Err(Error::TooLarge { .. })));
    assert!(matches!(procfs::parse_maps(&vec![b'\n'; (4 << 20) + 1]), Err(Error::TooLarge { .. })));
    // status: required fields, numbers checked
    assert!(procfs::parse_status(b"Name:\tjava\nTgid:\t1\nPPid:\t0\n").is_err(), "no Uid");
    assert!(procfs::parse_status(b"Name:\tjava\nTgid:\t99999999999\nPPid:\t0\nUid:\t0 0 0 0\n")
        .is_err());
    assert!(
        procfs::parse_status(b"Name:\tjava\nTgid:\t1\nPPid:\t0\nUid:\t0\n").is_err(),
        "one uid"
    );
    let st = procfs::parse_status(
        b"Name:\tja\\nva\nTgid:\t10\nPPid:\t1\nUid:\t1000\t1001\t0\t0\nNSpid:\t10\t1\n",
    )
    .unwrap();
    assert_eq!((st.name.as_str(), st.innermost_pid(), st.uid_effective), ("ja\\nva", 1, 1001));
    // cmdline: NULs split, non-UTF-8 replaced, bounded
    assert_eq!(
        procfs::parse_cmdline(b"java\0-jar\0/a\xffb.jar\0").unwrap(),
        ["java", "-jar", "/a\u{fffd}b.jar"]
    );
    assert!(matches!(procfs::parse_cmdline(&vec![0u8; 70_000]), Err(Error::TooLarge { .. })));
    // cgroup: see cgroup_samples.rs; a path over the field bound
    let long = format!("0::/{}\n", "a".repeat(9000));
    assert!(matches!(cgroup::parse(long.as_bytes()), Err(Error::TooLarge { .. })));
}

#[test]
fn safepoint_log_hostile_lines() {
    for l in [
        "",
        "[",
        "[0.1s][info][safepoint] Safepoint \"",
        "[0.1s][info][safepoint] Safepoint \"X\", Reaching safepoint: 1 ns",
        "[0.1s][info][safepoint] Safepoint \"X\", Reaching safepoint: -1 ns, At safepoint: 1 ns, Total: 2 ns",
        "[0.1s][info][safepoint] Safepoint \"X\", Reaching safepoint: 99999999999999999999999 ns, At safepoint: 1 ns, Total: 2 ns",
        "[0.1s][info][safepoint,stats] Safepoint \"X\", Reaching safepoint: 1 ns, At safepoint: 1 ns, Total: 2 ns",
        "[0.1s][info][safepoint] Total time for which application threads were stopped: 1e9 seconds, Stopping threads took: 0.1 seconds",
        "[0.1s][info][safepoint] Safepoint \"X\", Reaching safepoint: 10 ns, At safepoint: 1 ns, Total: 5 ns",
        "[0.1s][info][safepoint] Safepoint \"X\", Reaching safepoint: 1 ns, At safepoint: 10 ns, Total: 5 ns",
        "[0.1s][info][safepoint] Total time for which application threads were stopped: 0.1 seconds, Stopping threads took: 0.2 seconds",
    ] {
        assert_eq!(safepoint_log::parse_line(l), None, "{l:?}");
    }
    let long = format!("[0.1s][info][safepoint] Safepoint \"{}\", Reaching safepoint: 1 ns, At safepoint: 1 ns, Total: 2 ns", "A".repeat(100_000));
    assert_eq!(safepoint_log::parse_line(&long), None);
}
