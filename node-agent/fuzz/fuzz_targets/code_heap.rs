#![no_main]
//! Code heap layout decoding (compilation collector): the field offsets of `CodeHeap` are
//! read from the machine code of two functions of the container's libjvm.so (untrusted: at
//! most 4 KiB of each is read). Never panics, never reads past the code (slices only);
//! a decoded layout comes from the bytes it names (the pattern is really there); a decode
//! is a function of the bytes.
use jvmdiag_inspect::code_heap::{decode_allocated_capacity, decode_pool_heap};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // allocated_capacity(): the pattern ends with `shl %cl,%rax; ret`.
    if let Some((log2, next, free)) = decode_allocated_capacity(data) {
        assert!(data.windows(4).any(|w| w == [0x48, 0xd3, 0xe0, 0xc3]));
        assert!(data.len() >= 3 * 3 + 4 + 2);
        let _ = (log2, next, free);
    }
    // get_memory_usage(): addresses from the first 16 bytes, code after them.
    if data.len() >= 16 {
        let addr = u64::from_le_bytes(data[..8].try_into().unwrap());
        let target = u64::from_le_bytes(data[8..16].try_into().unwrap());
        let code = &data[16..];
        let got = decode_pool_heap(code, addr, target);
        if got.is_some() {
            assert!(code.contains(&0xe8), "a call must be there");
        }
        assert_eq!(got, decode_pool_heap(code, addr, target));
    }
});
