//! Attach manager: per-JVM state, and each traced JVM's own links.
//!
//! Every link carries the JVM's pid (libbpf's pid-filtered uprobe_multi links), so the kernel
//! installs breakpoints in the traced processes alone. A uprobe lives on the file, and every
//! container built on one JDK layer maps the same real file: probes attached for every process
//! (pid -1) would make each of them trap on every thread start, park and contended enter, traced
//! or not. Only the collectors the JVM's pod asked for are attached; the BPF programs still
//! count only processes in `traced_pids` (host tgid -> slot and the collectors it wants,
//! `traced_pids_value`). A JVM's entry is added when it is found; when it exits its links go
//! at once, its series are exposed once more, then its map entries and slot are released.
//! The identity of the real file behind its libjvm.so (`file_identity`: the file under an
//! overlay or bind mount) names the JDK build it runs (`jvmdiag_agent_libjvm_files`).
//!
//! The container's libjvm.so path is untrusted: it is opened inside the process's root
//! (`ProcRoot::open_file`, no escape through symlinks), the real file behind it must be the
//! one the mapping names (its (dev, inode) the mapping's where the kernel cannot say), and
//! libbpf gets `/proc/self/fd/N` — the very file the JVM maps. The check is made again after
//! the attach: a container that copied its libjvm.so up into its own layer since the JVM
//! mapped it would otherwise have its probes on a file the JVM does not run.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use jvmdiag_inspect::hsperfdata;
use jvmdiag_inspect::limits::{ELF_MAX_BYTES, HSPERFDATA_MAX_BYTES};
use jvmdiag_inspect::root::ProcRoot;
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType};

use crate::capacity::{self, NamespaceIds, Refusal, Waiting};
use crate::collector::{Collector, Target, REGISTRY};
use crate::discovery::{self, FileId, Found};
use crate::file_identity::FileIdentity;
use crate::labels::JvmLabels;
use crate::metrics::ProbeMode;
use crate::probe::FileFacts;
use crate::skel::consts::NO_NAMESPACE;
use crate::skel::threads::types::jvm_limits;
use jvmdiag_inspect::jvm_limits::{Caps, Limits};

/// Slots of the per-JVM arrays (src/bpf/jvm.h); a `traced_pids` value holds the slot in
/// its low SLOT_BITS and above them one bit per collector (`Registration::bit`).
pub use crate::skel::consts::{MAX_JVMS, SLOT_BITS};
const _: () = assert!(MAX_JVMS <= 1 << SLOT_BITS);

/// Default of `--max-jvms-per-namespace`: a quarter of the node's slots, at least 64
/// (256 of 1,024), so one namespace starting many JVMs cannot take every slot.
pub const fn default_max_jvms_per_namespace(slots: u32) -> u32 {
    if slots / 4 > 64 {
        slots / 4
    } else {
        64
    }
}

/// The `traced_pids` value of a JVM in `slot` that wants these collectors (None: all).
pub fn traced_pids_value(slot: u32, wanted: Option<&[&str]>) -> u32 {
    REGISTRY
        .iter()
        .filter(|r| wanted.is_none_or(|w| w.contains(&r.name)))
        .fold(slot, |v, r| v | r.bit())
}
/// An exited JVM that nobody scrapes is released after this long anyway.
const EXITED_GRACE: Duration = Duration::from_secs(120);
/// How long to look for a JVM's hsperfdata mapping after attaching (it may be disabled).
const HSPERF_LOOKUP: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JvmState {
    Live,
    /// Exited at that instant; `reported` once a scrape has shown its final values.
    Exited {
        at: Instant,
        reported: bool,
    },
}

pub struct Jvm {
    pub found: Found,
    /// Its libjvm.so as the kernel sees it (the real file under overlays and bind mounts).
    pub file: FileId,
    pub slot: u32,
    pub labels: JvmLabels,
    pub state: JvmState,
    /// How it is probed; None once it turns out to have neither probes nor hsperfdata.
    pub probe_mode: Option<ProbeMode>,
    /// (java_version, vendor) from hsperfdata, once read.
    pub info: Option<(String, String)>,
    /// Collectors that could not attach to this JVM's libjvm.so (src/fallback.rs fills in).
    pub missing: Vec<&'static str>,
    /// Its limits as applied (the pod's annotation, `--jvm-limits`), clamped to the agent's.
    pub limits: Limits,
    pidfd: Option<OwnedFd>,
    attached_at: Instant,
    /// Its probes (pid-filtered); dropped, hence detached, as soon as it exits.
    links: Vec<Link>,
    /// Duplicates of those links' kernel descriptors: the release, which waits for a grace
    /// period, happens when these are closed, off the main loop (`probe::detach`).
    kernel_links: Vec<OwnedFd>,
}

