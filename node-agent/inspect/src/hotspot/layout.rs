//! What a Java frame walker and a symbolizer need from a HotSpot JVM, resolved from its
//! vmStructs ([`StackLayout`]), and the per-process addresses read with it
//! ([`ProcessStacks`]).
//!
//! Names differ between releases; each field lists the spellings known from JDK 11 to 25,
//! tried in order: `GenericGrowableArray` (11) became `GrowableArrayBase` (17);
//! `CompiledMethod::_method` (11–21) became `nmethod::_method` (25 has no CompiledMethod);
//! `CodeBlob::_code_begin` (an address, 11–21) became `_code_offset` (from the blob, 25);
//! `ConstMethod::_flags` (u2, 11–17) became `_flags._flags` (u4, 21); `HeapBlock` shrank from
//! 16 to 8 bytes in 25 (its size is read, never assumed); `CompiledMethod::_deopt_handler_begin`
//! (an address, 11–21) became `nmethod::_deopt_handler_offset` (from the nmethod, 25).
use super::vmstructs::VmStructs;
use super::{read_i32, read_u64, Memory};
use crate::limits::{CODE_HEAPS_MAX, HOTSPOT_MAX_OFFSET, INTERPRETER_MAX_BYTES};
use crate::Error;

const W: &str = "HotSpot vmStructs";

/// Where something in a CodeBlob starts (its code, an nmethod's deopt handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeStart {
    /// The field at this offset holds the address (`CodeBlob::_code_begin`).
    Address(u32),
    /// The `i32` at this offset is added to the blob's address (`CodeBlob::_code_offset`).
    Offset(u32),
}

/// Where a deoptimized compiled frame keeps the pc it was at.
///
/// HotSpot deoptimizes a compiled frame that is not on top (its nmethod was invalidated while
/// the frame waited for a callee) by patching the return address its callee holds to the
/// nmethod's deopt handler, having saved the pc it replaced in the frame at
/// `sp + nmethod::_orig_pc_offset` (`frame::deoptimize`, `nmethod::orig_pc_addr`: the frame's
/// unextended sp, which on x86-64 is its sp for compiled frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeoptLayout {
    /// `CompiledMethod::_deopt_handler_begin` (11–21) or `nmethod::_deopt_handler_offset` (25).
    pub handler: CodeStart,
    /// The handler of frames at a method handle call site (`_deopt_mh_handler_*`), where the
    /// JVM exports it.
    pub mh_handler: Option<CodeStart>,
    /// `nmethod::_orig_pc_offset` (an `int`): the offset of the field that holds the saved
    /// pc's offset from the frame's sp.
    pub orig_pc_offset: u32,
}

/// Where an entry frame (the VM calling Java: a class initializer, class loading, a JNI upcall)
/// keeps the frames of the Java code that called into the VM: its `JavaCallWrapper*` is at the
/// entry frame's fp + `call_wrapper_slot` words (`frame::entry_frame_call_wrapper_offset`), and
/// the wrapper's `JavaFrameAnchor` holds that code's last Java sp, fp and pc
/// (`frame::sender_for_entry_frame`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryLayout {
    pub call_wrapper_slot: i32,
    /// `JavaCallWrapper::_anchor`.
    pub wrapper_anchor: u32,
}

impl EntryLayout {
    /// `None` when the JVM does not export them (or the slot is not a plausible word index).
    pub fn resolve(vs: &VmStructs) -> Option<EntryLayout> {
        let call_wrapper_slot = vs
            .int_constant("frame::entry_frame_call_wrapper_offset")
            .filter(|s| (-64..=64).contains(s))?;
        let wrapper_anchor = off(vs, &[("JavaCallWrapper", "_anchor")]).ok()?;
        Some(EntryLayout { call_wrapper_slot, wrapper_anchor })
    }
}

