//! Lines of the JVM's `-Xlog:safepoint` output (the sidecar's source of safepoint times).
//!
//! Formats (checked against real JVM output for 17 and 25, HotSpot sources for 11 and 21):
//!
//! * JDK 13 … 21: `Safepoint "G1CollectFull", Time since last: 39742314 ns, Reaching safepoint:
//!   39740 ns, [Cleanup: 44636 ns, ]At safepoint: 18133021 ns, Total: 18217397 ns`
//!   (`Cleanup` is printed by some 17/21 builds, e.g. Debian's 17).
//! * JDK 25: `…, Reaching safepoint: N ns, At safepoint: N ns, Leaving safepoint: N ns,
//!   Total: N ns, Threads: 0 runnable, 10 total`.
//! * JDK 11 (pre-JDK-8220050): three lines per safepoint: `Entering safepoint region: <op>`,
//!   `Leaving safepoint region`, `Total time for which application threads were stopped:
//!   0.0001234 seconds, Stopping threads took: 0.0000123 seconds` — use [`Parser`], which
//!   carries the operation name from the first line to the last.
//!
//! Each line may start with any unified-logging decorations (`[0.123s][info][safepoint]`,
//! padded `[info ][safepoint   ]`, `[2025-…][123ms][45ns]`); the record is after the last
//! decoration. Lines tagged with more than `safepoint` (`safepoint,stats`) are not records.
use crate::limits::SAFEPOINT_LINE_MAX;

/// One safepoint.
#[derive(Clone, Debug, PartialEq)]
pub struct SafepointRecord {
    /// The VM operation (`G1CollectForAllocation`); empty for a JDK 11 line read by
    /// [`parse_line`] alone (use [`Parser`]).
    pub vm_operation: String,
    /// Time to safepoint ("Reaching safepoint"; JDK 11: "Stopping threads took").
    pub reaching_ns: u64,
    /// "At safepoint" (JDK 11: total minus stopping).
    pub at_safepoint_ns: u64,
    /// "Total" (JDK 11: "Total time for which application threads were stopped").
    pub total_ns: u64,
    /// "Cleanup", printed by some JDK 17/21 builds.
    pub cleanup_ns: Option<u64>,
    /// "Leaving safepoint", JDK 25.
    pub leaving_ns: Option<u64>,
    /// "Time since last".
    pub since_last_ns: Option<u64>,
    /// The uptime decoration (`[12.345s]`, `[12345ms]` or `[12345ns]`) in seconds, if present.
    pub uptime_seconds: Option<f64>,
}

impl SafepointRecord {
    /// Everything after the threads stopped: `total - reaching` (At safepoint plus Cleanup
    /// or Leaving). This is what the JVM adds to `sun.rt.safepointTime`, while `reaching_ns`
    /// is what it adds to `sun.rt.safepointSyncTime` (checked on JDK 17 and 25). Never
    /// underflows: records with `total < reaching + at_safepoint` are refused.
    pub fn after_sync_ns(&self) -> u64 {
        self.total_ns.saturating_sub(self.reaching_ns)
    }
}

