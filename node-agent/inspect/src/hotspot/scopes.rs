//! The methods inlined at a pc of compiled code, decoded as HotSpot decodes them.
//!
//! An nmethod holds a sorted array of `PcDesc`s (the "scopes pcs"), one per pc that has debug
//! information (calls, safepoint polls, implicit exception points). Each names a decode offset
//! into the "scopes data", a stream of UNSIGNED5-coded ints: per scope, the sender scope's
//! decode offset (0: none), the scope's method as an index into the nmethod's metadata
//! (0 means null, else slot index − 1), and its bci (stored minus `InvocationEntryBci`). The
//! innermost scope is the PcDesc's; following senders leads to the nmethod's own method.
//!
//! Where the sections are changed between releases:
//! - JDK 11–21: all in the nmethod's blob. `nmethod::_scopes_pcs_offset` and
//!   `_dependencies_offset` (from the nmethod) bound the PcDescs; the scopes data runs from
//!   `CompiledMethod::_scopes_data_begin` (an address) to the PcDescs; the metadata from
//!   `nmethod::_metadata_offset` to the scopes data.
//! - JDK 25: the PcDescs and then the scopes data are in a C-heap block at
//!   `nmethod::_immutable_data`, from `_scopes_pcs_offset` to `_scopes_data_offset` and from
//!   there to at most `_immutable_data_size` (HotSpot's own print of an nmethod shows this
//!   order; JDK 25's serviceability agent has the two swapped); the metadata is in the blob's
//!   mutable data, after its `CodeBlob::_relocation_size` bytes of relocations.
//!
//! UNSIGNED5 changed in JDK 20: byte 0 is excluded (X = 1, 191 "low" bytes); JDK 11–19 use
//! X = 0 and 192 low bytes. Nothing in vmStructs says which, so the JVM's major version
//! (`Abstract_VM_Version::_vm_major_version`) decides.
//!
//! Every address comes from a possibly hostile process: sections are bounded
//! ([`NMETHOD_SECTION_MAX_BYTES`]), a chain of senders is at most [`SCOPES_MAX_DEPTH`] long and
//! may not revisit an offset, a method index must be inside the metadata.
use super::layout::CodeStart;
use super::vmstructs::VmStructs;
use super::{read_bytes, read_i32, read_u64, Memory};
use crate::limits::{
    HOTSPOT_MAX_OFFSET, HOTSPOT_MAX_READ, NMETHOD_SECTION_MAX_BYTES, SCOPES_MAX_DEPTH,
    SCOPES_MAX_PC_DESCS,
};
use crate::Error;

const W: &str = "HotSpot vmStructs (scopes)";
const NM: &str = "nmethod";
const PD: &str = "PcDesc";
const SD: &str = "nmethod scopes data";
const MD: &str = "nmethod metadata";

/// The first major version whose UNSIGNED5 streams exclude byte 0.
const UNSIGNED5_X1_SINCE: i32 = 20;
/// At most this many bytes encode one UNSIGNED5 int.
const UNSIGNED5_MAX_LEN: usize = 5;
/// A scope's header: sender offset, method index, bci.
const SCOPE_HEADER_MAX: usize = 3 * UNSIGNED5_MAX_LEN;
/// Past any bci: a method has at most 65535 bytes of code.
const BCI_MAX: i64 = 65535;

/// An integer field as vmStructs types it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntField {
    pub offset: u32,
    /// 1, 2 or 4 bytes.
    pub width: u8,
    pub signed: bool,
}

impl IntField {
    /// The field in `buf` (a copy of the structure).
    fn get(&self, buf: &[u8], what: &'static str) -> Result<i64, Error> {
        let at = self.offset as usize;
        let b = buf
            .get(at..at.saturating_add(usize::from(self.width)))
            .ok_or_else(|| Error::truncated(what, at, usize::from(self.width), buf.len()))?;
        Ok(match (b, self.signed) {
            ([a], true) => i64::from(*a as i8),
            ([a], false) => i64::from(*a),
            ([a, b], true) => i64::from(i16::from_le_bytes([*a, *b])),
            ([a, b], false) => i64::from(u16::from_le_bytes([*a, *b])),
            ([a, b, c, d], true) => i64::from(i32::from_le_bytes([*a, *b, *c, *d])),
            ([a, b, c, d], false) => i64::from(u32::from_le_bytes([*a, *b, *c, *d])),
            _ => return Err(Error::malformed(what, at, format!("field width {}", self.width))),
        })
    }

    /// The field of the structure at `base`.
    fn read(&self, mem: &dyn Memory, base: u64, what: &'static str) -> Result<i64, Error> {
        let b = read_bytes(mem, at(base, u64::from(self.offset), what)?, self.width.into(), what)?;
        IntField { offset: 0, ..*self }.get(&b, what)
    }

    fn end(&self) -> u64 {
        u64::from(self.offset) + u64::from(self.width)
    }
}

/// Where an nmethod keeps its PcDescs, scopes data and metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sections {
    /// JDK 11–21: offsets from the nmethod, and the scopes data's address.
    InBlob {
        scopes_pcs_offset: IntField,
        dependencies_offset: IntField,
        metadata_offset: IntField,
        /// `CompiledMethod::_scopes_data_begin`: holds an address.
        scopes_data_begin: u32,
    },
    /// JDK 25: PcDescs and scopes data in the immutable data, metadata in the mutable data.
    Separate {
        /// `nmethod::_immutable_data`: holds an address.
        immutable_data: u32,
        immutable_data_size: IntField,
        scopes_pcs_offset: IntField,
        scopes_data_offset: IntField,
        /// `CodeBlob::_mutable_data`: holds an address.
        mutable_data: u32,
        mutable_data_size: IntField,
        relocation_size: IntField,
    },
}

/// How the scopes data codes its ints (UNSIGNED5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// JDK 11–19: 192 one-byte values, byte 0 allowed.
    Unsigned5X0,
    /// JDK 20+: byte 0 never appears, 191 one-byte values.
    Unsigned5X1,
}

/// What [`inlined`] needs from vmStructs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopesLayout {
    pub code_start: CodeStart,
    pub sections: Sections,
    /// `sizeof(PcDesc)`: the stride of the PcDesc array.
    pub pc_desc_size: u32,
    pub pc_desc_pc_offset: IntField,
    pub pc_desc_scope_decode_offset: IntField,
    pub pc_desc_obj_decode_offset: IntField,
    pub pc_desc_flags: IntField,
    /// `InvocationEntryBci` (-1): added to each stored bci.
    pub invocation_entry_bci: i32,
    /// `Abstract_VM_Version::_vm_major_version`: its address.
    pub vm_major_version_addr: u64,
    /// The stream's coding once known ([`ScopesLayout::read_coding`]); `None`: read the
    /// version at each [`NmethodScopes::read`].
    pub coding: Option<Coding>,
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