/// Field offsets and sizes (bytes) a frame walker and a symbolizer need, plus the addresses
/// of the statics [`ProcessStacks`] reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackLayout {
    pub java_thread_anchor: u32,
    pub anchor_last_java_sp: u32,
    pub anchor_last_java_pc: u32,
    pub anchor_last_java_fp: u32,
    /// `None` when the JVM does not export it: the walk then ends at the first entry frame.
    pub entry_frame: Option<EntryLayout>,
    /// `sizeof(HeapBlock)`: the CodeBlob starts this far past its block.
    pub heap_block_size: u32,
    /// `HeapBlock::_header` + `HeapBlock::Header::_used` (a bool).
    pub heap_block_used: u32,
    pub code_blob_frame_size: u32,
    pub code_blob_name: u32,
    pub code_blob_code: CodeStart,
    pub nmethod_method: u32,
    pub nmethod_compile_id: u32,
    /// `None` when the JVM does not export what it takes (a deoptimized frame is then named
    /// by its nmethod's method only).
    pub nmethod_deopt: Option<DeoptLayout>,
    pub method_const_method: u32,
    pub const_method_constants: u32,
    pub const_method_name_index: u32,
    pub const_method_signature_index: u32,
    pub const_method_code_size: u32,
    /// `sizeof(ConstMethod)`: the bytecodes follow it.
    pub const_method_size: u32,
    pub const_method_flags: u32,
    /// 2 (JDK 11–17) or 4 (21+).
    pub const_method_flags_width: u8,
    /// The flag bit telling that the compressed line number table follows the bytecodes;
    /// `None` when the JVM does not export it (no line numbers then).
    pub const_method_has_linenumber_table: Option<u32>,
    /// JDK 21+ compresses the line number table's escaped pairs with UNSIGNED5 (no zero
    /// bytes); before, with the older CompressedStream ints. Told apart by the u4 flags of 21.
    pub line_table_unsigned5: bool,
    pub constant_pool_pool_holder: u32,
    /// `ConstantPool::_length`: the number of slots after the header.
    pub constant_pool_length: u32,
    /// `sizeof(ConstantPool)`: its 8-byte slots follow it.
    pub constant_pool_size: u32,
    pub klass_name: u32,
    pub symbol_length: u32,
    pub symbol_body: u32,
    // What ProcessStacks reads.
    pub interpreter_code_addr: u64,
    pub stub_queue_stub_buffer: u32,
    pub stub_queue_buffer_limit: u32,
    pub code_cache_heaps_addr: u64,
    pub growable_array_len: u32,
    pub growable_array_data: u32,
    pub code_heap_memory: u32,
    pub code_heap_segmap: u32,
    pub code_heap_log2_segment_size: u32,
    pub virtual_space_low_boundary: u32,
    pub virtual_space_high_boundary: u32,
    pub virtual_space_low: u32,
    pub virtual_space_high: u32,
    pub call_stub_return_address_addr: u64,
}

fn missing(what: String) -> Error {
    Error::Malformed { what: W, offset: 0, reason: what }
}

fn small(v: u64, what: &str) -> Result<u32, Error> {
    if v > HOTSPOT_MAX_OFFSET {
        return Err(missing(format!("{what} is {v}, over the limit of {HOTSPOT_MAX_OFFSET}")));
    }
    Ok(v as u32)
}

fn alternatives(alts: &[(&str, &str)]) -> String {
    alts.iter().map(|(t, n)| format!("{t}::{n}")).collect::<Vec<_>>().join(" or ")
}

/// The first of `alts` that exists as a non-static field: (its index in `alts`, offset).
fn field_of(vs: &VmStructs, alts: &[(&str, &str)]) -> Result<(usize, u32), Error> {
    for (i, (t, n)) in alts.iter().enumerate() {
        if let Some(f) = vs.field(t, n).filter(|f| !f.is_static) {
            return Ok((i, small(f.offset, &format!("offset of {t}::{n}"))?));
        }
    }
    Err(missing(format!("no field {}", alternatives(alts))))
}

fn off(vs: &VmStructs, alts: &[(&str, &str)]) -> Result<u32, Error> {
    Ok(field_of(vs, alts)?.1)
}

fn static_addr(vs: &VmStructs, t: &str, n: &str) -> Result<u64, Error> {
    match vs.field(t, n) {
        Some(f) if f.is_static && f.address != 0 => Ok(f.address),
        Some(_) => Err(missing(format!("{t}::{n} is not a static with an address"))),
        None => Err(missing(format!("no static {t}::{n}"))),
    }
}

