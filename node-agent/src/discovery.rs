//! Finds JVMs: processes that map a `libjvm.so`, also inside containers.
//!
//! Polls /proc (every `--poll-interval`, default 200 ms). Only new processes, processes
//! that exec'd (the inode of /proc/PID/exe changed) and young processes (a JVM maps
//! libjvm.so a few ms after exec) have their maps read, so a quiet host costs one stat
//! per process per poll. All parsing of what a process controls goes through
//! `jvmdiag_inspect` (bounded parsers).
use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use jvmdiag_inspect::limits::{CMDLINE_MAX_BYTES, MAPS_MAX_BYTES, STATUS_MAX_BYTES};
use jvmdiag_inspect::procfs::{self, MapEntry};
use jvmdiag_inspect::root::read_host_file;

/// How long after exec a process is re-checked for a libjvm.so mapping.
const YOUNG: Duration = Duration::from_secs(5);

/// Identity of a file: (device, inode). As /proc/PID/maps reports it, it names the path
/// the process opened (under overlayfs, the container's overlay); `file_identity` gives the
/// file underneath, which is what uprobes attach to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
}

impl FileId {
    pub fn of(m: &MapEntry) -> FileId {
        FileId { dev_major: m.dev_major, dev_minor: m.dev_minor, inode: m.inode }
    }
    /// Same identity as an open file's fstat?
    pub fn matches(&self, meta: &fs::Metadata) -> bool {
        let dev = meta.dev();
        libc::major(dev) == self.dev_major
            && libc::minor(dev) == self.dev_minor
            && meta.ino() == self.inode
    }
}

/// A JVM found in /proc.
#[derive(Debug, Clone)]
pub struct Found {
    pub pid: u32,
    /// The pid inside the JVM's own pid namespace (what its hsperfdata file is named). Not
    /// read yet: the hsperfdata file is found through the JVM's mappings instead.
    #[allow(dead_code)]
    pub nspid: u32,
    pub libjvm: FileId,
    /// Start address of that mapping (names it to the kernel: `file_identity`).
    pub libjvm_start: u64,
    /// Path of libjvm.so inside the process's root (mount namespace).
    pub libjvm_path: String,
    /// The JVM's mapped hsperfdata file, when mapped already.
    pub hsperfdata: Option<(String, FileId)>,
    /// The `jvm` label.
    pub name: String,
    /// Its start time (/proc/PID/stat field 22): with the pid, the process's identity, so a
    /// reused pid is never taken for the JVM found before ([`alive`]).
    pub start: u64,
}

/// /proc/PID/stat is ~300 bytes (`comm` is at most 16); more is refused.
const STAT_MAX_BYTES: u64 = 4 << 10;

/// A process's start time in clock ticks since boot (/proc/PID/stat field 22); None when it
/// is gone or unreadable.
pub fn start_time(pid: u32) -> Option<u64> {
    parse_start_time(&read_host_file(Path::new(&format!("/proc/{pid}/stat")), STAT_MAX_BYTES).ok()?)
}

