//! The JVM's performance-data file, `/tmp/hsperfdata_<user>/<pid>` (HotSpot's
//! `perfMemory`/`perfData`, read by `jstat` through `sun.jvmstat…v2_0.PerfDataBuffer`).
//! The JVM (untrusted) writes it; every offset and length is checked against the buffer.
//!
//! Layout (version 2.0): a 32-byte prologue, then entries.
//!
//! ```text
//! prologue: magic u32 (bytes CA FE C0 C0) | byte_order u8 (0 big, 1 little) | major u8 | minor u8
//!           | accessible u8 | used i32 | overflow i32 | mod_time_stamp i64 | entry_offset i32
//!           | num_entries i32
//! entry:    entry_length i32 | name_offset i32 | vector_length i32 | data_type u8 (JVM type
//!           char: 'J' long, 'B' byte) | flags u8 | data_units u8 | data_variability u8
//!           | data_offset i32 ; name = NUL-terminated at entry+name_offset ;
//!           data at entry+data_offset: an i64 (scalar 'J') or vector_length bytes ('B' vector;
//!           strings are NUL-terminated inside it)
//! ```
use std::collections::HashMap;
use std::path::PathBuf;

use crate::bytes::{cstr_at, slice, u32_at, u64_at, u8_at, Endian};
use crate::limits::*;
use crate::Error;

const MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];
const PROLOGUE_LEN: usize = 32;
const ENTRY_HEADER_LEN: usize = 20;

/// Units of a counter (HotSpot's `PerfData::Units`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    None,
    Bytes,
    Ticks,
    Events,
    String,
    Hertz,
    Other(u8),
}

/// A counter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Long {
        value: i64,
        units: Units,
    },
    String(String),
    /// A type we do not decode (other vector types; HotSpot writes none today).
    Unsupported {
        data_type: u8,
        vector_length: u32,
    },
}

/// A parsed hsperfdata snapshot.
#[derive(Clone, Debug)]
pub struct PerfData {
    pub major_version: u8,
    pub minor_version: u8,
    /// The JVM sets this once the buffer is initialised; 0 means "still starting".
    pub accessible: bool,
    pub used: u32,
    pub overflow: u32,
    pub mod_time_stamp: i64,
    entries: Vec<(String, Value)>,
    index: HashMap<String, usize>,
}

