#![no_main]
//! The sidecar's log tail reads a file the JVM's container writes, in reads of any size: its
//! line splitter (jvmdiag_inspect::log_lines) must give the same lines whatever the chunk
//! boundaries, never hold more than `SAFEPOINT_LINE_MAX` bytes of a line, and count every
//! line longer than that exactly once (complete or not). Checked against a one-pass model
//! of the whole input. Byte 0xFF followed by n expands to n KiB without a newline, so the
//! 64 KiB line limit is reached by short inputs too; the rest of the bytes are the file.
//! Also the archives' ordering key (`uptime_decoration` of a first line): never panics,
//! never NaN or negative.
use jvmdiag_inspect::limits::SAFEPOINT_LINE_MAX;
use jvmdiag_inspect::log_lines::{uptime_decoration, LineCounts, LineSplitter};
use libfuzzer_sys::fuzz_target;

/// Bounded file size after expansion.
const FILE_MAX: usize = 512 << 10;

fn expand(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut it = body.iter();
    while let Some(&b) = it.next() {
        if b == 0xFF {
            let n = usize::from(it.next().copied().unwrap_or(1));
            out.resize((out.len() + n * 1024).min(FILE_MAX), b'x');
        } else if out.len() < FILE_MAX {
            out.push(b);
        }
    }
    out
}

/// The whole file at once: (lines, too_long, bytes of the last incomplete line).
fn model(file: &[u8]) -> (Vec<String>, u64, usize) {
    let mut lines = Vec::new();
    let mut too_long = 0;
    let mut parts: Vec<&[u8]> = file.split(|&b| b == b'\n').collect();
    let last = parts.pop().unwrap_or_default();
    for p in parts {
        if p.len() > SAFEPOINT_LINE_MAX {
            too_long += 1;
        } else {
            lines.push(String::from_utf8_lossy(p).into_owned());
        }
    }
    let pending = if last.len() > SAFEPOINT_LINE_MAX {
        too_long += 1;
        0
    } else {
        last.len()
    };
    (lines, too_long, pending)
}

fuzz_target!(|data: &[u8]| {
    let Some((seed, body)) = data.split_first_chunk::<8>() else { return };
    let file = expand(body);
    // Chunk sizes from a xorshift of the seed: mostly small, sometimes around the limit.
    let mut x = u64::from_le_bytes(*seed) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut s = LineSplitter::new();
    let mut stats = LineCounts::default();
    let mut got = Vec::new();
    let mut rest = &file[..];
    while !rest.is_empty() {
        let r = next();
        let n = match r % 4 {
            0 => 1 + (r >> 8) as usize % 16,
            1 => 1 + (r >> 8) as usize % 4096,
            2 => SAFEPOINT_LINE_MAX - 8 + (r >> 8) as usize % 16,
            _ => 1 + (r >> 8) as usize % (2 * SAFEPOINT_LINE_MAX),
        };
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        s.feed(chunk, &mut stats, &mut |l| {
            assert!(l.len() <= 3 * SAFEPOINT_LINE_MAX, "a line past the limit was handed over");
            assert!(!l.contains('\n'));
            got.push(l.to_string())
        });
        assert!(s.pending() <= SAFEPOINT_LINE_MAX, "holds {} bytes of one line", s.pending());
    }
    let (want, too_long, pending) = model(&file);
    assert_eq!(got.len(), want.len());
    assert!(got == want, "chunked lines differ from the whole file's");
    assert_eq!(stats.lines, want.len() as u64);
    assert_eq!(stats.too_long, too_long);
    assert_eq!(s.pending(), pending);

    if let Some(first) = file.split(|&b| b == b'\n').next() {
        if let Some(t) = uptime_decoration(&String::from_utf8_lossy(first)) {
            assert!(!t.is_nan() && t >= 0.0, "uptime {t}");
        }
    }
});
