//! Lines of a unified-logging file (`-Xlog:…:file=…`) that a container writes and the sidecar
//! follows while the JVM appends to it: read in chunks of any size, cut into complete lines
//! with at most [`SAFEPOINT_LINE_MAX`] bytes of one line held; and the uptime decoration of a
//! line, which orders a log's rotated archives.
use crate::limits::SAFEPOINT_LINE_MAX;

/// Lines a [`LineSplitter`] handed over or dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LineCounts {
    /// Complete lines handed to the consumer.
    pub lines: u64,
    /// Lines skipped because they were longer than `SAFEPOINT_LINE_MAX`.
    pub too_long: u64,
}

/// Cuts the bytes read, in chunks of any size, into complete lines: what is left after the
/// last newline waits for the next chunk; a line longer than `SAFEPOINT_LINE_MAX` is
/// dropped whole (counted in `too_long`) without holding more than the limit in memory.
/// Whatever the chunk boundaries, the same lines come out (the `logtail` fuzz target).
#[derive(Debug, Default)]
pub struct LineSplitter {
    /// Bytes of an incomplete last line (at most `SAFEPOINT_LINE_MAX`).
    partial: Vec<u8>,
    /// Inside a line longer than the limit: drop bytes until the next newline.
    skipping: bool,
}

impl LineSplitter {
    pub fn new() -> LineSplitter {
        LineSplitter::default()
    }

    /// Bytes of an incomplete line held (a file ending without a newline: a torn write).
    pub fn pending(&self) -> usize {
        self.partial.len()
    }

    /// Forgets a partial line (the file was truncated: start over).
    pub fn reset(&mut self) {
        self.partial.clear();
        self.skipping = false;
    }

    /// Hands every line completed by `chunk` to `sink` (invalid UTF-8 replaced), counting it
    /// in `counts`.
    pub fn feed(&mut self, chunk: &[u8], counts: &mut LineCounts, sink: &mut dyn FnMut(&str)) {
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(nl);
            rest = tail.get(1..).unwrap_or_default();
            if self.skipping {
                self.skipping = false;
                self.partial.clear();
                continue;
            }
            if self.partial.len() + head.len() > SAFEPOINT_LINE_MAX {
                counts.too_long += 1;
            } else {
                self.partial.extend_from_slice(head);
                counts.lines += 1;
                sink(&String::from_utf8_lossy(&self.partial));
            }
            self.partial.clear();
        }
        if !self.skipping {
            if self.partial.len() + rest.len() > SAFEPOINT_LINE_MAX {
                counts.too_long += 1;
                self.partial.clear();
                self.skipping = true;
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
    }
}

/// `[12.345s]`, `[12345ms]` or `[12345ns]` among a line's leading decorations, in seconds.
pub fn uptime_decoration(line: &str) -> Option<f64> {
    let mut rest = line;
    while let Some(r) = rest.strip_prefix('[') {
        let (d, tail) = r.split_once(']')?;
        rest = tail;
        let d = d.trim();
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        if let Some(v) = d.strip_suffix("ns").filter(|v| digits(v)) {
            return v.parse::<f64>().ok().map(|v| v / 1e9);
        }
        if let Some(v) = d.strip_suffix("ms").filter(|v| digits(v)) {
            return v.parse::<f64>().ok().map(|v| v / 1e3);
        }
        if let Some(s) = d.strip_suffix('s') {
            if let Some((a, b)) = s.split_once('.') {
                if digits(a) && digits(b) {
                    return s.parse().ok();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> (Vec<String>, LineCounts, usize) {
        let mut s = LineSplitter::new();
        let mut counts = LineCounts::default();
        let mut lines = Vec::new();
        for c in chunks {
            s.feed(c, &mut counts, &mut |l| lines.push(l.to_string()));
        }
        (lines, counts, s.pending())
    }

    #[test]
    fn lines_are_the_same_whatever_the_chunks() {
        let whole = split(&[b"a\nbc\n\nd"]);
        assert_eq!(whole.0, ["a", "bc", ""]);
        assert_eq!(whole.1, LineCounts { lines: 3, too_long: 0 });
        assert_eq!(whole.2, 1);
        assert_eq!(split(&[b"a", b"\nb", b"c\n", b"\nd"]), whole);
    }

    #[test]
    fn an_overlong_line_is_dropped_once() {
        let long = vec![b'x'; SAFEPOINT_LINE_MAX + 1];
        let (lines, counts, pending) = split(&[&long, b"x\nok\n"]);
        assert_eq!(lines, ["ok"]);
        assert_eq!(counts, LineCounts { lines: 1, too_long: 1 });
        assert_eq!(pending, 0);
    }

    #[test]
    fn uptime_decorations() {
        assert_eq!(
            uptime_decoration("[2024-01-01T00:00:00.000+0000][12.345s][info] x"),
            Some(12.345)
        );
        assert_eq!(uptime_decoration("[1500ms] x"), Some(1.5));
        assert_eq!(uptime_decoration("[2000000000ns] x"), Some(2.0));
        assert_eq!(uptime_decoration("[info][safepoint] x"), None);
        assert_eq!(uptime_decoration("12.3s"), None);
    }
}
