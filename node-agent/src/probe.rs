//! How a probe is attached: uprobe_multi links where the kernel has them, else uprobe perf
//! events, and what a refusal for want of CAP_SYS_ADMIN looks like. Collectors attach
//! their uprobes through `uprobe_sym` and prepare their objects with `prepare_uprobes`.
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::{mpsc, Mutex, OnceLock};

use anyhow::{Context, Result};
use libbpf_rs::{Link, UprobeOpts};

/// Where a collector's probes go: one process's libjvm.so. The links carry the pid, so the
/// kernel puts breakpoints in that process alone: another process mapping the same file
/// (a neighbour built on the same JDK layer, traced or not) never traps on them.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// The libjvm.so as `/proc/self/fd/N` (opened inside the process's root and checked).
    pub binary: &'a Path,
    /// The process (host pid).
    pub pid: i32,
    /// What is known of that file already, shared by every JVM that runs it.
    pub facts: &'a FileFacts,
}

/// What the collectors work out about one libjvm.so (real) file, kept while a traced JVM runs
/// it: the file offsets of the functions they put uprobes on, each looked up in `.symtab` once
/// per file rather than once per JVM (a symbol table scan is milliseconds, and every JVM gets
/// its own links), and what else a collector reads from the file (`memo`).
#[derive(Default)]
pub struct FileFacts {
    offsets: Mutex<HashMap<String, Option<u64>>>,
    memos: Mutex<HashMap<&'static str, Box<dyn Any + Send>>>,
}

impl FileFacts {
    /// The file offset of function `sym` in `binary` (None: not in its symbol tables).
    pub fn offset(&self, binary: &Path, sym: &str) -> Result<Option<u64>> {
        if let Some(off) = self.offsets.lock().expect("not poisoned").get(sym) {
            return Ok(*off);
        }
        let f =
            std::fs::File::open(binary).with_context(|| format!("open {}", binary.display()))?;
        let found = jvmdiag_inspect::elf::symbol_offsets_in_file(&f, &|n: &str| n == sym)
            .with_context(|| format!("symbol {sym}"))?;
        let off = found.first().map(|(_, o)| *o);
        self.offsets.lock().expect("not poisoned").insert(sym.to_string(), off);
        Ok(off)
    }

    /// A collector's value for this file under `key`, made by `make` the first time.
    pub fn memo<T: Clone + Send + 'static>(
        &self,
        key: &'static str,
        make: impl FnOnce() -> T,
    ) -> T {
        let mut memos = self.memos.lock().expect("not poisoned");
        if let Some(v) = memos.get(key).and_then(|b| b.downcast_ref::<T>()) {
            return v.clone();
        }
        let v = make();
        memos.insert(key, Box::new(v.clone()));
        v
    }
}

impl Target<'_> {
    /// A USDT probe of this process's libjvm.so (libbpf: a uprobe_multi link per probe).
    pub fn usdt(
        &self,
        p: &libbpf_rs::ProgramMut<'_>,
        provider: &str,
        name: &str,
    ) -> libbpf_rs::Result<Link> {
        p.attach_usdt(self.pid, self.binary, provider, name)
    }
}

