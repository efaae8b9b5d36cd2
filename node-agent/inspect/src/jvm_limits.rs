//! Per-JVM limits text: the pod annotation `jvm.diagnostics.dev/limits`
//! (`maxThreadNames=50,maxMethods=20,maxClasses=20`, only the enabled collectors' names;
//! `threadStartRate=N`, the threshold of the on-demand starter probe, and
//! `stackSamplesPerSecond=N`, the culprit stacks' sampling budget, where set), the
//! sidecar's `JVMDIAG_LIMITS` (the same text) and the text after `TEXT:` of standalone
//! `--jvm-limits TEXT:LIMITS`.
//!
//! The text comes from whoever can write a pod's annotations, so it is parsed strictly and
//! boundedly: at most [`MAX_TEXT`] bytes and [`MAX_ITEMS`] items; unknown keys are ignored
//! (a newer operator may name limits this agent does not have); a value must be a decimal
//! number from 1 up, and a key given twice keeps its first value. Anything else is an
//! invalid item: described in [`Parsed::invalid`] (short, printable), never an error. Values
//! above the agent's own `--max-*` are clamped to them ([`Limits::clamp`]): the kernel tables
//! are sized for the agent's values.

pub use crate::limits::{JVM_LIMITS_MAX_BYTES as MAX_TEXT, JVM_LIMITS_MAX_ITEMS as MAX_ITEMS};

/// Characters of a refused value quoted in its description.
const SHOWN_CHARS: usize = 32;

/// One JVM's limits; `None`: the agent's own value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// `maxThreadNames`: distinct folded thread names (threads collector).
    pub thread_names: Option<u32>,
    /// `maxMethods`: methods named in `jvmdiag_method_compilations_total`.
    pub methods: Option<u32>,
    /// `maxClasses`: monitor classes named (monitors collector).
    pub classes: Option<u32>,
    /// `threadStartRate`: thread starts per second above which the on-demand starter probe
    /// is attached; the resource's `threadStartRate` alert threshold. Not a table size, so
    /// never clamped.
    pub thread_start_rate: Option<u32>,
    /// `stackSamplesPerSecond`: culprit stacks taken per second at most.
    pub stack_samples: Option<u32>,
}

/// A parse: the limits and what was refused (for logs and the invalid count).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub limits: Limits,
    /// Items refused, each described shortly (bounded: at most MAX_ITEMS + 1 entries).
    pub invalid: Vec<String>,
}

/// The agent's own caps (its `--max-*` flags), the ceiling of every JVM's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub thread_names: u32,
    pub methods: u32,
    pub classes: u32,
    pub stack_samples: u32,
}

/// A value from a container, shortened and printable for a log line.
fn shown(s: &str) -> String {
    let mut out: String =
        s.chars().take(SHOWN_CHARS).map(|c| if c.is_ascii_graphic() { c } else { '?' }).collect();
    if s.chars().nth(SHOWN_CHARS).is_some() {
        out.push('…');
    }
    out
}

fn value(v: &str) -> Option<u32> {
    if v.is_empty() || v.len() > 10 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u32>().ok().filter(|n| *n >= 1)
}

/// Parses a limits text; never fails: what it refuses is in [`Parsed::invalid`].
pub fn parse(text: &str) -> Parsed {
    let mut p = Parsed::default();
    if text.len() > MAX_TEXT {
        p.invalid.push(format!("text longer than {MAX_TEXT} bytes"));
        return p;
    }
    for (i, item) in text.split(',').map(str::trim).filter(|s| !s.is_empty()).enumerate() {
        if i >= MAX_ITEMS {
            p.invalid.push(format!("more than {MAX_ITEMS} items"));
            break;
        }
        let Some((k, v)) = item.split_once('=') else {
            p.invalid.push(format!("{:?}: not key=value", shown(item)));
            continue;
        };
        let slot = match k.trim() {
            "maxThreadNames" => &mut p.limits.thread_names,
            "maxMethods" => &mut p.limits.methods,
            "maxClasses" => &mut p.limits.classes,
            "threadStartRate" => &mut p.limits.thread_start_rate,
            "stackSamplesPerSecond" => &mut p.limits.stack_samples,
            _ => continue, // a limit this agent does not have
        };
        match value(v.trim()) {
            Some(_) if slot.is_some() => p.invalid.push(format!("{}: given twice", k.trim())),
            Some(n) => *slot = Some(n),
            None => p.invalid.push(format!(
                "{}={:?}: not a number from 1 up",
                k.trim(),
                shown(v.trim())
            )),
        }
    }
    p
}

