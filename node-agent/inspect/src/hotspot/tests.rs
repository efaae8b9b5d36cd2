//! The reader on hand-built images: a consistent one end to end, then forged ones.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
use super::fake::{exports_at, fake_jvm, FakeJvm, Image, HEAP_SEGMENTS};
use super::symbolize::{external_class_name, symbol_text};
use super::*;
use crate::limits::{JAVA_NAME_MAX, SEGMAP_MAX_HOPS, VMSTRUCTS_MAX_ENTRIES};

fn resolve(f: &FakeJvm) -> (StackLayout, ProcessStacks) {
    let mem = f.image.mem();
    let vs = vmstructs::read(&mem, &f.exports).unwrap();
    let l = StackLayout::resolve(&vs).unwrap();
    let ps = ProcessStacks::read(&mem, &l, 0x20, f.tls_got).unwrap();
    (l, ps)
}

#[test]
fn a_consistent_image_resolves_and_symbolizes() {
    let f = fake_jvm(&[]);
    let mem = f.image.mem();
    let vs = vmstructs::read(&mem, &f.exports).unwrap();
    assert_eq!(vs.int_constant("oopSize"), Some(8));
    assert_eq!(vs.long_constant("markWord::hash_mask"), Some(0x7fff_ffff));
    assert_eq!(vs.type_size("ConstantPool"), Some(72));
    let anchor = vs.field("JavaThread", "_anchor").unwrap();
    assert_eq!(
        (anchor.offset, anchor.is_static, anchor.type_string.as_str()),
        (0x290, false, "JavaFrameAnchor")
    );
    let (l, ps) = resolve(&f);
    assert_eq!(l.code_blob_code, layout::CodeStart::Address(0x20));
    assert_eq!(
        l.nmethod_deopt,
        Some(DeoptLayout {
            handler: CodeStart::Address(0x98),
            mh_handler: Some(CodeStart::Address(0xa0)),
            orig_pc_offset: 0x134,
        })
    );
    assert_eq!((l.const_method_flags, l.const_method_flags_width), (0x1c, 2));
    assert_eq!(l.heap_block_size, 16);
    assert_eq!(
        (ps.interpreter_start, ps.interpreter_end),
        (f.interpreter_code, f.interpreter_code + 0x80)
    );
    assert_eq!(ps.code_heaps.len(), 1);
    assert_eq!((ps.code_heaps[0].low, ps.code_heaps[0].committed), (f.heap_low, f.heap_end));
    assert_eq!((ps.tls_module, ps.tls_offset), (2, 0x20));

    for pc in [f.nmethod - 16, f.nmethod, f.nmethod_code + 5, f.heap_low + 8 * 64 - 1] {
        assert_eq!(find_blob(&mem, &ps, &l, pc).unwrap(), Some(f.nmethod), "pc {pc:#x}");
    }
    assert_eq!(find_blob(&mem, &ps, &l, f.free_block + 8).unwrap(), None, "a free block");
    assert_eq!(find_blob(&mem, &ps, &l, f.heap_low + 30 * 64).unwrap(), None, "unused segment");
    assert_eq!(find_blob(&mem, &ps, &l, f.heap_end).unwrap(), None, "past the heap");
    assert_eq!(find_blob(&mem, &ps, &l, 0).unwrap(), None);
    assert_eq!(find_blob(&mem, &ps, &l, f.interpreter_code).unwrap(), Some(f.interpreter));

    let nm = code_blob(&mem, &l, f.nmethod).unwrap();
    assert_eq!(nm.kind, BlobKind::Nmethod { method: f.method, compile_id: 42 });
    assert_eq!((nm.code_begin, nm.frame_size_words), (f.nmethod_code, 4));
    let ib = code_blob(&mem, &l, f.interpreter).unwrap();
    assert_eq!(ib.kind, BlobKind::Other { name: "Interpreter".into() });
    let jm = method_name(&mem, &l, f.method).unwrap();
    assert_eq!((jm.class.as_str(), jm.name.as_str()), ("java.lang.Thread", "run"));

    let code = f.const_method + 48;
    assert_eq!(bci(&mem, &l, f.const_method, code).unwrap(), Some(0));
    assert_eq!(bci(&mem, &l, f.const_method, code + 9).unwrap(), Some(9));
    assert_eq!(bci(&mem, &l, f.const_method, code + 10).unwrap(), None);
    assert_eq!(bci(&mem, &l, f.const_method, code - 1).unwrap(), None);
}

