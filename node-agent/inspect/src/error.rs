use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

/// Why an input was refused. `Display` is one line naming what and where.
#[derive(Debug)]
pub enum Error {
    /// The input is larger than the bound for its kind.
    TooLarge { what: Cow<'static, str>, size: u64, max: u64 },
    /// The input ends before a structure it announces.
    Truncated { what: &'static str, offset: u64, needed: u64, len: u64 },
    /// The input does not have the expected shape.
    Malformed { what: &'static str, offset: u64, reason: String },
    /// A file that must be a regular file (or directory) is something else: FIFO, device,
    /// socket, directory, or a symbolic link (which is never followed in last position).
    NotRegularFile { path: PathBuf, expected: &'static str, found: &'static str },
    /// The path would leave the container's root (`..`, a magic link, an escape the kernel
    /// detected), or is not a path that can be used inside a root.
    OutsideRoot { path: PathBuf, reason: &'static str },
    /// An I/O error, with the path and the operation.
    Io { path: PathBuf, op: &'static str, source: std::io::Error },
}

impl Error {
    pub(crate) fn malformed(what: &'static str, offset: usize, reason: impl Into<String>) -> Error {
        Error::Malformed { what, offset: offset as u64, reason: reason.into() }
    }
    pub(crate) fn truncated(what: &'static str, offset: usize, needed: usize, len: usize) -> Error {
        Error::Truncated { what, offset: offset as u64, needed: needed as u64, len: len as u64 }
    }
    pub(crate) fn too_large(what: impl Into<Cow<'static, str>>, size: u64, max: u64) -> Error {
        Error::TooLarge { what: what.into(), size, max }
    }
    /// The underlying errno for I/O errors (e.g. to tell "no such file" from others).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
    /// True for "the file is not there" (ENOENT / ENOTDIR).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound
            || source.raw_os_error() == Some(20 /* ENOTDIR */))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooLarge { what, size, max } => {
                write!(f, "{what}: {size} is over the limit of {max}; refusing to read it")
            }
            Error::Truncated { what, offset, needed, len } => write!(
                f,
                "{what}: truncated at offset {offset}: needs {needed} bytes, only {len} available there"
            ),
            Error::Malformed { what, offset, reason } => {
                write!(f, "{what}: malformed at offset {offset}: {}", reason.escape_debug())
            }
            Error::NotRegularFile { path, expected, found } => write!(
                f,
                "{}: is a {found}, expected a {expected} (links and special files are not followed)",
                path.display()
            ),
            Error::OutsideRoot { path, reason } => {
                write!(f, "{}: refused, would leave the container root: {reason}", path.display())
            }
            Error::Io { path, op, source } => write!(f, "{}: {op}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
