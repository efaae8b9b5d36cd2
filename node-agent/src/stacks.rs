//! Culprit stacks (src/bpf/stacks.bpf.h): the walker's layout in, named stacks out.
//!
//! Before a probe that takes stacks is attached to a JVM, [`Stacks::prepare`] reads that JVM's
//! own VMStructs tables and a few of its statics (interpreter, code heaps, call stub, libjvm's
//! thread-local) through `jvmdiag_inspect::hotspot` and writes them into the JVM's slot of
//! `stack_layout`; a JVM whose layout cannot be read gets no stacks (logged once, counted as
//! `no_layout`). At a scrape, [`Stacks::read`] names every counted stack's frames (cached per
//! JVM by pointer and cookie, so a freed and reused `Method*` or nmethod is never named after
//! its new owner) and gives the collapsed lines of `/stacks` and the samples of
//! `jvmdiag_culprit_stack_samples_total` by first application frame.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use anyhow::{Context, Result};
use jvmdiag_inspect::elf;
use jvmdiag_inspect::hotspot::layout::{ProcessStacks, StackLayout};
use jvmdiag_inspect::hotspot::symbolize::{self, BlobKind};
use jvmdiag_inspect::hotspot::vmstructs::{self, Exports};
use jvmdiag_inspect::hotspot::{read_u64, Memory, ProcMem};
use jvmdiag_inspect::limits::ELF_MAX_BYTES;
use jvmdiag_inspect::root::ProcRoot;
use libbpf_rs::{MapCore, MapFlags};

use crate::discovery::Found;
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{Family, Value};
use crate::skel::consts;
use crate::skel::starters::types::{stack_code_heap, stack_key, stack_layout, stack_value};

/// Names kept per JVM in the frame cache before it is cleared.
const NAME_CACHE_MAX: usize = 65_536;

/// `kind` label values, by `enum stack_kind`.
pub const KINDS: [&str; consts::STACK_KINDS as usize] =
    ["thread_start", "vm_operation", "monitor_wait", "monitor_hold", "park"];

/// `outcome` label values of `jvmdiag_agent_stack_walks_total`, by `enum stack_outcome`.
pub const OUTCOMES: [&str; consts::STACK_OUTCOMES as usize] = [
    "taken",
    "truncated",
    "no_token",
    "no_layout",
    "no_thread",
    "no_java_frame",
    "unknown_pc",
    "bad_frame",
    "read_failed",
    "table_full",
];

/// Packages of the JDK itself: the first frame from the top outside them is the stack's
/// application frame.
const JDK_PACKAGES: [&str; 5] = ["java.", "javax.", "jdk.", "sun.", "com.sun."];

/// One line of `/stacks`: `kind;<who>;<frames> count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: &'static str,
    pub slot: u32,
    /// Frames root first, `;`-separated (a cut stack starts with `…truncated`).
    pub frames: String,
    pub count: u64,
}

/// A line of `/stacks` ready to serve, with what its query parameters filter on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub kind: &'static str,
    pub namespace: String,
    pub pod: String,
    pub pid: u32,
    /// `kind;<namespace/pod, or pid=N standalone>;<frames> <count>`.
    pub text: String,
}

impl Line {
    /// The served line for a JVM labelled `labels` (pid: its host pid).
    pub fn served(&self, labels: &crate::labels::JvmLabels, pid: u32) -> Served {
        let who = match labels.scope {
            crate::labels::Scope::Standalone { .. } => format!("pid={pid}"),
            _ => format!("{}/{}", labels.namespace, labels.pod),
        };
        let who: String = who.chars().map(|c| if c == ';' || c.is_whitespace() { '_' } else { c }).collect();
        let text = if self.frames.is_empty() {
            format!("{};{who} {}", self.kind, self.count)
        } else {
            format!("{};{who};{} {}", self.kind, self.frames, self.count)
        };
        Served {
            kind: self.kind,
            namespace: labels.namespace.clone(),
            pod: labels.pod.clone(),
            pid,
            text,
        }
    }
}

/// Which served lines a `/stacks` query wants (`namespace`, `pod`, `kind`, `pid`; each
/// absent: any).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Query {
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub kind: Option<String>,
    pub pid: Option<u32>,
}