impl PerfData {
    /// A long counter (`sun.rt.safepoints`, `java.threads.started`, …).
    pub fn long(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Value::Long { value, .. } => Some(*value),
            _ => None,
        }
    }
    /// A string counter (`java.property.java.version`, `sun.rt.javaCommand`, …).
    pub fn string(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// Ticks (e.g. `sun.rt.safepointTime`) in seconds, by `sun.os.hrt.frequency` (Hz).
    pub fn ticks_to_seconds(&self, ticks: i64) -> Option<f64> {
        let hz = self.long("sun.os.hrt.frequency")?;
        (hz > 0).then(|| ticks as f64 / hz as f64)
    }
    /// Every counter in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.entries.get(*self.index.get(name)?).map(|(_, v)| v)
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `/tmp/hsperfdata_<user>/<nspid>` (the pid as seen inside the JVM's pid namespace).
pub fn path_for(user: &str, nspid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/hsperfdata_{user}/{nspid}"))
}

/// Parses a snapshot of the file.
pub fn parse(b: &[u8]) -> Result<PerfData, Error> {
    const W: &str = "hsperfdata";
    if b.len() as u64 > HSPERFDATA_MAX_BYTES {
        return Err(Error::too_large(W, b.len() as u64, HSPERFDATA_MAX_BYTES));
    }
    let pro = slice(b, 0, PROLOGUE_LEN, "hsperfdata prologue")?;
    if pro.get(..4) != Some(&MAGIC[..]) {
        return Err(Error::malformed(W, 0, "bad magic (expected 0xcafec0c0)"));
    }
    let e = match u8_at(pro, 4, W)? {
        0 => Endian::Big,
        1 => Endian::Little,
        x => return Err(Error::malformed(W, 4, format!("byte order {x} is neither 0 nor 1"))),
    };
    let major_version = u8_at(pro, 5, W)?;
    let minor_version = u8_at(pro, 6, W)?;
    if major_version != 2 {
        return Err(Error::malformed(
            W,
            5,
            format!("version {major_version}.{minor_version}, only 2.x is known"),
        ));
    }
    let accessible = u8_at(pro, 7, W)? != 0;
    let used = u32_at(pro, 8, e, W)?;
    let overflow = u32_at(pro, 12, e, W)?;
    let mod_time_stamp = u64_at(pro, 16, e, W)? as i64;
    let entry_offset = u32_at(pro, 24, e, W)? as usize;
    let num_entries = u32_at(pro, 28, e, W)? as usize;
    // The entries live in the used part of the buffer; never trust `used` beyond the input.
    let used_len = (used as usize).min(b.len());
    let buf = b.get(..used_len).unwrap_or_default();
    if num_entries > HSPERFDATA_MAX_ENTRIES {
        return Err(Error::too_large(
            "hsperfdata num_entries",
            num_entries as u64,
            HSPERFDATA_MAX_ENTRIES as u64,
        ));
    }
    if entry_offset < PROLOGUE_LEN {
        return Err(Error::malformed(
            W,
            24,
            format!("entry offset {entry_offset} inside the prologue"),
        ));
    }
    let mut entries = Vec::with_capacity(num_entries.min(4096));
    let mut index = HashMap::new();
    let mut off = entry_offset;
    for _ in 0..num_entries {
        let h = slice(buf, off, ENTRY_HEADER_LEN, "hsperfdata entry header")?;
        let entry_length = u32_at(h, 0, e, W)? as usize;
        let name_offset = u32_at(h, 4, e, W)? as usize;
        let vector_length = u32_at(h, 8, e, W)?;
        let data_type = u8_at(h, 12, W)?;
        let units = u8_at(h, 14, W)?;
        let data_offset = u32_at(h, 16, e, W)? as usize;
        if entry_length < ENTRY_HEADER_LEN {
            return Err(Error::malformed(
                "hsperfdata entry",
                off,
                format!("entry length {entry_length} below the header size"),
            ));
        }
        // Everything an entry points at must lie inside the entry itself.
        let entry = slice(buf, off, entry_length, "hsperfdata entry")?;
        let name = cstr_at(entry, name_offset, HSPERFDATA_MAX_NAME, "hsperfdata entry name")
            .map_err(|err| at(err, off))?;
        let value = match (data_type, vector_length) {
            (b'J', 0) => {
                let v = u64_at(entry, data_offset, e, "hsperfdata long value")
                    .map_err(|err| at(err, off))? as i64;
                Value::Long { value: v, units: units_of(units) }
            }
            (b'B', n) if n > 0 => {
                let n = n as usize;
                if n > HSPERFDATA_MAX_STRING {
                    return Err(Error::too_large(
                        "hsperfdata string length",
                        n as u64,
                        HSPERFDATA_MAX_STRING as u64,
                    ));
                }
                let v = slice(entry, data_offset, n, "hsperfdata string value")
                    .map_err(|err| at(err, off))?;
                let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
                Value::String(
                    String::from_utf8_lossy(v.get(..end).unwrap_or_default()).into_owned(),
                )
            }
            (t, n) => Value::Unsupported { data_type: t, vector_length: n },
        };
        if !index.contains_key(name) {
            index.insert(name.to_string(), entries.len());
        }
        entries.push((name.to_string(), value));
        off = off
            .checked_add(entry_length)
            .ok_or_else(|| Error::malformed(W, off, "entry offset overflows"))?;
    }
    Ok(PerfData {
        major_version,
        minor_version,
        accessible,
        used,
        overflow,
        mod_time_stamp,
        entries,
        index,
    })
}

/// Offsets inside an entry reported relative to the file.
fn at(err: Error, entry_off: usize) -> Error {
    match err {
        Error::Truncated { what, offset, needed, len } => {
            Error::Truncated { what, offset: offset.saturating_add(entry_off as u64), needed, len }
        }
        Error::Malformed { what, offset, reason } => {
            Error::Malformed { what, offset: offset.saturating_add(entry_off as u64), reason }
        }
        other => other,
    }
}

fn units_of(u: u8) -> Units {
    match u {
        1 => Units::None,
        2 => Units::Bytes,
        3 => Units::Ticks,
        4 => Units::Events,
        5 => Units::String,
        6 => Units::Hertz,
        x => Units::Other(x),
    }
}
