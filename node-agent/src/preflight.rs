//! Start-up checks. Each failure is one line naming the cause and the fix.
use std::fmt;
use std::path::Path;

use crate::cli::Config;

/// A reason not to start, printed as `error: <cause>: <fix>`.
#[derive(Debug)]
pub struct Fatal(pub String);

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

pub fn check(cfg: &Config) -> Result<(), Fatal> {
    privileges()?;
    btf(&cfg.cli.btf)?;
    memlock()?;
    open_files(cfg.cli.max_jvms);
    proc_readable()?;
    Ok(())
}

/// File descriptors a traced JVM holds in the agent: its BPF links (one per probe, at most
/// ~16 with every collector) and its pidfd, with room to spare.
const FDS_PER_JVM: u64 = 24;

/// Each traced JVM holds its own links, each a file descriptor: raises the soft
/// RLIMIT_NOFILE to the hard one (no privilege needed), and warns when even that cannot hold
/// `--max-jvms` JVMs (the JVMs past it fail to attach, counted by reason).
fn open_files(max_jvms: u32) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid out pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        // SAFETY: valid pointer to an initialised rlimit; soft <= hard needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim = raised;
        }
    }
    let need = u64::from(max_jvms) * FDS_PER_JVM + 256;
    if lim.rlim_cur != libc::RLIM_INFINITY && lim.rlim_cur < need {
        tracing::warn!(
            limit = lim.rlim_cur,
            need,
            "RLIMIT_NOFILE is below what --max-jvms needs ({FDS_PER_JVM} per JVM for its probes): \
             raise the hard limit (LimitNOFILE in systemd; the container runtime's default is \
             usually 1048576) or lower --max-jvms"
        );
    }
}

fn effective_caps() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0)
}

fn privileges() -> Result<(), Fatal> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let caps = effective_caps();
    let has = |c: u32| caps & (1u64 << c) != 0;
    if euid == 0 || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    Err(Fatal(format!(
        "not permitted to load eBPF programs (uid {euid} without CAP_BPF and CAP_PERFMON): run as root (sudo jvmdiag-agent ...) or grant CAP_BPF,CAP_PERFMON,CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH"
    )))
}

fn btf(path: &Path) -> Result<(), Fatal> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > 0 => Ok(()),
        Ok(_) => Err(Fatal(format!("no kernel BTF at {} (not a non-empty file): the kernel needs CONFIG_DEBUG_INFO_BTF=y; point --btf at the kernel's BTF file", path.display()))),
        Err(e) => Err(Fatal(format!(
            "no kernel BTF at {} ({}): the kernel needs CONFIG_DEBUG_INFO_BTF=y (5.4+ distribution kernels have it); point --btf at the kernel's BTF file",
            path.display(),
            io_reason(&e)
        ))),
    }
}

/// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK: raise it, or say how.
fn memlock() -> Result<(), Fatal> {
    let inf = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: valid pointer to an initialised rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &inf) } == 0 {
        return Ok(());
    }
    let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid out pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut cur) };
    if kernel_at_least(5, 11) || cur.rlim_cur == libc::RLIM_INFINITY || cur.rlim_cur >= 64 << 20 {
        return Ok(()); // memcg accounting: the limit does not apply
    }
    Err(Fatal(format!(
        "RLIMIT_MEMLOCK is {} KiB and cannot be raised on this kernel (before 5.11 BPF maps count against it): run with CAP_SYS_RESOURCE or `ulimit -l unlimited` (LimitMEMLOCK=infinity in systemd)",
        cur.rlim_cur / 1024
    )))
}

fn kernel_at_least(major: u32, minor: u32) -> bool {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it =
        r.trim().split(|c: char| !c.is_ascii_digit()).filter_map(|s| s.parse::<u32>().ok());
    let (a, b) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

fn proc_readable() -> Result<(), Fatal> {
    if let Err(e) = std::fs::read_dir("/proc") {
        return Err(Fatal(format!("cannot list /proc ({}): mount procfs at /proc", io_reason(&e))));
    }
    // Our own maps: procfs is mounted and readable (other processes' entries that cannot be
    // read are counted per process: jvmdiag_agent_proc_unreadable_total).
    if let Err(e) = std::fs::read("/proc/self/maps") {
        return Err(Fatal(format!(
            "cannot read /proc/self/maps ({}): mount procfs at /proc (the host's, hostPID: true in Kubernetes)",
            io_reason(&e)
        )));
    }
    Ok(())
}

fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}
