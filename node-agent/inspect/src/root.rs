//! Safe access to files inside a process's root (a container's file system).
//!
//! A [`ProcRoot`] holds an `O_PATH` descriptor of `/proc/PID/root`. Every open below it is
//! resolved by the kernel with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`: absolute
//! symlinks and `..` are resolved *inside* that root, so nothing the container wrote can
//! lead the (privileged) agent to a host file. The last component is never a symlink
//! (`O_NOFOLLOW`), files are first opened `O_PATH` and checked with `fstat` so a FIFO or a
//! device is refused without ever being opened for reading (opening some character devices
//! has side effects, e.g. a watchdog), and only then re-opened read-only through
//! `/proc/self/fd` (the same inode, no second path lookup).
//!
//! `RESOLVE_NO_XDEV` is deliberately not used: a container's `/tmp` (emptyDir, tmpfs) and
//! shared volumes are separate mounts that we must read, and a container cannot create
//! mounts itself without privileges; mounts are the pod author's (cluster's) decision.
//!
//! On kernels without `openat2` (before 5.6, e.g. RHEL 8's 4.18) the same rules are applied
//! by walking the path one component at a time with `openat(O_PATH|O_NOFOLLOW)`, expanding
//! symlinks ourselves and resolving `..` on our own stack of directory descriptors (never by
//! asking the kernel for a parent), so the walk cannot leave the root either.
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::Error;

/// How paths are resolved below the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`, falling back to [`Resolver::Walk`]
    /// only when the kernel has no `openat2` (ENOSYS).
    Openat2,
    /// Component-by-component walk in user space (the fallback; selectable for tests).
    Walk,
}

/// A process's root directory, held open.
#[derive(Debug)]
pub struct ProcRoot {
    dir: OwnedFd,
    display: PathBuf,
    resolver: Resolver,
}

/// Symlinks expanded in one walk (the kernel's limit is 40).
const MAX_LINKS: usize = 40;
/// Path components processed in one walk (after symlink expansion).
const MAX_COMPONENTS: usize = 4096;

impl ProcRoot {
    /// `/proc/PID/root` of a process (needs the rights to read it: root or the same user).
    pub fn open(pid: u32) -> Result<ProcRoot, Error> {
        Self::from_dir(Path::new(&format!("/proc/{pid}/root")))
    }

