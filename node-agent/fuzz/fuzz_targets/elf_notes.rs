#![no_main]
//! ELF notes of a container's libjvm.so (.note.stapsdt, build id): never panics.
use jvmdiag_inspect::elf;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(probes) = elf::usdt_probes(data) {
        assert_eq!(elf::has_stapsdt(data).ok(), Some(!probes.is_empty()));
    }
    let _ = elf::build_id(data);
});
