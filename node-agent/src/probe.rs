//! How a probe is attached: uprobe_multi links where the kernel has them, else uprobe perf
//! events, and what a refusal for want of CAP_SYS_ADMIN looks like. Collectors attach
//! their uprobes through `uprobe_sym` and prepare their objects with `prepare_uprobes`.
use std::path::Path;

use anyhow::{Context, Result};
use libbpf_rs::{Link, UprobeOpts};

/// Where a collector's probes go: one process's libjvm.so. The links carry the pid, so the
/// kernel puts breakpoints in that process alone: another process mapping the same file
/// (a neighbour built on the same JDK layer, traced or not) never traps on them.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The libjvm.so as `/proc/self/fd/N` (opened inside the process's root and checked).
    pub binary: &'a Path,
    /// The process (host pid).
    pub pid: i32,
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
    if uprobe_multi() {
        let opts = libbpf_rs::UprobeMultiOpts {
            syms: vec![sym.into()],
            cookies: vec![cookie],
            retprobe: ret,
            ..Default::default()
        };
        return p
            .attach_uprobe_multi_with_opts(pid, binary, "", opts)
            .with_context(|| format!("{kind} {sym} (uprobe_multi link)"));
    }
    let opts =
        UprobeOpts { func_name: Some(sym.into()), retprobe: ret, cookie, ..Default::default() };
    p.attach_uprobe_with_opts(pid, binary, 0, opts).map_err(|e| {
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
