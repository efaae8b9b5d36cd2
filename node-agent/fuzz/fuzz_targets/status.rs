#![no_main]
//! /proc/PID/status: never panics.
use jvmdiag_inspect::procfs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(st) = procfs::parse_status(data) {
        let _ = st.innermost_pid();
        assert!(st.nspid.len() <= 64);
    }
});
