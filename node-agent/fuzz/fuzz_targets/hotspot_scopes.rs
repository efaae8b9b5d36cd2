#![no_main]
//! Inlined scopes of an nmethod in a hostile JVM's memory: the input is a mode byte (which
//! section layout, JDK 17's or 25's field offsets, and which stream coding), the image's base
//! address, a pc, then the image (the nmethod at its start). Never panics, never loops (the
//! sender chain is bounded), at most `SCOPES_MAX_DEPTH` frames, each a non-null method at a
//! plausible bci; a decode is a function of the bytes; the UNSIGNED5 reader always moves
//! forward by 1 to 5 bytes.
use jvmdiag_inspect::hotspot::scopes::{
    inlined, read_unsigned5, Coding, IntField, NmethodScopes, ScopesLayout, Sections,
};
use jvmdiag_inspect::hotspot::{CodeStart, SliceMem};
use jvmdiag_inspect::limits::{SCOPES_MAX_DEPTH, SCOPES_MAX_PC_DESCS};
use libfuzzer_sys::fuzz_target;

fn int(offset: u32) -> IntField {
    IntField { offset, width: 4, signed: true }
}

/// JDK 17's offsets (sections in the blob) or JDK 25's (immutable and mutable data).
fn layout(mode: u8, base: u64) -> ScopesLayout {
    let (code_start, sections) = if mode & 1 == 0 {
        (
            CodeStart::Address(32),
            Sections::InBlob {
                scopes_pcs_offset: int(268),
                dependencies_offset: int(272),
                metadata_offset: int(260),
                scopes_data_begin: 120,
            },
        )
    } else {
        (
            CodeStart::Offset(36),
            Sections::Separate {
                immutable_data: 96,
                immutable_data_size: int(160),
                scopes_pcs_offset: int(196),
                scopes_data_offset: int(200),
                mutable_data: 16,
                mutable_data_size: int(48),
                relocation_size: int(28),
            },
        )
    };
    ScopesLayout {
        code_start,
        sections,
        pc_desc_size: 16,
        pc_desc_pc_offset: int(0),
        pc_desc_scope_decode_offset: int(4),
        pc_desc_obj_decode_offset: int(8),
        pc_desc_flags: int(12),
        invocation_entry_bci: -1,
        vm_major_version_addr: base.wrapping_add(8),
        coding: match (mode >> 1) & 3 {
            0 => None,
            1 => Some(Coding::Unsigned5X0),
            _ => Some(Coding::Unsigned5X1),
        },
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let mode = data[0];
    let base = u64::from_le_bytes(data[1..9].try_into().unwrap());
    let pc = u64::from_le_bytes(data[9..17].try_into().unwrap());
    let image = &data[17..];
    let mem = SliceMem { base, bytes: image };
    let sl = layout(mode, base);
    let first = inlined(&mem, &sl, base, pc);
    if let Ok(frames) = &first {
        assert!(frames.len() <= SCOPES_MAX_DEPTH);
        for f in frames {
            assert_ne!(f.method, 0);
            assert!((-1..=65535).contains(&f.bci), "{f:?}");
        }
    }
    let again = inlined(&mem, &sl, base, pc);
    assert_eq!(first.as_ref().ok(), again.as_ref().ok());
    assert_eq!(first.is_err(), again.is_err());
    if let Ok(nm) = NmethodScopes::read(&mem, &sl, base) {
        if let Ok(pds) = nm.pc_descs(&mem, &sl) {
            assert!(pds.len() <= SCOPES_MAX_PC_DESCS);
            assert_eq!(pds.len() as u64, nm.pcs_count);
        }
    }
    for c in [Coding::Unsigned5X0, Coding::Unsigned5X1] {
        let mut pos = 0;
        while pos < image.len().min(512) {
            match read_unsigned5(image, pos, c) {
                Ok((_, next)) => {
                    assert!(next > pos && next <= pos + 5 && next <= image.len());
                    pos = next;
                }
                Err(_) => pos += 1,
            }
        }
    }
});
