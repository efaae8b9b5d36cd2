#![no_main]
//! /proc/PID/maps: never panics; every entry it accepts is well-formed.
use jvmdiag_inspect::procfs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(maps) = procfs::parse_maps(data) {
        for m in &maps {
            assert!(m.start <= m.end);
            assert_eq!(m.perms.len(), 4);
        }
        if let Some(j) = procfs::find_libjvm(&maps) {
            assert!(j.path.as_deref().is_some_and(|p| p.ends_with("/libjvm.so")));
        }
    }
});
