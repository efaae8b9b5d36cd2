//! The text of a JVM options file a container wrote: a launcher `@argfile`, a
//! `-XX:VMOptionsFile=` file or a `-XX:Flags=` file. All three are words separated by white
//! space; a word may be quoted (`"…"` or `'…'`, the quotes removed, white space kept), and a
//! `#` that starts a word comments out the rest of the line. Escapes inside quotes and line
//! continuations (which only the launcher knows) are taken literally: an option spelled with
//! them is not recognised, never made up.
//!
//! [`jvm_options`] puts together the options of a whole process as HotSpot applies them: its
//! environment and command line (both the container's) with the files they name.
use std::collections::HashMap;

use crate::limits::{OPTIONS_FILES_MAX, OPTIONS_MAX_TOKENS};

/// The words of an options file, at most `max` of them (and never more than
/// [`OPTIONS_MAX_TOKENS`]); invalid UTF-8 becomes U+FFFD. Never panics.
pub fn words(text: &[u8], max: usize) -> Vec<String> {
    let max = max.min(OPTIONS_MAX_TOKENS);
    let mut out = Vec::new();
    let mut word: Vec<u8> = Vec::new();
    let mut in_word = false;
    let mut quote: Option<u8> = None;
    let mut comment = false;
    for &b in text {
        if out.len() >= max {
            return out;
        }
        if comment {
            comment = b != b'\n' && b != b'\r';
            continue;
        }
        if let Some(q) = quote {
            if b == 0 {
                // A NUL ends the word even inside quotes (no option holds one; C stops there).
                out.push(String::from_utf8_lossy(&word).into_owned());
                word.clear();
                in_word = false;
                quote = None;
            } else if b == q {
                quote = None;
            } else {
                word.push(b);
            }
            continue;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | 0 => {
                if in_word {
                    out.push(String::from_utf8_lossy(&word).into_owned());
                    word.clear();
                    in_word = false;
                }
            }
            b'#' if !in_word => comment = true,
            b'"' | b'\'' => {
                quote = Some(b);
                in_word = true;
            }
            _ => {
                word.push(b);
                in_word = true;
            }
        }
    }
    if in_word && out.len() < max {
        out.push(String::from_utf8_lossy(&word).into_owned());
    }
    out
}

/// Whether `-XX:+DTraceMonitorProbes` is in effect for these JVM options, in the order the
/// JVM reads them ([`jvm_options`]; the last spelling wins). `-XX:+ExtendedDTraceProbes`
/// turns it on too.
pub fn monitor_probes_enabled<'a>(options: impl IntoIterator<Item = &'a str>) -> bool {
    let mut on = false;
    for o in options {
        match o {
            "-XX:+DTraceMonitorProbes" | "-XX:+ExtendedDTraceProbes" => on = true,
            "-XX:-DTraceMonitorProbes" => on = false,
            _ => {}
        }
    }
    on
}

/// Reads an options file a JVM names (`@argfile`, `-XX:VMOptionsFile=`, `-XX:Flags=`), by the
/// path as the JVM sees it; `None` when it cannot be read.
pub type ReadOptionsFile<'r> = dyn FnMut(&str) -> Option<Vec<u8>> + 'r;