    /// Any directory treated as a root (tests, the sidecar's shared volume).
    pub fn from_dir(path: &Path) -> Result<ProcRoot, Error> {
        let dir = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_err(path, "open root", e))?;
        Ok(ProcRoot { dir, display: path.to_path_buf(), resolver: Resolver::Openat2 })
    }

    /// Choose the resolver (tests use [`Resolver::Walk`] to check the fallback on this kernel).
    pub fn with_resolver(mut self, resolver: Resolver) -> ProcRoot {
        self.resolver = resolver;
        self
    }

    /// The path this root was opened from (for messages).
    pub fn path(&self) -> &Path {
        &self.display
    }

    /// Opens a regular file inside the root for reading. Refused: a symlink in last position,
    /// a FIFO/device/socket/directory (without blocking and without opening it for reading),
    /// a file larger than `max_len`, a path with `..`.
    pub fn open_file(&self, path_in_root: &Path, max_len: u64) -> Result<std::fs::File, Error> {
        self.open_regular(path_in_root, max_len, false)
    }

    /// Like [`ProcRoot::read_file`], but a symlink in last position is followed, inside the root
    /// as every other link (a Kubernetes ConfigMap or Secret volume presents each file as such
    /// a link). For files a process names itself (its options files); the file must still be
    /// a regular file within the bound.
    pub fn read_file_following_links(
        &self,
        path_in_root: &Path,
        max_len: u64,
    ) -> Result<Vec<u8>, Error> {
        let f = self.open_regular(path_in_root, max_len, true)?;
        read_bounded(f, max_len, &self.shown(path_in_root))
    }

    fn open_regular(
        &self,
        path_in_root: &Path,
        max_len: u64,
        follow_last: bool,
    ) -> Result<std::fs::File, Error> {
        let shown = self.shown(path_in_root);
        let rel = checked_relative(path_in_root, &shown)?;
        let nofollow = if follow_last { OFlags::empty() } else { OFlags::NOFOLLOW };
        let opath = self.resolve(&rel, OFlags::PATH | nofollow | OFlags::CLOEXEC, &shown)?;
        let st = rustix::fs::fstat(&opath).map_err(|e| io_err(&shown, "fstat", e))?;
        let ft = FileType::from_raw_mode(st.st_mode);
        if ft != FileType::RegularFile {
            return Err(Error::NotRegularFile {
                path: shown,
                expected: "regular file",
                found: type_name(ft),
            });
        }
        let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
        if size > max_len {
            return Err(Error::too_large(leak_what(&shown), size, max_len));
        }
        // Re-open the very inode we checked, read-only, through our own /proc/self/fd.
        let fds = proc_self_fd()?;
        let name = opath.as_raw_fd().to_string();
        let fd = rustix::fs::openat(
            &fds,
            name.as_str(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| io_err(&shown, "re-open", e))?;
        Ok(std::fs::File::from(fd))
    }

    /// Reads a whole regular file inside the root, refusing more than `max_len` bytes (also
    /// when the file grows after the size check, or reports size 0 like procfs files).
    pub fn read_file(&self, path_in_root: &Path, max_len: u64) -> Result<Vec<u8>, Error> {
        let f = self.open_file(path_in_root, max_len)?;
        read_bounded(f, max_len, &self.shown(path_in_root))
    }

    /// Names in a directory inside the root (without `.` and `..`), at most `max_entries`
    /// (more is [`Error::TooLarge`]). The directory itself must not be a symlink.
    pub fn list_dir(
        &self,
        path_in_root: &Path,
        max_entries: usize,
    ) -> Result<Vec<OsString>, Error> {
        let shown = self.shown(path_in_root);
        let rel = checked_relative(path_in_root, &shown)?;
        let fd = self.resolve(
            &rel,
            OFlags::RDONLY
                | OFlags::DIRECTORY
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            &shown,
        )?;
        let mut dir =
            rustix::fs::Dir::read_from(&fd).map_err(|e| io_err(&shown, "read directory", e))?;
        let mut out = Vec::new();
        while let Some(ent) = dir.read() {
            let ent = ent.map_err(|e| io_err(&shown, "read directory", e))?;
            let name = ent.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if out.len() >= max_entries {
                return Err(Error::too_large(
                    leak_what(&shown),
                    out.len() as u64 + 1,
                    max_entries as u64,
                ));
            }
            out.push(OsString::from_vec(name.to_vec()));
        }
        Ok(out)
    }

    fn shown(&self, p: &Path) -> PathBuf {
        let rel = p.strip_prefix("/").unwrap_or(p);
        self.display.join(rel)
    }

    fn resolve(&self, rel: &Path, flags: OFlags, shown: &Path) -> Result<OwnedFd, Error> {
        if self.resolver == Resolver::Openat2 {
            let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
            let mut r = rustix::fs::openat2(&self.dir, rel, flags, Mode::empty(), how);
            if matches!(r, Err(Errno::AGAIN)) {
                // openat2 asks to retry when a rename raced with the lookup.
                r = rustix::fs::openat2(&self.dir, rel, flags, Mode::empty(), how);
            }
            match r {
                Err(Errno::NOSYS) => {} // kernel < 5.6: fall through to the walk
                Err(e @ (Errno::LOOP | Errno::NOTDIR)) => return Err(self.classify(rel, shown, e)),
                r => return r.map_err(|e| open_err(shown, e)),
            }
        }
        walk(self.dir.as_fd(), rel, flags).map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => self.classify(rel, shown, e),
            e => open_err(shown, e),
        })
    }

    /// ELOOP and ENOTDIR have several causes; tell "the file itself is a symlink" (we never
    /// follow one in last position) and "not a directory" from "a magic link or a link loop on
    /// the way" (refused as an escape).
    fn classify(&self, rel: &Path, shown: &Path, e: Errno) -> Error {
        let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
        let opath = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match self.resolver {
            Resolver::Openat2 => {
                rustix::fs::openat2(&self.dir, rel, opath, Mode::empty(), how).ok()
            }
            Resolver::Walk => walk(self.dir.as_fd(), rel, opath).ok(),
        };
        let ft = fd
            .and_then(|fd| rustix::fs::fstat(&fd).ok())
            .map(|st| FileType::from_raw_mode(st.st_mode));
        match (ft, e) {
            (Some(FileType::Symlink), _) => Error::NotRegularFile {
                path: shown.to_path_buf(),
                expected: "regular file or directory",
                found: "symbolic link",
            },
            (Some(ft), Errno::NOTDIR) if ft != FileType::Directory => Error::NotRegularFile {
                path: shown.to_path_buf(),
                expected: "directory",
                found: type_name(ft),
            },
            (_, Errno::LOOP) => Error::OutsideRoot {
                path: shown.to_path_buf(),
                reason: "a magic link or a symlink loop on the way (not followed)",
            },
            (_, e) => open_err(shown, e),
        }
    }
}

