#![no_main]
//! -Xlog:safepoint lines (the sidecar reads them from a file the JVM's container writes):
//! never panics; a record's phases are consistent with what was parsed.
use jvmdiag_inspect::safepoint_log::{self, Parser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut p = Parser::new();
    for line in text.lines() {
        if let Some(r) = safepoint_log::parse_line(line) {
            assert!(r.vm_operation.len() <= 256);
            assert!(r.reaching_ns + r.after_sync_ns() == r.total_ns);
            assert!(r.after_sync_ns() >= r.at_safepoint_ns);
        }
        if let Some(r) = p.feed(line) {
            assert!(!r.vm_operation.is_empty());
        }
    }
});
