//! The agent's logs: `tracing` events on stderr, one line each, with a timestamp and a level,
//! as logfmt (default) or JSON (`--log-format`). `--log-level` takes `RUST_LOG`'s filter
//! syntax (`info`, `debug`, `warn,jvmdiag_agent=debug`) and defaults to `$RUST_LOG`, which
//! is what the chart's `agent.logLevel` sets. libbpf's own messages are routed here too, a
//! level lower than libbpf gives them: its warnings are mostly the expected steps of the
//! fallback chain (no USDT notes in a stripped libjvm.so), which the agent reports itself.
use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `ts=… level=warn target=… msg="…"`
    Logfmt,
    /// One JSON object per line (`timestamp`, `level`, `target`, `message`).
    Json,
}

/// Installs the logger; Err names the flag and the fix.
pub fn init(level: &str, format: Format) -> Result<(), String> {
    let filter = EnvFilter::builder()
        .parse(level)
        .map_err(|e| format!("--log-level {level:?}: {e} (a level such as info, debug or warn, or RUST_LOG's syntax: warn,jvmdiag_agent=debug)"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let installed = match format {
        Format::Json => builder.json().flatten_event(true).try_init(),
        Format::Logfmt => builder.event_format(Logfmt).try_init(),
    };
    installed.map_err(|e| format!("installing the logger: {e}"))?;
    libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, libbpf_message)));
    Ok(())
}

fn libbpf_message(level: libbpf_rs::PrintLevel, msg: String) {
    let msg = msg.trim_end();
    match level {
        libbpf_rs::PrintLevel::Debug => tracing::trace!(target: "libbpf", "{msg}"),
        _ => tracing::debug!(target: "libbpf", "{msg}"),
    }
}

/// logfmt lines: `ts=<RFC 3339> level=<level> target=<module> msg="…" key=value …`.
struct Logfmt;

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut ts = String::new();
        SystemTime.format_time(&mut Writer::new(&mut ts))?;
        let meta = event.metadata();
        let mut line = format!(
            "ts={ts} level={} target={}",
            meta.level().as_str().to_ascii_lowercase(),
            meta.target()
        );
        event.record(&mut Fields(&mut line));
        writeln!(w, "{line}")
    }
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        push_pair(self.0, field.name(), value);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        push_pair(self.0, field.name(), &format!("{value:?}"));
    }
}

/// Appends ` key=value`, the value quoted (and `\`, `"`, newlines escaped) where logfmt needs it.
fn push_pair(out: &mut String, key: &str, value: &str) {
    let key = if key == "message" { "msg" } else { key };
    out.push(' ');
    out.push_str(key);
    out.push('=');
    if !value.is_empty()
        && !value
            .contains(|c: char| c == ' ' || c == '=' || c == '"' || c == '\\' || c.is_control())
    {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logfmt_values_are_quoted_and_escaped_where_needed() {
        let mut s = String::new();
        push_pair(&mut s, "message", "pid 42: no \"libjvm.so\"\nnext");
        push_pair(&mut s, "pid", "42");
        push_pair(&mut s, "path", "");
        assert_eq!(s, r#" msg="pid 42: no \"libjvm.so\"\nnext" pid=42 path="""#);
    }

    #[test]
    fn a_bad_level_names_the_flag() {
        let e = init("info,[", Format::Logfmt).unwrap_err();
        assert!(e.starts_with("--log-level \"info,[\""), "{e}");
    }
}
