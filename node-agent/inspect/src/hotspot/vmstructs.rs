//! HotSpot's exported self-description: the four tables `gHotSpotVMStructs`,
//! `gHotSpotVMTypes`, `gHotSpotVMIntConstants`, `gHotSpotVMLongConstants` (each symbol holds a
//! pointer to an array, ended by an entry whose name is null) and the exported `u64`s that
//! give each entry's stride and field offsets. This is what the serviceability agent reads;
//! it needs no debug symbols and no per-build offsets.
//!
//! A hostile JVM can forge all of it: strides and field offsets are bounded, entry counts,
//! name lengths and the total of the names are bounded ([`crate::limits`]).
use std::collections::HashMap;

use super::{read_bytes, read_cstr, read_u64, Memory};
use crate::bytes::Endian::Little as LE;
use crate::bytes::{u32_at, u64_at};
use crate::elf::Symbol;
use crate::limits::{
    VMSTRUCTS_MAX_ENTRIES, VMSTRUCTS_MAX_NAME, VMSTRUCTS_MAX_NAMES_BYTES, VMSTRUCTS_MAX_STRIDE,
};
use crate::Error;

/// The absolute runtime addresses (load bias applied) of libjvm's exported table symbols.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exports {
    pub structs: u64,
    pub struct_type_name_offset: u64,
    pub struct_field_name_offset: u64,
    pub struct_type_string_offset: u64,
    pub struct_is_static_offset: u64,
    pub struct_offset_offset: u64,
    pub struct_address_offset: u64,
    pub struct_stride: u64,
    pub types: u64,
    pub type_type_name_offset: u64,
    pub type_size_offset: u64,
    pub type_stride: u64,
    pub int_constants: u64,
    pub int_name_offset: u64,
    pub int_value_offset: u64,
    pub int_stride: u64,
    pub long_constants: u64,
    pub long_name_offset: u64,
    pub long_value_offset: u64,
    pub long_stride: u64,
}

/// The symbol names [`Exports`] needs, in its field order.
pub const SYMBOLS: [&str; 20] = [
    "gHotSpotVMStructs",
    "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryTypeStringOffset",
    "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",
    "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMStructEntryArrayStride",
    "gHotSpotVMTypes",
    "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySizeOffset",
    "gHotSpotVMTypeEntryArrayStride",
    "gHotSpotVMIntConstants",
    "gHotSpotVMIntConstantEntryNameOffset",
    "gHotSpotVMIntConstantEntryValueOffset",
    "gHotSpotVMIntConstantEntryArrayStride",
    "gHotSpotVMLongConstants",
    "gHotSpotVMLongConstantEntryNameOffset",
    "gHotSpotVMLongConstantEntryValueOffset",
    "gHotSpotVMLongConstantEntryArrayStride",
];

impl Exports {
    /// A filter for [`crate::elf::symbols_in_file`]: the names in [`SYMBOLS`].
    pub fn wanted(name: &str) -> bool {
        SYMBOLS.contains(&name)
    }

    /// From an open libjvm.so (its `.symtab`/`.dynsym`, read with
    /// [`crate::elf::symbols_in_file`]) and the load bias.
    pub fn from_file(f: &std::fs::File, bias: u64) -> Result<Exports, Error> {
        Exports::from_symbols(&crate::elf::symbols_in_file(f, &Exports::wanted)?, bias)
    }

    /// From libjvm's symbols (their `st_value`) and the load bias (where the file's vaddr 0
    /// is mapped). Error: the first symbol missing, or an address that overflows.
    pub fn from_symbols(syms: &[Symbol], bias: u64) -> Result<Exports, Error> {
        let mut a = [0u64; 20];
        for (slot, name) in a.iter_mut().zip(SYMBOLS) {
            let s = syms.iter().find(|s| s.name == name).ok_or_else(|| Error::Malformed {
                what: "libjvm.so vmStructs symbols",
                offset: 0,
                reason: format!("no symbol {name}"),
            })?;
            *slot = s.value.checked_add(bias).ok_or_else(|| Error::Malformed {
                what: "libjvm.so vmStructs symbols",
                offset: s.value,
                reason: format!("{name} plus the load bias {bias:#x} overflows"),
            })?;
        }
        let [structs, struct_type_name_offset, struct_field_name_offset, struct_type_string_offset, struct_is_static_offset, struct_offset_offset, struct_address_offset, struct_stride, types, type_type_name_offset, type_size_offset, type_stride, int_constants, int_name_offset, int_value_offset, int_stride, long_constants, long_name_offset, long_value_offset, long_stride] =
            a;
        Ok(Exports {
            structs,
            struct_type_name_offset,
            struct_field_name_offset,
            struct_type_string_offset,
            struct_is_static_offset,
            struct_offset_offset,
            struct_address_offset,
            struct_stride,
            types,
            type_type_name_offset,
            type_size_offset,
            type_stride,
            int_constants,
            int_name_offset,
            int_value_offset,
            int_stride,
            long_constants,
            long_name_offset,
            long_value_offset,
            long_stride,
        })
    }
}

