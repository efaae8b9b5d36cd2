//! Culprit stacks (src/bpf/stacks.bpf.h): the walker's layout in, named stacks out.
//!
//! The agent creates the maps every object that takes stacks shares ([`Maps`], [`configure`]).
//! Once a JVM is traced, [`Stacks::poll`] reads that JVM's own VMStructs tables and a few of
//! its statics (interpreter, code heaps, call stub, libjvm's thread-local) through
//! `jvmdiag_inspect::hotspot` and writes them into its slot of `stack_layout`; a JVM whose layout
//! cannot be read gets no stacks (logged once, counted as `no_layout`). At a scrape,
//! [`Stacks::read`] names every counted stack's frames once (checked against each frame's
//! cookie, so a freed and reused `Method*` or nmethod is never named after its new owner),
//! takes each entry out of the kernel table (so a JVM's share bounds its new stacks between two
//! reads, not over its life) and adds it to the JVM's [`Totals`]: the collapsed lines of
//! `/stacks` and the samples of `jvmdiag_culprit_stack_samples_total` by the thread's folded
//! name and first application frame; it keeps every line's count every 10 s for `/stacks?seconds=`.
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::mem::size_of;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use jvmdiag_inspect::elf;
use jvmdiag_inspect::hotspot::layout::{CodeStart, ProcessStacks, StackLayout};
use jvmdiag_inspect::hotspot::scopes::{self, ScopesLayout};
use jvmdiag_inspect::hotspot::symbolize::{self, BlobKind};
use jvmdiag_inspect::hotspot::vmstructs::{self, Exports};
use jvmdiag_inspect::hotspot::{read_u64, Memory, ProcMem};
use jvmdiag_inspect::limits::ELF_MAX_BYTES;
use jvmdiag_inspect::root::ProcRoot;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::discovery::Found;
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{c_name, Family, Value};
use crate::skel::consts;
use crate::skel::starters::types::{
    java_frame, stack_code_heap, stack_key, stack_layout, stack_tokens, stack_value,
};

/// Names kept per JVM in the frame cache before it is cleared.
const NAME_CACHE_MAX: usize = 4096;
/// A frame's name at most (characters; a longer one is cut and ends in `…`).
const FRAME_MAX_CHARS: usize = 200;
/// A stack's frames at most (bytes, root first): a longer line loses frames at its root end
/// and starts with `…truncated`. 48 frames of 80 characters fit.
const LINE_MAX_BYTES: usize = 4096;

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

/// Named lines kept per JVM, as a multiple of its share of the kernel table: the table holds a
/// share of distinct stacks between two reads, and over a JVM's life its stacks come and go
/// (start-up, interpreted and compiled variants that name alike or by another line), so a few
/// shares' worth keeps every stack a steady JVM has. Their text is bounded too, by a share of
/// full-length lines: what one JVM's named stacks could hold when the table was never emptied,
/// so a JVM making endless new deep stacks costs no more memory than it did then.
const LINES_PER_SHARE: usize = 4;
/// The frames of the line that counts a JVM's stacks of one kind past its named lines.
pub const MORE_STACKS: &str = "…more_stacks";

/// Packages of the JDK itself: the first frame from the top outside them is the stack's
/// application frame.
const JDK_PACKAGES: [&str; 5] = ["java.", "javax.", "jdk.", "sun.", "com.sun."];

/// One line of `/stacks`: `kind;<who>;<frames> count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: &'static str,
    pub slot: u32,
    /// The JVM's host pid (with kind and frames, the line's key over time).
    pub pid: u32,
    /// Frames root first, `;`-separated (a cut stack starts with `…truncated`).
    pub frames: Arc<str>,
    pub count: u64,
}

/// A line of `/stacks` ready to serve, with what its query parameters filter on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub kind: &'static str,
    pub namespace: String,
    pub pod: String,
    pub pid: u32,
    /// `kind;<namespace/pod, or pid=N standalone>;<frames>`: the line without its count.
    pub text: String,
    /// Samples since the JVM was traced.
    pub count: u64,
    pub key: LineKey,
}

