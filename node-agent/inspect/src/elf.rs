//! A container's `libjvm.so` (untrusted ELF): ELF64 little-endian only (x86-64, aarch64).
//! Reads section headers, `.symtab` and `.dynsym`, and maps virtual addresses to file
//! offsets through PT_LOAD segments. (USDT notes are libbpf's to read: it attaches the
//! probes.)
//! Every offset/size is checked against the input with checked arithmetic.
//!
//! The input is a byte slice, or an open file ([`symbols_in_file`], [`read_vaddr`]) of which
//! only the headers and the sections asked for are read (`pread`): a libjvm.so is 24–30 MB,
//! its `.symtab` and `.strtab` 4–5 MB, so the agent never holds the whole file.
use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::bytes::{cstr_at, slice, to_usize, u16_at, u32_at, u64_at, u8_at, Endian};
use crate::limits::*;
use crate::Error;

const LE: Endian = Endian::Little;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHT_NOBITS: u32 = 8;
const SHT_NOTE: u32 = 7;
const PT_LOAD: u32 = 1;
const SHDR_LEN: usize = 64;
const PHDR_LEN: usize = 56;
const SYM_LEN: usize = 24;

/// A symbol from `.symtab` or `.dynsym` (defined ones only: `st_shndx != SHN_UNDEF`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub value: u64,
    pub size: u64,
    pub from_symtab: bool,
    /// `STT_*` (2 = function, 1 = object).
    pub kind: u8,
}

#[derive(Clone, Copy, Debug)]
struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

/// Where the bytes come from: `len` and checked `bytes(offset, len)`.
trait Source {
    fn len(&self) -> u64;
    fn bytes(&self, off: u64, len: u64, what: &'static str) -> Result<Cow<'_, [u8]>, Error>;
}

/// The whole file in memory.
struct Bytes<'a>(&'a [u8]);

impl Source for Bytes<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn bytes(&self, off: u64, len: u64, what: &'static str) -> Result<Cow<'_, [u8]>, Error> {
        let off = to_usize(off, what, 0)?;
        let len = to_usize(len, what, off)?;
        slice(self.0, off, len, what).map(Cow::Borrowed)
    }
}

/// An open file, read with `pread` where asked (the bounds are checked before allocating).
struct FileSource<'f> {
    f: &'f File,
    len: u64,
}

impl<'f> FileSource<'f> {
    fn new(f: &'f File) -> Result<Self, Error> {
        let len = f.metadata().map_err(|e| io_error("stat", e))?.len();
        Ok(FileSource { f, len })
    }
}

fn io_error(op: &'static str, source: std::io::Error) -> Error {
    Error::Io { path: "ELF file".into(), op, source }
}

impl Source for FileSource<'_> {
    fn len(&self) -> u64 {
        self.len
    }
    fn bytes(&self, off: u64, len: u64, what: &'static str) -> Result<Cow<'_, [u8]>, Error> {
        if off.checked_add(len).map_or(true, |end| end > self.len) {
            return Err(Error::Truncated { what, offset: off, needed: len, len: self.len });
        }
        let mut v = vec![0u8; to_usize(len, what, 0)?]; // len <= file size <= ELF_MAX_BYTES
        self.f.read_exact_at(&mut v, off).map_err(|e| io_error("read", e))?;
        Ok(Cow::Owned(v))
    }
}

struct Elf<'a> {
    src: &'a dyn Source,
    sections: Vec<Section>,
    segments: Vec<Segment>,
}

