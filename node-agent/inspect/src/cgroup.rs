//! `/proc/PID/cgroup` (v1 and v2) → which container a process runs in (pod attribution).
//!
//! The path's last container-looking component wins, so nested layouts
//! (`…/crio-<id>.scope/container`, kind's `/kubelet.slice/…`, paths relative to the reader's
//! cgroup namespace starting with `/../..`) work the same as plain ones. Recognised:
//!
//! | driver | example |
//! |---|---|
//! | cgroupfs (any CRI) | `/kubepods/burstable/pod<uid>/<id>` |
//! | cgroupfs, CRI-O | `/kubepods/burstable/pod<uid>/crio-<id>` |
//! | systemd, containerd | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<u_i_d>.slice/cri-containerd-<id>.scope` |
//! | systemd, CRI-O | `…/kubepods-pod<u_i_d>.slice/crio-<id>.scope` |
//! | systemd, Docker / cri-dockerd | `…/docker-<id>.scope`, `/system.slice/docker-<id>.scope` |
//! | Docker, cgroupfs | `/docker/<id>` |
//! | containerd's systemd spec, unconverted | `/system.slice/containerd.service/kubepods-besteffort-pod<u_i_d>.slice:cri-containerd:<id>` |
//! | Podman | `/machine.slice/libpod-<id>.scope` (runtime `Unknown`) |
use crate::limits::*;
use crate::procfs::{dec_u64, split2};
use crate::Error;

/// One line: `hierarchy-ID:controllers:path` (v2: `0::/path`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLine {
    pub hierarchy: u32,
    /// Empty for v2; `name=systemd` for the named v1 hierarchy.
    pub controllers: Vec<String>,
    pub path: String,
}

/// The container runtime, as far as the path tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    Containerd,
    CriO,
    Docker,
    /// A bare id under `kubepods` (cgroupfs driver: containerd, CRI-O and cri-dockerd all look
    /// the same), Podman, or another runtime. The pod's `containerID` tells the runtime.
    Unknown,
}

/// The container a process belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContainerRef {
    pub runtime: Runtime,
    /// 64 lowercase hex characters, as in `containerStatuses[].containerID` after `://`.
    pub container_id: String,
    /// The pod UID with dashes (`_` of the systemd driver turned back into `-`).
    pub pod_uid: Option<String>,
}

/// Parses the file. Lines must be `N:controllers:path` with a path starting with `/`.
pub fn parse(b: &[u8]) -> Result<Vec<CgroupLine>, Error> {
    if b.len() as u64 > CGROUP_MAX_BYTES {
        return Err(Error::too_large("cgroup", b.len() as u64, CGROUP_MAX_BYTES));
    }
    let mut out = Vec::new();
    let mut off = 0usize;
    for line in b.split(|&c| c == b'\n') {
        let at = off;
        off = off.saturating_add(line.len() + 1);
        if line.is_empty() {
            continue;
        }
        if out.len() >= CGROUP_MAX_LINES {
            return Err(Error::too_large(
                "cgroup lines",
                out.len() as u64 + 1,
                CGROUP_MAX_LINES as u64,
            ));
        }
        let bad = |why: &str| Error::malformed("cgroup", at, why.to_string());
        let (id, rest) = split2(line, b':').ok_or_else(|| bad("expected 'ID:controllers:path'"))?;
        let (ctl, path) =
            split2(rest, b':').ok_or_else(|| bad("expected 'ID:controllers:path'"))?;
        let hierarchy = dec_u64(id)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| bad("hierarchy ID is not a number"))?;
        if path.first() != Some(&b'/') {
            return Err(bad("path does not start with '/'"));
        }
        if path.len() > PROC_MAX_FIELD {
            return Err(Error::too_large("cgroup path", path.len() as u64, PROC_MAX_FIELD as u64));
        }
        let controllers = if ctl.is_empty() {
            Vec::new()
        } else {
            ctl.split(|&c| c == b',').map(|c| String::from_utf8_lossy(c).into_owned()).collect()
        };
        out.push(CgroupLine {
            hierarchy,
            controllers,
            path: String::from_utf8_lossy(path).into_owned(),
        });
    }
    Ok(out)
}