#[test]
fn entry_frames_are_followed_only_where_the_jvm_says_how() {
    let wrapper = |offset| {
        let f =
            Field { offset, is_static: false, address: 0, type_string: "JavaFrameAnchor".into() };
        ("JavaCallWrapper".to_string(), "_anchor".to_string(), f)
    };
    let slot = |v: i32| ("frame::entry_frame_call_wrapper_offset".to_string(), v);
    let resolve =
        |fields, ints| EntryLayout::resolve(&VmStructs::from_parts(fields, vec![], ints, vec![]));
    // x86-64 Linux, JDK 11 to 25: the wrapper six words below the entry frame's fp.
    assert_eq!(
        resolve(vec![wrapper(0x20)], vec![slot(-6)]),
        Some(EntryLayout { call_wrapper_slot: -6, wrapper_anchor: 0x20 })
    );
    assert_eq!(
        resolve(vec![wrapper(0x20)], vec![slot(2)]).map(|e| e.call_wrapper_slot),
        Some(2),
        "above fp (Windows' layout)"
    );
    // Missing either, or a slot no frame has: not followed (the walk ends at the entry frame).
    assert_eq!(resolve(vec![], vec![slot(-6)]), None);
    assert_eq!(resolve(vec![wrapper(0x20)], vec![]), None);
    assert_eq!(resolve(vec![wrapper(0x20)], vec![slot(1 << 20)]), None);
    assert_eq!(resolve(vec![wrapper(1 << 40)], vec![slot(-6)]), None);
}

#[test]
fn deoptimized_frames_are_found_in_either_shape_or_not_at_all() {
    let fld = |t: &str, n: &str, offset: u64, ty: &str| {
        let f = Field { offset, is_static: false, address: 0, type_string: ty.into() };
        (t.to_string(), n.to_string(), f)
    };
    let resolve =
        |fields| DeoptLayout::resolve(&VmStructs::from_parts(fields, vec![], vec![], vec![]));
    let orig = fld("nmethod", "_orig_pc_offset", 0x134, "int");
    // JDK 11 to 21: CompiledMethod holds the handlers' addresses.
    let jdk17 = vec![
        fld("CompiledMethod", "_deopt_handler_begin", 0x98, "address"),
        fld("CompiledMethod", "_deopt_mh_handler_begin", 0xa0, "address"),
        orig.clone(),
    ];
    assert_eq!(
        resolve(jdk17.clone()),
        Some(DeoptLayout {
            handler: CodeStart::Address(0x98),
            mh_handler: Some(CodeStart::Address(0xa0)),
            orig_pc_offset: 0x134,
        })
    );
    // JDK 25: nmethod holds their offsets from itself.
    let jdk25 = vec![
        fld("nmethod", "_deopt_handler_offset", 0xb8, "int"),
        fld("nmethod", "_deopt_mh_handler_offset", 0xbc, "int"),
        fld("nmethod", "_orig_pc_offset", 0xd4, "int"),
    ];
    assert_eq!(
        resolve(jdk25),
        Some(DeoptLayout {
            handler: CodeStart::Offset(0xb8),
            mh_handler: Some(CodeStart::Offset(0xbc)),
            orig_pc_offset: 0xd4,
        })
    );
    // Without the method handle handler: the other still counts.
    let d = resolve(vec![jdk17[0].clone(), orig.clone()]).unwrap();
    assert_eq!((d.handler, d.mh_handler), (CodeStart::Address(0x98), None));
    // Without the saved pc's slot, a handler of an unknown type, or a slot that is not an int:
    // nothing (the walker then records such a frame at the handler).
    assert_eq!(resolve(jdk17[..2].to_vec()), None);
    assert_eq!(
        resolve(vec![fld("CompiledMethod", "_deopt_handler_begin", 0x98, "u2"), orig.clone()]),
        None
    );
    assert_eq!(resolve(vec![jdk17[0].clone(), fld("nmethod", "_orig_pc_offset", 8, "u2")]), None);
    assert_eq!(
        resolve(vec![jdk17[0].clone(), fld("nmethod", "_orig_pc_offset", 1 << 20, "int")]),
        None
    );
    // The handler as the walker reads it: an address (11 to 21) or an offset (25).
    let f = fake_jvm(&[]);
    let mem = f.image.mem();
    let (mut l, _) = self::resolve(&f);
    assert_eq!(deopt_handler(&mem, &l, f.nmethod).unwrap(), Some(f.nmethod_code + 0xc0));
    let mut img = f.image.clone();
    img.u32(f.nmethod + 0xb8, 0x1c0);
    l.nmethod_deopt =
        Some(DeoptLayout { handler: CodeStart::Offset(0xb8), ..l.nmethod_deopt.unwrap() });
    assert_eq!(deopt_handler(&img.mem(), &l, f.nmethod).unwrap(), Some(f.nmethod + 0x1c0));
    img.u32(f.nmethod + 0xb8, (-8i32) as u32);
    assert!(deopt_handler(&img.mem(), &l, f.nmethod).unwrap_err().to_string().contains("negative"));
    l.nmethod_deopt = None;
    assert_eq!(deopt_handler(&mem, &l, f.nmethod).unwrap(), None);
    // A JVM without them still has a layout.
    let f = fake_jvm(&["nmethod::_orig_pc_offset"]);
    let vs = vmstructs::read(&f.image.mem(), &f.exports).unwrap();
    assert_eq!(StackLayout::resolve(&vs).unwrap().nmethod_deopt, None);
}

