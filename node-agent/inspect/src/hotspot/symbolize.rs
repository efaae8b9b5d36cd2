//! Names for what a Java stack walk finds: a `Method*` (class and method name, as JFR prints
//! them), a bytecode pointer (its bci), and a code address (its CodeBlob, through the code
//! heap's segment map, the lookup the eBPF walker also does).
use super::layout::{CodeStart, ProcessStacks, StackLayout};
use super::{read_bytes, read_cstr, read_i32, read_u16, read_u64, read_u8, Memory};
use crate::limits::{CODE_BLOB_NAME_MAX, JAVA_NAME_MAX, LINE_TABLE_MAX_BYTES, SEGMAP_MAX_HOPS};
use crate::Error;

/// A Java method: `class` dotted (`java.lang.Thread`), `name` as in the class file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JavaMethod {
    pub class: String,
    pub name: String,
}

/// What a CodeBlob is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobKind {
    /// Compiled Java code (`"nmethod"`).
    Nmethod { method: u64, compile_id: u32 },
    /// A native method's wrapper (`"native nmethod"`).
    NativeWrapper { method: u64 },
    /// Anything else: stubs, adapters, the interpreter, buffers (its name).
    Other { name: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBlobInfo {
    pub kind: BlobKind,
    pub code_begin: u64,
    /// The frame's size in words (`CodeBlob::_frame_size`).
    pub frame_size_words: u32,
}

fn at(base: u64, off: u32, what: &'static str) -> Result<u64, Error> {
    base.checked_add(u64::from(off)).ok_or_else(|| Error::Malformed {
        what,
        offset: base,
        reason: format!("address plus {off} overflows"),
    })
}

fn nonnull(p: u64, what: &'static str, from: u64) -> Result<u64, Error> {
    if p == 0 {
        return Err(Error::Malformed { what, offset: from, reason: "null pointer".into() });
    }
    Ok(p)
}

/// The text of a `Symbol*`, at most [`JAVA_NAME_MAX`] bytes (a longer one is cut and ends in
/// `…`); bytes that are not UTF-8 (HotSpot keeps modified UTF-8) are replaced.
pub fn symbol_text(mem: &dyn Memory, l: &StackLayout, sym: u64) -> Result<String, Error> {
    const S: &str = "Symbol";
    let sym = nonnull(sym, S, 0)?;
    let len = usize::from(read_u16(mem, at(sym, l.symbol_length, S)?, S)?);
    let take = len.min(JAVA_NAME_MAX);
    let body = read_bytes(mem, at(sym, l.symbol_body, S)?, take, S)?;
    let mut s = String::from_utf8_lossy(&body).into_owned();
    if take < len {
        s.push('…');
    }
    Ok(s)
}

/// A class name as JFR prints it: `/` → `.`, and a hidden class's per-instance suffix
/// (`+0x…` in the Symbol of JDK 15+, `/0x…` for JDK 11's anonymous classes) removed.
pub fn external_class_name(internal: &str) -> String {
    let base = match internal.rfind(['+', '/']) {
        Some(i)
            if internal.get(i + 1..).is_some_and(|t| {
                t.len() > 2
                    && t.starts_with("0x")
                    && t.bytes().skip(2).all(|c| c.is_ascii_hexdigit())
            }) =>
        {
            internal.get(..i).unwrap_or(internal)
        }
        _ => internal,
    };
    base.replace('/', ".")
}

/// Class and method name of a `Method*`: Method → ConstMethod → ConstantPool → its holder
/// Klass → name; the method's name is the constant pool slot at `_name_index`.
pub fn method_name(mem: &dyn Memory, l: &StackLayout, method: u64) -> Result<JavaMethod, Error> {
    const M: &str = "Method";
    const CM: &str = "ConstMethod";
    const CP: &str = "ConstantPool";
    let method = nonnull(method, M, 0)?;
    let cm = nonnull(read_u64(mem, at(method, l.method_const_method, M)?, M)?, CM, method)?;
    let cp = nonnull(read_u64(mem, at(cm, l.const_method_constants, CM)?, CM)?, CP, cm)?;
    let holder =
        nonnull(read_u64(mem, at(cp, l.constant_pool_pool_holder, CP)?, CP)?, "Klass", cp)?;
    let class_sym = read_u64(mem, at(holder, l.klass_name, "Klass")?, "Klass")?;
    let class = external_class_name(&symbol_text(mem, l, class_sym)?);
    let idx = read_u16(mem, at(cm, l.const_method_name_index, CM)?, CM)?;
    let len = read_i32(mem, at(cp, l.constant_pool_length, CP)?, CP)?;
    if idx == 0 || i32::from(idx) >= len {
        return Err(Error::Malformed {
            what: CP,
            offset: cp,
            reason: format!("name index {idx} outside the pool of {len}"),
        });
    }
    let slot =
        at(cp, l.constant_pool_size, CP)?.checked_add(u64::from(idx) * 8).ok_or_else(|| {
            Error::Malformed { what: CP, offset: cp, reason: "slot overflows".into() }
        })?;
    let name = symbol_text(mem, l, read_u64(mem, slot, CP)?)?;
    Ok(JavaMethod { class, name })
}

/// The bytecode index of `bcp` in the method whose ConstMethod is `const_method`: `None` when
/// `bcp` is not within its `_code_size` bytecodes.
pub fn bci(
    mem: &dyn Memory,
    l: &StackLayout,
    const_method: u64,
    bcp: u64,
) -> Result<Option<u32>, Error> {
    const CM: &str = "ConstMethod";
    let code_size = read_u16(mem, at(const_method, l.const_method_code_size, CM)?, CM)?;
    let start = at(const_method, l.const_method_size, CM)?;
    Ok(bcp.checked_sub(start).filter(|&o| o < u64::from(code_size)).map(|o| o as u32))
}

/// What the CodeBlob at `blob` is, where its code starts, and its frame size.
pub fn code_blob(mem: &dyn Memory, l: &StackLayout, blob: u64) -> Result<CodeBlobInfo, Error> {
    const B: &str = "CodeBlob";
    let blob = nonnull(blob, B, 0)?;
    let name_ptr = read_u64(mem, at(blob, l.code_blob_name, B)?, B)?;
    let name = read_cstr(mem, name_ptr, CODE_BLOB_NAME_MAX, "CodeBlob name")?;
    let code_begin = match l.code_blob_code {
        CodeStart::Address(o) => read_u64(mem, at(blob, o, B)?, B)?,
        CodeStart::Offset(o) => {
            let off = read_i32(mem, at(blob, o, B)?, B)?;
            let off = u32::try_from(off).map_err(|_| Error::Malformed {
                what: B,
                offset: blob,
                reason: format!("negative code offset {off}"),
            })?;
            at(blob, off, B)?
        }
    };
    let fs = read_i32(mem, at(blob, l.code_blob_frame_size, B)?, B)?;
    let frame_size_words = u32::try_from(fs).map_err(|_| Error::Malformed {
        what: B,
        offset: blob,
        reason: format!("negative frame size {fs}"),
    })?;
    let method = || read_u64(mem, at(blob, l.nmethod_method, "nmethod")?, "nmethod");
    let kind = match name.as_str() {
        "nmethod" => {
            let id = read_i32(mem, at(blob, l.nmethod_compile_id, "nmethod")?, "nmethod")?;
            BlobKind::Nmethod { method: method()?, compile_id: id as u32 }
        }
        "native nmethod" => BlobKind::NativeWrapper { method: method()? },
        _ => BlobKind::Other { name },
    };
    Ok(CodeBlobInfo { kind, code_begin, frame_size_words })
}

/// Where the nmethod at `blob` has its deopt handler, the return address HotSpot patches into
/// the callee of a frame it deoptimizes (as the eBPF walker reads it); `None` when the JVM does
/// not export it.
pub fn deopt_handler(mem: &dyn Memory, l: &StackLayout, blob: u64) -> Result<Option<u64>, Error> {
    const N: &str = "nmethod";
    let Some(d) = l.nmethod_deopt else { return Ok(None) };
    let blob = nonnull(blob, N, 0)?;
    Ok(Some(match d.handler {
        CodeStart::Address(o) => read_u64(mem, at(blob, o, N)?, N)?,
        CodeStart::Offset(o) => {
            let off = read_i32(mem, at(blob, o, N)?, N)?;
            let off = u32::try_from(off).map_err(|_| Error::Malformed {
                what: N,
                offset: blob,
                reason: format!("negative deopt handler offset {off}"),
            })?;
            at(blob, off, N)?
        }
    }))
}

/// The CodeBlob holding `pc`, through its code heap's segment map: `None` when `pc` is in no
/// code heap, in a free segment, or in a free block. Each map byte is the number of segments
/// back towards its block's first segment (0 there; 0xFF: segment not in use); at most
/// [`SEGMAP_MAX_HOPS`] hops, each of which must go back.
pub fn find_blob(
    mem: &dyn Memory,
    process: &ProcessStacks,
    l: &StackLayout,
    pc: u64,
) -> Result<Option<u64>, Error> {
    const SM: &str = "CodeHeap segment map";
    let Some(h) = process.heap_of(pc) else { return Ok(None) };
    let mut idx = (pc - h.low) >> h.log2_segment_size; // contains(): low <= pc
    let mut hops = 0u32;
    loop {
        let byte = h.segmap.checked_add(idx).ok_or_else(|| Error::Malformed {
            what: SM,
            offset: h.segmap,
            reason: format!("segment {idx} overflows the address space"),
        })?;
        let b = read_u8(mem, byte, SM)?;
        match b {
            0xFF => return Ok(None),
            0 => break,
            hop => {
                idx = idx.checked_sub(u64::from(hop)).ok_or_else(|| Error::Malformed {
                    what: SM,
                    offset: h.segmap,
                    reason: format!("hop {hop} from segment {idx} goes before the heap"),
                })?;
            }
        }
        hops += 1;
        if hops > SEGMAP_MAX_HOPS {
            return Err(Error::too_large(
                "CodeHeap segment map hops",
                u64::from(hops),
                u64::from(SEGMAP_MAX_HOPS),
            ));
        }
    }
    let block = (idx << h.log2_segment_size)
        .checked_add(h.low)
        .filter(|&b| b < h.committed)
        .ok_or_else(|| Error::Malformed {
            what: SM,
            offset: h.segmap,
            reason: format!("segment {idx} outside the heap"),
        })?;
    if read_u8(mem, at(block, l.heap_block_used, "HeapBlock")?, "HeapBlock")? == 0 {
        return Ok(None);
    }
    Ok(Some(at(block, l.heap_block_size, "HeapBlock")?))
}

/// The method's compressed line number table (right after its bytecodes), read byte by byte
/// through a small buffer: it may end just before unmapped memory. At most
/// [`LINE_TABLE_MAX_BYTES`] bytes.
struct TableReader<'m> {
    mem: &'m dyn Memory,
    at: u64,
    read: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl TableReader<'_> {
    fn byte(&mut self) -> Result<u8, Error> {
        const T: &str = "line number table";
        if let Some(&b) = self.buf.get(self.pos) {
            self.pos += 1;
            return Ok(b);
        }
        if self.read >= LINE_TABLE_MAX_BYTES {
            return Err(Error::too_large(T, self.read as u64, LINE_TABLE_MAX_BYTES as u64));
        }
        let n = 64 - (self.at % 64) as usize; // never across a 64-byte boundary
        self.buf =
            read_bytes(self.mem, self.at, n, T).or_else(|_| read_bytes(self.mem, self.at, 1, T))?;
        self.at = self.at.saturating_add(self.buf.len() as u64);
        self.read = self.read.saturating_add(self.buf.len());
        self.pos = 0;
        self.byte()
    }

    /// A CompressedStream int: UNSIGNED5 (JDK 21+: bytes offset by 1, so none is 0) or the
    /// older form; both 6 bits per continuation byte, at most 5 bytes.
    fn int(&mut self, unsigned5: bool) -> Result<u32, Error> {
        let x = u32::from(unsigned5);
        let l = 256 - 64 - x; // bytes below x + l end the number
        let mut sum = 0u32;
        let mut shift = 0u32;
        for i in 0..5 {
            let b = u32::from(self.byte()?);
            let v = b.checked_sub(x).ok_or_else(|| Error::Malformed {
                what: "line number table",
                offset: self.at,
                reason: "zero byte inside an UNSIGNED5 number".into(),
            })?;
            sum = sum.wrapping_add(v.wrapping_shl(shift));
            if b < x + l || i == 4 {
                break;
            }
            shift += 6;
        }
        Ok(sum)
    }

    fn signed(&mut self, unsigned5: bool) -> Result<i32, Error> {
        let v = self.int(unsigned5)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }
}