/// One `gHotSpotVMStructs` entry: a field's offset in its type, or a static's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: u64,
    pub is_static: bool,
    /// The static's address (0 for a non-static field).
    pub address: u64,
    /// The C++ type as HotSpot spells it (`"address"`, `"int"`); empty when not given.
    pub type_string: String,
}

/// The four tables, keyed by name.
#[derive(Clone, Debug, Default)]
pub struct VmStructs {
    fields: HashMap<(String, String), Field>,
    types: HashMap<String, u64>,
    ints: HashMap<String, i32>,
    longs: HashMap<String, i64>,
}

impl VmStructs {
    /// The field `name` of type `ty` (e.g. `("JavaThread", "_anchor")`).
    pub fn field(&self, ty: &str, name: &str) -> Option<&Field> {
        self.fields.get(&(ty.to_string(), name.to_string()))
    }
    /// `sizeof(name)` as the JVM exports it.
    pub fn type_size(&self, name: &str) -> Option<u64> {
        self.types.get(name).copied()
    }
    pub fn int_constant(&self, name: &str) -> Option<i32> {
        self.ints.get(name).copied()
    }
    pub fn long_constant(&self, name: &str) -> Option<i64> {
        self.longs.get(name).copied()
    }
    /// (fields, types, int constants, long constants) counts.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (self.fields.len(), self.types.len(), self.ints.len(), self.longs.len())
    }
    /// Every field, for diagnostics.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str, &Field)> {
        self.fields.iter().map(|((t, n), f)| (t.as_str(), n.as_str(), f))
    }
    /// Builds tables by hand (tests, fuzzing).
    pub fn from_parts(
        fields: Vec<(String, String, Field)>,
        types: Vec<(String, u64)>,
        ints: Vec<(String, i32)>,
        longs: Vec<(String, i64)>,
    ) -> VmStructs {
        VmStructs {
            fields: fields.into_iter().map(|(t, n, f)| ((t, n), f)).collect(),
            types: types.into_iter().collect(),
            ints: ints.into_iter().collect(),
            longs: longs.into_iter().collect(),
        }
    }
}

/// Names read so far: the string at an address is read once (entries share their type
/// names), and the total is bounded.
struct Names {
    seen: HashMap<u64, String>,
    bytes: usize,
}

impl Names {
    fn get(&mut self, mem: &dyn Memory, addr: u64, what: &'static str) -> Result<String, Error> {
        if let Some(s) = self.seen.get(&addr) {
            return Ok(s.clone());
        }
        let s = read_cstr(mem, addr, VMSTRUCTS_MAX_NAME, what)?;
        self.bytes = self.bytes.saturating_add(s.len());
        if self.bytes > VMSTRUCTS_MAX_NAMES_BYTES {
            return Err(Error::too_large(
                "vmStructs names in all",
                self.bytes as u64,
                VMSTRUCTS_MAX_NAMES_BYTES as u64,
            ));
        }
        self.seen.insert(addr, s.clone());
        Ok(s)
    }
}

/// A table's layout: where its array is, its stride, and the offset of each field read
/// (with the field's width), all checked to lie inside one entry.
struct Table {
    what: &'static str,
    base: u64,
    stride: u64,
}

impl Table {
    fn new(
        mem: &dyn Memory,
        what: &'static str,
        array_sym: u64,
        stride_sym: u64,
    ) -> Result<Table, Error> {
        let base = read_u64(mem, array_sym, what)?;
        let stride = read_u64(mem, stride_sym, what)?;
        if !(8..=VMSTRUCTS_MAX_STRIDE).contains(&stride) {
            return Err(Error::Malformed {
                what,
                offset: stride_sym,
                reason: format!("entry stride {stride} not in 8..={VMSTRUCTS_MAX_STRIDE}"),
            });
        }
        if base == 0 {
            return Err(Error::Malformed { what, offset: array_sym, reason: "null table".into() });
        }
        Ok(Table { what, base, stride })
    }

    /// The offset held by `sym`, checked: `width` bytes at it fit in an entry.
    fn offset(&self, mem: &dyn Memory, sym: u64, width: u64) -> Result<usize, Error> {
        let off = read_u64(mem, sym, self.what)?;
        match off.checked_add(width) {
            Some(end) if end <= self.stride => Ok(off as usize), // < 256
            _ => Err(Error::Malformed {
                what: self.what,
                offset: sym,
                reason: format!(
                    "field offset {off} (+{width}) outside the entry of {}",
                    self.stride
                ),
            }),
        }
    }

