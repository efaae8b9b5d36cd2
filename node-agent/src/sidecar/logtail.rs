//! Follows a unified-logging file that the JVM rotates, without losing or repeating a line.
//!
//! HotSpot's rotation (`filecount=N,filesize=S`, LogFileOutput::rotate): when the file
//! passes S bytes it is *renamed* to `<name>.<k>` with k = 0, 1, …, N-1 round robin
//! (overwriting the oldest archive), and a new `<name>` is created. At JVM start an existing
//! `<name>` is archived the same way. Lines are written whole (one `fprintf` + flush), but a
//! reader may see the first bytes of a line before the rest.
//!
//! So a file is identified by its inode, not its name: the file being read is kept open
//! (reading it to its end after a rename still works), an offset is kept per open file and
//! only complete lines are consumed. When `<name>` is a new inode, the old file is drained,
//! then every archive not seen before (rotations between two polls) is read in the order the
//! JVM wrote them, then the new file. Files fully read are remembered while they exist, by
//! inode *and* their first bytes: a rename over an archive frees its inode, and the next new
//! log file often gets the same number.
//!
//! The directory is shared with the application container (untrusted): files are opened
//! through [`ProcRoot`] (no symlink leads outside the volume), lines are cut by
//! [`LineSplitter`] (those longer than `SAFEPOINT_LINE_MAX` are skipped), the listing is
//! bounded.
use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jvmdiag_inspect::limits::DIR_MAX_ENTRIES;
use jvmdiag_inspect::log_lines::{uptime_decoration, LineCounts, LineSplitter};
use jvmdiag_inspect::root::ProcRoot;

/// Largest log file opened (the operator's flag asks for 10 MiB files).
const LOG_MAX_BYTES: u64 = 1 << 30;
/// Bytes read per `read` call.
const CHUNK: usize = 64 << 10;

/// What one poll saw, for the agent's own health series.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TailStats {
    /// Complete lines handed to the consumer.
    pub lines: u64,
    /// Lines skipped because they were longer than `SAFEPOINT_LINE_MAX`.
    pub too_long: u64,
    /// Times the followed file was replaced by a new one (rotation or JVM restart).
    pub rotations: u64,
    /// Archives read whole because they were rotated between two polls.
    pub archives_read: u64,
    /// Errors opening or reading a file (the poll goes on with the others).
    pub errors: u64,
}

impl TailStats {
    /// Adds another file's stats (the sidecar follows a new log when the JVM changes).
    pub fn add(&mut self, o: &TailStats) {
        self.lines += o.lines;
        self.too_long += o.too_long;
        self.rotations += o.rotations;
        self.archives_read += o.archives_read;
        self.errors += o.errors;
    }
}

struct Open {
    file: File,
    ino: u64,
    dev: u64,
    offset: u64,
    lines: LineSplitter,
}

pub struct LogTail {
    dir: PathBuf,
    name: String,
    cur: Option<Open>,
    /// Files read to their end, pruned to those still in the directory.
    done: HashSet<FileKey>,
    pub stats: TailStats,
}

impl LogTail {
    /// Follows `path` (e.g. `/tmp/jvmdiag/safepoint.log`) and its archives `path.N`.
    pub fn new(path: &Path) -> LogTail {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        LogTail { dir, name, cur: None, done: HashSet::new(), stats: TailStats::default() }
    }