/// A field that holds where something in a CodeBlob starts, told by its type: an `address`
/// holds it, an `int` is its offset from the blob. The first of `alts` that exists; `None`
/// when none does or its type is neither.
fn code_start(vs: &VmStructs, alts: &[(&str, &str)]) -> Option<CodeStart> {
    let (t, n, f) = alts
        .iter()
        .find_map(|(t, n)| vs.field(t, n).filter(|f| !f.is_static).map(|f| (t, n, f)))?;
    let o = small(f.offset, &format!("offset of {t}::{n}")).ok()?;
    match f.type_string.as_str() {
        "address" => Some(CodeStart::Address(o)),
        "int" => Some(CodeStart::Offset(o)),
        _ => None,
    }
}

impl DeoptLayout {
    /// What a walker needs to name a deoptimized frame at its original pc; `None` when the JVM
    /// does not export it.
    pub fn resolve(vs: &VmStructs) -> Option<DeoptLayout> {
        let handler = code_start(
            vs,
            &[
                ("CompiledMethod", "_deopt_handler_begin"),
                ("nmethod", "_deopt_handler_begin"),
                ("nmethod", "_deopt_handler_offset"),
            ],
        )?;
        let mh_handler = code_start(
            vs,
            &[
                ("CompiledMethod", "_deopt_mh_handler_begin"),
                ("nmethod", "_deopt_mh_handler_begin"),
                ("nmethod", "_deopt_mh_handler_offset"),
            ],
        );
        let orig = vs.field("nmethod", "_orig_pc_offset").filter(|f| !f.is_static)?;
        if orig.type_string != "int" {
            return None;
        }
        let orig_pc_offset = small(orig.offset, "offset of nmethod::_orig_pc_offset").ok()?;
        Some(DeoptLayout { handler, mh_handler, orig_pc_offset })
    }
}

fn size(vs: &VmStructs, t: &str) -> Result<u32, Error> {
    let s = vs.type_size(t).ok_or_else(|| missing(format!("no type {t}")))?;
    small(s, &format!("sizeof({t})"))
}

impl StackLayout {
    /// Resolves every field; the error names the first one missing (with its spellings).
    pub fn resolve(vs: &VmStructs) -> Result<StackLayout, Error> {
        let code_blob_code =
            match field_of(vs, &[("CodeBlob", "_code_begin"), ("CodeBlob", "_code_offset")])? {
                (0, o) => CodeStart::Address(o),
                (_, o) => CodeStart::Offset(o),
            };
        let (flags_kind, const_method_flags) =
            field_of(vs, &[("ConstMethod", "_flags._flags"), ("ConstMethod", "_flags")])?;
        let header = off(vs, &[("HeapBlock", "_header")])?;
        let used = off(vs, &[("HeapBlock::Header", "_used")])?;
        Ok(StackLayout {
            java_thread_anchor: off(vs, &[("JavaThread", "_anchor")])?,
            anchor_last_java_sp: off(vs, &[("JavaFrameAnchor", "_last_Java_sp")])?,
            anchor_last_java_pc: off(vs, &[("JavaFrameAnchor", "_last_Java_pc")])?,
            anchor_last_java_fp: off(vs, &[("JavaFrameAnchor", "_last_Java_fp")])?,
            entry_frame: EntryLayout::resolve(vs),
            heap_block_size: size(vs, "HeapBlock")?,
            heap_block_used: small(u64::from(header) + u64::from(used), "HeapBlock used flag")?,
            code_blob_frame_size: off(vs, &[("CodeBlob", "_frame_size")])?,
            code_blob_name: off(vs, &[("CodeBlob", "_name")])?,
            code_blob_code,
            nmethod_method: off(vs, &[("nmethod", "_method"), ("CompiledMethod", "_method")])?,
            nmethod_compile_id: off(vs, &[("nmethod", "_compile_id")])?,
            nmethod_deopt: DeoptLayout::resolve(vs),
            method_const_method: off(vs, &[("Method", "_constMethod")])?,
            const_method_constants: off(vs, &[("ConstMethod", "_constants")])?,
            const_method_name_index: off(vs, &[("ConstMethod", "_name_index")])?,
            const_method_signature_index: off(vs, &[("ConstMethod", "_signature_index")])?,
            const_method_code_size: off(vs, &[("ConstMethod", "_code_size")])?,
            const_method_size: size(vs, "ConstMethod")?,
            const_method_flags,
            const_method_flags_width: if flags_kind == 0 { 4 } else { 2 },
            const_method_has_linenumber_table: [
                "ConstMethodFlags::_misc_has_linenumber_table",
                "ConstMethod::_has_linenumber_table",
            ]
            .iter()
            .find_map(|n| vs.int_constant(n))
            .and_then(|v| u32::try_from(v).ok()),
            line_table_unsigned5: flags_kind == 0,
            constant_pool_pool_holder: off(vs, &[("ConstantPool", "_pool_holder")])?,
            constant_pool_length: off(vs, &[("ConstantPool", "_length")])?,
            constant_pool_size: size(vs, "ConstantPool")?,
            klass_name: off(vs, &[("Klass", "_name")])?,
            symbol_length: off(vs, &[("Symbol", "_length")])?,
            symbol_body: off(vs, &[("Symbol", "_body")])?,
            interpreter_code_addr: static_addr(vs, "AbstractInterpreter", "_code")?,
            stub_queue_stub_buffer: off(vs, &[("StubQueue", "_stub_buffer")])?,
            stub_queue_buffer_limit: off(vs, &[("StubQueue", "_buffer_limit")])?,
            code_cache_heaps_addr: static_addr(vs, "CodeCache", "_heaps")?,
            growable_array_len: off(
                vs,
                &[("GrowableArrayBase", "_len"), ("GenericGrowableArray", "_len")],
            )?,
            growable_array_data: off(vs, &[("GrowableArray<int>", "_data")])?,
            code_heap_memory: off(vs, &[("CodeHeap", "_memory")])?,
            code_heap_segmap: off(vs, &[("CodeHeap", "_segmap")])?,
            code_heap_log2_segment_size: off(vs, &[("CodeHeap", "_log2_segment_size")])?,
            virtual_space_low_boundary: off(vs, &[("VirtualSpace", "_low_boundary")])?,
            virtual_space_high_boundary: off(vs, &[("VirtualSpace", "_high_boundary")])?,
            virtual_space_low: off(vs, &[("VirtualSpace", "_low")])?,
            virtual_space_high: off(vs, &[("VirtualSpace", "_high")])?,
            call_stub_return_address_addr: static_addr(
                vs,
                "StubRoutines",
                "_call_stub_return_address",
            )?,
        })
    }
}

