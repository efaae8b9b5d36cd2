//! The text of a JVM options file a container wrote: a launcher `@argfile`, a
//! `-XX:VMOptionsFile=` file or a `-XX:Flags=` file. All three are words separated by white
//! space; a word may be quoted (`"…"` or `'…'`, the quotes removed, white space kept), and a
//! `#` that starts a word comments out the rest of the line. Escapes inside quotes and line
//! continuations (which only the launcher knows) are taken literally: an option spelled with
//! them is not recognised, never made up.
use crate::limits::OPTIONS_MAX_TOKENS;

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

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

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
}
