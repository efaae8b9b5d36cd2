//! A small hand-built HotSpot memory image (vmStructs tables, a code heap with an nmethod, a
//! free block and the interpreter, one Method with its ConstMethod, ConstantPool, Klass and
//! Symbols), with JDK 17's offsets: the unit tests' and the fuzz seed's starting point.
use super::vmstructs::{Exports, SYMBOLS};
use super::SliceMem;
use crate::elf::Symbol;

/// Bytes at `base`, grown by [`Image::alloc`].
#[derive(Clone, Debug)]
pub struct Image {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Image {
    pub fn new(base: u64) -> Image {
        Image { base, bytes: Vec::new() }
    }
    /// `len` zero bytes, 16-aligned; their address.
    pub fn alloc(&mut self, len: usize) -> u64 {
        let start = self.bytes.len().div_ceil(16).saturating_mul(16);
        self.bytes.resize(start.saturating_add(len), 0);
        self.base.saturating_add(start as u64)
    }
    /// Writes `data` at `addr` (ignored where outside the image).
    pub fn put(&mut self, addr: u64, data: &[u8]) {
        let Some(off) = addr.checked_sub(self.base).and_then(|o| usize::try_from(o).ok()) else {
            return;
        };
        if let Some(dst) = off.checked_add(data.len()).and_then(|e| self.bytes.get_mut(off..e)) {
            dst.copy_from_slice(data);
        }
    }
    pub fn u64(&mut self, addr: u64, v: u64) {
        self.put(addr, &v.to_le_bytes());
    }
    pub fn u32(&mut self, addr: u64, v: u32) {
        self.put(addr, &v.to_le_bytes());
    }
    pub fn u16(&mut self, addr: u64, v: u16) {
        self.put(addr, &v.to_le_bytes());
    }
    /// A NUL-terminated copy of `s`; its address.
    pub fn cstr(&mut self, s: &str) -> u64 {
        let a = self.alloc(s.len().saturating_add(1));
        self.put(a, s.as_bytes());
        a
    }
    pub fn mem(&self) -> SliceMem<'_> {
        SliceMem { base: self.base, bytes: &self.bytes }
    }
}

/// The exports of an image whose first 20 words are the [`SYMBOLS`] in order (what the
/// fuzz target reads its input as).
pub fn exports_at(base: u64) -> Exports {
    let syms: Vec<Symbol> = SYMBOLS
        .iter()
        .zip(0u64..)
        .map(|(n, i)| Symbol {
            name: (*n).to_string(),
            value: i * 8,
            size: 8,
            from_symtab: false,
            kind: 1,
        })
        .collect();
    Exports::from_symbols(&syms, base).unwrap_or_default()
}

/// Where an image's TLS module id is, from its base: right after the 20 symbols' words.
pub const TLS_GOT: u64 = 20 * 8;

/// Strides and field offsets of the fake tables.
const STRUCT_STRIDE: u64 = 48;
const TYPE_STRIDE: u64 = 40;
const CONST_STRIDE: u64 = 16;

/// (type, field, type string, offset) of the non-static fields, JDK 17's.
pub const FIELDS: &[(&str, &str, &str, u64)] = &[
    ("JavaThread", "_anchor", "JavaFrameAnchor", 0x290),
    ("JavaFrameAnchor", "_last_Java_sp", "intptr_t*", 0),
    ("JavaFrameAnchor", "_last_Java_pc", "address", 8),
    ("JavaFrameAnchor", "_last_Java_fp", "intptr_t*", 0x10),
    ("HeapBlock", "_header", "HeapBlock::Header", 0),
    ("HeapBlock::Header", "_length", "size_t", 0),
    ("HeapBlock::Header", "_used", "bool", 8),
    ("CodeBlob", "_frame_size", "int", 0x1c),
    ("CodeBlob", "_name", "const char*", 0x60),
    ("CodeBlob", "_code_begin", "address", 0x20),
    ("CompiledMethod", "_method", "Method*", 0x70),
    ("CompiledMethod", "_deopt_handler_begin", "address", 0x98),
    ("CompiledMethod", "_deopt_mh_handler_begin", "address", 0xa0),
    ("nmethod", "_compile_id", "int", 0x130),
    ("nmethod", "_orig_pc_offset", "int", 0x134),
    ("Method", "_constMethod", "ConstMethod*", 8),
    ("ConstMethod", "_constants", "ConstantPool*", 8),
    ("ConstMethod", "_code_size", "u2", 0x20),
    ("ConstMethod", "_flags", "u2", 0x1c),
    ("ConstMethod", "_name_index", "u2", 0x22),
    ("ConstMethod", "_signature_index", "u2", 0x24),
    ("ConstantPool", "_pool_holder", "InstanceKlass*", 0x18),
    ("ConstantPool", "_length", "int", 0x3c),
    ("Klass", "_name", "Symbol*", 0x18),
    ("Symbol", "_length", "u2", 4),
    ("Symbol", "_body", "", 6),
    ("StubQueue", "_stub_buffer", "address", 8),
    ("StubQueue", "_buffer_limit", "int", 0x14),
    ("GrowableArrayBase", "_len", "int", 0),
    ("GrowableArray<int>", "_data", "int*", 8),
    ("CodeHeap", "_memory", "VirtualSpace", 8),
    ("CodeHeap", "_segmap", "VirtualSpace", 0x78),
    ("CodeHeap", "_log2_segment_size", "int", 0x100),
    ("VirtualSpace", "_low_boundary", "char*", 0),
    ("VirtualSpace", "_high_boundary", "char*", 8),
    ("VirtualSpace", "_low", "char*", 0x10),
    ("VirtualSpace", "_high", "char*", 0x18),
];