impl<'a> Elf<'a> {
    fn parse(src: &'a dyn Source) -> Result<Elf<'a>, Error> {
        const W: &str = "ELF header";
        if src.len() > ELF_MAX_BYTES {
            return Err(Error::too_large("ELF file", src.len(), ELF_MAX_BYTES));
        }
        let ident = src.bytes(0, 64, W)?;
        let b: &[u8] = &ident; // every header field lies in the first 64 bytes
        if b.get(..4) != Some(&b"\x7fELF"[..]) {
            return Err(Error::malformed(W, 0, "not an ELF file (bad magic)"));
        }
        if u8_at(b, 4, W)? != 2 {
            return Err(Error::malformed(W, 4, "not ELF64 (only 64-bit libjvm.so is supported)"));
        }
        if u8_at(b, 5, W)? != 1 {
            return Err(Error::malformed(
                W,
                5,
                "not little-endian (only little-endian ELF is supported)",
            ));
        }
        let phoff = to_usize(u64_at(b, 0x20, LE, W)?, W, 0x20)?;
        let shoff = to_usize(u64_at(b, 0x28, LE, W)?, W, 0x28)?;
        let phentsize = u16_at(b, 0x36, LE, W)? as usize;
        let mut phnum = u16_at(b, 0x38, LE, W)? as usize;
        let shentsize = u16_at(b, 0x3a, LE, W)? as usize;
        let mut shnum = u16_at(b, 0x3c, LE, W)? as usize;
        let mut shstrndx = u16_at(b, 0x3e, LE, W)? as usize;
        if shoff != 0 && shentsize != SHDR_LEN {
            return Err(Error::malformed(
                W,
                0x3a,
                format!("section header size {shentsize}, expected {SHDR_LEN}"),
            ));
        }
        // Extended numbering: the real counts live in section header 0.
        if shoff != 0 && (shnum == 0 || shstrndx == 0xffff) {
            let s0 = src.bytes(shoff as u64, SHDR_LEN as u64, "section header 0")?;
            let s0: &[u8] = &s0;
            if shnum == 0 {
                shnum = to_usize(u64_at(s0, 32, LE, W)?, W, shoff)?;
            }
            if shstrndx == 0xffff {
                shstrndx = u32_at(s0, 40, LE, W)? as usize;
            }
        }
        if shoff == 0 {
            shnum = 0;
        }
        if shnum > ELF_MAX_SECTIONS {
            return Err(Error::too_large(
                "ELF section count",
                shnum as u64,
                ELF_MAX_SECTIONS as u64,
            ));
        }
        let table_len = shnum
            .checked_mul(SHDR_LEN)
            .ok_or_else(|| Error::malformed(W, 0x3c, "section count overflows"))?;
        let table = src.bytes(shoff as u64, table_len as u64, "section header table")?;
        let table: &[u8] = &table;
        if shnum > 0 && shstrndx >= shnum {
            return Err(Error::malformed(
                W,
                0x3e,
                format!("section name table index {shstrndx} out of range ({shnum} sections)"),
            ));
        }
        let mut sections = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let o = i * SHDR_LEN; // i < shnum, table_len did not overflow
            let w = "section header";
            sections.push(Section {
                kind: u32_at(table, o + 4, LE, w)?,
                offset: u64_at(table, o + 24, LE, w)?,
                size: u64_at(table, o + 32, LE, w)?,
                link: u32_at(table, o + 40, LE, w)?,
                entsize: u64_at(table, o + 56, LE, w)?,
            });
        }
        // Program headers are optional for what we do (only file offsets need them).
        if phoff == 0 || phentsize != PHDR_LEN {
            phnum = 0;
        }
        let mut segments = Vec::new();
        if phnum > 0 {
            let ptab =
                src.bytes(phoff as u64, (phnum * PHDR_LEN) as u64, "program header table")?; // phnum <= 65535
            let ptab: &[u8] = &ptab;
            for i in 0..phnum {
                let o = i * PHDR_LEN;
                let w = "program header";
                if u32_at(ptab, o, LE, w)? == PT_LOAD {
                    segments.push(Segment {
                        offset: u64_at(ptab, o + 8, LE, w)?,
                        vaddr: u64_at(ptab, o + 16, LE, w)?,
                        filesz: u64_at(ptab, o + 32, LE, w)?,
                    });
                }
            }
        }
        Ok(Elf { src, sections, segments })
    }

    /// The bytes of a section (empty for SHT_NOBITS), checked against the file.
    fn data(&self, s: &Section, what: &'static str) -> Result<Cow<'a, [u8]>, Error> {
        if s.kind == SHT_NOBITS {
            return Ok(Cow::Borrowed(&[]));
        }
        let off = to_usize(s.offset, what, 0)?;
        to_usize(s.size, what, off)?;
        self.src.bytes(s.offset, s.size, what)
    }

    fn file_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments.iter().find_map(|seg| {
            let rel = vaddr.checked_sub(seg.vaddr)?;
            (rel < seg.filesz).then(|| seg.offset.checked_add(rel)).flatten()
        })
    }
}

/// Defined symbols whose name passes `filter`: all matches of `.symtab`, then those of
/// `.dynsym` whose name `.symtab` did not have (a stripped library has only `.dynsym`).
pub fn symbols(b: &[u8], filter: &dyn Fn(&str) -> bool) -> Result<Vec<Symbol>, Error> {
    symbols_of(&Elf::parse(&Bytes(b))?, filter)
}