impl Query {
    /// Parses a query string; Err names the parameter and what it takes.
    pub fn parse(q: Option<&str>) -> std::result::Result<Query, String> {
        let mut out = Query::default();
        for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v).ok_or_else(|| format!("{k}: not a valid percent-encoded value"))?;
            match k {
                "namespace" => out.namespace = Some(v),
                "pod" => out.pod = Some(v),
                "kind" if KINDS.contains(&v.as_str()) => out.kind = Some(v),
                "kind" => return Err(format!("kind={v}: not one of {}", KINDS.join(", "))),
                "pid" => out.pid = Some(v.parse().map_err(|_| format!("pid={v}: not a process id"))?),
                "seconds" => {
                    return Err("seconds: counts are since the JVM was traced; take two reads and subtract".into())
                }
                _ => return Err(format!("{k}: unknown parameter (namespace, pod, kind, pid)")),
            }
        }
        Ok(out)
    }

    pub fn wants(&self, s: &Served) -> bool {
        self.namespace.as_ref().is_none_or(|n| *n == s.namespace)
            && self.pod.as_ref().is_none_or(|p| *p == s.pod)
            && self.kind.as_ref().is_none_or(|k| k == s.kind)
            && self.pid.is_none_or(|p| p == s.pid)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

struct Jvm {
    pid: u32,
    start: u64,
    layout: StackLayout,
    /// Frame names by (pointer, cookie); None: not nameable (freed, reused, not Java).
    names: HashMap<(u64, u32, u64), Option<String>>,
    /// Application frames named in the metric so far (the rest are `other`).
    named: BTreeSet<String>,
}

#[derive(Default)]
pub struct Stacks {
    jvms: HashMap<u32, Jvm>,
    /// Slots whose layout could not be read, and why (logged once).
    refused: HashMap<u32, String>,
}

impl Stacks {
    /// Reads the JVM's layout and writes it into its slot of `stack_layout`, once per JVM.
    pub fn prepare<M: MapCore>(&mut self, map: &M, slot: u32, found: &Found) -> Result<()> {
        if self.jvms.get(&slot).is_some_and(|j| j.pid == found.pid && j.start == found.start) {
            return Ok(());
        }
        if let Some(why) = self.refused.get(&slot) {
            anyhow::bail!("{why}");
        }
        match read_layout(found) {
            Ok((layout, process)) => {
                let v = kernel_layout(&layout, &process);
                // SAFETY: a plain C struct of integers (generated from stacks.h).
                let bytes = unsafe { plain::as_bytes(&v) };
                map.update(&slot.to_ne_bytes(), bytes, MapFlags::ANY)
                    .context("writing stack_layout")?;
                tracing::info!(
                    pid = found.pid,
                    code_heaps = process.code_heaps.len(),
                    "culprit stacks: layout read from the JVM's VMStructs"
                );
                self.jvms.insert(
                    slot,
                    Jvm {
                        pid: found.pid,
                        start: found.start,
                        layout,
                        names: HashMap::new(),
                        named: BTreeSet::new(),
                    },
                );
                Ok(())
            }
            Err(e) => {
                let why = format!("{e:#}");
                tracing::warn!(pid = found.pid, error = why, "culprit stacks: no layout");
                self.refused.insert(slot, why.clone());
                anyhow::bail!("{why}")
            }
        }
    }

    /// Forgets a released slot: its layout, its stacks and their budget.
    pub fn forget<A: MapCore, B: MapCore, C: MapCore>(
        &mut self,
        slot: u32,
        layout: &A,
        counts: &B,
        held: &C,
    ) {
        self.jvms.remove(&slot);
        self.refused.remove(&slot);
        let zero = stack_layout::default();
        // SAFETY: a plain C struct of integers.
        let bytes = unsafe { plain::as_bytes(&zero) };
        let r = layout
            .update(&slot.to_ne_bytes(), bytes, MapFlags::ANY)
            .map_err(anyhow::Error::from)
            .and_then(|_| {
                maps::forget_where(counts, |k| decode::<stack_key>(k).is_some_and(|k| k.slot == slot))
            })
            .and_then(|_| maps::reset_slot(held, slot));
        if let Err(e) = r {
            tracing::warn!(slot, error = format!("{e:#}"), "culprit stacks: forgetting a slot failed");
        }
    }

    /// Names the counted stacks: the lines of `/stacks` and the metric's samples. `max_frames`:
    /// application frames named per JVM (the rest are `other`).
    pub fn read<M: MapCore>(&mut self, counts: &M, max_frames: u32) -> Result<(Vec<Line>, Family)> {
        let mut lines = Vec::new();
        let mut by_frame: BTreeMap<(u32, &'static str, String), u64> = BTreeMap::new();
        for (k, v) in maps::entries(counts)? {
            let (Some(key), Some(val)) = (decode::<stack_key>(&k), decode::<stack_value>(&v)) else {
                continue;
            };
            let Some(kind) = KINDS.get(key.kind as usize).copied() else { continue };
            let Some(jvm) = self.jvms.get_mut(&key.slot) else { continue };
            let (frames, app) = jvm.name_stack(&val);
            let app = match app {
                Some(f) if jvm.named.contains(&f) => f,
                Some(f) if (jvm.named.len() as u32) < max_frames => {
                    jvm.named.insert(f.clone());
                    f
                }
                Some(_) => "other".to_string(),
                None => "none".to_string(),
            };
            *by_frame.entry((key.slot, kind, app)).or_default() += val.count;
            lines.push(Line { kind, slot: key.slot, frames, count: val.count });
        }
        let mut f = metrics::CULPRIT_STACK_SAMPLES.family();
        for ((slot, kind, frame), n) in by_frame {
            f.jvm(slot, vec![("kind", kind.to_string()), ("frame", frame)], Value::Counter(n));
        }
        lines.sort_by(|a, b| (a.slot, a.kind, &a.frames).cmp(&(b.slot, b.kind, &b.frames)));
        Ok((lines, f))
    }
}

/// `jvmdiag_agent_stack_walks_total{kind, outcome}` from the per-CPU stack_stats (summed).
pub fn walks_family(per_index: &[u64]) -> Family {
    let mut f = metrics::AGENT_STACK_WALKS.family();
    for (i, n) in per_index.iter().enumerate() {
        let (outcome, kind) = (i / KINDS.len(), i % KINDS.len());
        if *n == 0 {
            continue;
        }
        if let (Some(o), Some(k)) = (OUTCOMES.get(outcome), KINDS.get(kind)) {
            f.agent(vec![("kind", k.to_string()), ("outcome", o.to_string())], Value::Counter(*n));
        }
    }
    f
}

impl Jvm {
    /// The frames root first (`;`-joined) and the first application frame from the top.
    fn name_stack(&mut self, v: &stack_value) -> (String, Option<String>) {
        let depth = (v.depth as usize).min(v.frames.len());
        let mut names: Vec<String> = Vec::with_capacity(depth + 1);
        let mut app = None;
        let mem = ProcMem::open(self.pid).ok();
        for f in v.frames.iter().take(depth) {
            let key = (f.ptr, f.cookie, if f.r#type == consts::STACK_FRAME_INTERPRETED { 0 } else { f.at });
            let name = match self.names.get(&key) {
                Some(n) => n.clone(),
                None => {
                    let n = mem.as_ref().and_then(|m| name_frame(m, &self.layout, f.r#type, f.ptr, f.cookie));
                    if self.names.len() >= NAME_CACHE_MAX {
                        self.names.clear();
                    }
                    self.names.insert(key, n.clone());
                    n
                }
            };
            let Some(name) = name else { continue };
            if app.is_none() && !JDK_PACKAGES.iter().any(|p| name.starts_with(p)) {
                app = Some(name.clone());
            }
            names.push(name);
        }
        if v.outcome == consts::STACK_TRUNCATED {
            names.push("…truncated".to_string());
        } else if v.outcome != consts::STACK_TAKEN {
            names.push(format!("…{}", OUTCOMES.get(v.outcome as usize).copied().unwrap_or("stopped")));
        }
        names.reverse();
        (names.join(";"), app)
    }
}

/// `package.Class.method` of a frame; None when it is not a Java method's (a stub, an adapter)
/// or its pointer no longer holds what the walker saw (the cookie differs).
fn name_frame(mem: &dyn Memory, l: &StackLayout, ty: u32, ptr: u64, cookie: u32) -> Option<String> {
    let method = match ty {
        consts::STACK_FRAME_INTERPRETED => {
            let cm = read_u64(mem, ptr.checked_add(u64::from(l.method_const_method))?, "Method").ok()?;
            if cm as u32 != cookie {
                return None;
            }
            ptr
        }
        consts::STACK_FRAME_COMPILED => match symbolize::code_blob(mem, l, ptr).ok()?.kind {
            BlobKind::Nmethod { method, compile_id } if compile_id == cookie => method,
            BlobKind::NativeWrapper { method } => method,
            _ => return None,
        },
        _ => return None,
    };
    let m = symbolize::method_name(mem, l, method).ok()?;
    Some(frame_text(&m.class, &m.name))
}

/// A frame as /stacks prints it: the characters that would break the collapsed format
/// (`;`, spaces, line breaks) replaced.
fn frame_text(class: &str, method: &str) -> String {
    format!("{class}.{method}")
        .chars()
        .map(|c| if c == ';' || c.is_whitespace() || c.is_control() { '_' } else { c })
        .collect()
}

/// The JVM's layout and its process statics, read from its own memory.
fn read_layout(found: &Found) -> Result<(StackLayout, ProcessStacks)> {
    let root = ProcRoot::open(found.pid).context("its root")?;
    let file = root
        .open_file(Path::new(&found.libjvm_path), ELF_MAX_BYTES)
        .context("its libjvm.so")?;
    let syms = elf::symbols_in_file(&file, &Exports::wanted).context("libjvm's symbols")?;
    let tls = elf::thread_tls_in_file(&file)
        .context("libjvm's relocations")?
        .context("libjvm has no Thread::_thr_current symbol (a stripped .symtab) or no TLS relocation")?;
    let bias = found.libjvm_start;
    let exports = Exports::from_symbols(&syms, bias).context("libjvm's VMStructs exports")?;
    let mem = ProcMem::open(found.pid).context("its memory")?;
    let vs = vmstructs::read(&mem, &exports).context("its VMStructs tables")?;
    let layout = StackLayout::resolve(&vs).context("the fields a stack walk needs")?;
    let got = bias.checked_add(tls.dtpmod_got).context("TLS GOT slot overflows")?;
    let process = ProcessStacks::read(&mem, &layout, tls.offset, got).context("its code heaps")?;
    Ok((layout, process))
}

/// The kernel's `struct stack_layout` of a JVM.
fn kernel_layout(l: &StackLayout, p: &ProcessStacks) -> stack_layout {
    let mut v = stack_layout {
        ready: 1,
        tls_module: p.tls_module,
        tls_offset: p.tls_offset,
        interp_low: p.interpreter_start,
        interp_high: p.interpreter_end,
        call_stub_return: p.call_stub_return_address,
        anchor_sp: l.java_thread_anchor + l.anchor_last_java_sp,
        anchor_pc: l.java_thread_anchor + l.anchor_last_java_pc,
        anchor_fp: l.java_thread_anchor + l.anchor_last_java_fp,
        heap_block_size: l.heap_block_size,
        blob_frame_size: l.code_blob_frame_size,
        nmethod_compile_id: l.nmethod_compile_id,
        method_const_method: l.method_const_method,
        ..Default::default()
    };
    for (d, h) in v.heaps.iter_mut().zip(&p.code_heaps) {
        *d = stack_code_heap {
            low: h.low,
            high: h.high,
            segmap: h.segmap,
            log2_segment: h.log2_segment_size,
            pad: 0,
        };
        v.nheaps += 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_never_break_the_collapsed_format() {
        assert_eq!(frame_text("a.B c", "m;x\n"), "a.B_c.m_x_");
        assert_eq!(frame_text("java.lang.Thread", "start0"), "java.lang.Thread.start0");
    }

    #[test]
    fn queries_name_the_bad_parameter() {
        let q = Query::parse(Some("namespace=shop&kind=thread_start&pod=web%2D1")).unwrap();
        assert_eq!(q.pod.as_deref(), Some("web-1"));
        assert!(Query::parse(Some("kind=gc")).unwrap_err().starts_with("kind=gc"));
        assert!(Query::parse(Some("color=red")).unwrap_err().starts_with("color"));
        assert!(Query::parse(Some("pid=x")).is_err());
        let s = Served {
            kind: "thread_start",
            namespace: "shop".into(),
            pod: "web-1".into(),
            pid: 7,
            text: String::new(),
        };
        assert!(q.wants(&s));
        assert!(!Query { pod: Some("web-2".into()), ..q }.wants(&s));
    }

    #[test]
    fn walk_outcomes_are_labelled_by_kind_and_outcome() {
        let mut v = vec![0u64; KINDS.len() * OUTCOMES.len()];
        v[consts::STACK_TAKEN as usize * KINDS.len()] = 7; // thread_start, taken
        v[consts::STACK_NO_TOKEN as usize * KINDS.len() + 4] = 3; // park, no_token
        let f = walks_family(&v);
        assert_eq!(f.samples.len(), 2);
        assert_eq!(f.samples[0].labels, vec![("kind", "thread_start".into()), ("outcome", "taken".into())]);
        assert_eq!(f.samples[1].labels, vec![("kind", "park".into()), ("outcome", "no_token".into())]);
    }
}