/// (type, size).
pub const TYPES: &[(&str, u64)] =
    &[("HeapBlock", 16), ("ConstMethod", 48), ("ConstantPool", 72), ("JavaThread", 1384)];

/// The fake JVM and where its objects are.
#[derive(Clone, Debug)]
pub struct FakeJvm {
    pub image: Image,
    pub exports: Exports,
    /// The load-biased address of a DTPMOD64 GOT slot holding module id 2.
    pub tls_got: u64,
    pub heap_low: u64,
    pub heap_end: u64,
    pub segmap: u64,
    /// The nmethod's CodeBlob (segments 0..8), its code, its Method and ConstMethod.
    pub nmethod: u64,
    pub nmethod_code: u64,
    pub method: u64,
    pub const_method: u64,
    /// A free block (segments 8..16) and the interpreter's blob (16..24); 24.. are unused.
    pub free_block: u64,
    pub interpreter: u64,
    pub interpreter_code: u64,
}

/// Where the fake image is mapped.
pub const BASE: u64 = 0x7f00_0000_0000;

/// Segments of the fake code heap (64 bytes each).
pub const HEAP_SEGMENTS: u64 = 64;

/// Builds the image; `skip` leaves out the struct entries whose `type::field` it names.
pub fn fake_jvm(skip: &[&str]) -> FakeJvm {
    let base = BASE;
    let mut m = Image::new(base);
    // The 20 symbols' words, then the TLS module id (see TLS_GOT).
    let sym_slots = m.alloc(SYMBOLS.len() * 8 + 8);
    let exports = exports_at(sym_slots);
    let tls_got = sym_slots + TLS_GOT;
    m.u64(tls_got, 2);

    // Objects first, so the statics can point at them.
    let seg = 64u64;
    let heap_low = m.alloc((HEAP_SEGMENTS * seg) as usize);
    let heap_end = heap_low + HEAP_SEGMENTS * seg;
    let segmap = m.alloc(HEAP_SEGMENTS as usize);
    let mut map = vec![0xFFu8; HEAP_SEGMENTS as usize];
    for (i, b) in map.iter_mut().enumerate().take(24) {
        *b = (i % 8) as u8; // three blocks of eight segments
    }
    m.put(segmap, &map);
    let (block_a, block_b, block_c) = (heap_low, heap_low + 8 * seg, heap_low + 16 * seg);
    for (b, used) in [(block_a, 1u8), (block_b, 0), (block_c, 1)] {
        m.u64(b, 8); // length in segments
        m.put(b + 8, &[used]);
    }
    let nmethod = block_a + 16;
    let nmethod_code = nmethod + 0x100;
    let interpreter = block_c + 16;
    let interpreter_code = interpreter + 0x80;
    let nm_name = m.cstr("nmethod");
    let int_name = m.cstr("Interpreter");

    let class_sym = m.alloc(6 + 16);
    m.u16(class_sym + 4, 16);
    m.put(class_sym + 6, b"java/lang/Thread");
    let name_sym = m.alloc(6 + 3);
    m.u16(name_sym + 4, 3);
    m.put(name_sym + 6, b"run");
    let klass = m.alloc(208);
    m.u64(klass + 0x18, class_sym);
    let cp = m.alloc(72 + 3 * 8);
    m.u64(cp + 0x18, klass);
    m.u32(cp + 0x3c, 3);
    m.u64(cp + 72 + 8, name_sym);
    let const_method = m.alloc(48 + 10);
    m.u64(const_method + 8, cp);
    m.u16(const_method + 0x20, 10);
    m.u16(const_method + 0x22, 1);
    let method = m.alloc(88);
    m.u64(method + 8, const_method);

    m.u64(nmethod + 0x60, nm_name);
    m.u64(nmethod + 0x20, nmethod_code);
    m.u32(nmethod + 0x1c, 4);
    m.u64(nmethod + 0x70, method);
    m.u32(nmethod + 0x130, 42);
    m.u64(nmethod + 0x98, nmethod_code + 0xc0); // the deopt handler
    m.u32(nmethod + 0x134, 0x10); // the saved pc's slot, from the frame's sp
    m.u64(interpreter + 0x60, int_name);
    m.u64(interpreter + 0x20, interpreter_code);

    let queue = m.alloc(48);
    m.u64(queue + 8, interpreter_code);
    m.u32(queue + 0x14, 0x80);
    let heap = m.alloc(344);
    m.u64(heap + 8, heap_low);
    m.u64(heap + 8 + 8, heap_end);
    m.u64(heap + 8 + 0x10, heap_low);
    m.u64(heap + 8 + 0x18, heap_end);
    m.u64(heap + 0x78 + 0x10, segmap);
    m.u32(heap + 0x100, 6);
    let heaps_data = m.alloc(8);
    m.u64(heaps_data, heap);
    let heaps = m.alloc(24);
    m.u32(heaps, 1);
    m.u64(heaps + 8, heaps_data);
    let s_code = m.alloc(8);
    m.u64(s_code, queue);
    let s_heaps = m.alloc(8);
    m.u64(s_heaps, heaps);
    let s_call = m.alloc(8);
    m.u64(s_call, interpreter_code + 0x10);

    // The tables.
    let statics: [(&str, &str, &str, u64); 3] = [
        ("AbstractInterpreter", "_code", "StubQueue*", s_code),
        ("CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", s_heaps),
        ("StubRoutines", "_call_stub_return_address", "address", s_call),
    ];
    let entries: Vec<(&str, &str, &str, bool, u64)> = FIELDS
        .iter()
        .map(|&(t, f, s, o)| (t, f, s, false, o))
        .chain(statics.iter().map(|&(t, f, s, a)| (t, f, s, true, a)))
        .filter(|(t, f, ..)| !skip.contains(&format!("{t}::{f}").as_str()))
        .collect();
    let structs = m.alloc(((entries.len() + 1) as u64 * STRUCT_STRIDE) as usize);
    for (e, (t, f, s, is_static, v)) in (0u64..).zip(&entries) {
        let at = structs + e * STRUCT_STRIDE;
        let (t, f) = (m.cstr(t), m.cstr(f));
        let s = if s.is_empty() { 0 } else { m.cstr(s) };
        m.u64(at, t);
        m.u64(at + 8, f);
        m.u64(at + 16, s);
        m.u32(at + 24, u32::from(*is_static));
        m.u64(if *is_static { at + 40 } else { at + 32 }, *v);
    }
    let types = m.alloc(((TYPES.len() + 1) as u64 * TYPE_STRIDE) as usize);
    for (e, (t, size)) in (0u64..).zip(TYPES) {
        let t = m.cstr(t);
        m.u64(types + e * TYPE_STRIDE, t);
        m.u64(types + e * TYPE_STRIDE + 32, *size);
    }
    let ints = m.alloc((3 * CONST_STRIDE) as usize);
    let n = m.cstr("oopSize");
    m.u64(ints, n);
    m.u32(ints + 8, 8);
    let n = m.cstr("ConstMethod::_has_linenumber_table");
    m.u64(ints + CONST_STRIDE, n);
    m.u32(ints + CONST_STRIDE + 8, 1);
    let longs = m.alloc((2 * CONST_STRIDE) as usize);
    let n = m.cstr("markWord::hash_mask");
    m.u64(longs, n);
    m.u64(longs + 8, 0x7fff_ffff);

    let words: [u64; 20] = [
        structs,
        0,
        8,
        16,
        24,
        32,
        40,
        STRUCT_STRIDE,
        types,
        0,
        32,
        TYPE_STRIDE,
        ints,
        0,
        8,
        CONST_STRIDE,
        longs,
        0,
        8,
        CONST_STRIDE,
    ];
    for (i, w) in (0u64..).zip(words) {
        m.u64(sym_slots + i * 8, w);
    }
    FakeJvm {
        image: m,
        exports,
        tls_got,
        heap_low,
        heap_end,
        segmap,
        nmethod,
        nmethod_code,
        method,
        const_method,
        free_block: block_b + 16,
        interpreter,
        interpreter_code,
    }
}