/// A line over time: the JVM's host pid, the kind, the frames.
pub type LineKey = (u32, &'static str, Arc<str>);
/// Every line's count at one moment.
pub type Counts = HashMap<LineKey, u64>;

/// What one render gives `/stacks`: the lines, and earlier counts for `seconds=`.
#[derive(Debug, Default, Clone)]
pub struct Page {
    pub lines: Vec<Served>,
    /// (age, counts then), newest first.
    pub history: Vec<(Duration, Arc<Counts>)>,
}

impl Page {
    /// The counts `seconds` ago (the newest at least that old, else the oldest kept) and their
    /// age; None without any.
    pub fn baseline(&self, seconds: u64) -> Option<(Duration, &Counts)> {
        let want = Duration::from_secs(seconds);
        self.history
            .iter()
            .find(|(age, _)| *age >= want)
            .or(self.history.last())
            .map(|(age, c)| (*age, c.as_ref()))
    }
}

/// How often the counts are kept for `seconds=`, and for how long.
const HISTORY_EVERY: Duration = Duration::from_secs(10);
pub const HISTORY_SPAN: Duration = Duration::from_secs(600);

impl Line {
    /// The served line for a JVM labelled `labels` (pid: its host pid).
    pub fn served(&self, labels: &crate::labels::JvmLabels, pid: u32) -> Served {
        let who = match labels.scope {
            crate::labels::Scope::Standalone { .. } => format!("pid={pid}"),
            _ => format!("{}/{}", labels.namespace, labels.pod),
        };
        let who: String =
            who.chars().map(|c| if c == ';' || c.is_whitespace() { '_' } else { c }).collect();
        let text = if self.frames.is_empty() {
            format!("{};{who}", self.kind)
        } else {
            format!("{};{who};{}", self.kind, self.frames)
        };
        Served {
            kind: self.kind,
            namespace: labels.namespace.clone(),
            pod: labels.pod.clone(),
            pid,
            text,
            count: self.count,
            key: (self.pid, self.kind, self.frames.clone()),
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
    /// Samples of the last `seconds` only.
    pub seconds: Option<u64>,
}

impl Query {
    /// Parses a query string; Err names the parameter and what it takes.
    pub fn parse(q: Option<&str>) -> std::result::Result<Query, String> {
        let mut out = Query::default();
        for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v)
                .ok_or_else(|| format!("{k}: not a valid percent-encoded value"))?;
            match k {
                "namespace" => out.namespace = Some(v),
                "pod" => out.pod = Some(v),
                "kind" if KINDS.contains(&v.as_str()) => out.kind = Some(v),
                "kind" => return Err(format!("kind={v}: not one of {}", KINDS.join(", "))),
                "pid" => {
                    out.pid = Some(v.parse().map_err(|_| format!("pid={v}: not a process id"))?)
                }
                "seconds" => {
                    let max = HISTORY_SPAN.as_secs();
                    out.seconds =
                        Some(v.parse().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
                            format!("seconds={v}: not a number of seconds from 1 to {max}")
                        })?)
                }
                _ => {
                    return Err(format!(
                        "{k}: unknown parameter (namespace, pod, kind, pid, seconds)"
                    ))
                }
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
    /// Where compiled frames' inlined methods are (None: not readable in this JVM).
    scopes: Option<ScopesLayout>,
    /// Frame names by (pointer, cookie); None: not nameable (freed, reused, not Java).
    names: HashMap<(u64, u32, u64), Option<Vec<String>>>,
    /// Each stack named once (its frames never change): by (kind, hash), the line's frames and
    /// the first application frame. Cleared at a share of stacks (a stack seen again is named
    /// again from the frames its new entry holds).
    stacks: HashMap<(u32, u64), (Arc<str>, Option<String>)>,
    /// Application frames named in the metric so far (the rest are `other`).
    named: BTreeSet<String>,
    /// Thread names (folded) named in the metric so far (the rest are `other`).
    threads: BTreeSet<String>,
    /// Its samples since it was traced.
    totals: Totals,
}

/// A JVM's samples since it was traced, by line and by (thread name, first application frame):
/// what the kernel table held at each read, added up (the table is emptied at each read).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Totals {
    /// By (kind, frames), at most `max_lines` of them and `max_bytes` of frames.
    lines: HashMap<(&'static str, Arc<str>), u64>,
    bytes: usize,
    /// By kind: the lines past `max_lines` (one `MORE_STACKS` line each).
    more: BTreeMap<&'static str, u64>,
    /// By (kind, thread name, first application frame), at most `max_lines` of them: names
    /// and frames are bounded already (the JVM's name budget, then `other`), their pairs are
    /// bounded here; a new pair past the bound counts under (kind, `other`, `other`), so every
    /// sample is counted whatever the bounds.
    by_frame: HashMap<(&'static str, String, String), u64>,
    max_lines: usize,
    max_bytes: usize,
}

impl Totals {
    pub fn new(max_lines: usize, max_bytes: usize) -> Totals {
        Totals { max_lines, max_bytes, ..Default::default() }
    }

    /// Adds `n` samples of a stack of `kind` named `frames` with first application frame `app`,
    /// taken in a thread named `thread` (folded).
    pub fn add(
        &mut self,
        kind: &'static str,
        thread: String,
        frames: Arc<str>,
        app: String,
        n: u64,
    ) {
        let mut pair = (kind, thread, app);
        if !self.by_frame.contains_key(&pair) && self.by_frame.len() >= self.max_lines {
            pair = (kind, "other".to_string(), "other".to_string());
        }
        *self.by_frame.entry(pair).or_default() += n;
        let key = (kind, frames);
        if let Some(c) = self.lines.get_mut(&key) {
            *c += n;
        } else if self.lines.len() < self.max_lines && self.bytes + key.1.len() <= self.max_bytes {
            self.bytes += key.1.len();
            self.lines.insert(key, n);
        } else {
            *self.more.entry(kind).or_default() += n;
        }
    }

    /// Every line: (kind, frames, count), the `MORE_STACKS` ones too.
    pub fn lines(&self) -> impl Iterator<Item = (&'static str, Arc<str>, u64)> + '_ {
        let more: Arc<str> = Arc::from(MORE_STACKS);
        self.lines
            .iter()
            .map(|((k, f), n)| (*k, f.clone(), *n))
            .chain(self.more.iter().map(move |(k, n)| (*k, more.clone(), *n)))
    }

    /// Every (kind, thread name, first application frame, count).
    pub fn by_frame(&self) -> impl Iterator<Item = (&'static str, &str, &str, u64)> + '_ {
        self.by_frame.iter().map(|((k, t, f), n)| (*k, t.as_str(), f.as_str(), *n))
    }
}

/// The maps every object that takes stacks shares (stacks.bpf.h), created by the agent.
pub struct Maps {
    table: u32,
    layout: MapHandle,
    tokens: MapHandle,
    held: MapHandle,
    released: MapHandle,
    counts: MapHandle,
    stats: MapHandle,
    /// Distinct stacks per JVM in the table between two reads (--max-stacks-per-jvm).
    share: u32,
}

/// Their descriptors, for the objects to reuse ([`configure`]).
#[derive(Debug)]
pub struct Fds {
    pub layout: OwnedFd,
    pub tokens: OwnedFd,
    pub held: OwnedFd,
    pub released: OwnedFd,
    pub counts: OwnedFd,
    pub stats: OwnedFd,
    /// stack_counts' size: every JVM's share.
    pub table: u32,
}

impl Maps {
    /// Creates them as stacks.bpf.h declares them (a reused map must match in every way), the
    /// stack table with room for `share` stacks of each of `jvms` JVMs.
    pub fn create(jvms: u32, share: u32) -> Result<Maps> {
        let create = |kind, name: &str, key: usize, value: usize, entries: u32, flags: u32| {
            let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
                sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
                map_flags: flags,
                ..Default::default()
            };
            MapHandle::create(kind, Some(name), key as u32, value as u32, entries, &opts)
                .with_context(|| format!("create the {name} map"))
        };
        let table = jvms.saturating_mul(share).clamp(1, STACK_TABLE_MAX);
        let jvms = consts::MAX_JVMS;
        Ok(Maps {
            table,
            layout: create(MapType::Array, "stack_layout", 4, size_of::<stack_layout>(), jvms, 0)?,
            tokens: create(
                MapType::Array,
                "stack_tokens",
                4,
                size_of::<stack_tokens>(),
                jvms * consts::STACK_KINDS,
                0,
            )?,
            held: create(MapType::Array, "stack_held", 4, 4, jvms, 0)?,
            released: create(MapType::Array, "stack_released", 4, 4, jvms, 0)?,
            counts: create(
                MapType::Hash,
                "stack_counts",
                size_of::<stack_key>(),
                size_of::<stack_value>(),
                table,
                libbpf_rs::libbpf_sys::BPF_F_NO_PREALLOC,
            )?,
            stats: create(
                MapType::PercpuArray,
                "stack_stats",
                4,
                8,
                consts::STACK_OUTCOMES * consts::STACK_KINDS,
                0,
            )?,
            share,
        })
    }

    pub fn fds(&self) -> Result<Fds> {
        let dup = |m: &MapHandle| m.as_fd().try_clone_to_owned().context("dup a stack map");
        Ok(Fds {
            layout: dup(&self.layout)?,
            tokens: dup(&self.tokens)?,
            held: dup(&self.held)?,
            released: dup(&self.released)?,
            counts: dup(&self.counts)?,
            stats: dup(&self.stats)?,
            table: self.table,
        })
    }
}

/// Sets an opened object's stack rodata and has it reuse the agent's stack maps; without
/// them (`cfg.stacks` None) its stacks are off.
macro_rules! configure {
    ($open:expr, $fds:expr, $rate:expr, $share:expr) => {{
        use std::os::fd::AsFd as _;
        let ro = $open.maps.rodata_data.as_deref_mut().context("no rodata")?;
        let fds: Option<&$crate::stacks::Fds> = $fds;
        ro.stack_rate = if fds.is_some() { $rate } else { 0 };
        ro.stack_share = $share;
        if let Some(f) = fds {
            $open.maps.stack_layout.reuse_fd(f.layout.as_fd())?;
            $open.maps.stack_tokens.reuse_fd(f.tokens.as_fd())?;
            $open.maps.stack_held.reuse_fd(f.held.as_fd())?;
            $open.maps.stack_released.reuse_fd(f.released.as_fd())?;
            $open.maps.stack_counts.set_max_entries(f.table)?;
            $open.maps.stack_counts.reuse_fd(f.counts.as_fd())?;
            $open.maps.stack_stats.reuse_fd(f.stats.as_fd())?;
        }
    }};
}
pub(crate) use configure;

/// The stack table at most (1,024 JVMs x 256 stacks; ~1.2 KiB each, allocated as used).
const STACK_TABLE_MAX: u32 = 262_144;

/// Reads of a JVM's layout before it is refused: one a poll, so a JVM found a few ms after its
/// start (before its interpreter and code cache are set up) gets its layout at a later poll.
const PREPARE_TRIES: u32 = 10;

/// JVMs whose layout is read per poll at most (each read is a few thousand small reads of the
/// JVM's memory).
const PREPARE_PER_POLL: usize = 4;

pub struct Stacks {
    maps: Maps,
    /// `offsetof(struct task_struct, thread.fsbase)` from the kernel's BTF; None: no stacks.
    task_fsbase: Option<u32>,
    jvms: HashMap<u32, Jvm>,
    /// Slots whose layout could not be read: (pid, start, why, reads tried). Read again at the
    /// next polls up to PREPARE_TRIES times (a JVM found within milliseconds of its start may
    /// not have set up its interpreter or code cache yet), then refused (logged once).
    refused: HashMap<u32, (u32, u64, String, u32)>,
    /// Every line's count every HISTORY_EVERY for HISTORY_SPAN, oldest first (`seconds=`).
    history: VecDeque<(Instant, Arc<Counts>)>,
}

impl Stacks {
    pub fn new(maps: Maps) -> Stacks {
        let task_fsbase = match task_fsbase_offset() {
            Ok(o) => Some(o),
            Err(e) => {
                tracing::warn!(error = format!("{e:#}"), "culprit stacks are off: the kernel's BTF does not say where a task's thread pointer is");
                None
            }
        };
        Stacks {
            maps,
            task_fsbase,
            jvms: HashMap::new(),
            refused: HashMap::new(),
            history: VecDeque::new(),
        }
    }

    /// Forgets released JVMs and reads the layout of new ones (a few per call).
    /// `jvms`: every JVM the agent holds, (slot, what discovery found, live).
    pub fn poll<'a>(&mut self, jvms: impl Iterator<Item = (u32, &'a Found, bool)>) {
        let jvms: Vec<(u32, &Found, bool)> = jvms.collect();
        let holds = |slot: u32, pid: u32, start: u64| {
            jvms.iter().any(|(s, f, _)| *s == slot && f.pid == pid && f.start == start)
        };
        let gone: Vec<u32> = self
            .jvms
            .iter()
            .filter(|(slot, j)| !holds(**slot, j.pid, j.start))
            .map(|(slot, _)| *slot)
            .chain(
                self.refused
                    .iter()
                    .filter(|(slot, (pid, start, _, _))| !holds(**slot, *pid, *start))
                    .map(|(slot, _)| *slot),
            )
            .collect();
        for slot in gone {
            self.forget(slot);
        }
        let Some(fsbase) = self.task_fsbase else { return };
        let new: Vec<(u32, Found)> = jvms
            .iter()
            .filter(|(slot, _, live)| {
                *live
                    && !self.jvms.contains_key(slot)
                    && self.refused.get(slot).is_none_or(|r| r.3 < PREPARE_TRIES)
            })
            .take(PREPARE_PER_POLL)
            .map(|(slot, found, _)| (*slot, (*found).clone()))
            .collect();
        for (slot, found) in new {
            self.prepare(slot, &found, fsbase);
        }
    }

    /// Reads the JVM's layout and writes it into its slot of `stack_layout`.
    fn prepare(&mut self, slot: u32, found: &Found, task_fsbase: u32) {
        let r = read_layout(found).and_then(|(layout, process, scopes)| {
            let mut v = kernel_layout(&layout, &process);
            v.task_fsbase = task_fsbase;
            // SAFETY: a plain C struct of integers (generated from stacks.h).
            let bytes = unsafe { plain::as_bytes(&v) };
            self.maps
                .layout
                .update(&slot.to_ne_bytes(), bytes, MapFlags::ANY)
                .context("writing stack_layout")?;
            Ok((layout, process, scopes))
        });
        match r {
            Ok((layout, process, scopes)) => {
                tracing::info!(
                    pid = found.pid,
                    code_heaps = process.code_heaps.len(),
                    deoptimized_frames = layout.nmethod_deopt.is_some(),
                    past_entry_frames = layout.entry_frame.is_some(),
                    "culprit stacks: layout read from the JVM's VMStructs"
                );
                let share = self.maps.share as usize;
                let jvm = Jvm {
                    pid: found.pid,
                    start: found.start,
                    layout,
                    scopes,
                    names: HashMap::new(),
                    stacks: HashMap::new(),
                    named: BTreeSet::new(),
                    threads: BTreeSet::new(),
                    totals: Totals::new(
                        share.saturating_mul(LINES_PER_SHARE),
                        share.saturating_mul(LINE_MAX_BYTES),
                    ),
                };
                self.refused.remove(&slot);
                self.jvms.insert(slot, jvm);
            }
            Err(e) => {
                let why = format!("{e:#}");
                let tries = self.refused.get(&slot).map_or(0, |r| r.3) + 1;
                if tries == PREPARE_TRIES {
                    tracing::warn!(
                        pid = found.pid,
                        error = why,
                        tries,
                        "culprit stacks: no layout for this JVM"
                    );
                } else {
                    tracing::debug!(
                        pid = found.pid,
                        error = why,
                        tries,
                        "culprit stacks: no layout yet"
                    );
                }
                self.refused.insert(slot, (found.pid, found.start, why, tries));
            }
        }
    }

    /// Forgets a released slot: its layout, its stacks and their budget.
    fn forget(&mut self, slot: u32) {
        self.jvms.remove(&slot);
        self.refused.remove(&slot);
        let m = &self.maps;
        let r = maps::reset_slot(&m.layout, slot)
            .and_then(|_| {
                maps::forget_where(&m.counts, |k| {
                    decode::<stack_key>(k).is_some_and(|k| k.slot == slot)
                })
            })
            .and_then(|_| maps::reset_slot(&m.held, slot))
            .and_then(|_| maps::reset_slot(&m.released, slot));
        if let Err(e) = r {
            tracing::warn!(
                slot,
                error = format!("{e:#}"),
                "culprit stacks: forgetting a slot failed"
            );
        }
    }

    /// `jvmdiag_agent_stack_walks_total`.
    pub fn walks(&self) -> Result<Family> {
        Ok(walks_family(&maps::read_stats(&self.maps.stats)?))
    }

    /// Takes the counted stacks out of the kernel table, names them and adds them to their
    /// JVM's totals; gives every JVM's lines of `/stacks` and the metric's samples.
    /// `max_frames`: application frames, and thread names, named per JVM (the rest are `other`).
    pub fn read(&mut self, max_frames: u32) -> Result<(Vec<Line>, Family)> {
        // What was taken before a failure is in the totals: serve them all the same.
        if let Err(e) = self.drain(max_frames) {
            tracing::warn!(error = format!("{e:#}"), "culprit stacks: draining the table failed");
        }
        let mut lines: BTreeMap<(u32, &'static str, Arc<str>), (u32, u64)> = BTreeMap::new();
        let mut by_frame: BTreeMap<(u32, &'static str, String, String), u64> = BTreeMap::new();
        for (slot, jvm) in &self.jvms {
            for (kind, frames, n) in jvm.totals.lines() {
                lines.insert((*slot, kind, frames), (jvm.pid, n));
            }
            for (kind, thread, frame, n) in jvm.totals.by_frame() {
                by_frame.insert((*slot, kind, thread.to_string(), frame.to_string()), n);
            }
        }
        let mut f = metrics::CULPRIT_STACK_SAMPLES.family();
        for ((slot, kind, thread, frame), n) in by_frame {
            let labels =
                vec![("kind", kind.to_string()), ("thread_name", thread), ("frame", frame)];
            f.jvm(slot, labels, Value::Counter(n));
        }
        let lines: Vec<Line> = lines
            .into_iter()
            .map(|((slot, kind, frames), (pid, count))| Line { kind, slot, pid, frames, count })
            .collect();
        self.remember(&lines, Instant::now());
        Ok((lines, f))
    }

    /// Takes every entry out of stack_counts, adds its count to its JVM's totals, and releases
    /// the entries taken from each JVM's share. Each entry is looked up and deleted at once, so
    /// an increment is either in the count taken or in an entry BPF makes anew, never lost.
    fn drain(&mut self, max_frames: u32) -> Result<()> {
        // Keys first: deleting while walking a hash map's keys may restart the walk.
        let keys: Vec<Vec<u8>> = self.maps.counts.keys().collect();
        let mut taken: HashMap<u32, u32> = HashMap::new();
        let mut failed = None;
        for k in keys {
            let v = match self.maps.counts.lookup_and_delete(&k) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let Some(key) = decode::<stack_key>(&k) else { continue };
            *taken.entry(key.slot).or_default() += 1;
            let Some(val) = decode::<stack_value>(&v) else { continue };
            let Some(kind) = KINDS.get(key.kind as usize).copied() else { continue };
            let Some(jvm) = self.jvms.get_mut(&key.slot) else { continue };
            let (frames, app) = match jvm.stacks.get(&(key.kind, key.hash)) {
                Some(named) => named.clone(),
                None => {
                    let (frames, app) = jvm.name_stack(&val);
                    let named = (Arc::<str>::from(frames), app);
                    if jvm.stacks.len() >= self.maps.share as usize {
                        jvm.stacks.clear();
                    }
                    jvm.stacks.insert((key.kind, key.hash), named.clone());
                    named
                }
            };
            if frames.is_empty() {
                continue; // no frame could be named (the JVM exited before): nothing to show
            }
            let app = match app {
                Some(f) if jvm.named.contains(&f) => f,
                Some(f) if (jvm.named.len() as u32) < max_frames => {
                    jvm.named.insert(f.clone());
                    f
                }
                Some(_) => "other".to_string(),
                None => "none".to_string(),
            };
            // Folded and at most COMM_LEN - 1 bytes in the kernel; past the budget: other.
            let thread = c_name(&val.thread_name);
            let thread = if jvm.threads.contains(&thread) {
                thread
            } else if (jvm.threads.len() as u32) < max_frames {
                jvm.threads.insert(thread.clone());
                thread
            } else {
                "other".to_string()
            };
            // Stacks that differ only where the names do not show (bci, pc) are one line.
            jvm.totals.add(kind, thread, frames, app, val.count);
        }
        // Only user space writes stack_released, so this read-add-write races with nothing.
        for (slot, n) in taken {
            let key = slot.to_ne_bytes();
            let was =
                self.maps.released.lookup(&key, MapFlags::ANY)?.and_then(|v| decode::<u32>(&v));
            let now = was.unwrap_or(0).wrapping_add(n);
            self.maps.released.update(&key, &now.to_ne_bytes(), MapFlags::ANY)?;
        }
        match failed {
            Some(e) => Err(e).context("taking an entry out of stack_counts"),
            None => Ok(()),
        }
    }

    /// True when the counts are due to be kept again (the loop reads them then, so a window
    /// does not depend on how often /metrics is scraped).
    pub fn history_due(&self, now: Instant) -> bool {
        self.history.back().is_none_or(|(t, _)| now.duration_since(*t) >= HISTORY_EVERY)
    }

    /// Keeps the lines' counts every HISTORY_EVERY, for HISTORY_SPAN.
    fn remember(&mut self, lines: &[Line], now: Instant) {
        if !self.history_due(now) {
            return;
        }
        let counts: Counts =
            lines.iter().map(|l| ((l.pid, l.kind, l.frames.clone()), l.count)).collect();
        self.history.push_back((now, Arc::new(counts)));
        while self.history.front().is_some_and(|(t, _)| now.duration_since(*t) > HISTORY_SPAN) {
            self.history.pop_front();
        }
    }

    /// The counts kept, with their age, newest first.
    pub fn history(&self, now: Instant) -> Vec<(Duration, Arc<Counts>)> {
        self.history.iter().rev().map(|(t, c)| (now.duration_since(*t), c.clone())).collect()
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
            let key = (f.ptr, f.cookie, f.at);
            let named = match self.names.get(&key) {
                Some(n) => n.clone(),
                None => {
                    let n = mem
                        .as_ref()
                        .and_then(|m| name_frame(m, &self.layout, self.scopes.as_ref(), f));
                    if self.names.len() >= NAME_CACHE_MAX {
                        self.names.clear();
                    }
                    self.names.insert(key, n.clone());
                    n
                }
            };
            // A compiled frame names its inlined methods too, innermost first.
            for name in named.into_iter().flatten() {
                if app.is_none() && !JDK_PACKAGES.iter().any(|p| name.starts_with(p)) {
                    app = Some(without_line(&name).to_string());
                }
                names.push(name);
            }
        }
        let mut cut = v.outcome == consts::STACK_TRUNCATED;
        // Top first: keep the frames that fit, the culprit's end.
        let mut len = 0;
        let keep = names
            .iter()
            .take_while(|n| {
                len += n.len() + 1;
                len <= LINE_MAX_BYTES
            })
            .count();
        if keep < names.len() {
            names.truncate(keep);
            cut = true;
        }
        if cut {
            names.push("…truncated".to_string());
        } else if v.outcome != consts::STACK_TAKEN {
            names.push(format!(
                "…{}",
                OUTCOMES.get(v.outcome as usize).copied().unwrap_or("stopped")
            ));
        }
        names.reverse();
        (names.join(";"), app)
    }
}

/// `package.Class.method` of a frame; None when it is not a Java method's (a stub, an adapter)
/// or its pointer no longer holds what the walker saw (the cookie differs).
fn name_frame(
    mem: &dyn Memory,
    l: &StackLayout,
    sl: Option<&ScopesLayout>,
    f: &java_frame,
) -> Option<Vec<String>> {
    match f.r#type {
        consts::STACK_FRAME_INTERPRETED => {
            let cm = read_u64(mem, f.ptr.checked_add(u64::from(l.method_const_method))?, "Method")
                .ok()?;
            if cm as u32 != f.cookie {
                return None;
            }
            let bci = symbolize::bci(mem, l, cm, f.at).ok().flatten();
            Some(vec![method_text(mem, l, f.ptr, bci, false)?])
        }
        consts::STACK_FRAME_COMPILED => match symbolize::code_blob(mem, l, f.ptr).ok()?.kind {
            BlobKind::Nmethod { method, compile_id } if compile_id == f.cookie => {
                // Innermost first; every scope but the nmethod's own method was inlined.
                let chain = sl
                    .and_then(|sl| scopes::inlined(mem, sl, f.ptr, f.at).ok())
                    .unwrap_or_default();
                if chain.is_empty() {
                    return Some(vec![method_text(mem, l, method, None, false)?]);
                }
                let last = chain.len() - 1;
                chain
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        method_text(mem, l, s.method, u32::try_from(s.bci).ok(), i < last)
                    })
                    .collect()
            }
            BlobKind::NativeWrapper { method } => {
                Some(vec![method_text(mem, l, method, None, false)?])
            }
            _ => None,
        },
        _ => None,
    }
}