/// One code heap: its reserved range `[low, high)`, of which `[low, committed)` is in use,
/// and its segment map (one byte per `1 << log2_segment_size` bytes from `low`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeHeapBounds {
    pub low: u64,
    pub committed: u64,
    pub high: u64,
    pub segmap: u64,
    pub log2_segment_size: u32,
}

impl CodeHeapBounds {
    pub fn contains(&self, pc: u64) -> bool {
        (self.low..self.committed).contains(&pc)
    }
}

/// Per process, read from its memory with a [`StackLayout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessStacks {
    /// The template interpreter's code, `[start, end)`.
    pub interpreter_start: u64,
    pub interpreter_end: u64,
    /// At most [`CODE_HEAPS_MAX`].
    pub code_heaps: Vec<CodeHeapBounds>,
    /// Where the call stub returns to: the frame below it is the entry frame (C++).
    pub call_stub_return_address: u64,
    /// `Thread::_thr_current`'s offset in libjvm's TLS block.
    pub tls_offset: u64,
    /// libjvm's TLS module id (the dtv index).
    pub tls_module: u64,
}

fn addr(base: u64, off: u32, what: &'static str) -> Result<u64, Error> {
    base.checked_add(u64::from(off)).ok_or_else(|| Error::Malformed {
        what,
        offset: base,
        reason: format!("address plus {off} overflows"),
    })
}

fn bad(what: &'static str, at: u64, reason: String) -> Error {
    Error::Malformed { what, offset: at, reason }
}

/// TLS module ids are small (glibc counts loaded modules with TLS).
const TLS_MODULE_MAX: u64 = 4096;