/// The non-static field `t::n`: its offset and C++ type.
fn field<'a>(vs: &'a VmStructs, t: &str, n: &str) -> Result<(u32, &'a str), Error> {
    let f = vs
        .field(t, n)
        .filter(|f| !f.is_static)
        .ok_or_else(|| missing(format!("no field {t}::{n}")))?;
    Ok((small(f.offset, &format!("offset of {t}::{n}"))?, f.type_string.as_str()))
}

/// An integer field, its width and signedness from its type's name (checked against the
/// type's exported size when there is one).
fn int_field(vs: &VmStructs, t: &str, n: &str) -> Result<IntField, Error> {
    let (offset, ty) = field(vs, t, n)?;
    let (width, signed) = match ty {
        "int" | "jint" | "int32_t" => (4, true),
        "uint" | "u4" | "juint" | "uint32_t" => (4, false),
        "short" | "jshort" | "int16_t" => (2, true),
        "u2" | "jushort" | "uint16_t" | "unsigned short" => (2, false),
        "jbyte" | "int8_t" | "signed char" => (1, true),
        "u1" | "jubyte" | "uint8_t" | "unsigned char" => (1, false),
        _ => return Err(missing(format!("{t}::{n} has type `{ty}`, not a known integer"))),
    };
    if let Some(size) = vs.type_size(ty).filter(|&s| s != u64::from(width)) {
        return Err(missing(format!("{t}::{n}: sizeof({ty}) is {size}, expected {width}")));
    }
    Ok(IntField { offset, width, signed })
}

/// A field holding a pointer.
fn pointer_field(vs: &VmStructs, t: &str, n: &str) -> Result<u32, Error> {
    let (offset, ty) = field(vs, t, n)?;
    if ty != "address" && !ty.ends_with('*') {
        return Err(missing(format!("{t}::{n} has type `{ty}`, not a pointer")));
    }
    Ok(offset)
}

impl ScopesLayout {
    /// Resolves every field; the error names the first one missing. `coding` is left unknown
    /// (it needs the JVM's memory: [`ScopesLayout::read_coding`]).
    pub fn resolve(vs: &VmStructs) -> Result<ScopesLayout, Error> {
        let code_start = match vs.field("CodeBlob", "_code_begin").filter(|f| !f.is_static) {
            Some(_) => CodeStart::Address(pointer_field(vs, "CodeBlob", "_code_begin")?),
            None => {
                let f = int_field(vs, "CodeBlob", "_code_offset")?;
                if f.width != 4 || !f.signed {
                    return Err(missing("CodeBlob::_code_offset is not an int".into()));
                }
                CodeStart::Offset(f.offset)
            }
        };
        let sections = if vs.field(NM, "_immutable_data").is_some() {
            Sections::Separate {
                immutable_data: pointer_field(vs, NM, "_immutable_data")?,
                immutable_data_size: int_field(vs, NM, "_immutable_data_size")?,
                scopes_pcs_offset: int_field(vs, NM, "_scopes_pcs_offset")?,
                scopes_data_offset: int_field(vs, NM, "_scopes_data_offset")?,
                mutable_data: pointer_field(vs, "CodeBlob", "_mutable_data")?,
                mutable_data_size: int_field(vs, "CodeBlob", "_mutable_data_size")?,
                relocation_size: int_field(vs, "CodeBlob", "_relocation_size")?,
            }
        } else {
            let holder = if vs.field("CompiledMethod", "_scopes_data_begin").is_some() {
                "CompiledMethod"
            } else {
                NM
            };
            Sections::InBlob {
                scopes_pcs_offset: int_field(vs, NM, "_scopes_pcs_offset")?,
                dependencies_offset: int_field(vs, NM, "_dependencies_offset")?,
                metadata_offset: int_field(vs, NM, "_metadata_offset")?,
                scopes_data_begin: pointer_field(vs, holder, "_scopes_data_begin")?,
            }
        };
        let pc_desc_size = vs
            .type_size(PD)
            .ok_or_else(|| missing("no type PcDesc".into()))
            .and_then(|s| small(s, "sizeof(PcDesc)"))?;
        let pd = |n: &str| -> Result<IntField, Error> {
            let f = int_field(vs, PD, n)?;
            if f.end() > u64::from(pc_desc_size) {
                return Err(missing(format!(
                    "PcDesc::{n} ends past sizeof(PcDesc) {pc_desc_size}"
                )));
            }
            Ok(f)
        };
        let version = vs
            .field("Abstract_VM_Version", "_vm_major_version")
            .filter(|f| f.is_static && f.address != 0)
            .ok_or_else(|| missing("no static Abstract_VM_Version::_vm_major_version".into()))?;
        Ok(ScopesLayout {
            code_start,
            sections,
            pc_desc_size,
            pc_desc_pc_offset: pd("_pc_offset")?,
            pc_desc_scope_decode_offset: pd("_scope_decode_offset")?,
            pc_desc_obj_decode_offset: pd("_obj_decode_offset")?,
            pc_desc_flags: pd("_flags")?,
            invocation_entry_bci: vs
                .int_constant("InvocationEntryBci")
                .ok_or_else(|| missing("no constant InvocationEntryBci".into()))?,
            vm_major_version_addr: version.address,
            coding: None,
        })
    }

    /// Reads the JVM's major version and keeps the coding it implies.
    pub fn read_coding(&mut self, mem: &dyn Memory) -> Result<Coding, Error> {
        let c = coding_of(mem, self.vm_major_version_addr)?;
        self.coding = Some(c);
        Ok(c)
    }
}

/// The scopes coding of a JVM whose `_vm_major_version` is at `addr`.
pub fn coding_of(mem: &dyn Memory, addr: u64) -> Result<Coding, Error> {
    const V: &str = "Abstract_VM_Version::_vm_major_version";
    let major = read_i32(mem, addr, V)?;
    match major {
        9..UNSIGNED5_X1_SINCE => Ok(Coding::Unsigned5X0),
        UNSIGNED5_X1_SINCE..=1000 => Ok(Coding::Unsigned5X1),
        _ => Err(Error::Malformed {
            what: V,
            offset: addr,
            reason: format!("major version {major} not in 9..=1000"),
        }),
    }
}

