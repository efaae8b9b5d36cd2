#![no_main]
//! The monitors collector reads whether `-XX:+DTraceMonitorProbes` is on from the process's
//! environment (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS) and command line, both written by the
//! container. Never panics; the options are bounded by the input (no option is made up:
//! each is a piece of one of the two variables or one launcher argument); the decision is
//! exactly "the last of the flag's spellings wins".
use jvmdiag_agent::collector::monitors::{jvm_options, monitor_probes_enabled};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: where environ ends and cmdline starts (as a fraction of the rest).
    let Some((&cut, rest)) = data.split_first() else { return };
    let at = rest.len() * usize::from(cut) / 255;
    let (environ, cmdline) = rest.split_at(at);
    let opts = jvm_options(environ, cmdline);
    // Lossy UTF-8 at most triples a byte; every option comes from a distinct piece.
    let pieces = environ.len() + cmdline.len() + 1;
    assert!(opts.len() <= pieces);
    assert!(opts.iter().map(String::len).sum::<usize>() <= 3 * (environ.len() + cmdline.len()));
    assert!(opts.iter().all(|o| !o.is_empty() && !o.contains('\0')));
    let on = monitor_probes_enabled(opts.iter().map(String::as_str));
    let last = opts
        .iter()
        .rev()
        .find(|o| matches!(o.as_str(), "-XX:+DTraceMonitorProbes" | "-XX:+ExtendedDTraceProbes" | "-XX:-DTraceMonitorProbes"));
    assert_eq!(on, last.is_some_and(|o| o != "-XX:-DTraceMonitorProbes"));
});
