#![no_main]
//! The pod annotation `jvm.diagnostics.dev/limits` (and the sidecar's `JVMDIAG_LIMITS`):
//! whoever may write a pod's annotations chooses it. Never panics; past 512 bytes nothing is
//! looked at; the refusals are bounded (at most MAX_ITEMS + 1, each one short line of
//! printable text, so a log line cannot be forged); every value kept is from 1 up and,
//! clamped, never above the agent's own caps; the kernel words are what was clamped.
use jvmdiag_inspect::jvm_limits::{self as limits, Caps, MAX_ITEMS, MAX_TEXT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let p = limits::parse(&text);
    assert!(p.invalid.len() <= MAX_ITEMS + 1, "{} refusals", p.invalid.len());
    for why in &p.invalid {
        // Each refusal quotes at most 32 characters of the container's text (plus the key,
        // which is one of the three known ones, and a fixed explanation).
        assert!(why.chars().count() <= 120, "refusal too long: {why:?}");
        assert!(!why.chars().any(char::is_control), "control character in a refusal: {why:?}");
    }
    if text.len() > MAX_TEXT {
        assert_eq!(p.limits, limits::Limits::default());
        assert_eq!(p.invalid.len(), 1);
    }
    for v in [p.limits.thread_names, p.limits.methods, p.limits.classes, p.limits.stack_samples]
        .into_iter()
        .flatten()
    {
        assert!(v >= 1);
    }
    let caps = Caps { thread_names: 50, methods: 20, classes: 20, stack_samples: 20 };
    let c = p.limits.clamp(&caps);
    assert!(c.thread_names.is_none_or(|n| (1..=50).contains(&n)));
    assert!(c.methods.is_none_or(|n| (1..=20).contains(&n)));
    assert!(c.classes.is_none_or(|n| (1..=20).contains(&n)));
    assert!(c.stack_samples.is_none_or(|n| (1..=20).contains(&n)));
    assert_eq!(
        c.words(),
        [
            c.thread_names.unwrap_or(0),
            c.methods.unwrap_or(0),
            c.classes.unwrap_or(0),
            c.stack_samples.unwrap_or(0)
        ]
    );
    // Parsing is a function of the text: the same text gives the same limits.
    assert_eq!(limits::parse(&text), p);
});