    /// Reads every complete line written since the last poll, in order, into `sink`.
    pub fn poll(&mut self, sink: &mut dyn FnMut(&str)) {
        if let Some(cur) = self.cur.as_mut() {
            drain(cur, &mut self.stats, sink);
        }
        let Ok(root) = ProcRoot::from_dir(&self.dir) else { return };
        let Some((dev, ino)) = ident(&self.dir.join(&self.name)) else { return };
        if self.cur.as_ref().is_some_and(|c| (c.dev, c.ino) == (dev, ino)) {
            return;
        }
        // A new file: finish the old one (renamed, still open), then the unseen archives.
        if let Some(mut old) = self.cur.take() {
            drain(&mut old, &mut self.stats, sink);
            if old.lines.pending() > 0 {
                // An archived file ends with a newline; a fragment is a torn write.
                self.stats.errors += 1;
            }
            self.done.insert(key_of(&old));
            self.stats.rotations += 1;
        }
        let names = root.list_dir(Path::new("."), DIR_MAX_ENTRIES).unwrap_or_default();
        let prefix = format!("{}.", self.name);
        let mut present = HashSet::new();
        let mut archives = Vec::new();
        for n in names {
            let n = n.to_string_lossy().into_owned();
            if n.strip_prefix(&prefix).and_then(|k| k.parse::<u32>().ok()).is_none() {
                continue;
            }
            let p = self.dir.join(&n);
            let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
            if !m.file_type().is_file() {
                continue;
            }
            if (m.dev(), m.ino()) == (dev, ino) {
                continue;
            }
            let head = head_of(&root, &n);
            let key = FileKey { dev: m.dev(), ino: m.ino(), head: head.clone() };
            present.insert(key.clone());
            if !self.done.contains(&key) {
                archives.push((
                    m.mtime(),
                    m.mtime_nsec(),
                    uptime_decoration(first_line(&head)).unwrap_or(f64::MAX),
                    n,
                ));
            }
        }
        // The order the JVM wrote them: last write time; equal times (coarse clocks) by the
        // uptime of their first line.
        archives.sort_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then(a.2.partial_cmp(&b.2).unwrap_or(std::cmp::Ordering::Equal))
        });
        for (_, _, _, n) in archives {
            match open(&root, &n) {
                Some(mut o) => {
                    drain(&mut o, &mut self.stats, sink);
                    self.done.insert(key_of(&o));
                    present.insert(key_of(&o));
                    self.stats.archives_read += 1;
                }
                None => self.stats.errors += 1,
            }
        }
        self.done.retain(|id| present.contains(id));
        match open(&root, &self.name) {
            Some(mut o) => {
                drain(&mut o, &mut self.stats, sink);
                self.cur = Some(o);
            }
            None => self.stats.errors += 1,
        }
    }
}

/// Identity of a log file: its inode and its first bytes (which never change: append only).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileKey {
    dev: u64,
    ino: u64,
    head: Vec<u8>,
}

const HEAD: usize = 256;

fn key_of(o: &Open) -> FileKey {
    let mut head = vec![0u8; HEAD];
    let n = std::os::unix::fs::FileExt::read_at(&o.file, &mut head, 0).unwrap_or(0);
    head.truncate(n);
    FileKey { dev: o.dev, ino: o.ino, head }
}

fn head_of(root: &ProcRoot, name: &str) -> Vec<u8> {
    let mut head = Vec::new();
    if let Ok(f) = root.open_file(Path::new(name), LOG_MAX_BYTES) {
        let _ = f.take(HEAD as u64).read_to_end(&mut head);
    }
    head
}

fn first_line(head: &[u8]) -> &str {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    std::str::from_utf8(&head[..end]).unwrap_or("")
}

fn ident(p: &Path) -> Option<(u64, u64)> {
    let m = std::fs::symlink_metadata(p).ok()?;
    m.file_type().is_file().then(|| (m.dev(), m.ino()))
}

fn open(root: &ProcRoot, name: &str) -> Option<Open> {
    let file = root.open_file(Path::new(name), LOG_MAX_BYTES).ok()?;
    let m = file.metadata().ok()?;
    Some(Open { file, ino: m.ino(), dev: m.dev(), offset: 0, lines: LineSplitter::new() })
}