/// Our own `/proc/self/fd`, checked to be procfs (an agent in a container sees its own /proc).
fn proc_self_fd() -> Result<OwnedFd, Error> {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    let p = Path::new("/proc/self/fd");
    let fd = rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| io_err(p, "open", e))?;
    let fs = rustix::fs::fstatfs(&fd).map_err(|e| io_err(p, "fstatfs", e))?;
    #[allow(clippy::unnecessary_cast)]
    if fs.f_type as i64 != PROC_SUPER_MAGIC {
        return Err(Error::OutsideRoot {
            path: p.to_path_buf(),
            reason: "/proc is not procfs; cannot re-open safely",
        });
    }
    Ok(fd)
}

/// The path the kernel gives for an open file (`readlink /proc/self/fd/N`): where the file
/// really is in the agent's view. For an audit log, and for tests that check every file
/// opened through a [`ProcRoot`] lies below `/proc/PID/root`'s target.
pub fn real_path_of(f: &std::fs::File) -> Result<PathBuf, Error> {
    let fds = proc_self_fd()?;
    let name = f.as_raw_fd().to_string();
    let target = rustix::fs::readlinkat(&fds, name.as_str(), Vec::new())
        .map_err(|e| io_err(Path::new("/proc/self/fd"), "readlink", e))?;
    Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
}

/// Reads at most `max_len` bytes; one more byte means the file is too large.
pub(crate) fn read_bounded(f: impl Read, max_len: u64, shown: &Path) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    f.take(max_len.saturating_add(1)).read_to_end(&mut buf).map_err(|source| Error::Io {
        path: shown.to_path_buf(),
        op: "read",
        source,
    })?;
    if buf.len() as u64 > max_len {
        return Err(Error::too_large(leak_what(shown), buf.len() as u64, max_len));
    }
    Ok(buf)
}

/// Reads a (host) file with a bound, e.g. `/proc/PID/maps`. Host procfs files are written by
/// the kernel, but their content (paths, names) is chosen by the process.
pub fn read_host_file(path: &Path, max_len: u64) -> Result<Vec<u8>, Error> {
    let f = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        op: "open",
        source,
    })?;
    read_bounded(f, max_len, path)
}