#[test]
fn a_missing_field_is_named_with_its_spellings() {
    let f = fake_jvm(&["CodeBlob::_code_begin"]);
    let vs = vmstructs::read(&f.image.mem(), &f.exports).unwrap();
    let e = StackLayout::resolve(&vs).unwrap_err().to_string();
    assert!(e.contains("no field CodeBlob::_code_begin or CodeBlob::_code_offset"), "{e}");
    let f = fake_jvm(&["GrowableArrayBase::_len"]);
    let vs = vmstructs::read(&f.image.mem(), &f.exports).unwrap();
    let e = StackLayout::resolve(&vs).unwrap_err().to_string();
    assert!(e.contains("GrowableArrayBase::_len or GenericGrowableArray::_len"), "{e}");
    let f = fake_jvm(&["CodeCache::_heaps"]);
    let vs = vmstructs::read(&f.image.mem(), &f.exports).unwrap();
    let e = StackLayout::resolve(&vs).unwrap_err().to_string();
    assert!(e.contains("no static CodeCache::_heaps"), "{e}");
}

#[test]
fn segment_map_hops_are_bounded_and_go_back() {
    // A hop before the heap's first segment.
    let mut f = fake_jvm(&[]);
    f.image.put(f.segmap + 2, &[0xFE]);
    let (l, ps) = resolve(&f);
    let e = find_blob(&f.image.mem(), &ps, &l, f.heap_low + 2 * 64).unwrap_err().to_string();
    assert!(e.contains("goes before the heap"), "{e}");
    // A long chain of 1-hops (a forged map): refused past the bound, never looped.
    let mut f = fake_jvm(&[]);
    let big = SEGMAP_MAX_HOPS as u64 + 10;
    let map = f.image.alloc(big as usize);
    let mut bytes = vec![1u8; big as usize];
    bytes[0] = 0;
    f.image.put(map, &bytes);
    let (l, mut ps) = resolve(&f);
    ps.code_heaps[0].segmap = map;
    ps.code_heaps[0].log2_segment_size = 0; // one byte per segment: the heap covers `big`
    ps.code_heaps[0].committed = ps.code_heaps[0].low + big;
    let e = find_blob(&f.image.mem(), &ps, &l, f.heap_low + big - 1).unwrap_err().to_string();
    assert!(e.contains("hops") && e.contains("over the limit"), "{e}");
    assert!(find_blob(&f.image.mem(), &ps, &l, f.heap_low + 100).is_ok());
    // The map's end unreadable: an error, not a guess.
    let mut f = fake_jvm(&[]);
    let (l, mut ps) = resolve(&f);
    ps.code_heaps[0].segmap = f.image.base + f.image.bytes.len() as u64 - 4;
    f.image.put(ps.code_heaps[0].segmap, &[0, 1, 2, 3]);
    assert!(find_blob(&f.image.mem(), &ps, &l, f.heap_low + (HEAP_SEGMENTS - 1) * 64).is_err());
}

