#![no_main]
//! /proc/PID/cgroup → container: never panics; an id it returns is 64 lowercase hex and a
//! pod uid is dashed.
use jvmdiag_inspect::cgroup;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(lines) = cgroup::parse(data) {
        if let Some(c) = cgroup::container_of(&lines) {
            assert_eq!(c.container_id.len(), 64);
            assert!(c
                .container_id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            if let Some(u) = c.pod_uid {
                assert!(!u.contains('_'));
            }
        }
    }
});
