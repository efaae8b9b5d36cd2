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
    /// One JSON object per line: `ts`, `level`, `target`, `msg` and the event's fields, the keys
    /// of logfmt (and of the operator's JSON lines).
    Json,
}

/// Installs the logger; Err names the flag and the fix.
pub fn init(level: &str, format: Format) -> Result<(), String> {
    let filter = EnvFilter::builder()
        .parse(level)
        .map_err(|e| format!("--log-level {level:?}: {e} (a level such as info, debug or warn, or RUST_LOG's syntax: warn,jvmdiag_agent=debug)"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let installed = builder.event_format(Line(format)).try_init();
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

/// One line per event, logfmt (`ts=<RFC 3339> level=<level> target=<module> msg="…" key=value …`)
/// or JSON with the same keys (`{"ts":…,"level":"warn","target":…,"msg":…,"pid":42,…}`).
struct Line(Format);

impl<S, N> FormatEvent<S, N> for Line
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
        let level = meta.level().as_str().to_ascii_lowercase();
        let line = match self.0 {
            Format::Logfmt => {
                let mut line = format!("ts={ts} level={level} target={}", meta.target());
                event.record(&mut Fields(&mut line));
                line
            }
            Format::Json => {
                let mut obj = serde_json::Map::new();
                obj.insert("ts".into(), ts.into());
                obj.insert("level".into(), level.into());
                obj.insert("target".into(), meta.target().into());
                event.record(&mut JsonFields(&mut obj));
                serde_json::to_string(&obj).map_err(|_| fmt::Error)?
            }
        };
        writeln!(w, "{line}")
    }
}

/// An event's fields as JSON values: numbers and booleans as such, the rest as strings;
/// `message` is `msg`.
struct JsonFields<'a>(&'a mut serde_json::Map<String, serde_json::Value>);

impl JsonFields<'_> {
    fn put(&mut self, field: &Field, value: serde_json::Value) {
        let key = if field.name() == "message" { "msg" } else { field.name() };
        self.0.insert(key.to_string(), value);
    }
}

impl Visit for JsonFields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
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
    fn json_fields_keep_their_types_and_message_is_msg() {
        let mut obj = serde_json::Map::new();
        let mut f = JsonFields(&mut obj);
        let fields = tracing::field::FieldSet::new(
            &["message", "pid", "ok", "path"],
            tracing::callsite::Identifier(&CALLSITE),
        );
        let mut it = fields.iter();
        let (m, p, o, path) =
            (it.next().unwrap(), it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        f.record_str(&m, "no \"libjvm.so\"\nnext");
        f.record_u64(&p, 42);
        f.record_bool(&o, false);
        f.record_debug(&path, &std::path::Path::new("/x"));
        let line = serde_json::to_string(&obj).unwrap();
        assert_eq!(line, r#"{"msg":"no \"libjvm.so\"\nnext","ok":false,"path":"\"/x\"","pid":42}"#);
    }

    struct Callsite;
    static CALLSITE: Callsite = Callsite;
    impl tracing::callsite::Callsite for Callsite {
        fn set_interest(&self, _: tracing::subscriber::Interest) {}
        fn metadata(&self) -> &tracing::Metadata<'_> {
            unimplemented!()
        }
    }

    #[test]
    fn a_bad_level_names_the_flag() {
        let e = init("info,[", Format::Logfmt).unwrap_err();
        assert!(e.starts_with("--log-level \"info,[\""), "{e}");
    }
}
