#![no_main]
//! hsperfdata written by a hostile JVM: never panics; every name iterated can be looked up
//! (a duplicated name resolves to its first entry, whatever its type).
use jvmdiag_inspect::hsperfdata::{self, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(pd) = hsperfdata::parse(data) {
        let mut seen = std::collections::HashSet::new();
        for (name, v) in pd.iter() {
            assert!(pd.get(name).is_some());
            if seen.insert(name) {
                assert_eq!(pd.get(name), Some(v));
                match v {
                    Value::Long { .. } => assert!(pd.long(name).is_some()),
                    Value::String(_) => assert!(pd.string(name).is_some()),
                    Value::Unsupported { .. } => {}
                }
            }
        }
        if let Some(t) = pd.long("sun.rt.safepointTime") {
            let _ = pd.ticks_to_seconds(t);
        }
    }
});
