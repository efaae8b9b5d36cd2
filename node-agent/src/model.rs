//! What collectors produce at a scrape: metric families of samples, each sample tied to
//! a JVM slot (per-JVM series) or to none (agent health). Base units only.

use crate::skel::consts::HIST_BOUNDS;

/// Histogram bucket upper bounds in seconds (docs/metrics.md); +Inf is implicit.
/// The BPF side (`hist_slot` in src/bpf/common.bpf.h) uses the same bounds in ns.
pub const BOUNDS_SECONDS: [f64; HIST_BOUNDS as usize] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// A histogram read from a kernel map: per-bucket counts (last = +Inf), sum in ns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hist {
    /// HIST_SLOTS in src/bpf/jvm.h: one per bound, then +Inf.
    pub buckets: [u64; HIST_BOUNDS as usize + 1],
    pub sum_ns: u64,
    pub count: u64,
}

impl Hist {
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }
    /// (le, count in this bucket) pairs as prometheus-client's encoder wants them: it
    /// accumulates itself and prints `f64::MAX` as `+Inf`.
    pub fn encoder_buckets(&self) -> Vec<(f64, u64)> {
        self.buckets
            .iter()
            .enumerate()
            .map(|(i, &b)| (BOUNDS_SECONDS.get(i).copied().unwrap_or(f64::MAX), b))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Hist),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// JVM slot for per-JVM series (the exposition adds the JVM's labels), None for agent series.
    pub slot: Option<u32>,
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Full name as exposed; counters end in `_total`.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

impl Family {
    pub fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Family { name, help, kind, samples: Vec::new() }
    }
    pub fn jvm(&mut self, slot: u32, labels: Vec<(&'static str, String)>, value: Value) {
        self.samples.push(Sample { slot: Some(slot), labels, value });
    }
    pub fn agent(&mut self, labels: Vec<(&'static str, String)>, value: Value) {
        self.samples.push(Sample { slot: None, labels, value });
    }
}

/// Decodes a NUL-padded name from a BPF key.
pub fn c_name(raw: &[i8]) -> String {
    let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_buckets_follow_the_documented_bounds_and_end_with_max() {
        let mut h = Hist::default();
        h.buckets[0] = 2;
        h.buckets[15] = 4;
        let c = h.encoder_buckets();
        assert_eq!(c.len(), 16);
        assert_eq!(c[0], (0.001, 2));
        assert_eq!(c[14], (60.0, 0));
        assert_eq!(c[15], (f64::MAX, 4));
    }

    #[test]
    fn c_name_stops_at_nul_and_survives_bad_utf8() {
        let mut raw = [0i8; 8];
        raw[0] = b'a' as i8;
        raw[1] = -1;
        assert_eq!(c_name(&raw), "a\u{fffd}");
    }
}
