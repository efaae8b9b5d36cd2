//! Renders collected families as Prometheus/OpenMetrics text with `prometheus-client`,
//! adding each JVM's common labels to its series.
use std::collections::HashMap;
use std::fmt::Write as _;

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
    let mut counters = std::collections::HashSet::new();
    for l in om.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            if let Some(name) = rest.strip_suffix(" counter") {
                counters.insert(name.to_string());
            }
        }
    }
    let mut out = String::with_capacity(om.len());
    for l in om.lines() {
        if l == "# EOF" {
            continue;
        }
        let meta = l.strip_prefix("# HELP ").map(|r| ("# HELP ", r)).or_else(|| l.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        match meta {
            Some((kw, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                if counters.contains(name) {
                    let _ = writeln!(out, "{kw}{name}_total {tail}");
                } else {
                    let _ = writeln!(out, "{l}");
                }
            }
            None => {
                let _ = writeln!(out, "{l}");
            }
        }
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
            Value::Histogram(h) => {
                e.encode_histogram::<NoLabelSet>(h.sum_seconds(), h.count, &h.encoder_buckets(), None)
            }
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
                Kind::Counter => (f.name.strip_suffix("_total").unwrap_or(f.name), MetricType::Counter),
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