/// Parses one line; `None` for lines that are not a safepoint record (including lines whose
/// total is smaller than their phases).
pub fn parse_line(line: &str) -> Option<SafepointRecord> {
    let (decor, msg) = split_decorations(line)?;
    let uptime_seconds = uptime_of(decor);
    if let Some(rest) = msg.strip_prefix("Safepoint \"") {
        let (op, fields) = rest.split_once("\", ")?;
        if op.is_empty() || op.len() > 256 || op.contains('"') {
            return None;
        }
        let mut r = SafepointRecord {
            vm_operation: op.to_string(),
            reaching_ns: 0,
            at_safepoint_ns: 0,
            total_ns: 0,
            cleanup_ns: None,
            leaving_ns: None,
            since_last_ns: None,
            uptime_seconds,
        };
        let (mut reaching, mut at, mut total) = (None, None, None);
        for f in fields.split(", ") {
            let Some((k, v)) = f.split_once(": ") else { continue };
            let Some(ns) = v.strip_suffix(" ns").and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            match k {
                "Time since last" => r.since_last_ns = Some(ns),
                "Reaching safepoint" => reaching = Some(ns),
                "Cleanup" => r.cleanup_ns = Some(ns),
                "At safepoint" => at = Some(ns),
                "Leaving safepoint" => r.leaving_ns = Some(ns),
                "Total" => total = Some(ns),
                _ => {}
            }
        }
        r.reaching_ns = reaching?;
        r.at_safepoint_ns = at?;
        r.total_ns = total?;
        // Total is the sum of the phases: a line that says otherwise is not the JVM's.
        if r.total_ns < r.reaching_ns || r.total_ns - r.reaching_ns < r.at_safepoint_ns {
            return None;
        }
        return Some(r);
    }
    if let Some(rest) = msg.strip_prefix("Total time for which application threads were stopped: ")
    {
        let (total, rest) = rest.split_once(" seconds, Stopping threads took: ")?;
        let sync = rest.strip_suffix(" seconds").unwrap_or(rest);
        let total_ns = secs_to_ns(total)?;
        let reaching_ns = secs_to_ns(sync)?;
        if reaching_ns > total_ns {
            return None;
        }
        return Some(SafepointRecord {
            vm_operation: String::new(),
            reaching_ns,
            at_safepoint_ns: total_ns.saturating_sub(reaching_ns),
            total_ns,
            cleanup_ns: None,
            leaving_ns: None,
            since_last_ns: None,
            uptime_seconds,
        });
    }
    None
}

/// A stateful reader for a log stream: also handles the JDK 11 three-line form.
#[derive(Debug, Default)]
pub struct Parser {
    pending_op: Option<String>,
}

impl Parser {
    pub fn new() -> Parser {
        Parser::default()
    }
    /// Feeds one line; returns a record when the line completes one.
    pub fn feed(&mut self, line: &str) -> Option<SafepointRecord> {
        if let Some((_, msg)) = split_decorations(line) {
            if let Some(op) = msg.strip_prefix("Entering safepoint region: ") {
                let op = op.trim_end();
                self.pending_op = (!op.is_empty() && op.len() <= 256).then(|| op.to_string());
                return None;
            }
        }
        let mut r = parse_line(line)?;
        if r.vm_operation.is_empty() {
            // JDK 11: the name came two lines earlier; a safepoint without one is "none".
            r.vm_operation = self.pending_op.take().unwrap_or_else(|| "none".to_string());
        }
        Some(r)
    }
}

/// `(decorations, message)`; `None` when the line is too long, or is tagged with more than
/// the single `safepoint` tag (the `safepoint,stats` table, `safepoint,cleanup`).
fn split_decorations(line: &str) -> Option<(&str, &str)> {
    if line.len() > SAFEPOINT_LINE_MAX {
        return None;
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let mut rest = line;
    let mut decor_end = 0usize;
    while let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        let tag = r.get(..close)?.trim();
        if tag.starts_with("safepoint") && tag != "safepoint" {
            return None;
        }
        rest = r.get(close + 1..)?;
        decor_end = line.len() - rest.len();
    }
    Some((line.get(..decor_end)?, rest.trim_start()))
}

fn uptime_of(decor: &str) -> Option<f64> {
    for d in decor.split('[').filter_map(|d| d.strip_suffix(']')) {
        let d = d.trim();
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        if let Some(v) = d.strip_suffix("ns").and_then(|n| n.parse::<u64>().ok()) {
            return Some(v as f64 / 1e9);
        }
        if let Some(v) = d.strip_suffix("ms").and_then(|n| n.parse::<u64>().ok()) {
            return Some(v as f64 / 1e3);
        }
        if let Some(v) = d.strip_suffix('s').and_then(num) {
            if d.contains('.') {
                return Some(v); // uptime "12.345s" (not a bare date)
            }
        }
    }
    None
}

/// "0.0001234" seconds → ns, without float rounding surprises for the 7 printed decimals.
fn secs_to_ns(s: &str) -> Option<u64> {
    let (int, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    if int.is_empty() || int.len() > 10 || frac.len() > 9 {
        return None;
    }
    if !int.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let i: u64 = int.parse().ok()?;
    let mut f: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    for _ in frac.len()..9 {
        f *= 10;
    }
    i.checked_mul(1_000_000_000)?.checked_add(f)
}