/// One UNSIGNED5 int of `buf` at `pos`: the value and the position after it. Errors: the
/// buffer ends inside it, an excluded byte (0 under X = 1), or a value over 32 bits.
pub fn read_unsigned5(buf: &[u8], pos: usize, coding: Coding) -> Result<(u32, usize), Error> {
    const H_BITS: u32 = 6; // 64 "high" byte values carry 6 bits each
    let x: u8 = match coding {
        Coding::Unsigned5X0 => 0,
        Coding::Unsigned5X1 => 1,
    };
    let low = 192 - u32::from(x); // values below this end an int
    let mut sum: u64 = 0;
    for i in 0..UNSIGNED5_MAX_LEN {
        let at = pos.saturating_add(i);
        let b = *buf.get(at).ok_or_else(|| Error::truncated(SD, at, 1, buf.len()))?;
        let v = b.checked_sub(x).ok_or_else(|| Error::malformed(SD, at, "excluded byte 0"))?;
        sum += u64::from(v) << (H_BITS * i as u32); // < 2^8 << 24: no overflow
        if u32::from(v) < low || i + 1 == UNSIGNED5_MAX_LEN {
            let value = u32::try_from(sum)
                .map_err(|_| Error::malformed(SD, pos, format!("value {sum} over 32 bits")))?;
            return Ok((value, at + 1));
        }
    }
    Err(Error::malformed(SD, pos, "no end")) // the loop returns at its last byte
}

/// One PcDesc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcDesc {
    /// From the nmethod's code begin; -1 in the first (sentinel) entry.
    pub pc_offset: i64,
    /// Into the scopes data; 0 when the pc has no scope.
    pub scope_decode_offset: i64,
    pub obj_decode_offset: i64,
    /// `PcDesc::PCDESC_*` bits (reexecute, method handle invoke, return oop...).
    pub flags: i64,
}

/// One scope: a method and where in it. `bci` is -1 (`InvocationEntryBci`) at entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeFrame {
    /// The `Method*`.
    pub method: u64,
    pub bci: i32,
}

/// An nmethod's scopes, located: read once, then looked up per pc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NmethodScopes {
    pub nmethod: u64,
    pub code_begin: u64,
    pub pcs_begin: u64,
    /// PcDescs, both sentinels included.
    pub pcs_count: u64,
    pub data_begin: u64,
    pub data_len: u64,
    pub metadata_begin: u64,
    pub metadata_len: u64,
    pub coding: Coding,
    pc_desc_size: u32,
    invocation_entry_bci: i32,
}

fn at(base: u64, off: u64, what: &'static str) -> Result<u64, Error> {
    base.checked_add(off).ok_or_else(|| Error::Malformed {
        what,
        offset: base,
        reason: format!("address plus {off:#x} overflows"),
    })
}

/// `base + off` for an offset field that must not be negative.
fn plus(base: u64, off: i64, what: &'static str, field: &str) -> Result<u64, Error> {
    let o = u64::try_from(off).map_err(|_| Error::Malformed {
        what,
        offset: base,
        reason: format!("negative {field} {off}"),
    })?;
    at(base, o, what)
}

/// `[begin, end)` checked: not reversed, at most [`NMETHOD_SECTION_MAX_BYTES`]. Its length.
fn section(begin: u64, end: u64, what: &'static str, nm: u64) -> Result<u64, Error> {
    let len = end.checked_sub(begin).ok_or_else(|| Error::Malformed {
        what,
        offset: nm,
        reason: format!("ends at {end:#x} before it begins at {begin:#x}"),
    })?;
    if len > NMETHOD_SECTION_MAX_BYTES {
        return Err(Error::too_large(what, len, NMETHOD_SECTION_MAX_BYTES));
    }
    Ok(len)
}

impl NmethodScopes {
    /// Locates the sections of the nmethod at `nmethod` (a `CodeBlob*`, which the caller
    /// knows is an nmethod).
    pub fn read(mem: &dyn Memory, sl: &ScopesLayout, nmethod: u64) -> Result<NmethodScopes, Error> {
        if nmethod == 0 {
            return Err(Error::malformed(NM, 0, "null nmethod"));
        }
        let coding = match sl.coding {
            Some(c) => c,
            None => coding_of(mem, sl.vm_major_version_addr)?,
        };
        let code_begin = match sl.code_start {
            CodeStart::Address(o) => read_u64(mem, at(nmethod, o.into(), NM)?, NM)?,
            CodeStart::Offset(o) => {
                let off = read_i32(mem, at(nmethod, o.into(), NM)?, NM)?;
                plus(nmethod, off.into(), NM, "code offset")?
            }
        };
        let (pcs, data, meta) = match sl.sections {
            Sections::InBlob {
                scopes_pcs_offset,
                dependencies_offset,
                metadata_offset,
                scopes_data_begin,
            } => {
                let pcs = plus(nmethod, scopes_pcs_offset.read(mem, nmethod, NM)?, NM, "pcs")?;
                let deps = dependencies_offset.read(mem, nmethod, NM)?;
                let deps = plus(nmethod, deps, NM, "dependencies offset")?;
                let meta = metadata_offset.read(mem, nmethod, NM)?;
                let meta = plus(nmethod, meta, NM, "metadata offset")?;
                let data = read_u64(mem, at(nmethod, scopes_data_begin.into(), NM)?, NM)?;
                ((pcs, deps), (data, pcs), (meta, data))
            }
            Sections::Separate {
                immutable_data,
                immutable_data_size,
                scopes_pcs_offset,
                scopes_data_offset,
                mutable_data,
                mutable_data_size,
                relocation_size,
            } => {
                let imm = read_u64(mem, at(nmethod, immutable_data.into(), NM)?, NM)?;
                if imm == 0 {
                    return Err(Error::malformed(NM, 0, "null immutable data"));
                }
                let size = immutable_data_size.read(mem, nmethod, NM)?;
                let end = plus(imm, size, NM, "immutable data size")?;
                let pcs = plus(imm, scopes_pcs_offset.read(mem, nmethod, NM)?, NM, "pcs offset")?;
                let data = scopes_data_offset.read(mem, nmethod, NM)?;
                let data = plus(imm, data, NM, "scopes data offset")?;
                let mdata = read_u64(mem, at(nmethod, mutable_data.into(), NM)?, NM)?;
                let msize = mutable_data_size.read(mem, nmethod, NM)?;
                let mend = plus(mdata, msize, NM, "mutable data size")?;
                let reloc = relocation_size.read(mem, nmethod, NM)?;
                let meta = plus(mdata, reloc, NM, "relocation size")?;
                ((pcs, data), (data, end), (meta, mend))
            }
        };
        let pcs_len = section(pcs.0, pcs.1, "nmethod scopes pcs", nmethod)?;
        let size = u64::from(sl.pc_desc_size.max(1));
        if pcs_len % size != 0 {
            return Err(Error::Malformed {
                what: "nmethod scopes pcs",
                offset: nmethod,
                reason: format!("{pcs_len} bytes is not a multiple of sizeof(PcDesc) {size}"),
            });
        }
        Ok(NmethodScopes {
            nmethod,
            code_begin,
            pcs_begin: pcs.0,
            pcs_count: pcs_len / size,
            data_begin: data.0,
            data_len: section(data.0, data.1, SD, nmethod)?,
            metadata_begin: meta.0,
            metadata_len: section(meta.0, meta.1, MD, nmethod)?,
            coding,
            pc_desc_size: sl.pc_desc_size.max(1),
            invocation_entry_bci: sl.invocation_entry_bci,
        })
    }