#[test]
fn forged_tables_are_refused() {
    // A stride past the bound.
    let mut f = fake_jvm(&[]);
    f.image.u64(f.exports.struct_stride, 1 << 20);
    let e = vmstructs::read(&f.image.mem(), &f.exports).unwrap_err().to_string();
    assert!(e.contains("stride"), "{e}");
    // A field offset outside the entry.
    let mut f = fake_jvm(&[]);
    f.image.u64(f.exports.struct_address_offset, 44);
    let e = vmstructs::read(&f.image.mem(), &f.exports).unwrap_err().to_string();
    assert!(e.contains("outside the entry"), "{e}");
    // A name without NUL for longer than the bound.
    let mut f = fake_jvm(&[]);
    let long = f.image.alloc(4096);
    f.image.put(long, &[b'x'; 4096]);
    let types = f.image.mem();
    let t = read_u64(&types, f.exports.types, "t").unwrap();
    f.image.u64(t, long);
    let e = vmstructs::read(&f.image.mem(), &f.exports).unwrap_err().to_string();
    assert!(e.contains("longer than 512"), "{e}");
    // An unterminated table: refused at the entry bound.
    let mut img = Image::new(0x10000);
    let slots = img.alloc(20 * 8);
    let ex = exports_at(slots);
    let name = img.cstr("T");
    let n = VMSTRUCTS_MAX_ENTRIES + 2;
    let table = img.alloc(n * 16);
    for i in 0..n as u64 {
        img.u64(table + i * 16, name);
        img.u64(table + i * 16 + 8, name);
    }
    for (i, w) in [table, 0, 8, 8, 0, 0, 0, 16].iter().enumerate() {
        img.u64(slots + i as u64 * 8, *w);
    }
    let e = vmstructs::read(&img.mem(), &ex).unwrap_err().to_string();
    assert!(e.contains("gHotSpotVMStructs") && e.contains("over the limit"), "{e}");
}

#[test]
fn forged_objects_are_refused_or_bounded() {
    // A Symbol of 65535 bytes: cut at the bound and marked.
    let mut f = fake_jvm(&[]);
    let (l, _) = resolve(&f);
    let sym = f.image.alloc(6 + 70_000);
    f.image.u16(sym + 4, u16::MAX);
    f.image.put(sym + 6, &[b'a'; 70_000]);
    let s = symbol_text(&f.image.mem(), &l, sym).unwrap();
    assert_eq!(s.chars().count(), JAVA_NAME_MAX + 1);
    assert!(s.ends_with('…'));
    // Non-UTF-8 is replaced, not refused.
    f.image.u16(sym + 4, 2);
    f.image.put(sym + 6, &[0xC0, 0x80]);
    assert_eq!(symbol_text(&f.image.mem(), &l, sym).unwrap(), "\u{FFFD}\u{FFFD}");
    // A name index past the pool, a null Method, a negative frame size, too many heaps.
    let mut f = fake_jvm(&[]);
    let (l, _) = resolve(&f);
    f.image.u16(f.const_method + 0x22, 7);
    let e = method_name(&f.image.mem(), &l, f.method).unwrap_err().to_string();
    assert!(e.contains("name index 7 outside the pool of 3"), "{e}");
    assert!(method_name(&f.image.mem(), &l, 0).is_err());
    f.image.u32(f.nmethod + 0x1c, u32::MAX);
    let e = code_blob(&f.image.mem(), &l, f.nmethod).unwrap_err().to_string();
    assert!(e.contains("negative frame size"), "{e}");
    let mem = f.image.mem();
    let heaps = read_u64(&mem, l.code_cache_heaps_addr, "h").unwrap();
    f.image.u32(heaps, 9);
    let e = ProcessStacks::read(&f.image.mem(), &l, 0, f.tls_got).unwrap_err().to_string();
    assert!(e.contains("9 code heaps"), "{e}");
    // A TLS module id that cannot be one.
    let mut f = fake_jvm(&[]);
    f.image.u64(f.tls_got, 0);
    let vs = vmstructs::read(&f.image.mem(), &f.exports).unwrap();
    let l = StackLayout::resolve(&vs).unwrap();
    let e = ProcessStacks::read(&f.image.mem(), &l, 0, f.tls_got).unwrap_err().to_string();
    assert!(e.contains("module id"), "{e}");
}