/// [`symbols`] of an open file, reading only the ELF headers, the symbol tables and their
/// string tables (not the code): what the agent holds while resolving a libjvm.so.
pub fn symbols_in_file(f: &File, filter: &dyn Fn(&str) -> bool) -> Result<Vec<Symbol>, Error> {
    let src = FileSource::new(f)?;
    symbols_of(&Elf::parse(&src)?, filter)
}

/// The file offsets of the defined symbols whose name passes `filter` (their value through the
/// PT_LOAD segments, where a uprobe goes), reading only the headers and the symbol tables; a
/// symbol no segment covers is left out.
pub fn symbol_offsets_in_file(
    f: &File,
    filter: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, u64)>, Error> {
    let src = FileSource::new(f)?;
    let elf = Elf::parse(&src)?;
    let syms = symbols_of(&elf, filter)?;
    Ok(syms.into_iter().filter_map(|s| Some((s.name, elf.file_offset(s.value)?))).collect())
}

fn symbols_of(elf: &Elf<'_>, filter: &dyn Fn(&str) -> bool) -> Result<Vec<Symbol>, Error> {
    let mut out: Vec<Symbol> = Vec::new();
    // A `.dynsym` name is dropped when `.symtab` has it; `filter` depends on the name only,
    // so comparing with the `.symtab` names it kept is the same and holds far fewer names.
    let mut kept = std::collections::HashSet::new();
    for (kind, from_symtab) in [(SHT_SYMTAB, true), (SHT_DYNSYM, false)] {
        if !from_symtab {
            kept = out.iter().map(|s| s.name.clone()).collect();
        }
        for s in elf.sections.iter().filter(|s| s.kind == kind) {
            if s.entsize != SYM_LEN as u64 {
                return Err(Error::malformed(
                    "symbol table",
                    s.offset as usize,
                    format!("entry size {}, expected {SYM_LEN}", s.entsize),
                ));
            }
            // Counts and sizes from the headers, checked before either table is read.
            let strs = table_sizes(elf, s)?;
            let data = elf.data(s, "symbol table")?;
            let data: &[u8] = &data;
            let strs = elf.data(strs, "symbol string table")?;
            let strs: &[u8] = &strs;
            let n = data.len() / SYM_LEN;
            let mut local = Vec::new();
            for i in 1..n {
                let o = i * SYM_LEN;
                let w = "symbol";
                let st_name = u32_at(data, o, LE, w)? as usize;
                let info = u8_at(data, o + 4, w)?;
                let shndx = u16_at(data, o + 6, LE, w)?;
                if st_name == 0 || shndx == 0 {
                    continue; // unnamed or undefined (imported)
                }
                let name = cstr_at(strs, st_name, ELF_MAX_NAME, "symbol name")?;
                if !filter(name) || (!from_symtab && kept.contains(name)) {
                    continue;
                }
                local.push(Symbol {
                    name: name.to_string(),
                    value: u64_at(data, o + 8, LE, w)?,
                    size: u64_at(data, o + 16, LE, w)?,
                    from_symtab,
                    kind: info & 0xf,
                });
            }
            out.extend(local);
        }
    }
    Ok(out)
}

/// The string table of symbol table `s`, once the symbol count and the string table's size
/// (from their section headers) are within the bounds.
fn table_sizes<'e>(elf: &'e Elf<'_>, s: &Section) -> Result<&'e Section, Error> {
    let n = s.size / SYM_LEN as u64;
    if n > ELF_MAX_SYMBOLS as u64 {
        return Err(Error::too_large("ELF symbol count", n, ELF_MAX_SYMBOLS as u64));
    }
    let strs = elf.sections.get(s.link as usize).ok_or_else(|| {
        Error::malformed(
            "symbol table",
            s.offset as usize,
            format!("string table index {} out of range", s.link),
        )
    })?;
    if strs.kind != SHT_NOBITS && strs.size > ELF_MAX_STRTAB {
        return Err(Error::too_large("ELF symbol string table", strs.size, ELF_MAX_STRTAB));
    }
    Ok(strs)
}

