//! A HotSpot JVM's own description of itself, read from its memory: the exported vmStructs
//! tables ([`vmstructs`]), the offsets a Java stack walker needs ([`layout`]), and naming
//! what a walk finds ([`symbolize`]).
//!
//! Every byte comes from the JVM's memory, which a hostile container controls (it can forge
//! the tables): every read is bounded ([`crate::limits`]), every address computed with checked
//! arithmetic, every loop bounded, and an error names what was read and where.
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::limits::{HOTSPOT_MAX_READ, HOTSPOT_MAX_STRING};
use crate::Error;

#[doc(hidden)]
pub mod fake;
pub mod layout;
pub mod scopes;
pub mod symbolize;
pub mod vmstructs;

pub use layout::{CodeHeapBounds, CodeStart, DeoptLayout, EntryLayout, ProcessStacks, StackLayout};
pub use symbolize::{
    bci, code_blob, deopt_handler, find_blob, method_name, BlobKind, CodeBlobInfo, JavaMethod,
};
pub use vmstructs::{Exports, Field, VmStructs};

/// A process's memory, read at absolute addresses.
pub trait Memory {
    /// Fills `buf` from `addr`; an address not mapped (or any part of it) is an error.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error>;
}

/// `/proc/PID/mem`, read with `pread` (at most [`HOTSPOT_MAX_READ`] bytes per read).
pub struct ProcMem {
    file: File,
    pid: u32,
}

impl ProcMem {
    /// Opens `/proc/PID/mem` (needs ptrace access to the process: root, or the same user).
    pub fn open(pid: u32) -> Result<ProcMem, Error> {
        let path = format!("/proc/{pid}/mem");
        let file = File::open(&path).map_err(|source| Error::Io {
            path: path.into(),
            op: "open",
            source,
        })?;
        Ok(ProcMem { file, pid })
    }
}

impl Memory for ProcMem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        check_len(buf.len())?;
        self.file.read_exact_at(buf, addr).map_err(|source| Error::Io {
            path: format!("/proc/{}/mem at {addr:#x} ({} bytes)", self.pid, buf.len()).into(),
            op: "read",
            source,
        })
    }
}

fn check_len(len: usize) -> Result<(), Error> {
    if len > HOTSPOT_MAX_READ {
        return Err(Error::too_large("read of JVM memory", len as u64, HOTSPOT_MAX_READ as u64));
    }
    Ok(())
}

/// A memory image: `bytes` at `base` (tests, fuzzing, a saved core).
pub struct SliceMem<'a> {
    pub base: u64,
    pub bytes: &'a [u8],
}

impl Memory for SliceMem<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        check_len(buf.len())?;
        let src = addr
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .and_then(|o| self.bytes.get(o..o.checked_add(buf.len())?));
        match src {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(Error::Malformed {
                what: "memory image",
                offset: addr,
                reason: format!("{} bytes not mapped", buf.len()),
            }),
        }
    }
}

/// Reads `N` bytes at `addr`, naming `what` in the error.
fn array<const N: usize>(
    mem: &dyn Memory,
    addr: u64,
    what: &'static str,
) -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    mem.read(addr, &mut b).map_err(|e| unreadable(what, addr, N, e))?;
    Ok(b)
}

fn unreadable(what: &'static str, addr: u64, len: usize, e: Error) -> Error {
    Error::Malformed { what, offset: addr, reason: format!("cannot read {len} bytes: {e}") }
}

pub fn read_u8(mem: &dyn Memory, addr: u64, what: &'static str) -> Result<u8, Error> {
    Ok(u8::from_le_bytes(array(mem, addr, what)?))
}
pub fn read_u16(mem: &dyn Memory, addr: u64, what: &'static str) -> Result<u16, Error> {
    Ok(u16::from_le_bytes(array(mem, addr, what)?))
}
pub fn read_u32(mem: &dyn Memory, addr: u64, what: &'static str) -> Result<u32, Error> {
    Ok(u32::from_le_bytes(array(mem, addr, what)?))
}
pub fn read_i32(mem: &dyn Memory, addr: u64, what: &'static str) -> Result<i32, Error> {
    Ok(i32::from_le_bytes(array(mem, addr, what)?))
}
pub fn read_u64(mem: &dyn Memory, addr: u64, what: &'static str) -> Result<u64, Error> {
    Ok(u64::from_le_bytes(array(mem, addr, what)?))
}