pub struct AttachManager {
    pub collectors: Vec<Box<dyn Collector>>,
    traced_pids: MapHandle,
    /// Per libjvm.so file a traced JVM runs: what the collectors read from it once.
    facts: HashMap<FileId, FileFacts>,
    /// Names a mapping's real file; None where the kernel cannot (then `maps` identities).
    identity: Option<FileIdentity>,
    pub jvms: BTreeMap<u32, Jvm>,
    free_slots: Vec<u32>,
    /// Attach failures by reason (and collector where one failed alone).
    pub failures: BTreeMap<(String, String), u64>,
    /// Pids (and start times) that failed to attach or were not selected (not looked at
    /// again by discovery while that process lives; those refused for capacity wait in
    /// `waiting` for a slot).
    failed: HashMap<u32, u64>,
    /// JVMs refused for capacity, offered the slots that free ([`AttachManager::retry_waiting`]).
    waiting: Waiting<Found>,
    /// Polls at which the waiting JVMs are offered the free slots: two after a release (the
    /// second for a JVM that was offered one and did not take it after all), then none.
    recheck: u8,
    /// Who may take a slot (`capacity::admit`): the namespace share and reserve.
    capacity: capacity::Rule,
    /// Each slot's namespace id (Kubernetes mode), mirrored into `slot_namespace`.
    namespace_ids: NamespaceIds,
    /// The map every object with in-flight tables reuses (inflight.bpf.h `slot_namespace`).
    slot_namespace: Option<MapHandle>,
    /// Why each pid in `failed` is not traced (jvmdiag_agent_jvms_untraced).
    pub untraced: HashMap<u32, String>,
    host: String,
    /// `--match-jvm`: only JVMs whose name contains this.
    pub match_jvm: Option<String>,
    /// JVMs attached since start.
    pub seen: u64,
    /// Time spent in `attach_jvm` since start (jvmdiag_agent_attach_seconds_total).
    pub attach_time: Duration,
    /// The per-slot limits every collector object reuses (common.bpf.h `jvm_limits`).
    jvm_limits: Option<MapHandle>,
    /// The agent's own `--max-*`: the ceiling of every JVM's limits.
    pub caps: Option<Caps>,
}

/// A map every collector object reuses in place of its own declaration: `MAX_JVMS` entries
/// of u32 keys (pids or slots).
fn shared_map(kind: MapType, name: &str, value_size: u32) -> Result<MapHandle> {
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    MapHandle::create(kind, Some(name), 4, value_size, MAX_JVMS, &opts)
        .with_context(|| format!("create the {name} map"))
}

/// The `traced_pids` map every collector object reuses (declared in common.bpf.h).
pub fn create_traced_pids() -> Result<MapHandle> {
    shared_map(MapType::Hash, "traced_pids", 4)
}

/// The `jvm_limits` map every collector object reuses (declared in common.bpf.h).
pub fn create_jvm_limits() -> Result<MapHandle> {
    shared_map(MapType::Array, "jvm_limits", std::mem::size_of::<jvm_limits>() as u32)
}

/// The `slot_namespace` map every object with in-flight tables reuses (inflight.bpf.h).
pub fn create_slot_namespace() -> Result<MapHandle> {
    shared_map(MapType::Array, "slot_namespace", 4)
}

/// The kernel's value of a JVM's limits (0: the agent's own).
fn limits_value(l: &Limits) -> Vec<u8> {
    let [thread_names, methods, classes, stacks] = l.words();
    let v = jvm_limits { thread_names, methods, classes, stacks };
    // SAFETY: a plain C struct of integers (generated from common.bpf.h).
    unsafe { plain::as_bytes(&v) }.to_vec()
}

impl AttachManager {
    /// Gives the manager the `jvm_limits` map (`create_jvm_limits`) the collectors reuse.
    pub fn with_jvm_limits(mut self, map: MapHandle, caps: Caps) -> Self {
        self.jvm_limits = Some(map);
        self.caps = Some(caps);
        self
    }

    /// Uses only the first `n` JVM slots (`--max-jvms`): the per-JVM tables are sized for them.
    pub fn with_max_jvms(mut self, n: u32) -> Self {
        self.free_slots = (0..n.min(MAX_JVMS)).rev().collect();
        self
    }