/// Checks an open file against every bound before anything else reads it (libbpf reads the
/// USDT notes and resolves uprobe symbols itself): ELF64 LE, the size, the section and
/// segment tables inside the file, each symbol table's count and string table's size, each
/// note section's size, and every section's data inside the file. Reads the headers only.
pub fn check_file(f: &File) -> Result<(), Error> {
    let src = FileSource::new(f)?;
    let elf = Elf::parse(&src)?;
    for s in &elf.sections {
        if s.kind != SHT_NOBITS && s.offset.checked_add(s.size).map_or(true, |end| end > src.len) {
            return Err(Error::Truncated {
                what: "section data",
                offset: s.offset,
                needed: s.size,
                len: src.len,
            });
        }
        match s.kind {
            SHT_SYMTAB | SHT_DYNSYM => {
                table_sizes(&elf, s)?;
            }
            SHT_NOTE if s.size > ELF_MAX_NOTES => {
                return Err(Error::too_large("ELF note section", s.size, ELF_MAX_NOTES))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The file offset of a virtual address, through PT_LOAD segments (what [`read_vaddr`] reads
/// on an open file; the tests and the fuzz target check one against the other).
pub fn file_offset(b: &[u8], vaddr: u64) -> Result<Option<u64>, Error> {
    Ok(Elf::parse(&Bytes(b))?.file_offset(vaddr))
}

/// `len` bytes of an open ELF file at virtual address `vaddr` (through PT_LOAD segments),
/// `None` when no segment covers the address; reads the headers and those bytes only.
pub fn read_vaddr(f: &File, vaddr: u64, len: u64) -> Result<Option<Vec<u8>>, Error> {
    let src = FileSource::new(f)?;
    let Some(off) = Elf::parse(&src)?.file_offset(vaddr) else { return Ok(None) };
    Ok(Some(src.bytes(off, len, "code at a virtual address")?.into_owned()))
}

const SHT_RELA: u32 = 4;
const RELA_LEN: usize = 24;
const STT_TLS: u8 = 6;
const R_X86_64_DTPMOD64: u64 = 16;
/// HotSpot's current-thread TLS variable (`Thread::_thr_current`).
pub const THR_CURRENT: &str = "_ZN6Thread12_thr_currentE";

/// What a reader of another process needs to find libjvm's `Thread::_thr_current` (x86-64,
/// glibc's dynamic TLS): `&_thr_current = dtv[module].val + offset`, with the module id the
/// u64 the dynamic linker wrote at `dtpmod_got` (a vaddr: add the load bias).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTls {
    /// The symbol's `st_value`: its offset in libjvm's TLS block.
    pub offset: u64,
    /// The GOT slot of the first `R_X86_64_DTPMOD64` relocation (libjvm's all name its own
    /// module).
    pub dtpmod_got: u64,
}

/// [`ThreadTls`] of a libjvm in memory; `None` when the symbol (STT_TLS, from `.symtab` or
/// `.dynsym`) or a DTPMOD64 relocation is missing.
pub fn thread_tls(b: &[u8]) -> Result<Option<ThreadTls>, Error> {
    thread_tls_of(&Elf::parse(&Bytes(b))?)
}

/// [`thread_tls`] of an open file, reading the headers, the symbol tables and the RELA
/// sections only.
pub fn thread_tls_in_file(f: &File) -> Result<Option<ThreadTls>, Error> {
    let src = FileSource::new(f)?;
    thread_tls_of(&Elf::parse(&src)?)
}

fn thread_tls_of(elf: &Elf<'_>) -> Result<Option<ThreadTls>, Error> {
    let syms = symbols_of(elf, &|n| n == THR_CURRENT)?;
    let Some(sym) = syms.iter().find(|s| s.kind == STT_TLS) else { return Ok(None) };
    for s in elf.sections.iter().filter(|s| s.kind == SHT_RELA) {
        const W: &str = "relocation section";
        if s.entsize != RELA_LEN as u64 {
            return Err(Error::malformed(
                W,
                s.offset as usize,
                format!("entry size {}, expected {RELA_LEN}", s.entsize),
            ));
        }
        let n = s.size / RELA_LEN as u64;
        if n > ELF_MAX_RELOCS as u64 {
            return Err(Error::too_large("ELF relocation count", n, ELF_MAX_RELOCS as u64));
        }
        let data = elf.data(s, W)?;
        let data: &[u8] = &data;
        for i in 0..data.len() / RELA_LEN {
            let o = i * RELA_LEN;
            if u64_at(data, o + 8, LE, W)? & 0xffff_ffff == R_X86_64_DTPMOD64 {
                let got = u64_at(data, o, LE, W)?;
                return Ok(Some(ThreadTls { offset: sym.value, dtpmod_got: got }));
            }
        }
    }
    Ok(None)
}