impl Limits {
    /// Every value at most the agent's own.
    pub fn clamp(self, caps: &Caps) -> Limits {
        Limits {
            thread_names: self.thread_names.map(|n| n.min(caps.thread_names)),
            methods: self.methods.map(|n| n.min(caps.methods)),
            classes: self.classes.map(|n| n.min(caps.classes)),
            thread_start_rate: self.thread_start_rate,
            stack_samples: self.stack_samples.map(|n| n.min(caps.stack_samples)),
        }
    }

    /// The values the kernel's `struct jvm_limits` holds (0: the agent's own).
    pub fn words(&self) -> [u32; 4] {
        [
            self.thread_names.unwrap_or(0),
            self.methods.unwrap_or(0),
            self.classes.unwrap_or(0),
            self.stack_samples.unwrap_or(0),
        ]
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn l(t: Option<u32>, m: Option<u32>, c: Option<u32>) -> Limits {
        Limits { thread_names: t, methods: m, classes: c, ..Default::default() }
    }

    #[test]
    fn the_thread_start_rate_threshold_parses_and_is_not_clamped() {
        let p = parse("maxThreadNames=50,threadStartRate=20");
        assert_eq!(p.limits.thread_start_rate, Some(20));
        let caps = Caps { thread_names: 10, methods: 10, classes: 10, stack_samples: 10 };
        assert_eq!(parse("threadStartRate=5000").limits.clamp(&caps).thread_start_rate, Some(5000));
        assert_eq!(parse("threadStartRate=0").invalid.len(), 1);
    }

    #[test]
    fn the_stack_sampling_budget_parses_and_is_clamped_to_the_agents() {
        let caps = Caps { thread_names: 10, methods: 10, classes: 10, stack_samples: 20 };
        let p = parse("stackSamplesPerSecond=5");
        assert_eq!(p.limits.stack_samples, Some(5));
        assert_eq!(p.limits.clamp(&caps).words(), [0, 0, 0, 5]);
        assert_eq!(parse("stackSamplesPerSecond=500").limits.clamp(&caps).stack_samples, Some(20));
        assert_eq!(parse("stackSamplesPerSecond=0").invalid.len(), 1);
    }

    #[test]
    fn the_operators_text_parses() {
        let p = parse("maxThreadNames=50,maxMethods=20,maxClasses=20");
        assert_eq!(p, Parsed { limits: l(Some(50), Some(20), Some(20)), invalid: vec![] });
        assert_eq!(parse(" maxThreadNames = 3 , ").limits, l(Some(3), None, None));
        assert_eq!(parse("").limits, Limits::default());
        assert_eq!(parse(",,,").invalid.len(), 0);
    }

    #[test]
    fn unknown_keys_are_ignored_and_bad_values_counted() {
        let p = parse("maxFutureThings=7,maxThreadNames=5");
        assert_eq!(p.limits, l(Some(5), None, None));
        assert!(p.invalid.is_empty());
        for bad in [
            "maxThreadNames=0",
            "maxThreadNames=-1",
            "maxThreadNames=1e3",
            "maxThreadNames=",
            "maxThreadNames=99999999999",
            "maxThreadNames=0x10",
            "maxThreadNames=+3",
            "maxThreadNames",
            "maxThreadNames=3\n# TYPE x counter",
        ] {
            let p = parse(bad);
            assert_eq!(p.limits.thread_names, None, "{bad:?}");
            assert_eq!(p.invalid.len(), 1, "{bad:?}: {:?}", p.invalid);
        }
        let p = parse("maxMethods=4,maxMethods=400");
        assert_eq!(
            (p.limits.methods, p.invalid.len()),
            (Some(4), 1),
            "a key twice keeps the first"
        );
        assert_eq!(parse("maxMethods=４").invalid.len(), 1, "only ASCII digits");
    }

    #[test]
    fn parsing_is_bounded() {
        let long = format!("maxThreadNames=3,{}", "x".repeat(MAX_TEXT));
        let p = parse(&long);
        assert_eq!((p.limits, p.invalid.len()), (Limits::default(), 1));
        let many = "a=1,".repeat(MAX_ITEMS) + "maxThreadNames=3";
        let p = parse(&many);
        assert_eq!((p.limits.thread_names, p.invalid.len()), (None, 1));
        let shown_bad = parse(&format!("maxClasses={}", "\u{7}".repeat(100)));
        assert!(shown_bad.invalid[0].len() < 120, "{:?}", shown_bad.invalid);
    }

    #[test]
    fn values_are_clamped_to_the_agents_caps() {
        let caps = Caps { thread_names: 50, methods: 20, classes: 20, stack_samples: 20 };
        assert_eq!(l(Some(500), Some(3), None).clamp(&caps), l(Some(50), Some(3), None));
        assert_eq!(l(Some(3), None, Some(100)).clamp(&caps).words(), [3, 0, 20, 0]);
    }
}
