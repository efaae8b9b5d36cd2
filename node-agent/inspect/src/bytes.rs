//! Checked little readers over untrusted byte slices: every access is bounds-checked and
//! returns [`Error::Truncated`] instead of panicking.
use crate::Error;

/// `b[off..off+len]`, or a Truncated error naming `what`.
pub(crate) fn slice<'a>(
    b: &'a [u8],
    off: usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], Error> {
    let end = off.checked_add(len).ok_or_else(|| Error::truncated(what, off, len, b.len()))?;
    b.get(off..end).ok_or_else(|| Error::truncated(what, off, len, b.len()))
}

fn arr<const N: usize>(b: &[u8], off: usize, what: &'static str) -> Result<[u8; N], Error> {
    let s = slice(b, off, N, what)?;
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    Ok(a)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

pub(crate) fn u16_at(b: &[u8], off: usize, e: Endian, what: &'static str) -> Result<u16, Error> {
    let a = arr::<2>(b, off, what)?;
    Ok(match e {
        Endian::Little => u16::from_le_bytes(a),
        Endian::Big => u16::from_be_bytes(a),
    })
}

pub(crate) fn u32_at(b: &[u8], off: usize, e: Endian, what: &'static str) -> Result<u32, Error> {
    let a = arr::<4>(b, off, what)?;
    Ok(match e {
        Endian::Little => u32::from_le_bytes(a),
        Endian::Big => u32::from_be_bytes(a),
    })
}

pub(crate) fn u64_at(b: &[u8], off: usize, e: Endian, what: &'static str) -> Result<u64, Error> {
    let a = arr::<8>(b, off, what)?;
    Ok(match e {
        Endian::Little => u64::from_le_bytes(a),
        Endian::Big => u64::from_be_bytes(a),
    })
}

pub(crate) fn u8_at(b: &[u8], off: usize, what: &'static str) -> Result<u8, Error> {
    b.get(off).copied().ok_or_else(|| Error::truncated(what, off, 1, b.len()))
}

/// A u64 from the input as a usize offset/size (errors on 32-bit overflow).
pub(crate) fn to_usize(v: u64, what: &'static str, off: usize) -> Result<usize, Error> {
    usize::try_from(v)
        .map_err(|_| Error::malformed(what, off, format!("value {v} does not fit in memory")))
}

/// The NUL-terminated string starting at `off` within `b`, at most `max` bytes (without the NUL).
/// Errors: no NUL within the bound / the input (a name without NUL), or not UTF-8.
pub(crate) fn cstr_at<'a>(
    b: &'a [u8],
    off: usize,
    max: usize,
    what: &'static str,
) -> Result<&'a str, Error> {
    let rest = b.get(off..).ok_or_else(|| Error::truncated(what, off, 1, b.len()))?;
    let window = rest.get(..rest.len().min(max.saturating_add(1))).unwrap_or(rest);
    let nul = window.iter().position(|&c| c == 0).ok_or_else(|| {
        if rest.len() > max {
            Error::malformed(what, off, format!("string longer than {max} bytes"))
        } else {
            Error::malformed(what, off, "string without a terminating NUL")
        }
    })?;
    let s = window.get(..nul).unwrap_or_default();
    std::str::from_utf8(s)
        .map_err(|e| Error::malformed(what, off, format!("string is not UTF-8: {e}")))
}