/// `len` bytes at `addr` (at most [`HOTSPOT_MAX_READ`]).
pub fn read_bytes(
    mem: &dyn Memory,
    addr: u64,
    len: usize,
    what: &'static str,
) -> Result<Vec<u8>, Error> {
    check_len(len)?;
    let mut v = vec![0u8; len];
    mem.read(addr, &mut v).map_err(|e| unreadable(what, addr, len, e))?;
    Ok(v)
}

/// The NUL-terminated string at `addr`, at most `max` bytes (at most [`HOTSPOT_MAX_STRING`])
/// without the NUL. Read page by page, so a string that ends just before an unmapped page
/// is read. Errors: no NUL within `max`, not UTF-8, unreadable.
pub fn read_cstr(
    mem: &dyn Memory,
    addr: u64,
    max: usize,
    what: &'static str,
) -> Result<String, Error> {
    const PAGE: u64 = 4096;
    let max = max.min(HOTSPOT_MAX_STRING);
    if addr == 0 {
        return Err(Error::Malformed { what, offset: 0, reason: "null string pointer".into() });
    }
    let mut out: Vec<u8> = Vec::new();
    let mut at = addr;
    loop {
        // Up to the end of the page, and no further than max + 1 bytes in all.
        let in_page = PAGE - at % PAGE;
        let left = (max + 1).saturating_sub(out.len()) as u64;
        let n = in_page.min(left);
        if n == 0 {
            return Err(Error::Malformed {
                what,
                offset: addr,
                reason: format!("string longer than {max} bytes"),
            });
        }
        // A memory whose end is not at a page boundary (an image): byte by byte there.
        let chunk = match read_bytes(mem, at, n as usize, what) {
            Ok(c) => c,
            Err(_) if n > 1 => read_bytes(mem, at, 1, what)?,
            Err(e) => return Err(e),
        };
        if let Some(nul) = chunk.iter().position(|&c| c == 0) {
            out.extend(chunk.iter().take(nul));
            if out.len() > max {
                break;
            }
            return String::from_utf8(out).map_err(|e| Error::Malformed {
                what,
                offset: addr,
                reason: format!("string is not UTF-8: {}", e.utf8_error()),
            });
        }
        out.extend_from_slice(&chunk);
        at = at.checked_add(chunk.len() as u64).ok_or_else(|| Error::Malformed {
            what,
            offset: addr,
            reason: "string runs past the end of the address space".into(),
        })?;
    }
    Err(Error::Malformed { what, offset: addr, reason: format!("string longer than {max} bytes") })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod read_tests {
    use super::*;

    #[test]
    fn cstr_stops_at_nul_and_bound_and_image_end() {
        let mut img = vec![b'a'; 5000];
        img[4095] = 0;
        let m = SliceMem { base: 0x10000, bytes: &img };
        assert_eq!(read_cstr(&m, 0x10000 + 4090, 100, "s").unwrap(), "aaaaa");
        assert_eq!(read_cstr(&m, 0x10000, 5000, "s").unwrap().len(), 4095);
        let e = read_cstr(&m, 0x10000, 10, "s").unwrap_err().to_string();
        assert!(e.contains("longer than 10"), "{e}");
        let e = read_cstr(&m, 0x10000 + 4096, 2000, "s").unwrap_err().to_string();
        assert!(e.contains("not mapped"), "{e}");
        assert!(read_cstr(&m, 0, 10, "s").is_err());
        assert!(read_u64(&m, u64::MAX - 3, "x").is_err());
    }
}

#[cfg(test)]
mod tests;
