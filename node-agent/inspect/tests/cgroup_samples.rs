//! /proc/PID/cgroup samples for each runtime, cgroup driver and version, as written by real
//! nodes (ids and uids shortened to fixed test values; structure as found in the field).
use jvmdiag_inspect::cgroup::{self, ContainerRef, Runtime};

const ID: &str = "8d0a1bd3c7a7a2d2e6f4c14b1f0b2d63f0d3b2a1c4e5f60718293a4b5c6d7e8f";
const UID: &str = "5c9a1f2e-3b4d-4e6f-8a7b-9c0d1e2f3a4b";

fn uid_(u: &str) -> String {
    u.replace('-', "_")
}

struct Case {
    what: &'static str,
    file: String,
    want: Option<(Runtime, bool)>, // runtime, pod uid present
}

fn cases() -> Vec<Case> {
    let u = uid_(UID);
    vec![
        Case {
            what: "cgroup v2, systemd driver, containerd (kubeadm default since 1.22)",
            file: format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope\n"),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "cgroup v2, systemd driver, containerd, Guaranteed QoS (no QoS slice)",
            file: format!("0::/kubepods.slice/kubepods-pod{u}.slice/cri-containerd-{ID}.scope\n"),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "cgroup v2, systemd driver, CRI-O (OpenShift)",
            file: format!("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/crio-{ID}.scope\n"),
            want: Some((Runtime::CriO, true)),
        },
        Case {
            what: "cgroup v2, CRI-O with crun's nested 'container' leaf",
            file: format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/crio-{ID}.scope/container\n"),
            want: Some((Runtime::CriO, true)),
        },
        Case {
            what: "cgroup v2, cgroupfs driver, containerd (k3s)",
            file: format!("0::/kubepods/burstable/pod{UID}/{ID}\n"),
            want: Some((Runtime::Unknown, true)),
        },
        Case {
            what: "cgroup v2 seen from the agent's own cgroup namespace (relative path)",
            file: format!("0::/../../kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice/cri-containerd-{ID}.scope\n"),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "kind: kubelet cgroup root under kubelet.slice",
            file: format!("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{u}.slice/cri-containerd-{ID}.scope\n"),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "cgroup v1 (hybrid), cgroupfs driver, containerd",
            file: format!(
                "12:pids:/kubepods/burstable/pod{UID}/{ID}\n11:memory:/kubepods/burstable/pod{UID}/{ID}\n\
                 10:cpu,cpuacct:/kubepods/burstable/pod{UID}/{ID}\n1:name=systemd:/kubepods/burstable/pod{UID}/{ID}\n0::/\n"
            ),
            want: Some((Runtime::Unknown, true)),
        },
        Case {
            what: "cgroup v1, systemd driver, containerd",
            file: format!(
                "11:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope\n\
                 1:name=systemd:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope\n"
            ),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "cgroup v1, cgroupfs driver, CRI-O",
            file: format!("9:memory:/kubepods/besteffort/pod{UID}/crio-{ID}\n1:name=systemd:/kubepods/besteffort/pod{UID}/crio-{ID}\n"),
            want: Some((Runtime::CriO, true)),
        },
        Case {
            what: "cgroup v1, containerd systemd spec left unconverted (slice:prefix:id)",
            file: format!("1:name=systemd:/system.slice/containerd.service/kubepods-burstable-pod{u}.slice:cri-containerd:{ID}\n"),
            want: Some((Runtime::Containerd, true)),
        },
        Case {
            what: "cgroup v1, systemd driver, Docker via cri-dockerd",
            file: format!("4:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/docker-{ID}.scope\n"),
            want: Some((Runtime::Docker, true)),
        },
        Case {
            what: "Docker without Kubernetes, cgroupfs driver, v1",
            file: format!("12:pids:/docker/{ID}\n1:name=systemd:/docker/{ID}\n"),
            want: Some((Runtime::Docker, false)),
        },
        Case {
            what: "Docker without Kubernetes, systemd driver, v2",
            file: format!("0::/system.slice/docker-{ID}.scope\n"),
            want: Some((Runtime::Docker, false)),
        },
        Case {
            what: "static pod (uid is a 32-hex config hash), cgroupfs",
            file: format!("0::/kubepods/burstable/pod6f1d2b7a0c9e4f3a8b5d7c1e2f3a4b5c/{ID}\n"),
            want: Some((Runtime::Unknown, true)),
        },
        Case {
            what: "Podman",
            file: format!("0::/machine.slice/libpod-{ID}.scope/container\n"),
            want: Some((Runtime::Unknown, false)),
        },
        Case { what: "host process in a login session", file: "0::/user.slice/user-0.slice/session-3.scope\n".into(), want: None },
        Case { what: "host service", file: "0::/system.slice/containerd.service\n".into(), want: None },
        Case { what: "init", file: "0::/init.scope\n".into(), want: None },
        Case { what: "root cgroup, v1 hybrid", file: "12:pids:/\n1:name=systemd:/\n0::/\n".into(), want: None },
        Case {
            what: "CRI-O conmon (not a container)",
            file: format!("0::/kubepods.slice/kubepods-pod{u}.slice/crio-conmon-{ID}.scope\n"),
            want: None,
        },
        Case {
            what: "pod sandbox slice only (pause process before its scope exists)",
            file: format!("0::/kubepods.slice/kubepods-pod{u}.slice\n"),
            want: None,
        },
        Case {
            what: "id of the wrong length is not an id",
            file: format!("0::/kubepods/burstable/pod{UID}/{}\n", &ID[..63]),
            want: None,
        },
        Case {
            what: "upper-case hex is not an id (runtimes write lower case)",
            file: format!("0::/docker/{}\n", ID.to_uppercase()),
            want: None,
        },
    ]
}

#[test]
fn table() {
    for c in cases() {
        let lines = cgroup::parse(c.file.as_bytes()).unwrap_or_else(|e| panic!("{}: {e}", c.what));
        let got = cgroup::container_of(&lines);
        match c.want {
            None => assert_eq!(got, None, "{}", c.what),
            Some((rt, has_uid)) => {
                let want = ContainerRef {
                    runtime: rt,
                    container_id: ID.to_string(),
                    pod_uid: has_uid.then(|| {
                        if c.what.starts_with("static pod") {
                            "6f1d2b7a0c9e4f3a8b5d7c1e2f3a4b5c".to_string()
                        } else {
                            UID.to_string()
                        }
                    }),
                };
                assert_eq!(got, Some(want), "{}", c.what);
            }
        }
    }
}

#[test]
fn this_process() {
    // This test runs on a host or in a container: either way the real file parses.
    let lines = cgroup::parse(&std::fs::read("/proc/self/cgroup").unwrap()).unwrap();
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|l| l.path.starts_with('/')));
}

#[test]
fn malformed_files_are_errors() {
    for bad in ["garbage\n", "x::/a\n", "0:/a\n", "0::relative\n", "99999999999::/\n"] {
        assert!(cgroup::parse(bad.as_bytes()).is_err(), "{bad:?}");
    }
    let many = "0::/\n".repeat(300);
    assert!(matches!(cgroup::parse(many.as_bytes()), Err(jvmdiag_inspect::Error::TooLarge { .. })));
}
