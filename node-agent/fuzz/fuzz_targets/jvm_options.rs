#![no_main]
//! The monitors collector reads whether `-XX:+DTraceMonitorProbes` is on from the process's
//! environment (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS), its command line and the
//! options files these name (`@argfile`, `-XX:VMOptionsFile=`, `-XX:Flags=`), all written by
//! the container. Never panics; at most OPTIONS_FILES_MAX files are read and
//! OPTIONS_MAX_TOKENS options kept; the decision is exactly "the last of the flag's spellings
//! wins".
use jvmdiag_inspect::limits::{OPTIONS_FILES_MAX, OPTIONS_MAX_TOKENS};
use jvmdiag_inspect::options::{jvm_options, monitor_probes_enabled};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First two bytes: where environ ends and cmdline starts, and where the cmdline ends and
    // the text every options file holds starts (as fractions of the rest).
    let [a, b, rest @ ..] = data else { return };
    let at = rest.len() * usize::from(*a) / 255;
    let (environ, rest) = rest.split_at(at);
    let at = rest.len() * usize::from(*b) / 255;
    let (cmdline, file) = rest.split_at(at);
    let mut reads = 0;
    let opts = jvm_options(environ, cmdline, &mut |_| {
        reads += 1;
        Some(file.to_vec())
    });
    assert!(reads <= OPTIONS_FILES_MAX);
    assert!(opts.len() <= OPTIONS_MAX_TOKENS);
    assert!(opts.iter().all(|o| !o.contains('\0')));
    let on = monitor_probes_enabled(opts.iter().map(String::as_str));
    let last = opts.iter().rev().find(|o| {
        matches!(
            o.as_str(),
            "-XX:+DTraceMonitorProbes" | "-XX:+ExtendedDTraceProbes" | "-XX:-DTraceMonitorProbes"
        )
    });
    assert_eq!(on, last.is_some_and(|o| o != "-XX:-DTraceMonitorProbes"));
});
