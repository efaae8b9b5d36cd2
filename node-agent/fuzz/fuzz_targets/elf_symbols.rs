#![no_main]
//! ELF symbol tables of a container's libjvm.so: never panics; the filter is honoured; the
//! file reader the agent uses (`symbols_in_file`, `read_vaddr`: pread of the parts asked
//! for) gives exactly what the in-memory parser gives for the same bytes; a file the agent's
//! pre-check (`check_file`) accepts is never refused by the symbol reader for a size or count.
use std::io::{Seek, Write};
use std::sync::OnceLock;

use jvmdiag_inspect::elf;
use libfuzzer_sys::fuzz_target;

/// One scratch file per fuzzing process in /dev/shm, rewritten for each input.
fn scratch() -> &'static std::fs::File {
    static F: OnceLock<std::fs::File> = OnceLock::new();
    F.get_or_init(|| {
        let p = format!("/dev/shm/jvmdiag-fuzz-elf-{}", std::process::id());
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        let _ = std::fs::remove_file(&p); // the open file stays usable
        f
    })
}

fuzz_target!(|data: &[u8]| {
    let from_memory = elf::symbols(data, &|_| true);
    if let Ok(all) = &from_memory {
        let some = elf::symbols(data, &|n| n.starts_with('J')).unwrap_or_default();
        assert!(some.len() <= all.len());
        assert!(some.iter().all(|s| s.name.starts_with('J')));
    }

    let mut f = scratch();
    f.set_len(0).unwrap();
    f.rewind().unwrap();
    f.write_all(data).unwrap();
    let from_file = elf::symbols_in_file(f, &|_| true);
    match (&from_memory, &from_file) {
        (Ok(m), Ok(d)) => assert_eq!(m, d),
        (Err(_), Err(_)) => {}
        (m, d) => panic!("in-memory and file parsers disagree: {m:?} vs {d:?}"),
    }

    // The check the agent makes before libbpf reads a file: what it accepts, the symbol
    // reader never refuses for a size or count (those come from the same headers).
    if elf::check_file(f).is_ok() {
        if let Err(e @ jvmdiag_inspect::Error::TooLarge { .. }) = &from_file {
            panic!("check_file accepted a file whose symbols are refused as too large: {e}");
        }
    }

    // libjvm's current-thread TLS: the same from memory and from the file.
    match (elf::thread_tls(data), elf::thread_tls_in_file(f)) {
        (Ok(m), Ok(d)) => assert_eq!(m, d),
        (Err(_), Err(_)) => {}
        (m, d) => panic!("thread_tls in memory and from the file disagree: {m:?} vs {d:?}"),
    }

    if let Some(v) = data.get(..8) {
        let vaddr = u64::from_le_bytes(v.try_into().unwrap_or_default());
        let len = u64::from(data.get(8).copied().unwrap_or(0));
        let got = elf::read_vaddr(f, vaddr, len);
        match (elf::file_offset(data, vaddr), got) {
            (Ok(None), Ok(None)) | (Err(_), Err(_)) => {}
            (Ok(Some(o)), got) => {
                let want = usize::try_from(o).ok().and_then(|o| data.get(o..)?.get(..len as usize));
                match (want, got) {
                    (Some(w), Ok(Some(g))) => assert_eq!(w, &g[..]),
                    (None, Err(_)) => {} // code bytes past the end of the file: refused
                    (w, g) => panic!("read_vaddr at file offset {o}: expected {w:?}, got {g:?}"),
                }
            }
            (e, g) => panic!("file_offset and read_vaddr disagree: {e:?} vs {g:?}"),
        }
    }
});