impl ProcessStacks {
    /// Reads the interpreter's range, the code heaps and the call stub's return address;
    /// `tls_offset` is the `st_value` of `Thread::_thr_current`, `tls_got` the runtime address
    /// (load bias applied) of a `R_X86_64_DTPMOD64` GOT slot of libjvm.
    pub fn read(
        mem: &dyn Memory,
        l: &StackLayout,
        tls_offset: u64,
        tls_got: u64,
    ) -> Result<ProcessStacks, Error> {
        const SQ: &str = "AbstractInterpreter::_code (StubQueue)";
        let queue = read_u64(mem, l.interpreter_code_addr, SQ)?;
        if queue == 0 {
            return Err(bad(SQ, l.interpreter_code_addr, "null (interpreter not set up)".into()));
        }
        let start = read_u64(mem, addr(queue, l.stub_queue_stub_buffer, SQ)?, SQ)?;
        let limit = read_i32(mem, addr(queue, l.stub_queue_buffer_limit, SQ)?, SQ)?;
        let len = u64::try_from(limit)
            .ok()
            .filter(|&n| n > 0 && n <= INTERPRETER_MAX_BYTES)
            .ok_or_else(|| {
                bad(SQ, queue, format!("buffer limit {limit} not in 1..={INTERPRETER_MAX_BYTES}"))
            })?;
        let end = start.checked_add(len).ok_or_else(|| bad(SQ, queue, "range overflows".into()))?;

        const CH: &str = "CodeCache::_heaps";
        let arr = read_u64(mem, l.code_cache_heaps_addr, CH)?;
        if arr == 0 {
            return Err(bad(CH, l.code_cache_heaps_addr, "null (code cache not set up)".into()));
        }
        let n = read_i32(mem, addr(arr, l.growable_array_len, CH)?, CH)?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| (1..=CODE_HEAPS_MAX).contains(&n))
            .ok_or_else(|| bad(CH, arr, format!("{n} code heaps, not in 1..={CODE_HEAPS_MAX}")))?;
        let data = read_u64(mem, addr(arr, l.growable_array_data, CH)?, CH)?;
        let mut code_heaps = Vec::with_capacity(n);
        for i in 0..n as u64 {
            let slot = i.checked_mul(8).and_then(|o| data.checked_add(o));
            let slot = slot.ok_or_else(|| bad(CH, data, "array overflows".into()))?;
            code_heaps.push(read_heap(mem, l, read_u64(mem, slot, CH)?)?);
        }

        const CS: &str = "StubRoutines::_call_stub_return_address";
        let call_stub_return_address = read_u64(mem, l.call_stub_return_address_addr, CS)?;

        const TLS: &str = "libjvm TLS module id (DTPMOD64 GOT slot)";
        let tls_module = read_u64(mem, tls_got, TLS)?;
        if !(1..=TLS_MODULE_MAX).contains(&tls_module) {
            return Err(bad(TLS, tls_got, format!("{tls_module} not in 1..={TLS_MODULE_MAX}")));
        }
        Ok(ProcessStacks {
            interpreter_start: start,
            interpreter_end: end,
            code_heaps,
            call_stub_return_address,
            tls_offset,
            tls_module,
        })
    }

    /// The code heap holding `pc` (in its committed part).
    pub fn heap_of(&self, pc: u64) -> Option<&CodeHeapBounds> {
        self.code_heaps.iter().find(|h| h.contains(pc))
    }
}

fn read_heap(mem: &dyn Memory, l: &StackLayout, heap: u64) -> Result<CodeHeapBounds, Error> {
    const H: &str = "CodeHeap";
    if heap == 0 {
        return Err(bad(H, 0, "null code heap".into()));
    }
    let memory = addr(heap, l.code_heap_memory, H)?;
    let segmap = addr(heap, l.code_heap_segmap, H)?;
    let low = read_u64(mem, addr(memory, l.virtual_space_low_boundary, H)?, H)?;
    let committed = read_u64(mem, addr(memory, l.virtual_space_high, H)?, H)?;
    let high = read_u64(mem, addr(memory, l.virtual_space_high_boundary, H)?, H)?;
    let map = read_u64(mem, addr(segmap, l.virtual_space_low, H)?, H)?;
    let log2 = read_i32(mem, addr(heap, l.code_heap_log2_segment_size, H)?, H)?;
    // Segments are 64 bytes by default; -XX:CodeCacheSegmentSize is a power of two.
    let log2_segment_size = u32::try_from(log2)
        .ok()
        .filter(|l| (1..=20).contains(l))
        .ok_or_else(|| bad(H, heap, format!("log2 segment size {log2} not in 1..=20")))?;
    if !(low <= committed && committed <= high) || low == 0 || map == 0 {
        return Err(bad(
            H,
            heap,
            format!("bounds low {low:#x} committed {committed:#x} high {high:#x} segmap {map:#x}"),
        ));
    }
    Ok(CodeHeapBounds { low, committed, high, segmap: map, log2_segment_size })
}