#[test]
fn hidden_class_names_lose_their_address() {
    assert_eq!(external_class_name("java/lang/Thread"), "java.lang.Thread");
    assert_eq!(external_class_name("Busy$$Lambda+0x0000000801001000"), "Busy$$Lambda");
    assert_eq!(external_class_name("a/B$$Lambda$14/0x0000000800066840"), "a.B$$Lambda$14");
    assert_eq!(external_class_name("a/B+0xzz"), "a.B+0xzz");
    assert_eq!(external_class_name("a/0x"), "a.0x");
    assert_eq!(external_class_name(""), "");
}

/// A ConstMethod of 10 bytecodes whose line number table is `table`.
fn with_lines(f: &mut FakeJvm, table: &[u8]) -> u64 {
    let cm = f.image.alloc(48 + 10 + table.len());
    f.image.u16(cm + 0x20, 10);
    f.image.u16(cm + 0x1c, 1);
    f.image.put(cm + 48 + 10, table);
    cm
}

#[test]
fn line_numbers_in_both_encodings() {
    use super::symbolize::{line_number, line_table};
    let mut f = fake_jvm(&[]);
    let (mut l, _) = resolve(&f);
    assert_eq!(l.const_method_has_linenumber_table, Some(1));
    assert!(!l.line_table_unsigned5);
    // (0, +10) escaped, (+5, +2) in one byte, (+0, +500) escaped over two bytes.
    let old = with_lines(&mut f, &[0xFF, 0, 20, 42, 0xFF, 0, 232, 12, 0]);
    let u5 = with_lines(&mut f, &[0xFF, 1, 21, 42, 0xFF, 1, 233, 13, 0]);
    let mem = f.image.mem();
    assert_eq!(line_table(&mem, &l, old).unwrap(), vec![(0, 10), (5, 12), (5, 512)]);
    assert_eq!(line_number(&mem, &l, old, 3).unwrap(), Some(10));
    assert_eq!(line_number(&mem, &l, old, 5).unwrap(), Some(12));
    assert_eq!(line_number(&mem, &l, old, 9).unwrap(), Some(512));
    l.line_table_unsigned5 = true;
    assert_eq!(line_table(&mem, &l, u5).unwrap(), vec![(0, 10), (5, 12), (5, 512)]);
    // A zero byte cannot be in an UNSIGNED5 number.
    let e = line_table(&mem, &l, old).unwrap_err().to_string();
    assert!(e.contains("zero byte"), "{e}");
    // No table: no line.
    assert_eq!(line_number(&mem, &l, f.const_method, 0).unwrap(), None);
}

#[test]
fn an_unterminated_line_table_is_refused_at_its_bound() {
    use super::symbolize::line_number;
    let mut f = fake_jvm(&[]);
    let (l, _) = resolve(&f);
    let cm = with_lines(&mut f, &vec![0x08; crate::limits::LINE_TABLE_MAX_BYTES + 100]);
    let e = line_number(&f.image.mem(), &l, cm, 1).unwrap_err().to_string();
    assert!(e.contains("line number table") && e.contains("over the limit"), "{e}");
    // Ending at the image's end without a terminator: unreadable, an error.
    let cm = with_lines(&mut f, &[0x08, 0x08]);
    f.image.bytes.truncate((cm + 48 + 12 - f.image.base) as usize);
    assert!(line_number(&f.image.mem(), &l, cm, 1).is_err());
}
