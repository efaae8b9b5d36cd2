#![no_main]
//! A HotSpot JVM's memory (vmStructs tables and the objects they lead to, all forgeable by a
//! hostile container): the input is a memory image at a fixed address whose first 20 words
//! are the exported table symbols and the 21st the TLS module id. Reading the tables,
//! resolving the layout, reading the code heaps and naming blobs and methods never panics,
//! never loops without bound and allocates within the limits; what it returns is a function
//! of the bytes.
use jvmdiag_inspect::hotspot::fake::{exports_at, BASE, TLS_GOT};
use jvmdiag_inspect::hotspot::{
    bci, code_blob, find_blob, method_name, read_u64,
    symbolize::{line_number, line_table},
    vmstructs, BlobKind, ProcessStacks, SliceMem, StackLayout,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mem = SliceMem { base: BASE, bytes: data };
    let Ok(vs) = vmstructs::read(&mem, &exports_at(BASE)) else { return };
    let Ok(l) = StackLayout::resolve(&vs) else { return };
    let Ok(ps) = ProcessStacks::read(&mem, &l, 0x20, BASE + TLS_GOT) else { return };
    assert!(ps.code_heaps.len() <= 8);
    assert!(ps.interpreter_start < ps.interpreter_end);
    let mut pcs = vec![ps.interpreter_start, ps.call_stub_return_address];
    for h in &ps.code_heaps {
        assert!(h.low <= h.committed && h.committed <= h.high);
        pcs.extend((0..32u64).map(|k| h.low.saturating_add(k * 67)));
    }
    for pc in pcs {
        let Ok(Some(blob)) = find_blob(&mem, &ps, &l, pc) else { continue };
        assert_eq!(find_blob(&mem, &ps, &l, pc).ok(), Some(Some(blob)));
        let Ok(info) = code_blob(&mem, &l, blob) else { continue };
        let method = match info.kind {
            BlobKind::Nmethod { method, .. } | BlobKind::NativeWrapper { method } => method,
            BlobKind::Other { name } => {
                assert!(name.len() <= 256);
                continue;
            }
        };
        if let Ok(m) = method_name(&mem, &l, method) {
            // 512 bytes of a Symbol, lossy: at most 3 bytes per byte, plus the mark.
            assert!(m.name.len() <= 512 * 3 + 3 && m.class.len() <= 512 * 3 + 3);
        }
        if let Ok(cm) = read_u64(&mem, method.wrapping_add(u64::from(l.method_const_method)), "cm")
        {
            let bcp = cm.wrapping_add(u64::from(l.const_method_size)).wrapping_add(1);
            if let Ok(Some(b)) = bci(&mem, &l, cm, bcp) {
                assert!(b < 65_535);
                let _ = line_number(&mem, &l, cm, b);
            }
            if let Ok(t) = line_table(&mem, &l, cm) {
                assert!(t.len() <= 256 << 10); // one byte per pair at least
            }
        }
    }
});