/// `package.Class.method`, `:line` where the bci has one, `_[i]` when inlined.
fn method_text(
    mem: &dyn Memory,
    l: &StackLayout,
    method: u64,
    bci: Option<u32>,
    inlined: bool,
) -> Option<String> {
    let m = symbolize::method_name(mem, l, method).ok()?;
    let mut name = frame_text(&m.class, &m.name);
    let line = bci.and_then(|bci| {
        let cm =
            read_u64(mem, method.checked_add(u64::from(l.method_const_method))?, "Method").ok()?;
        symbolize::line_number(mem, l, cm, bci).ok().flatten()
    });
    if let Some(n) = line {
        name.push_str(&format!(":{n}"));
    }
    if inlined {
        name.push_str("_[i]");
    }
    Some(name)
}

/// A frame's `package.Class.method`, without the `:line` and `_[i]` /stacks adds where known.
fn without_line(frame: &str) -> &str {
    let frame = frame.strip_suffix("_[i]").unwrap_or(frame);
    match frame.rsplit_once(':') {
        Some((m, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => m,
        _ => frame,
    }
}

/// A frame as /stacks prints it: the characters that would break the collapsed format
/// (`;`, spaces, line breaks) replaced.
fn frame_text(class: &str, method: &str) -> String {
    let full = format!("{class}.{method}");
    let mut out: String = full
        .chars()
        .take(FRAME_MAX_CHARS)
        .map(|c| if c == ';' || c.is_whitespace() || c.is_control() { '_' } else { c })
        .collect();
    if full.chars().nth(FRAME_MAX_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Where a task's user thread pointer (x86-64 FS base) is kept: `task_struct.thread.fsbase`.
fn task_fsbase_offset() -> Result<u32> {
    use libbpf_rs::btf::types::{MemberAttr, Struct};
    use libbpf_rs::btf::Btf;
    let btf = Btf::from_vmlinux().context("reading /sys/kernel/btf/vmlinux")?;
    let member = |ty: &str, name: &str| -> Result<u32> {
        let s: Struct<'_> = btf.type_by_name(ty).with_context(|| format!("no struct {ty}"))?;
        let m = s
            .iter()
            .find(|m| m.name.and_then(|n| n.to_str()) == Some(name))
            .with_context(|| format!("no {ty}.{name}"))?;
        match m.attr {
            MemberAttr::Normal { offset } if offset % 8 == 0 => Ok(offset / 8),
            _ => anyhow::bail!("{ty}.{name} is a bit field"),
        }
    };
    Ok(member("task_struct", "thread")? + member("thread_struct", "fsbase")?)
}

/// The JVM's layout and its process statics, read from its own memory.
fn read_layout(found: &Found) -> Result<(StackLayout, ProcessStacks, Option<ScopesLayout>)> {
    let root = ProcRoot::open(found.pid).context("its root")?;
    let file =
        root.open_file(Path::new(&found.libjvm_path), ELF_MAX_BYTES).context("its libjvm.so")?;
    let syms = elf::symbols_in_file(&file, &Exports::wanted).context("libjvm's symbols")?;
    let tls = elf::thread_tls_in_file(&file).context("libjvm's relocations")?.context(
        "libjvm has no Thread::_thr_current symbol (a stripped .symtab) or no TLS relocation",
    )?;
    let bias = found.libjvm_start;
    let exports = Exports::from_symbols(&syms, bias).context("libjvm's VMStructs exports")?;
    let mem = ProcMem::open(found.pid).context("its memory")?;
    let vs = vmstructs::read(&mem, &exports).context("its VMStructs tables")?;
    let layout = StackLayout::resolve(&vs).context("the fields a stack walk needs")?;
    if layout.nmethod_deopt.is_none() {
        tracing::info!(
            pid = found.pid,
            "culprit stacks: the JVM does not export its deopt handlers or _orig_pc_offset; a deoptimized compiled frame is named by its method only, without the methods inlined into it"
        );
    }
    let got = bias.checked_add(tls.dtpmod_got).context("TLS GOT slot overflows")?;
    let process = ProcessStacks::read(&mem, &layout, tls.offset, got).context("its code heaps")?;
    // Without it compiled frames are named by their nmethod's own method only.
    let scopes = ScopesLayout::resolve(&vs)
        .and_then(|mut sl| sl.read_coding(&mem).map(|_| sl))
        .map_err(|e| tracing::info!(pid = found.pid, error = %e, "culprit stacks: inlined frames not named"))
        .ok();
    Ok((layout, process, scopes))
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
    if let Some(e) = &l.entry_frame {
        v.entry_known = 1;
        v.entry_wrapper_slot = e.call_wrapper_slot;
        v.wrapper_anchor_sp = e.wrapper_anchor + l.anchor_last_java_sp;
        v.wrapper_anchor_pc = e.wrapper_anchor + l.anchor_last_java_pc;
        v.wrapper_anchor_fp = e.wrapper_anchor + l.anchor_last_java_fp;
    }
    if let Some(d) = &l.nmethod_deopt {
        let (handler, offsets) = match d.handler {
            CodeStart::Address(o) => (o, false),
            CodeStart::Offset(o) => (o, true),
        };
        v.deopt_flags = consts::STACK_DEOPT_KNOWN;
        if offsets {
            v.deopt_flags |= consts::STACK_DEOPT_OFFSETS;
        }
        v.deopt_handler = handler;
        v.orig_pc_offset = d.orig_pc_offset;
        // The walker reads both handlers alike: a method handle handler of the other kind is
        // left out (no JDK has one).
        if let (Some(CodeStart::Address(o)), false) | (Some(CodeStart::Offset(o)), true) =
            (d.mh_handler, offsets)
        {
            v.deopt_mh_handler = o;
            v.deopt_flags |= consts::STACK_DEOPT_MH_HANDLER;
        }
    }
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

    fn sorted<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
        let mut v: Vec<T> = items.collect();
        v.sort();
        v
    }

    #[test]
    fn frames_never_break_the_collapsed_format() {
        assert_eq!(frame_text("a.B c", "m;x\n"), "a.B_c.m_x_");
        assert_eq!(frame_text("java.lang.Thread", "start0"), "java.lang.Thread.start0");
        assert_eq!(without_line("a.B.m:12"), "a.B.m");
        assert_eq!(without_line("a.B.m"), "a.B.m");
        assert_eq!(without_line("a.B.m:7_[i]"), "a.B.m");
        let long = frame_text(&"a".repeat(500), "m");
        assert_eq!(long.chars().count(), FRAME_MAX_CHARS + 1);
        assert!(long.ends_with('…'));
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
            count: 1,
            key: (7, "thread_start", Arc::from("")),
        };
        assert!(q.wants(&s));
        assert!(!Query { pod: Some("web-2".into()), ..q }.wants(&s));
    }

    #[test]
    fn a_window_subtracts_the_counts_kept_nearest_that_long_ago() {
        assert_eq!(Query::parse(Some("seconds=60")).unwrap().seconds, Some(60));
        assert!(Query::parse(Some("seconds=0")).unwrap_err().starts_with("seconds=0"));
        assert!(Query::parse(Some("seconds=601")).is_err());
        let key: LineKey = (7, "park", Arc::from("a.B.run;a.B.m"));
        let at = |n: u64| Arc::new(Counts::from([(key.clone(), n)]));
        let page = Page {
            lines: vec![],
            history: vec![
                (Duration::from_secs(5), at(90)),
                (Duration::from_secs(65), at(40)),
                (Duration::from_secs(125), at(10)),
            ],
        };
        let (age, then) = page.baseline(60).unwrap();
        assert_eq!((age.as_secs(), then[&key]), (65, 40));
        // Nothing kept that long ago: the oldest, and its age says so.
        assert_eq!(page.baseline(300).unwrap().0.as_secs(), 125);
        assert!(Page::default().baseline(60).is_none());
    }

    #[test]
    fn the_kernel_layout_says_where_a_deoptimized_frame_saved_its_pc() {
        use jvmdiag_inspect::hotspot::{fake::fake_jvm, vmstructs, DeoptLayout};
        let f = fake_jvm(&[]);
        let mem = f.image.mem();
        let vs = vmstructs::read(&mem, &f.exports).unwrap();
        let mut l = StackLayout::resolve(&vs).unwrap();
        let p = ProcessStacks::read(&mem, &l, 0x20, f.tls_got).unwrap();
        let (known, offsets, mh) = (
            consts::STACK_DEOPT_KNOWN,
            consts::STACK_DEOPT_OFFSETS,
            consts::STACK_DEOPT_MH_HANDLER,
        );
        // JDK 11 to 21: the handlers' addresses.
        let k = kernel_layout(&l, &p);
        assert_eq!(k.deopt_flags, known | mh);
        assert_eq!((k.deopt_handler, k.deopt_mh_handler, k.orig_pc_offset), (0x98, 0xa0, 0x134));
        // JDK 25: their offsets from the nmethod.
        let d = DeoptLayout {
            handler: CodeStart::Offset(0xb8),
            mh_handler: Some(CodeStart::Offset(0xbc)),
            orig_pc_offset: 0xd4,
        };
        l.nmethod_deopt = Some(d);
        let k = kernel_layout(&l, &p);
        assert_eq!(k.deopt_flags, known | offsets | mh);
        assert_eq!((k.deopt_handler, k.deopt_mh_handler, k.orig_pc_offset), (0xb8, 0xbc, 0xd4));
        // The walker reads both handlers alike: one of the other kind is left out.
        l.nmethod_deopt = Some(DeoptLayout { mh_handler: Some(CodeStart::Address(0xa0)), ..d });
        let k = kernel_layout(&l, &p);
        assert_eq!((k.deopt_flags, k.deopt_mh_handler), (known | offsets, 0));
        // Not exported: the walker does not look.
        l.nmethod_deopt = None;
        assert_eq!(kernel_layout(&l, &p).deopt_flags, 0);
    }

    #[test]
    fn totals_add_up_what_each_read_drains_by_thread_name() {
        let mut t = Totals::new(8, 1000);
        let a: Arc<str> = Arc::from("a.B.run;a.B.m");
        t.add("park", "qtpN-N".into(), a.clone(), "a.B.m".into(), 5);
        // The same Java stack, another entry (compiled after the first read): one line.
        t.add("park", "qtpN-N".into(), a.clone(), "a.B.m".into(), 3);
        // The same stack in another pool: the same line, its own samples in the metric.
        t.add("park", "pool-N-thread-N".into(), a.clone(), "a.B.m".into(), 4);
        t.add("monitor_wait", "qtpN-N".into(), a.clone(), "a.B.m".into(), 2);
        let lines = sorted(t.lines());
        assert_eq!(lines, vec![("monitor_wait", a.clone(), 2), ("park", a.clone(), 12)]);
        let frames = sorted(t.by_frame());
        assert_eq!(
            frames,
            vec![
                ("monitor_wait", "qtpN-N", "a.B.m", 2),
                ("park", "pool-N-thread-N", "a.B.m", 4),
                ("park", "qtpN-N", "a.B.m", 8),
            ]
        );
    }

    #[test]
    fn totals_past_their_lines_count_in_one_more_stacks_line_per_kind() {
        let mut t = Totals::new(2, 1000);
        let line = |i: u32| Arc::<str>::from(format!("a.B.m{i}"));
        t.add("park", "p".into(), line(0), "a.B.m0".into(), 1);
        t.add("park", "p".into(), line(1), "other".into(), 1);
        // Past the bound: new lines are counted by kind, never kept.
        for i in 2..1000 {
            t.add("park", "p".into(), line(i), "other".into(), 1);
        }
        t.add("monitor_wait", "p".into(), line(5000), "other".into(), 4);
        // A kept line still counts.
        t.add("park", "p".into(), line(0), "a.B.m0".into(), 6);
        let lines = sorted(t.lines());
        let more = Arc::<str>::from(MORE_STACKS);
        assert_eq!(
            lines,
            vec![
                ("monitor_wait", more.clone(), 4),
                ("park", line(0), 7),
                ("park", line(1), 1),
                ("park", more, 998),
            ]
        );
        // Every sample is in the metric: past the bound on (thread, frame) pairs, a new pair
        // counts under (other, other), a kept one still counts under its own.
        let frames = sorted(t.by_frame());
        assert_eq!(
            frames,
            vec![
                ("monitor_wait", "other", "other", 4),
                ("park", "p", "a.B.m0", 7),
                ("park", "p", "other", 999),
            ]
        );
        assert_eq!(t.lines.len(), 2);
        t.add("park", "q".into(), line(0), "a.B.m0".into(), 5);
        t.add("park", "p".into(), line(0), "a.B.m0".into(), 1);
        let frames = sorted(t.by_frame());
        assert_eq!(
            frames,
            vec![
                ("monitor_wait", "other", "other", 4),
                ("park", "other", "other", 5),
                ("park", "p", "a.B.m0", 8),
                ("park", "p", "other", 999),
            ]
        );
        // Their text is bounded too: a long line past it counts as more.
        let mut t = Totals::new(8, 10);
        t.add("park", "p".into(), Arc::from("a.B.m"), "a.B.m".into(), 1);
        t.add("park", "p".into(), Arc::from("a.B.run;a.B.m"), "a.B.m".into(), 2);
        t.add("park", "p".into(), Arc::from("c.D.m"), "c.D.m".into(), 3);
        let lines = sorted(t.lines().map(|(k, f, n)| (k, f.to_string(), n)));
        let want = [("park", "a.B.m", 1), ("park", "c.D.m", 3), ("park", MORE_STACKS, 2)];
        assert_eq!(lines, want.map(|(k, f, n)| (k, f.to_string(), n)));
    }

    #[test]
    fn walk_outcomes_are_labelled_by_kind_and_outcome() {
        let mut v = vec![0u64; KINDS.len() * OUTCOMES.len()];
        v[consts::STACK_TAKEN as usize * KINDS.len()] = 7; // thread_start, taken
        v[consts::STACK_NO_TOKEN as usize * KINDS.len() + 4] = 3; // park, no_token
        let f = walks_family(&v);
        assert_eq!(f.samples.len(), 2);
        assert_eq!(
            f.samples[0].labels,
            vec![("kind", "thread_start".into()), ("outcome", "taken".into())]
        );
        assert_eq!(
            f.samples[1].labels,
            vec![("kind", "park".into()), ("outcome", "no_token".into())]
        );
    }
}