/// Reads from the offset to the end; hands over complete lines, keeps the fragment.
fn drain(o: &mut Open, stats: &mut TailStats, sink: &mut dyn FnMut(&str)) {
    let len = match o.file.metadata() {
        Ok(m) => m.len(),
        Err(_) => {
            stats.errors += 1;
            return;
        }
    };
    if len < o.offset {
        // Truncated in place (not HotSpot's way, but a user's `> file`): start over.
        o.offset = 0;
        o.lines.reset();
    }
    if o.file.seek(SeekFrom::Start(o.offset)).is_err() {
        stats.errors += 1;
        return;
    }
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match o.file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                stats.errors += 1;
                break;
            }
        };
        o.offset += n as u64;
        let mut counts = LineCounts::default();
        o.lines.feed(&buf[..n], &mut counts, sink);
        stats.lines += counts.lines;
        stats.too_long += counts.too_long;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jvmdiag_inspect::limits::SAFEPOINT_LINE_MAX;
    use std::io::Write;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("jvmdiag-logtail-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Writes like HotSpot: append whole lines, rotate by renaming to name.k round robin.
    struct FakeJvm {
        dir: PathBuf,
        count: u32,
        size: u64,
        next: u32,
        written: u64,
        file: File,
    }

    impl FakeJvm {
        fn new(dir: &Path, count: u32, size: u64) -> FakeJvm {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("sp.log"))
                .unwrap();
            FakeJvm { dir: dir.to_path_buf(), count, size, next: 0, written: 0, file }
        }
        fn line(&mut self, i: u64) {
            writeln!(self.file, "[{}.000s][info][safepoint] line {i}", i).unwrap();
            self.written += 1;
            if self.file.metadata().unwrap().len() >= self.size {
                std::fs::rename(
                    self.dir.join("sp.log"),
                    self.dir.join(format!("sp.log.{}", self.next)),
                )
                .unwrap();
                self.next = (self.next + 1) % self.count;
                self.file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.join("sp.log"))
                    .unwrap();
            }
        }
    }

    fn collect(t: &mut LogTail, out: &mut Vec<u64>) {
        t.poll(&mut |l: &str| out.push(l.rsplit(' ').next().unwrap().parse().unwrap()));
    }

    #[test]
    fn every_line_once_across_rotations_at_any_poll_rate() {
        // poll every k lines: k = 1 (each line), 7 (a rotation between polls), 20 (two).
        for k in [1u64, 7, 20] {
            let d = tmpdir(&format!("rot{k}"));
            let mut jvm = FakeJvm::new(&d, 3, 300);
            let mut t = LogTail::new(&d.join("sp.log"));
            let mut got = Vec::new();
            for i in 0..200u64 {
                jvm.line(i);
                if i % k == 0 {
                    collect(&mut t, &mut got);
                }
            }
            collect(&mut t, &mut got);
            assert_eq!(got, (0..200).collect::<Vec<_>>(), "poll every {k} lines");
            assert!(t.stats.rotations >= 10, "{:?}", t.stats);
            if k == 20 {
                assert!(t.stats.archives_read > 0, "{:?}", t.stats);
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    #[test]
    fn a_started_sidecar_reads_the_archives_first() {
        let d = tmpdir("start");
        let mut jvm = FakeJvm::new(&d, 3, 300);
        for i in 0..20u64 {
            jvm.line(i);
        }
        let mut t = LogTail::new(&d.join("sp.log"));
        let mut got = Vec::new();
        collect(&mut t, &mut got);
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_torn_line_is_read_once_complete() {
        let d = tmpdir("torn");
        let p = d.join("sp.log");
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        let mut t = LogTail::new(&p);
        let mut got = Vec::new();
        f.write_all(b"[1.000s][info][safepoint] line 1\n[2.000s][info][safe").unwrap();
        collect(&mut t, &mut got);
        assert_eq!(got, [1]);
        f.write_all(b"point] line 2\n").unwrap();
        collect(&mut t, &mut got);
        assert_eq!(got, [1, 2]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_counted() {
        let d = tmpdir("long");
        let p = d.join("sp.log");
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        let mut t = LogTail::new(&p);
        let mut got = Vec::new();
        f.write_all(&vec![b'x'; SAFEPOINT_LINE_MAX + 10]).unwrap();
        collect(&mut t, &mut got);
        f.write_all(b"yyy\n[3.000s][info][safepoint] line 3\n").unwrap();
        collect(&mut t, &mut got);
        assert_eq!(got, [3]);
        assert_eq!(t.stats.too_long, 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_symlinked_log_is_not_followed() {
        let d = tmpdir("link");
        std::os::unix::fs::symlink("/etc/hostname", d.join("sp.log")).unwrap();
        let mut t = LogTail::new(&d.join("sp.log"));
        let mut got = Vec::new();
        t.poll(&mut |l: &str| got.push(l.to_string()));
        assert!(got.is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }
}