/// The path as a relative path for the lookup; `..` and NUL are refused up front (defence in
/// depth: the resolver would keep `..` inside the root anyway, but no caller needs it).
fn checked_relative(p: &Path, shown: &Path) -> Result<PathBuf, Error> {
    if p.as_os_str().as_bytes().contains(&0) {
        return Err(Error::OutsideRoot {
            path: shown.to_path_buf(),
            reason: "path contains a NUL byte",
        });
    }
    let mut rel = PathBuf::new();
    for c in p.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => rel.push(n),
            Component::ParentDir => {
                return Err(Error::OutsideRoot {
                    path: shown.to_path_buf(),
                    reason: "path contains '..'",
                })
            }
            Component::Prefix(_) => {
                return Err(Error::OutsideRoot {
                    path: shown.to_path_buf(),
                    reason: "path has a prefix",
                })
            }
        }
    }
    if rel.as_os_str().is_empty() {
        rel.push(".");
    }
    Ok(rel)
}

/// The user-space walk (see the module comment). `flags` apply to the last component.
fn walk(root: std::os::fd::BorrowedFd<'_>, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let mut queue: std::collections::VecDeque<Vec<u8>> =
        rel.as_os_str().as_bytes().split(|&c| c == b'/').map(<[u8]>::to_vec).collect();
    let mut stack: Vec<OwnedFd> = Vec::new();
    let (mut links, mut steps) = (0usize, 0usize);
    while let Some(c) = queue.pop_front() {
        steps += 1;
        if steps > MAX_COMPONENTS {
            return Err(Errno::NAMETOOLONG);
        }
        let last = queue.iter().all(|q| q.is_empty() || q == b".");
        if c.is_empty() || c == b"." {
            if last {
                break;
            }
            continue;
        }
        if c == b".." {
            stack.pop(); // clamped at the root, like RESOLVE_IN_ROOT
            if last {
                break;
            }
            continue;
        }
        let cur = stack.last().map(AsFd::as_fd).unwrap_or(root);
        let name = std::ffi::OsStr::from_bytes(&c);
        if last && flags.contains(OFlags::NOFOLLOW) {
            // O_NOFOLLOW: a symlink here is ELOOP; a swap after our checks still cannot
            // escape, the lookup is one name inside a directory that is inside the root.
            return rustix::fs::openat(cur, name, flags | OFlags::NOFOLLOW, Mode::empty());
        }
        let fd = rustix::fs::openat(
            cur,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        match FileType::from_raw_mode(st.st_mode) {
            // Following a link in last position (no O_NOFOLLOW asked): the file it ends on is
            // reopened by name inside its directory, never followed further by the kernel.
            _ if last && !matches!(FileType::from_raw_mode(st.st_mode), FileType::Symlink) => {
                return rustix::fs::openat(cur, name, flags | OFlags::NOFOLLOW, Mode::empty());
            }
            FileType::Directory => stack.push(fd),
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP);
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
                let t = target.as_bytes();
                if t.first() == Some(&b'/') {
                    stack.clear(); // absolute: from the container's root, not the host's
                }
                for part in t.split(|&b| b == b'/').rev() {
                    queue.push_front(part.to_vec());
                }
            }
            _ => return Err(Errno::NOTDIR),
        }
    }
    // The path ended on a directory (".", "..", trailing "/"): open it with the final flags.
    let cur = stack.last().map(AsFd::as_fd).unwrap_or(root);
    rustix::fs::openat(cur, ".", flags, Mode::empty())
}

fn type_name(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "file of unknown type",
    }
}

fn open_err(shown: &Path, e: Errno) -> Error {
    match e {
        Errno::XDEV => Error::OutsideRoot {
            path: shown.to_path_buf(),
            reason: "the kernel refused the lookup (magic link or escape from the root)",
        },
        Errno::NXIO => Error::NotRegularFile {
            path: shown.to_path_buf(),
            expected: "regular file",
            found: "socket or device",
        },
        Errno::NOTDIR => Error::Io {
            path: shown.to_path_buf(),
            op: "open",
            source: std::io::Error::from_raw_os_error(e.raw_os_error()),
        },
        _ => io_err(shown, "open", e),
    }
}

fn io_err(path: &Path, op: &'static str, e: Errno) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        op,
        source: std::io::Error::from_raw_os_error(e.raw_os_error()),
    }
}

fn leak_what(p: &Path) -> String {
    p.display().to_string()
}