/// The JVM options of a process (its `/proc/PID/environ` and `/proc/PID/cmdline`, both NUL
/// separated), in the order HotSpot applies them: the `-XX:Flags=` file (each of its words is
/// an option without `-XX:`), `JAVA_TOOL_OPTIONS`, the launcher's options
/// (`JDK_JAVA_OPTIONS`, then the command line up to the main class or jar: application
/// arguments after it are not JVM options), with each `@argfile` and the
/// `-XX:VMOptionsFile=` file expanded in place, then `_JAVA_OPTIONS`. At most
/// [`OPTIONS_FILES_MAX`] files are read (through `read`) and [`OPTIONS_MAX_TOKENS`] options
/// kept; an `@argfile` inside a file is not expanded (nor does the launcher), nor are any after
/// `--disable-@files`; `@@x` is the literal argument `@x`. Never panics.
pub fn jvm_options(environ: &[u8], cmdline: &[u8], read: &mut ReadOptionsFile<'_>) -> Vec<String> {
    let env: HashMap<&[u8], &[u8]> = environ
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let mut parts = kv.splitn(2, |&b| b == b'=');
            Some((parts.next()?, parts.next()?))
        })
        .collect();
    let var = |name: &[u8]| -> Vec<String> {
        env.get(name)
            .map(|v| {
                String::from_utf8_lossy(v)
                    .split_whitespace()
                    .take(OPTIONS_MAX_TOKENS)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut files = 0usize;
    let mut read_words = |path: &str, prefix: &str| -> Vec<String> {
        if files >= OPTIONS_FILES_MAX {
            return Vec::new();
        }
        files += 1;
        read(path)
            .map(|t| {
                words(&t, OPTIONS_MAX_TOKENS).into_iter().map(|w| format!("{prefix}{w}")).collect()
            })
            .unwrap_or_default()
    };
    let tool = var(b"JAVA_TOOL_OPTIONS");
    let java = var(b"_JAVA_OPTIONS");
    // The launcher's words: JDK_JAVA_OPTIONS, then argv[1..], each @argfile replaced by its words.
    let mut launcher_words: Vec<String> = Vec::new();
    let mut expand = true;
    let argv = cmdline
        .split(|&b| b == 0)
        .skip(1)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned());
    for w in var(b"JDK_JAVA_OPTIONS").into_iter().chain(argv) {
        if launcher_words.len() >= OPTIONS_MAX_TOKENS {
            break;
        }
        if w == "--disable-@files" {
            expand = false;
        }
        match w.strip_prefix('@') {
            Some(rest) if rest.starts_with('@') => launcher_words.push(rest.to_string()),
            Some(path) if expand && !path.is_empty() => launcher_words.extend(read_words(path, "")),
            _ => launcher_words.push(w),
        }
    }
    let mut launcher = Vec::new();
    let mut args = launcher_words.into_iter();
    while let Some(a) = args.next() {
        if !a.starts_with('-') || a == "-jar" || a == "-m" || a == "--module" {
            break;
        }
        let takes_value = matches!(
            a.as_str(),
            "-cp" | "-classpath" | "--class-path" | "-p" | "--module-path" | "--add-modules"
        );
        if let Some(path) = a.strip_prefix("-XX:VMOptionsFile=") {
            let inner = read_words(path, "");
            launcher.push(a);
            launcher.extend(inner);
        } else {
            launcher.push(a);
        }
        if takes_value {
            args.next();
        }
    }
    let flags_file = tool
        .iter()
        .chain(&launcher)
        .chain(&java)
        .filter_map(|o| o.strip_prefix("-XX:Flags="))
        .next_back()
        .map(str::to_string);
    let mut out = flags_file.map(|f| read_words(&f, "-XX:")).unwrap_or_default();
    out.extend(tool);
    out.extend(launcher);
    out.extend(java);
    out.truncate(OPTIONS_MAX_TOKENS);
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn opts_with(environ: &str, cmdline: &str, files: &[(&str, &str)]) -> bool {
        let mut read =
            |p: &str| files.iter().find(|(n, _)| *n == p).map(|(_, t)| t.as_bytes().to_vec());
        let o = jvm_options(
            environ.replace(' ', "\0").replace('|', " ").as_bytes(),
            cmdline.replace(' ', "\0").as_bytes(),
            &mut read,
        );
        monitor_probes_enabled(o.iter().map(String::as_str))
    }

    fn opts(environ: &str, cmdline: &str) -> bool {
        opts_with(environ, cmdline, &[])
    }

    #[test]
    fn words_quotes_and_comments() {
        let t = b"# options\n-Xmx1g  -XX:+DTraceMonitorProbes\t\"-Dname=a b\" '' -cp app.jar#x\n  # -XX:-DTraceMonitorProbes\nMain";
        assert_eq!(
            words(t, 100),
            ["-Xmx1g", "-XX:+DTraceMonitorProbes", "-Dname=a b", "", "-cp", "app.jar#x", "Main"]
        );
        assert_eq!(words(b"+DTraceMonitorProbes\n", 100), ["+DTraceMonitorProbes"]);
        assert_eq!(words(b"a b c", 2), ["a", "b"]);
        assert_eq!(words(b"\"unterminated", 9), ["unterminated"]);
        assert_eq!(words(b"\"a\0b\" c", 9), ["a", "b c"], "a NUL ends a quoted word");
        assert!(words(b"", 9).is_empty());
    }

    #[test]
    fn the_flag_comes_from_the_environment_and_the_launcher_the_last_one_wins() {
        assert!(opts("JAVA_TOOL_OPTIONS=-Xmx1g|-XX:+DTraceMonitorProbes", "java Main"));
        assert!(opts("JDK_JAVA_OPTIONS=-XX:+DTraceMonitorProbes", "java -cp x Main"));
        assert!(opts("", "java -XX:+DTraceMonitorProbes -cp a.jar Main"));
        assert!(opts("", "java -XX:+ExtendedDTraceProbes -jar a.jar"));
        assert!(!opts(
            "JAVA_TOOL_OPTIONS=-XX:+DTraceMonitorProbes",
            "java -XX:-DTraceMonitorProbes Main"
        ));
        assert!(
            !opts("", "java Main -XX:+DTraceMonitorProbes"),
            "an application argument is not a JVM option"
        );
        assert!(!opts("", "java -jar app.jar -XX:+DTraceMonitorProbes"));
        assert!(!opts("OTHER=-XX:+DTraceMonitorProbes", "java Main"));
        assert!(!opts("", ""));
        // _JAVA_OPTIONS comes after the command line.
        assert!(opts(
            "_JAVA_OPTIONS=-XX:+DTraceMonitorProbes",
            "java -XX:-DTraceMonitorProbes Main"
        ));
        assert!(!opts(
            "_JAVA_OPTIONS=-XX:-DTraceMonitorProbes",
            "java -XX:+DTraceMonitorProbes Main"
        ));
    }

    #[test]
    fn the_flag_comes_from_argfiles_and_options_files_in_place() {
        let files = [
            ("app.args", "# JVM options\n-Xmx1g -XX:+DTraceMonitorProbes\n-cp app.jar Main -XX:-DTraceMonitorProbes"),
            ("/etc/jvm/off.args", "-XX:-DTraceMonitorProbes"),
            ("vm.options", "-Xss1m\n-XX:+DTraceMonitorProbes"),
            ("/flags", "+DTraceMonitorProbes\n"),
            ("flags.off", "-DTraceMonitorProbes"),
            ("nested.args", "@app.args"),
        ];
        let on = |env: &str, cmd: &str| opts_with(env, cmd, &files);
        assert!(on("", "java @app.args"), "an @argfile's options, up to its main class");
        assert!(
            on("", "java @app.args @/etc/jvm/off.args"),
            "after the main class: an application argument, not read"
        );
        assert!(
            !on("", "java -XX:+DTraceMonitorProbes @/etc/jvm/off.args Main"),
            "in place: the later one wins"
        );
        assert!(!on("", "java --disable-@files @app.args Main"));
        assert!(!on("", "java @@app.args"), "@@ is a literal argument");
        assert!(!on("", "java @nested.args Main"), "argfiles do not nest");
        assert!(!on("", "java @missing.args Main"));
        assert!(on("JDK_JAVA_OPTIONS=@app.args", "java Main"));
        assert!(on("", "java -XX:VMOptionsFile=vm.options -cp x Main"));
        assert!(!on("", "java -XX:VMOptionsFile=vm.options -XX:-DTraceMonitorProbes Main"));
        // -XX:Flags= is read before every other source, from wherever it is named.
        assert!(on("", "java -XX:Flags=/flags Main"));
        assert!(on("JAVA_TOOL_OPTIONS=-XX:Flags=/flags", "java Main"));
        assert!(!on("", "java -XX:Flags=/flags -XX:-DTraceMonitorProbes Main"));
        assert!(on("", "java -XX:Flags=flags.off -XX:+DTraceMonitorProbes Main"));
        assert!(!on("", "java -XX:Flags=flags.off Main"));
    }

    #[test]
    fn options_files_read_are_bounded() {
        let mut reads = 0;
        let cmd = format!("java{}\0Main", "\0@a".repeat(100));
        let opts = jvm_options(b"", cmd.as_bytes(), &mut |_| {
            reads += 1;
            Some(b"-Xmx1g".to_vec())
        });
        assert_eq!(reads, OPTIONS_FILES_MAX);
        assert_eq!(opts.len(), OPTIONS_FILES_MAX);
    }
}