/// Field 22 of a /proc/PID/stat text. `comm` (field 2, in parentheses) is the process's own
/// choice and may hold spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_start_time(b: &[u8]) -> Option<u64> {
    let close = b.iter().rposition(|&c| c == b')')?;
    let rest = std::str::from_utf8(&b[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
}

/// The process `pid` that started at `start` is still there (not exited, its pid not reused).
pub fn alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

#[derive(Debug)]
struct Seen {
    exe: Option<(u64, u64)>,
    /// Start time: a different one is a new process under a reused pid.
    start: Option<u64>,
    since: Instant,
}

#[derive(Default)]
pub struct Discovery {
    seen: HashMap<u32, Seen>,
    polls: u64,
}

/// A known process's start time is checked every this many polls (1 s at the default 200 ms).
const START_CHECK_EVERY: u64 = 5;

/// The result of one poll.
#[derive(Debug, Default)]
pub struct Poll {
    pub found: Vec<Found>,
    /// Processes whose /proc entries could not be read (counted, not fatal).
    pub unreadable: u64,
}

impl Discovery {
    /// Scans /proc. `known` are pids already traced (skipped). Our own pid is skipped.
    pub fn poll(&mut self, known: &HashSet<u32>) -> std::io::Result<Poll> {
        let me = std::process::id();
        let now = Instant::now();
        self.polls += 1;
        let mut present = HashSet::new();
        let mut out = Poll::default();
        for e in fs::read_dir("/proc")? {
            let Ok(e) = e else { continue };
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            present.insert(pid);
            if pid == me || known.contains(&pid) {
                continue;
            }
            let exe = fs::metadata(format!("/proc/{pid}/exe")).ok().map(|m| (m.dev(), m.ino()));
            let check = match self.seen.get_mut(&pid) {
                None => {
                    self.seen.insert(pid, Seen { exe, start: start_time(pid), since: now });
                    exe.is_some()
                }
                Some(s) => {
                    if s.exe != exe {
                        s.exe = exe;
                        s.since = now;
                    } else if (self.polls + u64::from(pid)).is_multiple_of(START_CHECK_EVERY)
                        && s.start.is_none_or(|st| !alive(pid, st))
                    {
                        // Exited and its pid reused by a process running the same file (a
                        // JVM restarted in the same container): a new process. Checked at
                        // one poll in START_CHECK_EVERY per process (spread over the polls):
                        // a stat read costs more than the exe stat every poll makes.
                        s.start = start_time(pid);
                        s.since = now;
                    }
                    exe.is_some() && now.duration_since(s.since) < YOUNG
                }
            };
            if !check {
                continue;
            }
            match inspect(pid) {
                Ok(Some(f)) => out.found.push(f),
                Ok(None) => {}
                Err(_) => out.unreadable += 1,
            }
        }
        self.seen.retain(|pid, _| present.contains(pid));
        Ok(out)
    }
}

/// Reads one process; Ok(None) when it is not (yet) a JVM.
pub fn inspect(pid: u32) -> Result<Option<Found>, jvmdiag_inspect::Error> {
    // First: read before what describes the process, so a pid reused meanwhile is seen at
    // the next identity check (attach, attribution), never labelled as this one.
    let Some(start) = start_time(pid) else { return Ok(None) };
    let maps = read_host_file(Path::new(&format!("/proc/{pid}/maps")), MAPS_MAX_BYTES)?;
    let maps = procfs::parse_maps(&maps)?;
    let Some(lib) = procfs::find_libjvm(&maps) else { return Ok(None) };
    let Some(libjvm_path) = lib.path.clone() else { return Ok(None) };
    let status = procfs::parse_status(&read_host_file(
        Path::new(&format!("/proc/{pid}/status")),
        STATUS_MAX_BYTES,
    )?)?;
    let cmdline = read_host_file(Path::new(&format!("/proc/{pid}/cmdline")), CMDLINE_MAX_BYTES)?;
    let args = procfs::parse_cmdline(&cmdline)?;
    Ok(Some(Found {
        pid,
        nspid: status.innermost_pid(),
        libjvm: FileId::of(lib),
        libjvm_start: lib.start,
        libjvm_path,
        hsperfdata: hsperfdata_mapping(&maps),
        name: procfs::jvm_short_name(&args),
        start,
    }))
}

/// The JVM's own hsperfdata file: the mapping named `.../hsperfdata_<user>/<nspid>`.
pub fn hsperfdata_mapping(maps: &[MapEntry]) -> Option<(String, FileId)> {
    maps.iter().find_map(|m| {
        let p = m.path.as_deref()?;
        let mut it = p.rsplit('/');
        let file = it.next()?;
        let dir = it.next()?;
        (m.inode != 0
            && !m.deleted
            && dir.starts_with("hsperfdata_")
            && file.bytes().all(|b| b.is_ascii_digit()))
        .then(|| (p.to_string(), FileId::of(m)))
    })
}

/// Re-reads only the hsperfdata mapping of a JVM (it appears after libjvm.so).
pub fn find_hsperfdata(pid: u32) -> Option<(String, FileId)> {
    let maps = read_host_file(Path::new(&format!("/proc/{pid}/maps")), MAPS_MAX_BYTES).ok()?;
    hsperfdata_mapping(&procfs::parse_maps(&maps).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_whatever_the_comm() {
        let tail = "S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 12 0 424242 3000000 500 18446744073709551615";
        for comm in [
            "java",
            "a b) c",
            ")",
            "((",
            "x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 999",
        ] {
            let stat = format!("1234 ({comm}) {tail}\n");
            assert_eq!(parse_start_time(stat.as_bytes()), Some(424242), "{comm:?}");
        }
        assert_eq!(parse_start_time(b"1234 (java) S 1 2"), None);
        assert_eq!(parse_start_time(b"no parenthesis"), None);
        assert_eq!(
            parse_start_time(b"1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 notanumber 0"),
            None
        );
    }

    #[test]
    fn our_own_process_is_alive_and_a_wrong_start_is_not() {
        let me = std::process::id();
        let st = start_time(me).expect("our own stat");
        assert!(alive(me, st));
        assert!(!alive(me, st + 1), "same pid, another start: a reused pid");
    }
}