/// A uprobe on `sym` (a `.symtab` name libbpf resolves) in `target`'s process, with a cookie:
/// a uprobe_multi link
/// where the kernel has them, else a perf event.
///
/// Why: since Linux 6.16 (and stable backports, "perf: Require CAP_SYS_ADMIN for uprobes")
/// creating a uprobe *perf event* needs CAP_SYS_ADMIN (`perf_uprobe_event_init`), whatever
/// the path; a uprobe_multi BPF link (6.6+) needs only CAP_BPF + CAP_PERFMON, as libbpf's USDT
/// attach already uses. The chart grants exactly those, without CAP_SYS_ADMIN.
pub fn uprobe_sym(
    p: &libbpf_rs::ProgramMut<'_>,
    target: &Target<'_>,
    sym: &str,
    ret: bool,
    cookie: u64,
) -> Result<Link> {
    let (pid, binary) = (target.pid, target.binary);
    let kind = if ret { "uretprobe" } else { "uprobe" };
    let offset = target
        .facts
        .offset(binary, sym)?
        .with_context(|| format!("{kind} {sym}: not in the symbol tables"))?;
    if uprobe_multi() {
        let opts = libbpf_rs::UprobeMultiOpts {
            offsets: vec![offset as usize],
            cookies: vec![cookie],
            retprobe: ret,
            ..Default::default()
        };
        return p
            .attach_uprobe_multi_with_opts(pid, binary, "", opts)
            .with_context(|| format!("{kind} {sym} (uprobe_multi link)"));
    }
    let opts = UprobeOpts { retprobe: ret, cookie, ..Default::default() };
    p.attach_uprobe_with_opts(pid, binary, offset as usize, opts).map_err(|e| {
        let denied = e.kind() == libbpf_rs::ErrorKind::PermissionDenied;
        let err = anyhow::Error::from(e).context(format!("{kind} {sym} (perf event)"));
        if denied && !has_cap_sys_admin() {
            err.context(NeedsSysAdmin)
        } else {
            err
        }
    })
}

/// A uprobe perf event refused for want of CAP_SYS_ADMIN (see `uprobe_sym`): counted as
/// `jvmdiag_agent_attach_failures_total{reason="needs_cap_sys_admin"}`.
#[derive(Debug)]
pub struct NeedsSysAdmin;

impl std::fmt::Display for NeedsSysAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "this kernel creates uprobe perf events only with CAP_SYS_ADMIN (Linux 6.16+ and stable backports) \
             and uprobe_multi links are not in use (kernel before 6.6, or JVMDIAG_UPROBE_PERF_EVENT=1): \
             grant CAP_SYS_ADMIN or run a 6.6+ kernel",
        )
    }
}

impl std::error::Error for NeedsSysAdmin {}

/// Whether an attach error was a uprobe (or a USDT probe, which libbpf attaches as uprobe
/// perf events on kernels without uprobe_multi) refused for want of CAP_SYS_ADMIN.
pub fn needs_sys_admin(e: &anyhow::Error) -> bool {
    e.downcast_ref::<NeedsSysAdmin>().is_some()
        || (e.chain().any(|c| {
            c.downcast_ref::<libbpf_rs::Error>()
                .is_some_and(|l| l.kind() == libbpf_rs::ErrorKind::PermissionDenied)
        }) && !has_cap_sys_admin())
}

fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).ok())
            })
        })
        .flatten()
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether uprobes are attached as uprobe_multi links: the kernel has them (6.6+) unless
/// JVMDIAG_UPROBE_PERF_EVENT=1 asks for perf events.
pub fn uprobe_multi() -> bool {
    static MULTI: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MULTI.get_or_init(|| {
        if std::env::var_os("JVMDIAG_UPROBE_PERF_EVENT").is_some_and(|v| v == "1") {
            return false;
        }
        kernel_at_least(
            &std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default(),
            (6, 6),
        )
    })
}

fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut it =
        release.trim().split(|c: char| !c.is_ascii_digit()).map(|x| x.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0)) >= want
}

/// The kernel side of a JVM's links, detached off the main loop. Releasing a uprobe link waits
/// for an RCU grace period in the kernel (`uprobe_unregister_sync`, tens of ms): a JVM's ~19
/// links released one after another on the main loop held it for over half a second per exiting
/// JVM, so scrapes timed out while JVMs churned. So the agent keeps a duplicate of each link's
/// descriptor ([`new_link_fds`]): libbpf drops its links on the main loop (its bookkeeping is
/// not thread-safe; with the duplicate open, its close releases nothing), and the duplicates
/// are closed here, from up to `DETACH_THREADS` threads at once, sharing grace periods.
pub fn detach(fds: Vec<OwnedFd>) {
    static QUEUE: OnceLock<Mutex<mpsc::Sender<Vec<OwnedFd>>>> = OnceLock::new();
    if fds.is_empty() {
        return;
    }
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Vec<OwnedFd>>();
        let spawned = std::thread::Builder::new().name("jvmdiag-detach".into()).spawn(move || {
            while let Ok(mut batch) = rx.recv() {
                while let Ok(more) = rx.try_recv() {
                    batch.extend(more);
                }
                close_in_parallel(batch);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no detach thread: links are released on the main loop");
        }
        Mutex::new(tx)
    });
    if let Err(mpsc::SendError(fds)) = queue.lock().expect("not poisoned").send(fds) {
        drop(fds); // the thread is gone: release here
    }
}

