//! `/proc/PID/{maps,status,cmdline}`: written by the kernel, but holding strings the process
//! chose (mapped file paths, `comm`, arguments). Bounded, never panics.
use crate::limits::*;
use crate::Error;

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    pub start: u64,
    pub end: u64,
    /// `r-xp` etc.
    pub perms: String,
    pub offset: u64,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
    /// The mapped file or pseudo-name (`[heap]`), without a trailing ` (deleted)`.
    pub path: Option<String>,
    /// The kernel marked the file ` (deleted)` (replaced on disk since it was mapped: open it
    /// through `/proc/PID/map_files/START-END` instead of by path).
    pub deleted: bool,
}

/// Parses `/proc/PID/maps`. Every line must be well-formed (a kernel file: a bad line means
/// this is not a maps file). Paths are taken as written (the kernel escapes `\n` as `\012`);
/// non-UTF-8 bytes become U+FFFD.
pub fn parse_maps(b: &[u8]) -> Result<Vec<MapEntry>, Error> {
    if b.len() as u64 > MAPS_MAX_BYTES {
        return Err(Error::too_large("maps", b.len() as u64, MAPS_MAX_BYTES));
    }
    let mut out = Vec::new();
    let mut off = 0usize;
    for line in b.split(|&c| c == b'\n') {
        let here = off;
        off = off.saturating_add(line.len() + 1);
        if line.is_empty() {
            continue;
        }
        if out.len() >= MAPS_MAX_ENTRIES {
            return Err(Error::too_large(
                "maps entries",
                out.len() as u64 + 1,
                MAPS_MAX_ENTRIES as u64,
            ));
        }
        out.push(parse_maps_line(line, here)?);
    }
    Ok(out)
}

fn parse_maps_line(line: &[u8], at: usize) -> Result<MapEntry, Error> {
    let bad = |why: &str| Error::malformed("maps", at, why.to_string());
    // Five space-separated fields, then spaces, then the path (which may contain spaces).
    let mut rest = line;
    let mut field = || -> Result<&[u8], Error> {
        let sp = rest.iter().position(|&c| c == b' ').unwrap_or(rest.len());
        let (f, r) = rest.split_at(sp);
        rest = r.get(1..).unwrap_or_default();
        if f.is_empty() {
            return Err(bad("missing field"));
        }
        Ok(f)
    };
    let range = field()?;
    let perms = field()?;
    let offset = field()?;
    let dev = field()?;
    let inode = field()?;
    let (start, end) = split2(range, b'-').ok_or_else(|| bad("address range without '-'"))?;
    let start = hex_u64(start).ok_or_else(|| bad("start address is not hex"))?;
    let end = hex_u64(end).ok_or_else(|| bad("end address is not hex"))?;
    if end < start {
        return Err(bad("end address below start"));
    }
    if perms.len() != 4 || !perms.iter().all(|c| b"rwxsp-".contains(c)) {
        return Err(bad("permissions are not like 'r-xp'"));
    }
    let offset = hex_u64(offset).ok_or_else(|| bad("offset is not hex"))?;
    let (maj, min) = split2(dev, b':').ok_or_else(|| bad("device without ':'"))?;
    let dev_major =
        hex_u64(maj).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad("device major"))?;
    let dev_minor =
        hex_u64(min).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad("device minor"))?;
    let inode = dec_u64(inode).ok_or_else(|| bad("inode is not decimal"))?;
    let p = trim_start(rest);
    if p.len() > PROC_MAX_FIELD {
        return Err(Error::too_large("maps path", p.len() as u64, PROC_MAX_FIELD as u64));
    }
    let (p, deleted) = match p.strip_suffix(b" (deleted)") {
        Some(x) => (x, true),
        None => (p, false),
    };
    let path = if p.is_empty() { None } else { Some(String::from_utf8_lossy(p).into_owned()) };
    Ok(MapEntry {
        start,
        end,
        perms: String::from_utf8_lossy(perms).into_owned(),
        offset,
        dev_major,
        dev_minor,
        inode,
        path,
        deleted,
    })
}