    /// Calls `f` on each entry's bytes until `name_at` holds a null pointer; at most
    /// [`VMSTRUCTS_MAX_ENTRIES`] entries.
    fn each(
        &self,
        mem: &dyn Memory,
        name_at: usize,
        mut f: impl FnMut(&[u8], u64) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for i in 0..=VMSTRUCTS_MAX_ENTRIES as u64 {
            let at = i.checked_mul(self.stride).and_then(|o| self.base.checked_add(o)).ok_or_else(
                || Error::Malformed {
                    what: self.what,
                    offset: self.base,
                    reason: format!("entry {i} overflows the address space"),
                },
            )?;
            let e = read_bytes(mem, at, self.stride as usize, self.what)?;
            if u64_at(&e, name_at, LE, self.what)? == 0 {
                return Ok(());
            }
            f(&e, at)?;
        }
        Err(Error::too_large(
            self.what,
            VMSTRUCTS_MAX_ENTRIES as u64 + 1,
            VMSTRUCTS_MAX_ENTRIES as u64,
        ))
    }
}

/// Reads the four tables from the JVM's memory.
pub fn read(mem: &dyn Memory, ex: &Exports) -> Result<VmStructs, Error> {
    let mut names = Names { seen: HashMap::new(), bytes: 0 };
    let mut out = VmStructs::default();

    let t = Table::new(mem, "gHotSpotVMStructs", ex.structs, ex.struct_stride)?;
    let (tn, fname, ts, st, of, ad) = (
        t.offset(mem, ex.struct_type_name_offset, 8)?,
        t.offset(mem, ex.struct_field_name_offset, 8)?,
        t.offset(mem, ex.struct_type_string_offset, 8)?,
        t.offset(mem, ex.struct_is_static_offset, 4)?,
        t.offset(mem, ex.struct_offset_offset, 8)?,
        t.offset(mem, ex.struct_address_offset, 8)?,
    );
    t.each(mem, tn, |e, _| {
        const W: &str = "gHotSpotVMStructs entry";
        let ty = names.get(mem, u64_at(e, tn, LE, W)?, "vmStructs type name")?;
        let fp = u64_at(e, fname, LE, W)?;
        if fp == 0 {
            return Ok(()); // HotSpot never writes one; nothing to key it by
        }
        let name = names.get(mem, fp, "vmStructs field name")?;
        let tsp = u64_at(e, ts, LE, W)?;
        let type_string =
            if tsp == 0 { String::new() } else { names.get(mem, tsp, "vmStructs type string")? };
        let is_static = u32_at(e, st, LE, W)? != 0;
        let field = Field {
            offset: u64_at(e, of, LE, W)?,
            is_static,
            address: if is_static { u64_at(e, ad, LE, W)? } else { 0 },
            type_string,
        };
        out.fields.entry((ty, name)).or_insert(field);
        Ok(())
    })?;

    let t = Table::new(mem, "gHotSpotVMTypes", ex.types, ex.type_stride)?;
    let (tn, sz) =
        (t.offset(mem, ex.type_type_name_offset, 8)?, t.offset(mem, ex.type_size_offset, 8)?);
    t.each(mem, tn, |e, _| {
        const W: &str = "gHotSpotVMTypes entry";
        let ty = names.get(mem, u64_at(e, tn, LE, W)?, "vmTypes type name")?;
        out.types.entry(ty).or_insert(u64_at(e, sz, LE, W)?);
        Ok(())
    })?;

    let t = Table::new(mem, "gHotSpotVMIntConstants", ex.int_constants, ex.int_stride)?;
    let (n, v) = (t.offset(mem, ex.int_name_offset, 8)?, t.offset(mem, ex.int_value_offset, 4)?);
    t.each(mem, n, |e, _| {
        const W: &str = "gHotSpotVMIntConstants entry";
        let name = names.get(mem, u64_at(e, n, LE, W)?, "vmIntConstants name")?;
        out.ints.entry(name).or_insert(u32_at(e, v, LE, W)? as i32);
        Ok(())
    })?;

    let t = Table::new(mem, "gHotSpotVMLongConstants", ex.long_constants, ex.long_stride)?;
    let (n, v) = (t.offset(mem, ex.long_name_offset, 8)?, t.offset(mem, ex.long_value_offset, 8)?);
    t.each(mem, n, |e, _| {
        const W: &str = "gHotSpotVMLongConstants entry";
        let name = names.get(mem, u64_at(e, n, LE, W)?, "vmLongConstants name")?;
        out.longs.entry(name).or_insert(u64_at(e, v, LE, W)? as i64);
        Ok(())
    })?;
    Ok(out)
}