/// The source line of `bci` in the method whose ConstMethod is `const_method`, from its
/// compressed line number table: the line of the last entry at or before `bci` (as
/// `Method::line_number_from_bci` does). `None` when the method has no table or no entry
/// covers `bci`.
pub fn line_number(
    mem: &dyn Memory,
    l: &StackLayout,
    const_method: u64,
    bci: u32,
) -> Result<Option<u32>, Error> {
    const CM: &str = "ConstMethod";
    let Some(flag) = l.const_method_has_linenumber_table else { return Ok(None) };
    let flags_at = at(const_method, l.const_method_flags, CM)?;
    let flags = if l.const_method_flags_width == 4 {
        super::read_u32(mem, flags_at, CM)?
    } else {
        u32::from(read_u16(mem, flags_at, CM)?)
    };
    if flags & flag == 0 {
        return Ok(None);
    }
    let bci = i64::from(bci);
    let mut best: Option<(i64, i64)> = None;
    for (b, line) in line_table(mem, l, const_method)? {
        if b == bci {
            return Ok(u32::try_from(line).ok());
        }
        if b < bci && best.map_or(true, |(bb, _)| b >= bb) {
            best = Some((b, line));
        }
    }
    Ok(best.and_then(|(_, line)| u32::try_from(line).ok()))
}

/// The whole line number table as (bci, line) pairs, at most [`LINE_TABLE_MAX_BYTES`] bytes
/// of it; the caller checks that the method has one ([`line_number`] does).
pub fn line_table(
    mem: &dyn Memory,
    l: &StackLayout,
    const_method: u64,
) -> Result<Vec<(i64, i64)>, Error> {
    const CM: &str = "ConstMethod";
    let code_size = read_u16(mem, at(const_method, l.const_method_code_size, CM)?, CM)?;
    let start = at(at(const_method, l.const_method_size, CM)?, u32::from(code_size), CM)?;
    let mut r = TableReader { mem, at: start, read: 0, buf: Vec::new(), pos: 0 };
    let (mut cur_bci, mut line) = (0i64, 0i64);
    let mut out = Vec::new();
    loop {
        let b = r.byte()?;
        if b == 0 {
            return Ok(out);
        }
        if b == 0xFF {
            cur_bci += i64::from(r.signed(l.line_table_unsigned5)?);
            line += i64::from(r.signed(l.line_table_unsigned5)?);
        } else {
            cur_bci += i64::from(b >> 3);
            line += i64::from(b & 7);
        }
        out.push((cur_bci, line));
    }
}