    fn parse_pc_desc(sl: &ScopesLayout, b: &[u8]) -> Result<PcDesc, Error> {
        Ok(PcDesc {
            pc_offset: sl.pc_desc_pc_offset.get(b, PD)?,
            scope_decode_offset: sl.pc_desc_scope_decode_offset.get(b, PD)?,
            obj_decode_offset: sl.pc_desc_obj_decode_offset.get(b, PD)?,
            flags: sl.pc_desc_flags.get(b, PD)?,
        })
    }

    /// The PcDesc at index `i` (< `pcs_count`).
    pub fn pc_desc(&self, mem: &dyn Memory, sl: &ScopesLayout, i: u64) -> Result<PcDesc, Error> {
        if i >= self.pcs_count {
            return Err(Error::Malformed {
                what: PD,
                offset: self.pcs_begin,
                reason: format!("index {i} past the {} PcDescs", self.pcs_count),
            });
        }
        let size = u64::from(self.pc_desc_size);
        let addr = at(self.pcs_begin, i * size, PD)?; // i * size < the section's length
        Self::parse_pc_desc(sl, &read_bytes(mem, addr, size as usize, PD)?)
    }

    /// Every PcDesc, sentinels included (at most [`SCOPES_MAX_PC_DESCS`]), read in chunks.
    pub fn pc_descs(&self, mem: &dyn Memory, sl: &ScopesLayout) -> Result<Vec<PcDesc>, Error> {
        if self.pcs_count > SCOPES_MAX_PC_DESCS as u64 {
            return Err(Error::too_large(
                "PcDescs of an nmethod",
                self.pcs_count,
                SCOPES_MAX_PC_DESCS as u64,
            ));
        }
        let size = self.pc_desc_size as usize;
        let per_read = (HOTSPOT_MAX_READ / size).max(1) as u64;
        let mut out = Vec::with_capacity(self.pcs_count as usize);
        let mut i = 0u64;
        while i < self.pcs_count {
            let n = per_read.min(self.pcs_count - i);
            let addr = at(self.pcs_begin, i * size as u64, PD)?;
            let buf = read_bytes(mem, addr, n as usize * size, PD)?;
            for chunk in buf.chunks_exact(size) {
                out.push(Self::parse_pc_desc(sl, chunk)?);
            }
            i += n;
        }
        Ok(out)
    }