/// The mapping of `libjvm.so` (the file name exactly; the one at file offset 0 if several).
pub fn find_libjvm(maps: &[MapEntry]) -> Option<&MapEntry> {
    let is_jvm = |m: &&MapEntry| {
        m.inode != 0
            && m.path
                .as_deref()
                .is_some_and(|p| p.starts_with('/') && p.rsplit('/').next() == Some("libjvm.so"))
    };
    maps.iter().filter(is_jvm).find(|m| m.offset == 0).or_else(|| maps.iter().find(is_jvm))
}

/// What we use from `/proc/PID/status`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ProcStatus {
    /// `comm` (15 bytes at most in the kernel; escaped by the kernel).
    pub name: String,
    pub tgid: u32,
    pub ppid: u32,
    pub uid_real: u32,
    pub uid_effective: u32,
    /// `NSpid:`: the pid in each pid namespace, outermost (the reader's) first.
    pub nspid: Vec<u32>,
    /// `Threads:`
    pub threads: Option<u32>,
}

impl ProcStatus {
    /// The pid in the process's own (innermost) pid namespace: the number in its
    /// `/tmp/hsperfdata_<user>/<pid>` file name.
    pub fn innermost_pid(&self) -> u32 {
        self.nspid.last().copied().unwrap_or(self.tgid)
    }
}

/// Parses `/proc/PID/status`. `Name`, `Tgid`, `PPid` and `Uid` are required.
pub fn parse_status(b: &[u8]) -> Result<ProcStatus, Error> {
    if b.len() as u64 > STATUS_MAX_BYTES {
        return Err(Error::too_large("status", b.len() as u64, STATUS_MAX_BYTES));
    }
    let mut s = ProcStatus::default();
    let (mut name, mut tgid, mut ppid, mut uid) = (false, false, false, false);
    let mut off = 0usize;
    for line in b.split(|&c| c == b'\n') {
        let at = off;
        off = off.saturating_add(line.len() + 1);
        let Some((key, val)) = split2(line, b':') else { continue };
        let val = trim(val);
        let num = |what: &'static str| -> Result<u32, Error> {
            dec_u64(val)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| Error::malformed(what, at, "not a 32-bit decimal number"))
        };
        match key {
            b"Name" => {
                if val.len() > PROC_MAX_FIELD {
                    return Err(Error::too_large(
                        "status Name",
                        val.len() as u64,
                        PROC_MAX_FIELD as u64,
                    ));
                }
                s.name = String::from_utf8_lossy(val).into_owned();
                name = true;
            }
            b"Tgid" => {
                s.tgid = num("status Tgid")?;
                tgid = true;
            }
            b"PPid" => {
                s.ppid = num("status PPid")?;
                ppid = true;
            }
            b"Threads" => s.threads = Some(num("status Threads")?),
            b"Uid" => {
                let mut it = val.split(|c| c.is_ascii_whitespace()).filter(|x| !x.is_empty());
                let mut next = |what: &'static str| {
                    it.next()
                        .and_then(dec_u64)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| Error::malformed(what, at, "expected 4 decimal uids"))
                };
                s.uid_real = next("status Uid (real)")?;
                s.uid_effective = next("status Uid (effective)")?;
                uid = true;
            }
            b"NSpid" => {
                s.nspid.clear();
                for x in val.split(|c| c.is_ascii_whitespace()).filter(|x| !x.is_empty()) {
                    if s.nspid.len() >= 64 {
                        return Err(Error::too_large("status NSpid levels", 65, 64));
                        // kernel max is 32
                    }
                    let v = dec_u64(x)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| Error::malformed("status NSpid", at, "not a decimal pid"))?;
                    s.nspid.push(v);
                }
            }
            _ => {}
        }
    }
    for (ok, field) in [(name, "Name"), (tgid, "Tgid"), (ppid, "PPid"), (uid, "Uid")] {
        if !ok {
            return Err(Error::malformed("status", b.len(), format!("no {field}: line")));
        }
    }
    Ok(s)
}