/// The container of the process, or `None` for host processes (`/user.slice/…`,
/// `/system.slice/foo.service`, `/`, `/init.scope`). The v2 line is looked at first, then the
/// v1 lines in order; the first that names a container wins.
pub fn container_of(lines: &[CgroupLine]) -> Option<ContainerRef> {
    let v2 = lines.iter().filter(|l| l.hierarchy == 0 && l.controllers.is_empty());
    let v1 = lines.iter().filter(|l| !(l.hierarchy == 0 && l.controllers.is_empty()));
    v2.chain(v1).find_map(|l| from_path(&l.path))
}

/// The container named by one cgroup path.
pub fn from_path(path: &str) -> Option<ContainerRef> {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    for (i, c) in comps.iter().enumerate().rev() {
        let Some((runtime, id, uid_in_comp)) =
            container_component(c, comps.get(..i).unwrap_or_default())
        else {
            continue;
        };
        let parents = comps.get(..i).unwrap_or_default();
        let pod_uid = uid_in_comp.or_else(|| parents.iter().rev().find_map(|p| pod_uid_of(p)));
        return Some(ContainerRef { runtime, container_id: id.to_string(), pod_uid });
    }
    None
}

/// `(runtime, id, pod uid found in the same component)` if `c` names a container.
fn container_component<'a>(
    c: &'a str,
    parents: &[&str],
) -> Option<(Runtime, &'a str, Option<String>)> {
    let scope = c.strip_suffix(".scope");
    if let Some(s) = scope {
        if let Some(id) = s.strip_prefix("cri-containerd-").filter(|id| is_id(id)) {
            return Some((Runtime::Containerd, id, None));
        }
        if let Some(id) = s.strip_prefix("crio-").filter(|id| is_id(id)) {
            return Some((Runtime::CriO, id, None)); // (crio-conmon-<id> is not: has no 64-hex tail)
        }
        if let Some(id) = s.strip_prefix("docker-").filter(|id| is_id(id)) {
            return Some((Runtime::Docker, id, None));
        }
        if let Some(id) = s.strip_prefix("libpod-").filter(|id| is_id(id)) {
            return Some((Runtime::Unknown, id, None));
        }
        return None;
    }
    // containerd's systemd-style spec left unconverted: "<slice>:cri-containerd:<id>".
    let mut parts = c.splitn(3, ':');
    if let (Some(slice), Some(prefix), Some(id)) = (parts.next(), parts.next(), parts.next()) {
        if is_id(id) {
            let rt = match prefix {
                "cri-containerd" => Runtime::Containerd,
                "crio" => Runtime::CriO,
                "docker" => Runtime::Docker,
                _ => Runtime::Unknown,
            };
            return Some((rt, id, pod_uid_of(slice)));
        }
        return None;
    }
    if let Some(id) = c.strip_prefix("crio-").filter(|id| is_id(id)) {
        return Some((Runtime::CriO, id, None)); // CRI-O with the cgroupfs driver
    }
    if is_id(c) {
        let rt = match parents.last() {
            Some(&"docker") => Runtime::Docker,
            _ => Runtime::Unknown,
        };
        return Some((rt, c, None));
    }
    None
}

/// `pod<uid>` (cgroupfs) or `kubepods[-<qos>]-pod<u_i_d>.slice` (systemd) → normalised uid.
fn pod_uid_of(c: &str) -> Option<String> {
    let raw = if let Some(s) = c.strip_suffix(".slice") {
        let i = s.rfind("-pod")?;
        s.get(i + 4..)?
    } else {
        c.strip_prefix("pod")?
    };
    let uid = raw.replace('_', "-");
    is_uid(&uid).then_some(uid)
}

/// A container id: exactly 64 lowercase hex characters.
fn is_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// A pod UID: a dashed UUID, or 32 hex characters (static pods' UIDs are config hashes).
fn is_uid(s: &str) -> bool {
    let hex = |c: u8| c.is_ascii_hexdigit();
    if s.len() == 32 {
        return s.bytes().all(hex);
    }
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups.iter().map(|g| g.len()).eq([8usize, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(hex))
}
