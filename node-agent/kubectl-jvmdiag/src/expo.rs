//! A small, bounded reader of the Prometheus text exposition (and the sample lines of
//! OpenMetrics): `name{label="value",...} value [timestamp]`.
//!
//! The page comes from an agent (or a sidecar inside a workload's pod) through the API server:
//! trusted-ish, but one node's agent can have hundreds of JVMs, and a sidecar runs in the tenant's
//! pod. So every dimension is capped ([`Limits`]): the bytes read (by the caller), the line length,
//! the labels of a sample and the samples kept. A line that breaks the format or a cap is skipped
//! and counted, never a panic; keeping more samples than allowed is an error, not a silent cut.
//! Only the samples the caller keeps (`keep`) are stored: a page of 500 JVMs filtered to one
//! workload's pods stays small.

/// Caps of one page.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longer lines are skipped (the agent bounds every label value; a real line is < 1 KiB).
    pub max_line: usize,
    /// Labels of one sample.
    pub max_labels: usize,
    /// Samples kept (after `keep`); more is an error.
    pub max_samples: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_line: 16 * 1024, max_labels: 32, max_samples: 200_000 }
    }
}

/// One sample: metric name, labels in page order, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Name and labels, sorted: the identity of a series across two scrapes.
    pub fn key(&self) -> String {
        let mut l: Vec<_> = self.labels.iter().collect();
        l.sort();
        let mut k = self.name.clone();
        for (n, v) in l {
            k.push('\u{0}');
            k.push_str(n);
            k.push('=');
            k.push_str(v);
        }
        k
    }
}

/// What a page held.
#[derive(Debug, Default)]
pub struct Page {
    pub samples: Vec<Sample>,
    /// Lines skipped: malformed, too long or with too many labels.
    pub skipped: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    TooManySamples(usize),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::TooManySamples(n) => write!(f, "the page has more than {n} matching samples"),
        }
    }
}

impl std::error::Error for Error {}