    /// The PcDesc HotSpot's `find_pc_desc(pc, approximate)` finds: the first after the
    /// leading sentinel with a pc offset at or past `pc`'s, never the trailing sentinel (so a
    /// return address finds its call's PcDesc exactly, a pc between two PcDescs the next one).
    /// `None`: `pc` is past the last PcDesc, or the nmethod has none. A binary search: at
    /// most ~log2(count) reads, and it ends on any data, sorted or not.
    pub fn find_pc_desc(
        &self,
        mem: &dyn Memory,
        sl: &ScopesLayout,
        pc: u64,
    ) -> Result<Option<PcDesc>, Error> {
        let off = pc.checked_sub(self.code_begin).ok_or_else(|| Error::Malformed {
            what: NM,
            offset: self.nmethod,
            reason: format!("pc {pc:#x} before the code at {:#x}", self.code_begin),
        })?;
        let off = i64::try_from(off).unwrap_or(i64::MAX);
        if self.pcs_count < 3 {
            return Ok(None); // only the sentinels (or nothing): a native wrapper
        }
        let (mut lo, mut hi) = (1u64, self.pcs_count - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.pc_desc(mem, sl, mid)?.pc_offset < off {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo >= self.pcs_count - 1 {
            return Ok(None);
        }
        Ok(Some(self.pc_desc(mem, sl, lo)?))
    }

    /// The `Method*` in metadata slot `index` (1-based: 0 is null, refused here).
    fn method_at(&self, mem: &dyn Memory, index: u32, from: u64) -> Result<u64, Error> {
        let slot = u64::from(index).checked_sub(1).map(|i| i * 8);
        let slot = slot.filter(|s| s + 8 <= self.metadata_len).ok_or_else(|| Error::Malformed {
            what: MD,
            offset: self.metadata_begin,
            reason: format!(
                "method index {index} (scope at {from}) not in 1..={}",
                self.metadata_len / 8
            ),
        })?;
        let addr = at(self.metadata_begin, slot, MD)?;
        let m = read_u64(mem, addr, MD)?;
        if m == 0 {
            return Err(Error::Malformed {
                what: MD,
                offset: addr,
                reason: format!("null method in slot {index} (scope at {from})"),
            });
        }
        Ok(m)
    }

    /// The scope at `decode_offset` and its senders, innermost first; at most
    /// [`SCOPES_MAX_DEPTH`], every offset inside the scopes data and visited once.
    pub fn scopes(&self, mem: &dyn Memory, decode_offset: i64) -> Result<Vec<ScopeFrame>, Error> {
        let mut out: Vec<ScopeFrame> = Vec::new();
        let mut seen: Vec<u64> = Vec::new();
        let mut d = decode_offset;
        loop {
            let off =
                u64::try_from(d).ok().filter(|&o| o > 0 && o < self.data_len).ok_or_else(|| {
                    Error::Malformed {
                        what: SD,
                        offset: self.data_begin,
                        reason: format!("decode offset {d} not in 1..{}", self.data_len),
                    }
                })?;
            if seen.contains(&off) {
                return Err(Error::malformed(SD, off as usize, "sender chain loops back here"));
            }
            if out.len() >= SCOPES_MAX_DEPTH {
                return Err(Error::too_large(
                    "scopes of one pc",
                    out.len() as u64 + 1,
                    SCOPES_MAX_DEPTH as u64,
                ));
            }
            seen.push(off);
            let n = (self.data_len - off).min(SCOPE_HEADER_MAX as u64) as usize;
            let buf = read_bytes(mem, at(self.data_begin, off, SD)?, n, SD)?;
            let at_off = |e: Error| match e {
                Error::Truncated { what, offset, needed, len } => {
                    Error::Truncated { what, offset: offset + off, needed, len: len + off }
                }
                Error::Malformed { what, offset, reason } => {
                    Error::Malformed { what, offset: offset + off, reason }
                }
                e => e,
            };
            let (sender, p) = read_unsigned5(&buf, 0, self.coding).map_err(at_off)?;
            let (index, p) = read_unsigned5(&buf, p, self.coding).map_err(at_off)?;
            let (raw_bci, _) = read_unsigned5(&buf, p, self.coding).map_err(at_off)?;
            let bci = i64::from(raw_bci) + i64::from(self.invocation_entry_bci);
            let bci = i32::try_from(bci)
                .ok()
                .filter(|&b| {
                    (i64::from(self.invocation_entry_bci.min(-1))..=BCI_MAX).contains(&b.into())
                })
                .ok_or_else(|| {
                    Error::malformed(SD, off as usize, format!("bci {bci} out of range"))
                })?;
            out.push(ScopeFrame { method: self.method_at(mem, index, off)?, bci });
            if sender == 0 {
                return Ok(out); // serialized null: the outermost scope
            }
            d = i64::from(sender);
        }
    }
}

/// The methods executing at `pc` in the nmethod at `nmethod` (a `CodeBlob*`), innermost (the
/// code at `pc`) first, the nmethod's own method last. A return address finds its call's
/// PcDesc; any other pc the next PcDesc ([`NmethodScopes::find_pc_desc`]). Empty when `pc`
/// has no debug information (a native wrapper, a pc past the last PcDesc, a PcDesc without a
/// scope).
pub fn inlined(
    mem: &dyn Memory,
    sl: &ScopesLayout,
    nmethod: u64,
    pc: u64,
) -> Result<Vec<ScopeFrame>, Error> {
    let nm = NmethodScopes::read(mem, sl, nmethod)?;
    match nm.find_pc_desc(mem, sl, pc)? {
        Some(pd) if pd.scope_decode_offset != 0 => nm.scopes(mem, pd.scope_decode_offset),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::hotspot::vmstructs::Field;
    use crate::hotspot::SliceMem;

    const BASE: u64 = 0x10_0000;
    const OUTER: u64 = 0x7000_0001;
    const MID: u64 = 0x7000_0002;
    const INNER: u64 = 0x7000_0003;

    /// HotSpot's UNSIGNED5 writer, as the tests' reference.
    fn enc(v: u32, c: Coding) -> Vec<u8> {
        let x = if c == Coding::Unsigned5X1 { 1u64 } else { 0 };
        let l = 192 - x;
        let (mut v, mut out) = (u64::from(v), Vec::new());
        for i in 0..5 {
            if v < l || i == 4 {
                out.push((v + x) as u8);
                return out;
            }
            v -= l;
            out.push((x + l + v % 64) as u8);
            v >>= 6;
        }
        out
    }

    fn f(offset: u32, width: u8) -> IntField {
        IntField { offset, width, signed: true }
    }

    /// A JDK 17-shaped layout (sections in the blob) or a JDK 25-shaped one.
    fn layout(separate: bool) -> ScopesLayout {
        let sections = if separate {
            Sections::Separate {
                immutable_data: 0x40,
                immutable_data_size: f(0x48, 4),
                scopes_pcs_offset: f(0x4c, 4),
                scopes_data_offset: f(0x50, 4),
                mutable_data: 0x58,
                mutable_data_size: f(0x60, 4),
                relocation_size: IntField { offset: 0x64, width: 2, signed: false },
            }
        } else {
            Sections::InBlob {
                scopes_pcs_offset: f(0x40, 4),
                dependencies_offset: f(0x44, 4),
                metadata_offset: f(0x48, 4),
                scopes_data_begin: 0x50,
            }
        };
        ScopesLayout {
            code_start: if separate { CodeStart::Offset(0x20) } else { CodeStart::Address(0x20) },
            sections,
            pc_desc_size: 16,
            pc_desc_pc_offset: f(0, 4),
            pc_desc_scope_decode_offset: f(4, 4),
            pc_desc_obj_decode_offset: f(8, 4),
            pc_desc_flags: f(12, 4),
            invocation_entry_bci: -1,
            vm_major_version_addr: BASE + 8,
            coding: None,
        }
    }

    /// One scope: sender offset, metadata index, bci.
    struct Scope(u32, u32, i32);

    /// An image at BASE: the nmethod header, code at +0x100 (0x100 bytes), metadata
    /// [OUTER, MID, INNER], scopes data (a 0xFF filler, then `scopes`), PcDescs
    /// (sentinel, `pcs`, final sentinel). Returns the image and each scope's decode offset.
    struct Image {
        bytes: Vec<u8>,
        offsets: Vec<u32>,
    }

    fn put(b: &mut Vec<u8>, at: u64, v: &[u8]) {
        let at = at as usize;
        if b.len() < at + v.len() {
            b.resize(at + v.len(), 0);
        }
        b[at..at + v.len()].copy_from_slice(v);
    }

    fn data_of(scopes: &[Scope], c: Coding) -> (Vec<u8>, Vec<u32>) {
        let mut data = vec![0xFF];
        let mut offsets = Vec::new();
        for s in scopes {
            offsets.push(data.len() as u32);
            data.extend(enc(s.0, c));
            data.extend(enc(s.1, c));
            data.extend(enc((s.2 + 1) as u32, c));
        }
        (data, offsets)
    }

    fn image(separate: bool, c: Coding, scopes: &[Scope], pcs: &[(i32, i32)]) -> Image {
        let major: i32 = if c == Coding::Unsigned5X1 { 21 } else { 17 };
        let (data, offsets) = data_of(scopes, c);
        let mut pcd = Vec::new();
        for (pc, sd) in [(-1, 0)].iter().chain(pcs).chain(&[(0x101, 0)]) {
            for v in [*pc, *sd, 0, 0] {
                pcd.extend(v.to_le_bytes());
            }
        }
        let meta: Vec<u8> = [OUTER, MID, INNER].iter().flat_map(|m| m.to_le_bytes()).collect();
        let mut b = Vec::new();
        put(&mut b, 8, &major.to_le_bytes());
        put(&mut b, 0x100, &[0; 0x100]); // code
        let meta_at = 0x200u64;
        let data_at = if separate { 0x300u64 } else { meta_at + meta.len() as u64 };
        if separate {
            put(&mut b, 0x20, &0x100i32.to_le_bytes());
            // mutable data: 0x10 bytes of relocations, then the metadata
            let mdata = 0x1f0u64;
            put(&mut b, 0x58, &(BASE + mdata).to_le_bytes());
            put(&mut b, 0x60, &((meta_at - mdata) as i32 + meta.len() as i32).to_le_bytes());
            put(&mut b, 0x64, &((meta_at - mdata) as u16).to_le_bytes());
            // immutable data: PcDescs, then scopes data
            put(&mut b, 0x40, &(BASE + data_at).to_le_bytes());
            put(&mut b, 0x4c, &0i32.to_le_bytes());
            put(&mut b, 0x50, &(pcd.len() as i32).to_le_bytes());
            put(&mut b, 0x48, &((pcd.len() + data.len()) as i32).to_le_bytes());
            put(&mut b, data_at, &pcd);
            put(&mut b, data_at + pcd.len() as u64, &data);
        } else {
            put(&mut b, 0x20, &(BASE + 0x100).to_le_bytes());
            put(&mut b, 0x48, &(meta_at as i32).to_le_bytes());
            put(&mut b, 0x50, &(BASE + data_at).to_le_bytes());
            let pcs_at = data_at + data.len() as u64;
            put(&mut b, 0x40, &(pcs_at as i32).to_le_bytes());
            put(&mut b, 0x44, &((pcs_at + pcd.len() as u64) as i32).to_le_bytes());
            put(&mut b, data_at, &data);
            put(&mut b, pcs_at, &pcd);
        }
        put(&mut b, meta_at, &meta);
        b.resize(b.len() + 16, 0xEE); // slack past the sections
        Image { bytes: b, offsets }
    }

    /// outer@7 ← mid@3 ← inner@-1, the call in inner at pc offset 0x30, outer's own safepoint
    /// at 0x10.
    fn nested(separate: bool, c: Coding) -> Image {
        // offsets: outer 1, then mid, then inner (each 3 one-byte ints).
        let scopes = [Scope(0, 1, 7), Scope(1, 2, 3), Scope(4, 3, -1)];
        let (_, offs) = data_of(&scopes, c);
        image(separate, c, &scopes, &[(0x10, offs[0] as i32), (0x30, offs[2] as i32)])
    }

    fn frames(v: &[(u64, i32)]) -> Vec<ScopeFrame> {
        v.iter().map(|&(method, bci)| ScopeFrame { method, bci }).collect()
    }

    #[test]
    fn unsigned5_matches_the_writer_in_both_codings() {
        for c in [Coding::Unsigned5X0, Coding::Unsigned5X1] {
            for v in [0, 1, 190, 191, 192, 193, 255, 256, 4000, 12_479, 12_480, 65_535, 1 << 20]
                .into_iter()
                .chain([u32::MAX - 1, u32::MAX])
            {
                let b = enc(v, c);
                assert_eq!(read_unsigned5(&b, 0, c).unwrap(), (v, b.len()), "{v} {c:?} {b:?}");
                if c == Coding::Unsigned5X1 {
                    assert!(!b.contains(&0), "{v}: {b:?}");
                }
            }
        }
        assert_eq!(enc(0, Coding::Unsigned5X0), [0]);
        assert_eq!(enc(0, Coding::Unsigned5X1), [1]);
        assert_eq!(enc(191, Coding::Unsigned5X0), [191]);
        assert_eq!(enc(191, Coding::Unsigned5X1).len(), 2);
    }

    #[test]
    fn unsigned5_refuses_forged_bytes() {
        let x1 = Coding::Unsigned5X1;
        let e = read_unsigned5(&[0], 0, x1).unwrap_err().to_string();
        assert!(e.contains("excluded"), "{e}");
        let e = read_unsigned5(&[200, 0], 0, x1).unwrap_err().to_string();
        assert!(e.contains("excluded") && e.contains("offset 1"), "{e}");
        let e = read_unsigned5(&[200, 200], 0, x1).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        assert!(read_unsigned5(&[], 0, x1).is_err());
        assert!(read_unsigned5(&[5], usize::MAX, x1).is_err());
        // Five high bytes: past 32 bits in both codings.
        for c in [Coding::Unsigned5X0, x1] {
            let e = read_unsigned5(&[255; 5], 0, c).unwrap_err().to_string();
            assert!(e.contains("over 32 bits"), "{e}");
            // the fifth byte ends an int whatever it is
            assert_eq!(read_unsigned5(&[200, 200, 200, 200, 1, 9], 0, c).unwrap().1, 5);
        }
    }

    #[test]
    fn nested_scopes_in_both_section_layouts() {
        for (separate, c) in [(false, Coding::Unsigned5X0), (true, Coding::Unsigned5X1)] {
            let img = nested(separate, c);
            let mem = SliceMem { base: BASE, bytes: &img.bytes };
            let sl = layout(separate);
            let nm = NmethodScopes::read(&mem, &sl, BASE).unwrap();
            assert_eq!((nm.code_begin, nm.coding, nm.pcs_count), (BASE + 0x100, c, 4));
            assert_eq!((nm.metadata_begin, nm.metadata_len), (BASE + 0x200, 24));
            let code = BASE + 0x100;
            let deep = frames(&[(INNER, -1), (MID, 3), (OUTER, 7)]);
            // The return address exactly, and a pc before it (the next PcDesc).
            assert_eq!(inlined(&mem, &sl, BASE, code + 0x30).unwrap(), deep);
            assert_eq!(inlined(&mem, &sl, BASE, code + 0x11).unwrap(), deep);
            assert_eq!(inlined(&mem, &sl, BASE, code + 0x10).unwrap(), frames(&[(OUTER, 7)]));
            assert_eq!(inlined(&mem, &sl, BASE, code).unwrap(), frames(&[(OUTER, 7)]));
            // Past the last PcDesc: no scope; before the code: an error.
            assert_eq!(inlined(&mem, &sl, BASE, code + 0x31).unwrap(), vec![]);
            assert!(inlined(&mem, &sl, BASE, code - 1).is_err());
            let all = nm.pc_descs(&mem, &sl).unwrap();
            let offs: Vec<i64> = all.iter().map(|p| p.pc_offset).collect();
            assert_eq!(offs, [-1, 0x10, 0x30, 0x101]);
            // With the coding known up front, the version is not read.
            let mut sl2 = sl.clone();
            assert_eq!(sl2.read_coding(&mem).unwrap(), c);
            sl2.vm_major_version_addr = 0;
            assert_eq!(inlined(&mem, &sl2, BASE, code + 0x30).unwrap(), deep);
        }
    }

    #[test]
    fn many_pc_descs_multi_byte_offsets_and_the_search() {
        // 300 scopes, each outer-only: decode offsets past 191 take two bytes.
        for c in [Coding::Unsigned5X0, Coding::Unsigned5X1] {
            let scopes: Vec<Scope> = (0..300).map(|i| Scope(0, 1, i)).collect();
            let (_, offs) = data_of(&scopes, c);
            let pcs: Vec<(i32, i32)> =
                offs.iter().enumerate().map(|(i, &o)| (i as i32 * 2 + 1, o as i32)).collect();
            let img = image(false, c, &scopes, &pcs);
            let mem = SliceMem { base: BASE, bytes: &img.bytes };
            let sl = layout(false);
            for i in [0u64, 1, 95, 96, 150, 298, 299] {
                let got = inlined(&mem, &sl, BASE, BASE + 0x100 + i * 2 + 1).unwrap();
                assert_eq!(got, frames(&[(OUTER, i as i32)]), "{c:?} {i}");
                // an even pc finds the next odd one
                let got = inlined(&mem, &sl, BASE, BASE + 0x100 + i * 2).unwrap();
                assert_eq!(got, frames(&[(OUTER, i as i32)]), "{c:?} {i}");
            }
            assert_eq!(img.offsets.len(), 300);
        }
    }

    /// Rewrites the scopes data of a nested image (X0, in the blob) with `scopes`, the PcDesc
    /// at 0x30 pointing at scope `at`.
    fn forged(scopes: &[Scope], at: usize) -> (Vec<u8>, ScopesLayout) {
        let c = Coding::Unsigned5X0;
        let (_, offs) = data_of(scopes, c);
        let img = image(false, c, scopes, &[(0x30, offs[at] as i32)]);
        (img.bytes, layout(false))
    }

    fn err_at_0x30(bytes: &[u8], sl: &ScopesLayout) -> String {
        let mem = SliceMem { base: BASE, bytes };
        inlined(&mem, sl, BASE, BASE + 0x130).unwrap_err().to_string()
    }

    #[test]
    fn forged_sender_chains_are_refused() {
        // A scope that is its own sender, and a two-cycle.
        let (b, sl) = forged(&[Scope(1, 1, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("loops back"), "{}", err_at_0x30(&b, &sl));
        let (b, sl) = forged(&[Scope(4, 1, 0), Scope(1, 2, 0)], 1);
        assert!(err_at_0x30(&b, &sl).contains("loops back"));
        // A chain deeper than the bound: each scope's sender is the one before it.
        let mut scopes = vec![Scope(0, 1, 0)];
        for i in 1..=SCOPES_MAX_DEPTH {
            scopes.push(Scope(1 + 3 * (i as u32 - 1), 2, 0));
        }
        let (b, sl) = forged(&scopes, SCOPES_MAX_DEPTH);
        let e = err_at_0x30(&b, &sl);
        assert!(e.contains("scopes of one pc") && e.contains("over the limit"), "{e}");
        // One less is fine.
        let (b, sl) = forged(&scopes, SCOPES_MAX_DEPTH - 1);
        let mem = SliceMem { base: BASE, bytes: &b };
        assert_eq!(inlined(&mem, &sl, BASE, BASE + 0x130).unwrap().len(), SCOPES_MAX_DEPTH);
        // A sender past the data, a huge sender.
        let (b, sl) = forged(&[Scope(5000, 1, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("decode offset 5000"));
        let (b, sl) = forged(&[Scope(u32::MAX, 1, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("not in 1.."));
    }

    #[test]
    fn forged_methods_bcis_and_streams_are_refused() {
        let (b, sl) = forged(&[Scope(0, 4, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("method index 4"), "{}", err_at_0x30(&b, &sl));
        let (b, sl) = forged(&[Scope(0, 0, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("method index 0"));
        let (b, sl) = forged(&[Scope(0, u32::MAX, 0)], 0);
        assert!(err_at_0x30(&b, &sl).contains("not in 1..=3"));
        let (mut b, sl) = forged(&[Scope(0, 1, 0)], 0);
        put(&mut b, 0x200, &0u64.to_le_bytes());
        assert!(err_at_0x30(&b, &sl).contains("null method"));
        let (b, sl) = forged(&[Scope(0, 1, 70_000)], 0);
        assert!(err_at_0x30(&b, &sl).contains("bci 70000"));
        // The stream ends inside a scope (the last byte of the data is a "high" byte).
        let c = Coding::Unsigned5X0;
        let mut img = image(false, c, &[Scope(0, 1, 0)], &[(0x30, 1)]);
        put(&mut img.bytes, 0x218 + 3, &[250]);
        let e = err_at_0x30(&img.bytes, &layout(false));
        assert!(e.contains("truncated"), "{e}");
        // The PcDesc's decode offset past the data.
        let img = image(false, c, &[Scope(0, 1, 0)], &[(0x30, 900)]);
        assert!(err_at_0x30(&img.bytes, &layout(false)).contains("decode offset 900"));
        // An X1 stream read with an X0 version: wrong but bounded (an error or other values).
        let img = nested(true, Coding::Unsigned5X1);
        let mut sl = layout(true);
        sl.coding = Some(Coding::Unsigned5X0);
        let mem = SliceMem { base: BASE, bytes: &img.bytes };
        let _ = inlined(&mem, &sl, BASE, BASE + 0x130);
    }

    #[test]
    fn forged_sections_are_refused() {
        let c = Coding::Unsigned5X0;
        let base = nested(false, c).bytes;
        let sl = layout(false);
        let try_with = |at: u64, v: &[u8]| {
            let mut b = base.clone();
            put(&mut b, at, v);
            let mem = SliceMem { base: BASE, bytes: &b };
            NmethodScopes::read(&mem, &sl, BASE).and_then(|nm| {
                nm.find_pc_desc(&mem, &sl, BASE + 0x130)?;
                nm.scopes(&mem, 1)
            })
        };
        let e = try_with(0x40, &(-5i32).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
        // PcDescs ending before they begin, not a whole number of PcDescs, too large.
        let pcs = i32::from_le_bytes(base[0x40..0x44].try_into().unwrap());
        let e = try_with(0x44, &(pcs - 16).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("before it begins"), "{e}");
        let e = try_with(0x44, &(pcs + 17).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("not a multiple"), "{e}");
        let e = try_with(0x44, &i32::MAX.to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("over the limit"), "{e}");
        // Scopes data at an address far away: unreadable, reported.
        let e = try_with(0x50, &(u64::MAX - 8).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("before it begins") || e.contains("not mapped"), "{e}");
        // Code begin past the pc.
        let e = try_with(0x20, &(BASE + 0x1000).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("before the code"), "{e}");
        // A version that is not one.
        let e = try_with(8, &(-3i32).to_le_bytes()).unwrap_err().to_string();
        assert!(e.contains("major version -3"), "{e}");
        assert!(NmethodScopes::read(&SliceMem { base: BASE, bytes: &base }, &sl, 0).is_err());
        // Unsorted PcDescs: the search still ends.
        let scopes = [Scope(0, 1, 0)];
        let pcs: Vec<(i32, i32)> = (0..50).map(|i| ((i * 7919) % 97, 1)).collect();
        let img = image(false, c, &scopes, &pcs);
        let mem = SliceMem { base: BASE, bytes: &img.bytes };
        for pc in 0..0x110 {
            let _ = inlined(&mem, &sl, BASE, BASE + 0x100 + pc);
        }
    }

    fn fld(t: &str, n: &str, offset: u64, ty: &str) -> (String, String, Field) {
        let f = Field { offset, is_static: false, address: 0, type_string: ty.into() };
        (t.into(), n.into(), f)
    }

    fn tables(jdk25: bool, extra: Vec<(String, String, Field)>) -> VmStructs {
        let mut fields = vec![
            fld("PcDesc", "_pc_offset", 0, "int"),
            fld("PcDesc", "_scope_decode_offset", 4, "int"),
            fld("PcDesc", "_obj_decode_offset", 8, "int"),
            fld("PcDesc", "_flags", 12, "int"),
            (
                "Abstract_VM_Version".into(),
                "_vm_major_version".into(),
                Field { offset: 0, is_static: true, address: 0x1234, type_string: "int".into() },
            ),
        ];
        if jdk25 {
            fields.extend([
                fld("CodeBlob", "_code_offset", 36, "int"),
                fld("CodeBlob", "_mutable_data", 16, "address"),
                fld("CodeBlob", "_mutable_data_size", 48, "int"),
                fld("CodeBlob", "_relocation_size", 28, "int"),
                fld("nmethod", "_immutable_data", 96, "address"),
                fld("nmethod", "_immutable_data_size", 160, "int"),
                fld("nmethod", "_scopes_pcs_offset", 196, "int"),
                fld("nmethod", "_scopes_data_offset", 200, "int"),
                fld("nmethod", "_handler_table_offset", 194, "u2"),
            ]);
        } else {
            fields.extend([
                fld("CodeBlob", "_code_begin", 32, "address"),
                fld("CompiledMethod", "_scopes_data_begin", 120, "address"),
                fld("nmethod", "_scopes_pcs_offset", 268, "int"),
                fld("nmethod", "_dependencies_offset", 272, "int"),
                fld("nmethod", "_metadata_offset", 260, "int"),
            ]);
        }
        fields.extend(extra);
        let types = vec![("PcDesc".into(), 16), ("int".into(), 4), ("u2".into(), 2)];
        VmStructs::from_parts(fields, types, vec![("InvocationEntryBci".into(), -1)], vec![])
    }

    #[test]
    fn resolve_both_shapes_and_widths_from_type_names() {
        let sl = ScopesLayout::resolve(&tables(false, vec![])).unwrap();
        assert_eq!(sl.code_start, CodeStart::Address(32));
        assert_eq!(
            sl.sections,
            Sections::InBlob {
                scopes_pcs_offset: f(268, 4),
                dependencies_offset: f(272, 4),
                metadata_offset: f(260, 4),
                scopes_data_begin: 120,
            }
        );
        assert_eq!((sl.pc_desc_size, sl.vm_major_version_addr, sl.coding), (16, 0x1234, None));
        let sl = ScopesLayout::resolve(&tables(true, vec![])).unwrap();
        assert_eq!(sl.code_start, CodeStart::Offset(36));
        let Sections::Separate { immutable_data, scopes_data_offset, .. } = sl.sections else {
            panic!("{:?}", sl.sections)
        };
        assert_eq!((immutable_data, scopes_data_offset), (96, f(200, 4)));
        // A u2 offset is read as two unsigned bytes.
        let sl = ScopesLayout::resolve(&tables(
            true,
            vec![fld("nmethod", "_scopes_pcs_offset", 196, "u2")],
        ))
        .unwrap();
        let Sections::Separate { scopes_pcs_offset, .. } = sl.sections else { panic!() };
        assert_eq!(scopes_pcs_offset, IntField { offset: 196, width: 2, signed: false });
        assert_eq!(
            scopes_pcs_offset
                .get(&[0; 196].iter().chain(&[0xff, 0xff]).copied().collect::<Vec<_>>(), "t")
                .unwrap(),
            65535
        );
    }

    #[test]
    fn resolve_names_what_is_missing_or_odd() {
        let e = |vs: VmStructs| ScopesLayout::resolve(&vs).unwrap_err().to_string();
        let t = tables(false, vec![fld("nmethod", "_metadata_offset", 260, "float")]);
        let m = e(t);
        assert!(m.contains("nmethod::_metadata_offset has type `float`"), "{m}");
        let t = tables(false, vec![fld("PcDesc", "_flags", 14, "int")]);
        assert!(e(t).contains("ends past sizeof(PcDesc)"));
        let t = tables(false, vec![fld("nmethod", "_dependencies_offset", 1 << 20, "int")]);
        assert!(e(t).contains("over the limit"));
        let t = tables(true, vec![fld("nmethod", "_immutable_data", 96, "int")]);
        assert!(e(t).contains("not a pointer"));
        let mut t = tables(false, vec![]);
        t = VmStructs::from_parts(
            t.fields()
                .filter(|(ty, n, _)| (*ty, *n) != ("CompiledMethod", "_scopes_data_begin"))
                .map(|(a, b, c)| (a.to_string(), b.to_string(), c.clone()))
                .collect(),
            vec![("PcDesc".into(), 16)],
            vec![("InvocationEntryBci".into(), -1)],
            vec![],
        );
        assert!(e(t).contains("no field nmethod::_scopes_data_begin"));
        // sizeof(u2) exported as 4 contradicts the name
        let mut vs = tables(true, vec![fld("nmethod", "_scopes_pcs_offset", 196, "u2")]);
        vs = VmStructs::from_parts(
            vs.fields().map(|(a, b, c)| (a.to_string(), b.to_string(), c.clone())).collect(),
            vec![("PcDesc".into(), 16), ("u2".into(), 4)],
            vec![("InvocationEntryBci".into(), -1)],
            vec![],
        );
        assert!(e(vs).contains("sizeof(u2) is 4"));
    }
}
