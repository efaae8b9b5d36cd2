//! The application JVM's hsperfdata, read through the volume both containers mount at /tmp
//! (`/tmp/hsperfdata_<user>/<pid>`). The files are the application's (untrusted): opened
//! inside the volume only ([`ProcRoot`]), size- and count-bounded, parsed by
//! `jvmdiag_inspect::hsperfdata`.
use std::path::Path;

use jvmdiag_inspect::hsperfdata::{self, PerfData};
use jvmdiag_inspect::limits::{DIR_MAX_ENTRIES, HSPERFDATA_MAX_BYTES};
use jvmdiag_inspect::root::ProcRoot;

/// Tools that are JVMs too and leave a file while they run (`kubectl exec … jcmd`).
const TOOLS: &[&str] = &["sun.tools.", "jdk.jcmd/", "jdk.jartool/", "jdk.jconsole/"];

/// The JVM the sidecar reports: the oldest non-tool JVM with a readable file.
#[derive(Debug)]
pub struct Jvm {
    /// Its pid in its own pid namespace (the file name), what `%p` stands for in its log's name.
    pub pid: u32,
    pub data: PerfData,
    pub created_ms: i64,
}

/// Finds and reads the application's hsperfdata under `tmp`. Unreadable files (another
/// user's 0600 file, a half-written one) are skipped and counted in `unreadable`.
/// `prefer`: the JVM reported so far, returned while its file is readable (a new JVM, e.g.
/// a tool whose file is not complete yet, never takes its place).
pub fn find(tmp: &Path, unreadable: &mut u64, prefer: Option<u32>) -> Option<Jvm> {
    let root = ProcRoot::from_dir(tmp).ok()?;
    let mut best: Option<Jvm> = None;
    for user_dir in root.list_dir(Path::new("."), DIR_MAX_ENTRIES).unwrap_or_default() {
        let user_dir = user_dir.to_string_lossy().into_owned();
        if !user_dir.starts_with("hsperfdata_") {
            continue;
        }
        for f in root.list_dir(Path::new(&user_dir), DIR_MAX_ENTRIES).unwrap_or_default() {
            let f = f.to_string_lossy().into_owned();
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(pid) = f.parse::<u32>() else { continue };
            let rel = format!("{user_dir}/{f}");
            let Some(data) = root
                .read_file(Path::new(&rel), HSPERFDATA_MAX_BYTES)
                .ok()
                .and_then(|b| hsperfdata::parse(&b).ok())
            else {
                *unreadable += 1;
                continue;
            };
            let cmd = data.string("sun.rt.javaCommand").unwrap_or("");
            if TOOLS.iter().any(|t| cmd.starts_with(t)) {
                continue;
            }
            let created_ms = data.long("sun.rt.createVmBeginTime").unwrap_or(i64::MAX);
            if prefer == Some(pid) {
                return Some(Jvm { pid, data, created_ms });
            }
            if best.as_ref().is_none_or(|b| created_ms < b.created_ms) {
                best = Some(Jvm { pid, data, created_ms });
            }
        }
    }
    best
}

/// Whether a JVM with this pid still has its file under `tmp` (it runs, or died unclean).
pub fn exists(tmp: &Path, pid: u32) -> bool {
    let Ok(root) = ProcRoot::from_dir(tmp) else { return false };
    let name = pid.to_string();
    root.list_dir(Path::new("."), DIR_MAX_ENTRIES).unwrap_or_default().into_iter().any(|u| {
        let u = u.to_string_lossy().into_owned();
        u.starts_with("hsperfdata_")
            && root
                .list_dir(Path::new(&u), DIR_MAX_ENTRIES)
                .unwrap_or_default()
                .iter()
                .any(|f| f.to_string_lossy() == name)
    })
}

/// The `jvm` label from `sun.rt.javaCommand` (`com.example.Main args`, `/app/app.jar args`,
/// `mod/com.example.Main args`), named by the same rule as the agent's discovery.
pub fn jvm_name(java_command: &str) -> String {
    let first = java_command.split_whitespace().next().unwrap_or("").to_string();
    let args: Vec<String> = if first.ends_with(".jar") {
        vec!["java".into(), "-jar".into(), first]
    } else if first.contains('/') {
        vec!["java".into(), "-m".into(), first]
    } else {
        vec!["java".into(), first]
    };
    jvmdiag_inspect::procfs::jvm_short_name(&args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jvm_name_follows_the_agents_rule() {
        assert_eq!(jvm_name("com.example.Main a b"), "Main");
        assert_eq!(jvm_name("/app/lib/app.jar --x"), "app.jar");
        assert_eq!(jvm_name("app/com.example.Main"), "Main");
        assert_eq!(jvm_name("Spin"), "Spin");
        assert_eq!(jvm_name(""), "java");
    }
}