/// Threads that close link descriptors at once (each waits for a grace period; they overlap).
const DETACH_THREADS: usize = 32;

fn close_in_parallel(mut fds: Vec<OwnedFd>) {
    let per = fds.len().div_ceil(DETACH_THREADS).max(1);
    std::thread::scope(|s| {
        while !fds.is_empty() {
            let chunk: Vec<OwnedFd> = fds.drain(..per.min(fds.len())).collect();
            if std::thread::Builder::new().spawn_scoped(s, move || drop(chunk)).is_err() {
                break; // the rest are closed below, on this thread
            }
        }
    });
}

/// The agent's open descriptor numbers (`/proc/self/fd`).
pub fn open_fds() -> HashSet<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return HashSet::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Duplicates of the BPF link descriptors opened since `before` was taken ([`open_fds`]): the
/// kernel links an attach made (libbpf does not expose a USDT link's own descriptor).
pub fn new_link_fds(before: &HashSet<i32>) -> Vec<OwnedFd> {
    let mut out = Vec::new();
    for fd in open_fds().difference(before) {
        let is_link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .is_ok_and(|t| t.as_os_str() == "anon_inode:bpf_link");
        if !is_link {
            continue;
        }
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor that is open; a new descriptor on success.
        let dup = unsafe { libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup >= 0 {
            // SAFETY: `dup` is a fresh descriptor this process owns.
            out.push(unsafe { OwnedFd::from_raw_fd(dup) });
        }
    }
    out
}

/// Sites a HotSpot USDT probe has in one libjvm.so (one in the JDKs seen, 11–25; two is
/// headroom for a compiler that duplicates one).
const SITES_PER_USDT_PROBE: u32 = 2;

/// Before load: sizes libbpf's USDT spec table (`__bpf_usdt_specs`, usdt.bpf.h) for
/// `usdt_probes` probes in each of `max_jvms` JVMs. Each JVM's links are its own, and libbpf
/// shares a spec only within one link, so the table holds a spec per probe site per JVM; its
/// default (256) would refuse the 65th JVM of a four-probe collector.
pub fn size_usdt_specs(
    obj: &mut libbpf_rs::OpenObject,
    max_jvms: u32,
    usdt_probes: u32,
) -> Result<()> {
    let want = max_jvms.max(1).saturating_mul(usdt_probes).saturating_mul(SITES_PER_USDT_PROBE);
    for mut m in obj.maps_mut() {
        if m.name() == "__bpf_usdt_specs" {
            m.set_max_entries(want).context("size __bpf_usdt_specs")?;
        }
    }
    Ok(())
}

/// Before load: the uprobe programs of an object become uprobe_multi programs when
/// `uprobe_multi()` (the attach type is fixed at load).
pub fn prepare_uprobes(obj: &mut libbpf_rs::OpenObject) {
    if !uprobe_multi() {
        return;
    }
    for mut p in obj.progs_mut() {
        let sec = p.section().to_string_lossy();
        if sec == "uprobe" || sec == "uretprobe" {
            p.set_attach_type(libbpf_rs::ProgramAttachType::TraceUprobeMulti);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kernel_at_least;

    #[test]
    fn kernel_versions_compare_numerically() {
        assert!(kernel_at_least("6.18.0-1-amd64\n", (6, 6)));
        assert!(kernel_at_least("6.6.0", (6, 6)));
        assert!(!kernel_at_least("6.1.0-28-cloud-amd64", (6, 6)));
        assert!(!kernel_at_least("5.19.17", (6, 6)));
        assert!(!kernel_at_least("", (6, 6)));
    }
}