    pub fn new(collectors: Vec<Box<dyn Collector>>, traced_pids: MapHandle, host: String) -> Self {
        AttachManager {
            collectors,
            traced_pids,
            facts: HashMap::new(),
            identity: match FileIdentity::load() {
                Ok(fi) => Some(fi),
                Err(e) => {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        "JVMs are grouped by the device and inode /proc/PID/maps shows, so containers \
                         sharing a JDK image layer are attached (and counted) once each"
                    );
                    None
                }
            },
            jvms: BTreeMap::new(),
            free_slots: (0..MAX_JVMS).rev().collect(),
            failures: BTreeMap::new(),
            failed: HashMap::new(),
            waiting: Waiting::default(),
            recheck: 0,
            capacity: capacity::Rule::for_slots(MAX_JVMS, default_max_jvms_per_namespace(MAX_JVMS)),
            namespace_ids: NamespaceIds::new(MAX_JVMS),
            slot_namespace: None,
            untraced: HashMap::new(),
            host,
            match_jvm: None,
            seen: 0,
            attach_time: Duration::ZERO,
            jvm_limits: None,
            caps: None,
        }
    }

    /// Pids discovery should not look at again.
    pub fn known(&self) -> HashSet<u32> {
        self.jvms.keys().copied().chain(self.failed.keys().copied()).collect()
    }

    pub fn links(&self) -> usize {
        self.jvms.values().map(|j| j.links.len()).sum()
    }
    /// Distinct libjvm.so files (real files) the live JVMs run.
    pub fn files(&self) -> usize {
        let live = self.jvms.values().filter(|j| j.state == JvmState::Live);
        live.map(|j| j.file).collect::<HashSet<_>>().len()
    }
    pub fn live(&self) -> usize {
        self.jvms.values().filter(|j| j.state == JvmState::Live).count()
    }
    pub fn traced_pids_entries(&self) -> usize {
        self.traced_pids.keys().count()
    }

    /// Counts a failure in `jvmdiag_agent_attach_failures_total` (a capacity refusal once per
    /// process: a waiting JVM refused again at a retry is not counted again) and names it in
    /// `jvmdiag_agent_jvms_untraced` (the reason of its last refusal).
    fn fail(&mut self, pid: u32, start: u64, reason: &str, collector: &str) {
        let capacity = Refusal::of_reason(reason).is_some();
        if !(capacity && self.waiting.contains(pid, start)) {
            *self.failures.entry((reason.to_string(), collector.to_string())).or_default() += 1;
        }
        if !capacity {
            self.waiting.remove(pid); // failed otherwise at its retry: not retried again
        }
        self.failed.insert(pid, start);
        self.untraced.insert(pid, reason.to_string());
    }

    /// Slots held by the JVMs labelled with this namespace (exited ones until released).
    pub fn slots_held_by(&self, namespace: &str) -> usize {
        self.jvms.values().filter(|j| j.labels.namespace == namespace).count()
    }

    /// The capacity rules (`--max-jvms-per-namespace` and the reserve), applied to JVMs with
    /// a namespace (Kubernetes mode).
    pub fn with_capacity(mut self, rule: capacity::Rule) -> Self {
        self.capacity = rule;
        self
    }

    /// Gives the manager the `slot_namespace` map (`create_slot_namespace`) the objects with
    /// in-flight tables reuse: it writes each slot's namespace id there.
    pub fn with_slot_namespace(mut self, map: MapHandle) -> Self {
        self.slot_namespace = Some(map);
        self
    }

    /// The id of the namespace holding `slot` (NO_NAMESPACE: none, or standalone mode).
    pub fn namespace_id(&self, slot: u32) -> u32 {
        self.namespace_ids.of_slot(slot)
    }

    /// Writes a slot's namespace id into `slot_namespace` (NO_NAMESPACE clears it).
    fn write_slot_namespace(&self, slot: u32, id: u32) {
        if let Some(m) = &self.slot_namespace {
            if let Err(e) = m.update(&slot.to_ne_bytes(), &id.to_ne_bytes(), MapFlags::ANY) {
                tracing::warn!(slot, error = %e, "slot_namespace update failed: its namespace share does not apply");
            }
        }
    }

    /// Refuses a JVM for capacity: it waits for a slot ([`AttachManager::retry_waiting`]),
    /// counted at its first refusal only.
    fn refuse_capacity(&mut self, found: &Found, refusal: Refusal, namespace: Option<&str>) {
        self.fail(found.pid, found.start, refusal.reason(), ""); // counted unless waiting
        self.waiting.refused(found.pid, found.start, namespace, found.clone());
    }

    /// Starts tracing a JVM found by discovery if the capacity rules let it take a slot
    /// (`capacity::admit`; `namespace`: its pod's, None in standalone mode), else it waits for
    /// one and the refusal is returned. In Kubernetes mode the slot gets its namespace's id
    /// before the JVM's `traced_pids` entry, so its first begin in an in-flight table already
    /// counts for its namespace.
    pub fn try_add(
        &mut self,
        found: Found,
        wanted: Option<&[&str]>,
        limits: Limits,
        namespace: Option<&str>,
    ) -> Option<Refusal> {
        let pid = found.pid;
        if self.jvms.contains_key(&pid) {
            return None;
        }
        let selected = self.match_jvm.as_ref().is_none_or(|m| found.name.contains(m.as_str()));
        if selected {
            let held = namespace.map(|ns| self.slots_held_by(ns));
            if let Err(refusal) = capacity::admit(self.capacity, self.free_slots.len(), held) {
                self.refuse_capacity(&found, refusal, namespace);
                return Some(refusal);
            }
        }
        // The slot add_limited takes is the last free one.
        let slot = self.free_slots.last().copied().filter(|_| selected);
        if let (Some(slot), Some(ns)) = (slot, namespace) {
            let id = self.namespace_ids.assign(slot, ns).unwrap_or(NO_NAMESPACE);
            self.write_slot_namespace(slot, id);
        }
        self.add_limited(found, wanted, limits);
        let taken = self.jvms.get(&pid).map(|j| j.slot);
        if let (Some(slot), Some(ns)) = (slot, namespace) {
            if taken != Some(slot) {
                // Not traced (or in another slot): the slot is free again, without namespace.
                self.namespace_ids.release(slot);
                self.write_slot_namespace(slot, NO_NAMESPACE);
                if let Some(other) = taken {
                    let id = self.namespace_ids.assign(other, ns).unwrap_or(NO_NAMESPACE);
                    self.write_slot_namespace(other, id);
                }
            }
        }
        if taken.is_some() {
            // Traced: no longer waiting, failed or untraced (a retried JVM).
            self.waiting.remove(pid);
            self.failed.remove(&pid);
            self.untraced.remove(&pid);
        }
        None
    }

    /// The JVMs refused for capacity to offer the slots free now: only at the two polls after
    /// a slot was released, and only those the rules let in (`Waiting::pick`: the namespaces
    /// holding the fewest slots first, then the oldest refusal), so a retry costs no I/O but
    /// the attach itself. The caller offers them again (`try_add`, or the Kubernetes
    /// attributor, which decides their pod again); one refused again waits on, not counted
    /// again.
    pub fn retry_waiting(&mut self) -> Vec<Found> {
        if self.recheck == 0 || self.waiting.is_empty() {
            self.recheck = 0;
            return Vec::new();
        }
        self.recheck -= 1;
        let mut held: HashMap<String, usize> = HashMap::new();
        for j in self.jvms.values() {
            *held.entry(j.labels.namespace.clone()).or_default() += 1;
        }
        let offered = self.waiting.pick(self.capacity, self.free_slots.len(), &held);
        if offered.is_empty() {
            self.recheck = 0; // nobody may have the free slots: until the next release
        }
        offered.into_iter().map(|(_, f)| f).collect()
    }

    /// Starts tracing a JVM found by discovery with the collectors it wants (None: every
    /// loaded one); failures are counted, never fatal.
    pub fn add(&mut self, found: Found, wanted: Option<&[&str]>) {
        self.add_limited(found, wanted, Limits::default())
    }

    /// [`AttachManager::add`] with the JVM's own limits (its pod's `jvm.diagnostics.dev/limits`),
    /// clamped to the agent's and written into its slot before its first event can count.
    pub fn add_limited(&mut self, found: Found, wanted: Option<&[&str]>, limits: Limits) {
        let (pid, start) = (found.pid, found.start);
        if self.jvms.contains_key(&pid) {
            return;
        }
        if let Some(m) = &self.match_jvm {
            if !found.name.contains(m.as_str()) {
                self.failed.insert(pid, start); // not selected: not a failure, not looked at again
                self.untraced.insert(pid, "not_selected".into());
                return;
            }
        }
        let Some(&slot) = self.free_slots.last() else {
            return self.fail(pid, start, "slots_exhausted", "");
        };
        let file = match self.kernel_identity(&found) {
            Ok(file) => file,
            Err(reason) => return self.fail(pid, start, reason, ""),
        };
        let pidfd = pidfd_open(pid);
        // The pidfd names one process: it must be the one discovery read (a pid reused since
        // would otherwise be traced with the labels of the JVM found before).
        if pidfd.is_none() || !discovery::alive(pid, start) {
            // Gone already (or no pidfd support): do not trace what we cannot see exit.
            return self.fail(pid, start, "exited_before_attach", "");
        }
        let t0 = Instant::now();
        let fds_before = crate::probe::open_fds();
        let attached = self.attach_jvm(&found, file, wanted);
        let kernel_links = crate::probe::new_link_fds(&fds_before);
        release_freed_heap();
        self.attach_time += t0.elapsed();
        let (links, mode, failed) = match attached {
            Ok(a) => a,
            Err((reason, collector)) => {
                self.forget_unused_file(file);
                return self.fail(pid, start, reason, &collector);
            }
        };
        // Some collectors could not attach: counted, the others trace.
        for (c, reason) in &failed {
            *self.failures.entry(((*reason).into(), (*c).into())).or_default() += 1;
        }
        let limits = match &self.caps {
            Some(c) => limits.clamp(c),
            None => limits,
        };
        if let Some(m) = &self.jvm_limits {
            if let Err(e) = m.update(&slot.to_ne_bytes(), &limits_value(&limits), MapFlags::ANY) {
                tracing::warn!(pid, error = %e, "jvm_limits update failed: the agent's limits apply");
            }
        }
        let value = traced_pids_value(slot, wanted);
        if let Err(e) =
            self.traced_pids.update(&pid.to_ne_bytes(), &value.to_ne_bytes(), MapFlags::ANY)
        {
            tracing::warn!(pid, error = %e, "traced_pids update failed");
            self.forget_unused_file(file);
            return self.fail(pid, start, "map_error", ""); // drops (detaches) the links
        }
        self.free_slots.pop();
        self.seen += 1;
        let probe_mode = Some(mode);
        let missing = failed.iter().map(|(c, _)| *c).collect();
        let labels = JvmLabels::standalone(&self.host, pid, &found.name);
        self.jvms.insert(
            pid,
            Jvm {
                found,
                file,
                slot,
                labels,
                state: JvmState::Live,
                probe_mode,
                info: None,
                missing,
                limits,
                pidfd,
                attached_at: Instant::now(),
                links,
                kernel_links,
            },
        );
    }

    /// The JVM's libjvm.so as the kernel sees it (`maps`' identity where it cannot say).
    fn kernel_identity(&mut self, found: &Found) -> std::result::Result<FileId, &'static str> {
        let Some(fi) = self.identity.as_mut() else { return Ok(found.libjvm) };
        match fi.of_mapping(found.pid, found.libjvm_start) {
            Ok(Some(file)) => Ok(file),
            Ok(None) => Err("libjvm_not_found"), // unmapped since discovery
            Err(_) if !Path::new(&format!("/proc/{}", found.pid)).exists() => {
                Err("exited_before_attach")
            }
            Err(e) => {
                tracing::warn!(
                    pid = found.pid,
                    error = format!("{e:#}"),
                    "the file behind libjvm.so"
                );
                Err("no_access")
            }
        }
    }

    /// Attaches the collectors a JVM wants (None: every loaded one) to its libjvm.so,
    /// `file_id` as the kernel sees it, in its process alone. Err((reason, collector)); Ok
    /// holds the links, the probe mode and the collectors that could not attach, with their
    /// failure reason.
    fn attach_jvm(
        &mut self,
        found: &Found,
        file_id: FileId,
        wanted: Option<&[&str]>,
    ) -> std::result::Result<Attachment, (&'static str, String)> {
        let root = ProcRoot::open(found.pid).map_err(|_| ("no_access", String::new()))?;
        let file = root.open_file(Path::new(&found.libjvm_path), ELF_MAX_BYTES).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOENT) {
                ("libjvm_not_found", String::new())
            } else {
                ("no_access", String::new())
            }
        })?;
        // The opened path must be the file the JVM maps: the same real file where the kernel
        // can say (before the attach, so libbpf never reads another file), else the same
        // (dev, inode) as the mapping.
        if self.identity.is_some() {
            self.same_real_file(found, &file, file_id)?;
        } else if !file.metadata().is_ok_and(|m| found.libjvm.matches(&m)) {
            return Err(("identity_mismatch", String::new()));
        }
        // libbpf reads the file itself (USDT notes, uprobe symbols): it gets it only once the
        // bounded parser has checked every table size against the file and the bounds.
        if let Err(e) = jvmdiag_inspect::elf::check_file(&file) {
            tracing::warn!(pid = found.pid, path = %found.libjvm_path, error = %e, "libjvm.so refused before any probe reads it");
            return Err(("libjvm_refused", String::new()));
        }
        let before = changed_stamp(&file);
        let binary = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let facts = self.facts.entry(file_id).or_default();
        let target = Target { binary: &binary, pid: found.pid as i32, facts };
        let mut links = Vec::new();
        let mut mode = ProbeMode::Usdt;
        let mut failed = Vec::new();
        let guard = crate::sigbus::Guard::take();
        let wanted_here = |c: &dyn Collector| wanted.is_none_or(|w| w.contains(&c.name()));
        for c in self.collectors.iter().filter(|c| wanted_here(c.as_ref())) {
            let t0 = Instant::now();
            let attached = c.attach(&target);
            tracing::debug!(
                pid = found.pid,
                collector = c.name(),
                micros = t0.elapsed().as_micros() as u64,
                "attached"
            );
            match attached {
                Ok(a) => {
                    links.extend(a.links);
                    mode = mode.max(a.mode);
                }
                Err(e) => {
                    tracing::warn!(pid = found.pid, path = %found.libjvm_path, collector = c.name(), error = format!("{e:#}"), "collector not attached");
                    let reason = if crate::probe::needs_sys_admin(&e) {
                        "needs_cap_sys_admin"
                    } else {
                        "collector_failed"
                    };
                    failed.push((c.name(), reason));
                }
            }
        }
        // Truncated or rewritten while libbpf read it: what it read is not the file's (a read
        // past a truncated end gave zeros, see `sigbus`). Dropping `links` detaches.
        let faults = guard.faults();
        drop(guard);
        if faults > 0 || changed_stamp(&file) != before {
            tracing::warn!(pid = found.pid, path = %found.libjvm_path, pages_gone = faults, "libjvm.so changed while it was read; not traced");
            return Err(("libjvm_changed", String::new()));
        }
        // The uprobes went on the file the path resolves to now; the JVM maps the file it
        // resolved to then. They differ when the container replaced or copied up its
        // libjvm.so in between (a file's real inode only ever moves up, so checking after
        // the attach leaves no window).
        self.same_real_file(found, &file, file_id)?; // Err drops the links
        drop(file); // the uprobes hold the inode now
        if links.is_empty() {
            // No USDT notes and no symbols: the JVM falls back to hsperfdata (or to nothing).
            mode = ProbeMode::Hsperfdata;
        }
        Ok((links, mode, failed))
    }

    /// Err(identity_mismatch) unless the real file behind `file` is `want` (Ok where the kernel
    /// cannot say: then the caller compares `maps`' identity).
    fn same_real_file(
        &mut self,
        found: &Found,
        file: &std::fs::File,
        want: FileId,
    ) -> std::result::Result<(), (&'static str, String)> {
        let Some(fi) = self.identity.as_mut() else { return Ok(()) };
        match fi.of_open_file(file) {
            Ok(Some(now)) if now == want => Ok(()),
            Ok(_) => Err(("identity_mismatch", String::new())),
            Err(e) => {
                tracing::warn!(pid = found.pid, path = %found.libjvm_path, error = format!("{e:#}"), "the file behind libjvm.so");
                Err(("no_access", String::new()))
            }
        }
    }

    /// Attaches probes to one live JVM's process alone (src/starters.rs): `attach` gets its
    /// libjvm.so as `/proc/self/fd/N`, opened and checked as at the JVM's first attach (inside
    /// its root, the real file of its group, the bounded parser's check before libbpf reads
    /// it, the SIGBUS guard while it does); links made on a file that changed meanwhile are
    /// dropped.
    pub fn attach_to_process(
        &mut self,
        pid: u32,
        attach: impl FnOnce(&Target<'_>) -> Result<Vec<Link>>,
    ) -> Result<Vec<Link>> {
        let j = self
            .jvms
            .get(&pid)
            .filter(|j| j.state == JvmState::Live)
            .context("not a live traced JVM")?;
        let (found, want) = (j.found.clone(), j.file);
        let root = ProcRoot::open(pid).context("its root")?;
        let file = root
            .open_file(Path::new(&found.libjvm_path), ELF_MAX_BYTES)
            .context("its libjvm.so")?;
        self.real_file_of(&found, &file, want)?;
        jvmdiag_inspect::elf::check_file(&file)
            .map_err(|e| anyhow::anyhow!("libjvm_refused: {e}"))?;
        let before = changed_stamp(&file);
        let binary = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let guard = crate::sigbus::Guard::take();
        let facts = self.facts.entry(want).or_default();
        let links = attach(&Target { binary: &binary, pid: pid as i32, facts });
        let faults = guard.faults();
        drop(guard);
        let links = links?;
        if faults > 0 || changed_stamp(&file) != before {
            anyhow::bail!("libjvm_changed"); // drops the links
        }
        self.real_file_of(&found, &file, want)?;
        Ok(links)
    }

    /// Err unless `file` is the real file `want` (see `attach_file`).
    fn real_file_of(&mut self, found: &Found, file: &std::fs::File, want: FileId) -> Result<()> {
        if self.identity.is_some() {
            self.same_real_file(found, file, want)
                .map_err(|(reason, _)| anyhow::anyhow!("{reason}"))
        } else if file.metadata().is_ok_and(|m| found.libjvm.matches(&m)) {
            Ok(())
        } else {
            anyhow::bail!("identity_mismatch")
        }
    }

    /// Drops what was read of a libjvm.so file once no JVM runs it.
    fn forget_unused_file(&mut self, file: FileId) {
        if !self.jvms.values().any(|j| j.file == file) {
            self.facts.remove(&file);
        }
    }

    /// Notices exits (pidfd readable): stops counting at once, keeps the series.
    pub fn reap(&mut self) {
        let now = Instant::now();
        let mut exited = Vec::new();
        for (pid, j) in &self.jvms {
            if j.state == JvmState::Live && j.pidfd.as_ref().map(exited_fd).unwrap_or(true) {
                exited.push(*pid);
            }
        }
        for pid in exited {
            let _ = self.traced_pids.delete(&pid.to_ne_bytes());
            if let Some(j) = self.jvms.get_mut(&pid) {
                j.state = JvmState::Exited { at: now, reported: false };
                j.pidfd = None;
                // Nothing of it fires any more: libbpf's links go here, the kernel's on the
                // detach thread (`probe::detach`).
                j.links.clear();
                crate::probe::detach(std::mem::take(&mut j.kernel_links));
            }
        }
        // Failed pids that are gone (or reused by another process) are forgotten.
        self.failed.retain(|pid, start| discovery::alive(*pid, *start));
        let failed = &self.failed;
        self.untraced.retain(|pid, _| failed.contains_key(pid));
        self.waiting.retain(|pid, start| failed.get(&pid) == Some(&start));
        // Exited JVMs nobody scraped for long are released anyway.
        let stale: Vec<u32> = self
            .jvms
            .iter()
            .filter(|(_, j)| matches!(j.state, JvmState::Exited { at, .. } if now.duration_since(at) > EXITED_GRACE))
            .map(|(p, _)| *p)
            .collect();
        for pid in stale {
            self.release(pid);
        }
    }

    /// After a scrape: JVMs that exited before it have been reported; release them.
    pub fn after_scrape(&mut self, exited_before: &[u32]) {
        for pid in exited_before {
            self.release(*pid);
        }
    }

    /// Pids that are exited now (the next scrape is their last).
    pub fn exited(&self) -> Vec<u32> {
        self.jvms
            .iter()
            .filter(|(_, j)| matches!(j.state, JvmState::Exited { .. }))
            .map(|(p, _)| *p)
            .collect()
    }

    fn release(&mut self, pid: u32) {
        let Some(j) = self.jvms.remove(&pid) else { return };
        let _ = self.traced_pids.delete(&pid.to_ne_bytes());
        for c in &self.collectors {
            if let Err(e) = c.forget(j.slot) {
                tracing::warn!(
                    slot = j.slot,
                    collector = c.name(),
                    error = format!("{e:#}"),
                    "forgetting a slot"
                );
            }
        }
        if let Some(m) = &self.jvm_limits {
            let _ =
                m.update(&j.slot.to_ne_bytes(), &limits_value(&Limits::default()), MapFlags::ANY);
        }
        self.free_slots.push(j.slot);
        self.slot_released(j.slot);
        self.forget_unused_file(j.file);
    }

    /// A slot went back to `free_slots` (the collectors forgot it, giving its in-flight units
    /// back to its namespace): it leaves its namespace, and the waiting JVMs are offered it at
    /// the next poll.
    fn slot_released(&mut self, slot: u32) {
        if let Some(id) = self.namespace_ids.release(slot) {
            self.write_slot_namespace(slot, NO_NAMESPACE);
            if !self.namespace_ids.in_use(id) {
                // Its namespace's last slot: nothing counts for the id until it is given again.
                for c in &self.collectors {
                    if let Err(e) = c.forget_namespace(id) {
                        tracing::warn!(
                            namespace = id,
                            collector = c.name(),
                            error = format!("{e:#}"),
                            "forgetting a namespace id"
                        );
                    }
                }
            }
        }
        self.recheck = 2;
    }

    /// Does a namespace hold this id now (`namespace_id`)?
    pub fn namespace_in_use(&self, id: u32) -> bool {
        self.namespace_ids.in_use(id)
    }

    /// Reads a live JVM's hsperfdata (inside its root): threads live and version info.
    pub fn read_perfdata(&mut self, pid: u32) -> Option<hsperfdata::PerfData> {
        let j = self.jvms.get_mut(&pid)?;
        if j.state != JvmState::Live {
            return None;
        }
        if j.found.hsperfdata.is_none() && j.attached_at.elapsed() < HSPERF_LOOKUP {
            j.found.hsperfdata = discovery::find_hsperfdata(pid);
        }
        let (path, id) = j.found.hsperfdata.as_ref()?;
        let root = ProcRoot::open(pid).ok()?;
        let f = root.open_file(Path::new(path), HSPERFDATA_MAX_BYTES).ok()?;
        if !id.matches(&f.metadata().ok()?) {
            return None; // not the file the JVM maps
        }
        let bytes = read_all(f, HSPERFDATA_MAX_BYTES)?;
        let pd = hsperfdata::parse(&bytes).ok()?;
        if j.info.is_none() {
            j.info = crate::perfdata::version_vendor(&pd);
        }
        Some(pd)
    }
}

