#![no_main]
//! /proc/PID/cmdline and the `jvm` label derived from it: never panics, label ≤ 64 chars,
//! no control characters.
use jvmdiag_inspect::procfs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(args) = procfs::parse_cmdline(data) {
        let name = procfs::jvm_short_name(&args);
        assert!(!name.is_empty());
        assert!(name.chars().count() <= procfs::JVM_NAME_MAX);
        assert!(!name.chars().any(char::is_control));
    }
});