/// Splits `/proc/PID/cmdline` (NUL-separated, NUL-terminated) into arguments. Non-UTF-8 bytes
/// become U+FFFD. A process may rewrite its own argument area, so nothing here is trusted.
pub fn parse_cmdline(b: &[u8]) -> Result<Vec<String>, Error> {
    if b.len() as u64 > CMDLINE_MAX_BYTES {
        return Err(Error::too_large("cmdline", b.len() as u64, CMDLINE_MAX_BYTES));
    }
    let b = b.strip_suffix(b"\0").unwrap_or(b);
    if b.is_empty() {
        return Ok(Vec::new()); // kernel threads and zombies
    }
    let mut out = Vec::new();
    for a in b.split(|&c| c == 0) {
        if out.len() >= CMDLINE_MAX_ARGS {
            return Err(Error::too_large(
                "cmdline arguments",
                out.len() as u64 + 1,
                CMDLINE_MAX_ARGS as u64,
            ));
        }
        out.push(String::from_utf8_lossy(a).into_owned());
    }
    Ok(out)
}

/// Launcher options that take the next argument as their value.
const OPTS_WITH_VALUE: &[&str] = &[
    "-cp",
    "-classpath",
    "--class-path",
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--limit-modules",
    "--add-reads",
    "--add-exports",
    "--add-opens",
    "--patch-module",
    "--enable-native-access",
    "--source",
];

/// Longest name returned by [`jvm_short_name`] (the `jvm` label, docs/metrics.md).
pub const JVM_NAME_MAX: usize = 64;

/// The `jvm` label: the main class's simple name (`com.acme.Main` → `Main`), the jar's file
/// name (`-jar /app/app.jar` → `app.jar`), the class of `--module m/com.acme.Main`, or the
/// source file (`java Hello.java`); otherwise the launcher's file name. At most 64 chars,
/// control characters replaced by `_`.
pub fn jvm_short_name(args: &[String]) -> String {
    let mut it = args.iter().skip(1);
    let mut name: Option<String> = None;
    while let Some(a) = it.next() {
        let a = a.as_str();
        if a == "-jar" {
            name = it.next().map(|j| last_segment(j, '/').to_string());
            break;
        }
        if a == "-m" || a == "--module" {
            name = it.next().map(|m| module_main(m));
            break;
        }
        if let Some(m) = a.strip_prefix("--module=") {
            name = Some(module_main(m));
            break;
        }
        if OPTS_WITH_VALUE.contains(&a) {
            it.next();
            continue;
        }
        if a.starts_with('-') || a.starts_with('@') {
            continue; // -Dx=y, -Xmx1g, -XX:+Foo, --add-opens=..., -javaagent:..., @argfile
        }
        name = Some(if a.ends_with(".java") {
            last_segment(a, '/').to_string()
        } else {
            last_segment(a, '.').to_string()
        });
        break;
    }
    let name = name
        .filter(|n| !n.is_empty())
        .or_else(|| {
            args.first().map(|a0| last_segment(a0, '/').to_string()).filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| "unknown".to_string());
    name.chars().map(|c| if c.is_control() { '_' } else { c }).take(JVM_NAME_MAX).collect()
}

fn module_main(m: &str) -> String {
    match m.split_once('/') {
        Some((_, cls)) => last_segment(cls, '.').to_string(),
        None => m.to_string(),
    }
}

fn last_segment(s: &str, sep: char) -> &str {
    s.rsplit(sep).next().unwrap_or(s)
}

// --- small byte helpers shared by the text parsers ---

pub(crate) fn split2(b: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let i = b.iter().position(|&c| c == sep)?;
    Some((b.get(..i)?, b.get(i + 1..)?))
}

pub(crate) fn hex_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

pub(crate) fn dec_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn trim_start(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(b.len());
    b.get(i..).unwrap_or_default()
}

pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let b = trim_start(b);
    let e = b.iter().rposition(|&c| !c.is_ascii_whitespace()).map_or(0, |i| i + 1);
    b.get(..e).unwrap_or_default()
}