/// What changes when a file is written or truncated: (size, ctime).
fn changed_stamp(f: &std::fs::File) -> Option<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    f.metadata().ok().map(|m| (m.size(), m.ctime(), m.ctime_nsec()))
}

fn read_all(f: std::fs::File, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut v = Vec::new();
    f.take(max).read_to_end(&mut v).ok()?;
    Some(v)
}

fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: plain syscall; on success the kernel returns a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a fresh descriptor returned above.
    Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A pidfd polls readable once the process has exited.
fn exited_fd(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: fd.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && (p.revents & (libc::POLLIN | libc::POLLHUP)) != 0
}

/// Gives the heap freed while attaching back to the kernel. Resolving uprobe symbols, libelf
/// (inside libbpf) reads a libjvm.so's `.symtab` and `.strtab` (4–5 MB) into malloc'd
/// buffers; once one such buffer was freed, glibc raises its mmap threshold, so the next ones
/// come from the heap, which glibc keeps after they are freed (measured: steady RSS 10.8 MB
/// (JDK 17) / 11.4 MB (Temurin 25) without this, 6.9 MB with it). `malloc_trim` returns it.
fn release_freed_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// (collector, attach failure reason) of a collector that could not attach to a JVM.
type FailedCollector = (&'static str, &'static str);
/// A JVM's links, its probe mode and the collectors that could not attach.
type Attachment = (Vec<Link>, ProbeMode, Vec<FailedCollector>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traced_pids_value_keeps_the_slot_and_sets_one_bit_per_wanted_collector() {
        assert_eq!(traced_pids_value(5, None), 5 | ((1 << REGISTRY.len()) - 1) << 16);
        assert_eq!(traced_pids_value(1023, Some(&["threads", "safepoints"])), 1023 | 0b11 << 16);
        assert_eq!(traced_pids_value(7, Some(&["compilation"])), 7 | 1 << 19);
        assert_eq!(
            traced_pids_value(7, Some(&[])),
            7,
            "nothing wanted: traced (labels, hsperfdata), counted nowhere"
        );
        assert_eq!(traced_pids_value(0, Some(&["unknown"])), 0);
    }

    #[test]
    fn one_namespace_gets_a_quarter_of_the_slots_at_least_64() {
        assert_eq!(default_max_jvms_per_namespace(1024), 256);
        assert_eq!(default_max_jvms_per_namespace(MAX_JVMS), (MAX_JVMS / 4).max(64));
        assert_eq!(default_max_jvms_per_namespace(128), 64);
        assert_eq!(default_max_jvms_per_namespace(0), 64);
        let rule = capacity::Rule::for_slots(MAX_JVMS, 256);
        assert!(capacity::admit(rule, 100, Some(255)).is_ok());
        assert_eq!(
            capacity::admit(rule, 100, Some(256)),
            Err(Refusal::NamespaceShare),
            "the 257th JVM of a namespace is refused"
        );
        // Four namespaces at their share leave nothing, but none of them can take more.
        let per = default_max_jvms_per_namespace(MAX_JVMS) as usize;
        assert!(4 * per >= MAX_JVMS as usize && per < MAX_JVMS as usize);
    }
}
