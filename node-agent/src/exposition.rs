//! Renders collected families as Prometheus/OpenMetrics text with `prometheus-client`,
//! adding each JVM's common labels to its series.
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use hyper::body::Bytes;

use prometheus_client::collector::Collector as PcCollector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::labels::JvmLabels;
use crate::model::{Family, Kind, Value};

pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Content negotiation as Prometheus does it: OpenMetrics when the scraper asks for it
/// (Prometheus 2.x does), the classic text format otherwise (curl, promtool).
pub fn negotiate(accept: Option<&str>) -> &'static str {
    match accept {
        Some(a) if a.contains("application/openmetrics-text") => OPENMETRICS,
        _ => PROMETHEUS_TEXT,
    }
}

/// OpenMetrics text -> Prometheus text 0.0.4: counter families are named with their
/// `_total` suffix in HELP/TYPE (as their samples are), and there is no `# EOF`.
pub fn to_prometheus_text(om: &str) -> String {
    let chunks = prometheus_text_chunks(&Bytes::copy_from_slice(om.as_bytes()));
    String::from_utf8_lossy(&chunks.concat()).into_owned()
}

/// [`to_prometheus_text`] as slices of `om` (no copy of the page) and the few lines that
/// differ: a scrape's page is megabytes with hundreds of JVMs, and its HELP/TYPE lines are
/// a few hundred bytes of it.
pub fn prometheus_text_chunks(om: &Bytes) -> Vec<Bytes> {
    let Ok(text) = std::str::from_utf8(om) else { return vec![om.clone()] };
    let counters: HashSet<&str> =
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter")).collect();
    let mut out = Vec::new();
    let (mut kept_from, mut at) = (0, 0);
    for line in text.split_inclusive('\n') {
        let l = line.strip_suffix('\n').unwrap_or(line);
        let meta = l
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| l.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        let replaced = match meta {
            _ if l == "# EOF" => Some(Bytes::new()),
            Some((kw, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                counters.contains(name).then(|| Bytes::from(format!("{kw}{name}_total {tail}\n")))
            }
            None if !line.ends_with('\n') => Some(Bytes::from(format!("{l}\n"))),
            None => None,
        };
        if let Some(r) = replaced {
            if at > kept_from {
                out.push(om.slice(kept_from..at));
            }
            if !r.is_empty() {
                out.push(r);
            }
            kept_from = at + line.len();
        }
        at += line.len();
    }
    if at > kept_from {
        out.push(om.slice(kept_from..at));
    }
    out
}

/// One scrape's worth of families plus the labels of every JVM they mention.
#[derive(Debug)]
struct Snapshot {
    families: Vec<Family>,
    jvms: HashMap<u32, Vec<(&'static str, String)>>,
}

#[derive(Debug)]
struct One<'a>(&'a Value);

impl EncodeMetric for One<'_> {
    fn encode(&self, mut e: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self.0 {
            Value::Counter(v) => e.encode_counter::<NoLabelSet, _, u64>(v, None),
            Value::CounterF(v) => e.encode_counter::<NoLabelSet, _, u64>(v, None),
            Value::Gauge(v) => e.encode_gauge(v),
            Value::Histogram(h) => e.encode_histogram::<NoLabelSet>(
                h.sum_seconds(),
                h.count,
                &h.encoder_buckets(),
                None,
            ),
        }
    }
    fn metric_type(&self) -> MetricType {
        match self.0 {
            Value::Counter(_) | Value::CounterF(_) => MetricType::Counter,
            Value::Gauge(_) => MetricType::Gauge,
            Value::Histogram(_) => MetricType::Histogram,
        }
    }
}

impl PcCollector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.families {
            let (name, ty) = match f.kind {
                // The encoder appends `_total` to counter samples itself.
                Kind::Counter => {
                    (f.name.strip_suffix("_total").unwrap_or(f.name), MetricType::Counter)
                }
                Kind::Gauge => (f.name, MetricType::Gauge),
                Kind::Histogram => (f.name, MetricType::Histogram),
            };
            let mut me = encoder.encode_descriptor(name, f.help, None, ty)?;
            if let [only] = f.samples.as_slice() {
                if only.slot.is_none() && only.labels.is_empty() {
                    One(&only.value).encode(me)?; // a plain `name value` line
                    continue;
                }
            }
            for s in &f.samples {
                let mut labels: Vec<(&'static str, String)> = match s.slot {
                    Some(slot) => match self.jvms.get(&slot) {
                        Some(l) => l.clone(),
                        None => continue, // the JVM is gone and already reported
                    },
                    None => Vec::new(),
                };
                labels.extend(s.labels.iter().cloned());
                for (_, v) in &mut labels {
                    if let std::borrow::Cow::Owned(e) = escape_label_value(v) {
                        *v = e;
                    }
                }
                One(&s.value).encode(me.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// A label value as the text formats require it (`\\`, `\"` and `\n` escaped): values come
/// from containers (thread, method and jar names, hsperfdata strings), and `prometheus-client`
/// writes label values as given, so a quote or a newline would end the value and let a
/// container write lines of its choosing into the node's scrape.
pub fn escape_label_value(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut out = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Renders families; `jvms` maps slot -> that JVM's labels. Samples of slots without labels
/// (released JVMs) are dropped, families of the same name merged, empty families omitted.
pub fn render(families: Vec<Family>, jvms: &HashMap<u32, JvmLabels>) -> String {
    let mut merged: Vec<Family> = Vec::new();
    for mut f in families {
        f.samples.retain(|s| s.slot.is_none_or(|slot| jvms.contains_key(&slot)));
        match merged.iter_mut().find(|m| m.name == f.name) {
            Some(m) => m.samples.append(&mut f.samples),
            None => merged.push(f),
        }
    }
    let snap = Snapshot {
        families: merged.into_iter().filter(|f| !f.samples.is_empty()).collect(),
        jvms: jvms.iter().map(|(k, v)| (*k, v.pairs())).collect(),
    };
    let mut reg = Registry::default();
    reg.register_collector(Box::new(snap));
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &reg).is_err() {
        out.clear();
        let _ = writeln!(out, "# EOF");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prometheus_text_form_is_slices_of_the_page_but_the_lines_that_differ() {
        let om = "# HELP a A counter.\n# TYPE a counter\na_total{x=\"1\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1.5\ng{y=\"2\"} 2\n# EOF\n";
        let page = Bytes::from(om.to_string());
        let chunks = prometheus_text_chunks(&page);
        let text = String::from_utf8(chunks.concat()).unwrap();
        assert_eq!(text, "# HELP a_total A counter.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n# HELP g A gauge.\n# TYPE g gauge\ng 1.5\ng{y=\"2\"} 2\n");
        let inside = |c: &Bytes| page.as_ptr_range().contains(&c.as_ptr());
        let borrowed: usize = chunks.iter().filter(|c| inside(c)).map(|c| c.len()).sum();
        assert_eq!(
            borrowed,
            text.len() - "# HELP a_total A counter.\n# TYPE a_total counter\n".len(),
            "only the counter's two lines are new"
        );
        assert_eq!(to_prometheus_text("x 1"), "x 1\n", "a last line without its newline gets one");
    }
}