/// Reads `text`, keeping the samples for which `keep` is true.
pub fn parse(text: &str, limits: Limits, keep: impl Fn(&Sample) -> bool) -> Result<Page, Error> {
    let mut page = Page::default();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.len() > limits.max_line {
            page.skipped += 1;
            continue;
        }
        match parse_line(line, limits.max_labels) {
            Some(s) if keep(&s) => {
                if page.samples.len() >= limits.max_samples {
                    return Err(Error::TooManySamples(limits.max_samples));
                }
                page.samples.push(s);
            }
            Some(_) => {}
            None => page.skipped += 1,
        }
    }
    Ok(page)
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_name_char(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

/// One sample line; None if it is not one.
pub fn parse_line(line: &str, max_labels: usize) -> Option<Sample> {
    let b = line.as_bytes();
    let mut i = 0;
    if b.is_empty() || !is_name_start(b[0]) {
        return None;
    }
    while i < b.len() && is_name_char(b[i]) {
        i += 1;
    }
    let name = line[..i].to_string();
    let mut labels = Vec::new();
    if i < b.len() && b[i] == b'{' {
        i += 1;
        loop {
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            if i < b.len() && b[i] == b'}' {
                i += 1;
                break;
            }
            // label name
            let start = i;
            if i >= b.len() || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
                return None;
            }
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let lname = &line[start..i];
            if i + 1 >= b.len() || b[i] != b'=' || b[i + 1] != b'"' {
                return None;
            }
            i += 2;
            let mut value = String::new();
            loop {
                let rest = &line[i..];
                let mut chars = rest.char_indices();
                let (_, c) = chars.next()?;
                match c {
                    '"' => {
                        i += 1;
                        break;
                    }
                    '\\' => {
                        let (_, e) = chars.next()?;
                        value.push(match e {
                            'n' => '\n',
                            '\\' => '\\',
                            '"' => '"',
                            _ => return None,
                        });
                        i += 2;
                    }
                    c => {
                        value.push(c);
                        i += c.len_utf8();
                    }
                }
            }
            if labels.len() >= max_labels {
                return None;
            }
            labels.push((lname.to_string(), value));
            if i < b.len() && b[i] == b',' {
                i += 1;
            } else if i < b.len() && b[i] == b'}' {
                i += 1;
                break;
            } else {
                return None;
            }
        }
    }
    if i >= b.len() || b[i] != b' ' {
        return None;
    }
    let mut fields = line[i..].split_ascii_whitespace();
    let value = parse_value(fields.next()?)?;
    // an optional timestamp, then nothing (OpenMetrics exemplars start with '#')
    match fields.next() {
        None => {}
        Some(t) if t.starts_with('#') => {}
        Some(t) => {
            t.parse::<f64>().ok()?;
            if let Some(x) = fields.next() {
                if !x.starts_with('#') {
                    return None;
                }
            }
        }
    }
    Some(Sample { name, labels, value })
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse::<f64>().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent's golden page (standalone mode, every collector's families).
    const GOLDEN: &str = include_str!("../../tests/golden/maps.prom");

    fn all(text: &str) -> Page {
        parse(text, Limits::default(), |_| true).unwrap()
    }

    #[test]
    fn reads_every_sample_of_the_agents_golden_page() {
        let page = all(GOLDEN);
        assert_eq!(page.skipped, 0, "no line of the agent's page is refused");
        let lines = GOLDEN.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).count();
        assert_eq!(page.samples.len(), lines);
        let s = page
            .samples
            .iter()
            .find(|s| s.name == "jvmdiag_thread_starts_total" && s.label("jvm") == Some("Storm"))
            .unwrap();
        assert_eq!(s.label("thread_name"), Some("pool-N-thread-N"));
        assert_eq!(s.value, 10400.0);
        let inf = page
            .samples
            .iter()
            .find(|s| {
                s.name == "jvmdiag_safepoint_pause_seconds_bucket" && s.label("le") == Some("+Inf")
            })
            .unwrap();
        assert_eq!(inf.label("vm_operation"), Some("G1CollectForAllocation"));
        let lock = page
            .samples
            .iter()
            .find(|s| {
                s.name == "jvmdiag_thread_parked_seconds_total"
                    && s.label("thread_name") == Some("Finalizer")
            })
            .unwrap();
        assert_eq!(lock.label("monitor_class"), Some("java.lang.ref.ReferenceQueue$Lock"));
    }

    #[test]
    fn escapes_are_undone_and_cannot_forge_labels() {
        let s = parse_line(r#"m{thread_name="a\"b,pod=\"x\\",pod="real"} 3"#, 8).unwrap();
        assert_eq!(s.label("thread_name"), Some("a\"b,pod=\"x\\"));
        assert_eq!(s.label("pod"), Some("real"));
        let s = parse_line(r#"m{a="line\nbreak"} 1"#, 8).unwrap();
        assert_eq!(s.label("a"), Some("line\nbreak"));
        let s = parse_line("m{a=\"ünïcödé\"} 1", 8).unwrap();
        assert_eq!(s.label("a"), Some("ünïcödé"));
    }

    #[test]
    fn values_timestamps_and_openmetrics_forms() {
        assert_eq!(parse_line("m 1.5e3", 8).unwrap().value, 1500.0);
        assert_eq!(parse_line("m{} 2 1700000000000", 8).unwrap().value, 2.0);
        assert_eq!(parse_line("m{a=\"b\",} 7", 8).unwrap().value, 7.0);
        assert_eq!(parse_line("m +Inf", 8).unwrap().value, f64::INFINITY);
        assert!(parse_line("m NaN", 8).unwrap().value.is_nan());
        assert_eq!(parse_line(r#"m_bucket{le="1.0"} 3 # {trace_id="x"} 1"#, 8).unwrap().value, 3.0);
        let page = all("# TYPE m counter\nm_total 4\n# EOF\n");
        assert_eq!(page.samples.len(), 1);
    }

    #[test]
    fn malformed_lines_are_skipped_and_counted() {
        let bad = [
            "m",
            "m{",
            "m{a=\"b\"",
            "m{a=b} 1",
            "m{a=\"b\"} x",
            "m{a=\"b\\q\"} 1",
            "{a=\"b\"} 1",
            "9m 1",
            "m 1 2 3",
            "m{1a=\"b\"} 1",
        ];
        for l in bad {
            assert!(parse_line(l, 8).is_none(), "{l:?} is refused");
        }
        let page = all(&bad.join("\n"));
        assert_eq!((page.samples.len(), page.skipped), (0, bad.len()));
    }

    #[test]
    fn caps_bound_lines_labels_and_samples() {
        let limits = Limits { max_line: 40, max_labels: 2, max_samples: 3 };
        let long = format!("m{{a=\"{}\"}} 1", "x".repeat(100));
        let page =
            parse(&format!("{long}\nm{{a=\"1\",b=\"2\",c=\"3\"}} 1\nm 1\n"), limits, |_| true)
                .unwrap();
        assert_eq!((page.samples.len(), page.skipped), (1, 2));
        let many = "m 1\n".repeat(4);
        assert_eq!(parse(&many, limits, |_| true).unwrap_err(), Error::TooManySamples(3));
        // what is not kept does not count
        assert_eq!(parse(&many, limits, |_| false).unwrap().samples.len(), 0);
        // a huge page of garbage ends, bounded, with nothing kept
        let junk = "\u{0}{{{\"\"\\".repeat(10_000);
        assert!(parse(&junk, limits, |_| true).unwrap().samples.is_empty());
    }

    #[test]
    fn key_ignores_label_order() {
        let a = parse_line(r#"m{a="1",b="2"} 1"#, 8).unwrap();
        let b = parse_line(r#"m{b="2",a="1"} 5"#, 8).unwrap();
        assert_eq!(a.key(), b.key());
        assert_ne!(a.key(), parse_line(r#"m{a="1",b="3"} 1"#, 8).unwrap().key());
    }
}
