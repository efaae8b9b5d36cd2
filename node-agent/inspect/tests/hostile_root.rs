//! A hand-made hostile "container root": links to host files, `..`, a FIFO and a device
//! where libjvm.so should be. Each is refused with the right error, never blocks, and no
//! host file's content is ever returned. Run with both resolvers (openat2 and the walk).
mod common;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use jvmdiag_inspect::root::{real_path_of, ProcRoot, Resolver};
use jvmdiag_inspect::Error;

const HOST_SECRET: &[u8] = b"host secret: must never be read\n";
const INSIDE: &[u8] = b"inside the root\n";

/// host/ (outside), root/ (the container) with the hostile layout.
struct Fixture {
    tmp: common::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = common::TempDir::new("hostile");
        let host = tmp.path().join("host");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(host.join("jvm")).unwrap();
        std::fs::write(host.join("secret"), HOST_SECRET).unwrap();
        std::fs::write(host.join("jvm/libjvm.so"), HOST_SECRET).unwrap();
        for d in [
            "tmp/hsperfdata_app",
            "tmp/hsperfdata_y",
            "usr/lib/jvm/real/lib/server",
            "opt",
            "a/b",
            "etc",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("tmp/hsperfdata_app/1"), INSIDE).unwrap();
        std::fs::write(root.join("usr/lib/jvm/real/lib/server/libjvm.so"), INSIDE).unwrap();
        std::fs::write(root.join("etc/shadow"), INSIDE).unwrap();
        // hsperfdata_x -> /etc/shadow (absolute, the classic)
        symlink("/etc/shadow", root.join("tmp/hsperfdata_x")).unwrap();
        // a perf file that is a link to the host's secret by absolute host path
        symlink(host.join("secret"), root.join("tmp/hsperfdata_y/7")).unwrap();
        // a directory link pointing at a host directory by its absolute host path
        symlink(host.join("jvm"), root.join("opt/jdk")).unwrap();
        // a relative link climbing far above the root
        symlink("../../../../../../../../host/secret", root.join("a/b/up")).unwrap();
        // the same climb, inside a directory component
        symlink("../../../../../../../../host", root.join("a/b/updir")).unwrap();
        // a symlinked directory that stays inside (must work: images have /lib -> usr/lib)
        symlink("usr/lib", root.join("lib")).unwrap();
        // a link loop
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();
        // libjvm.so that is a FIFO
        std::fs::create_dir_all(root.join("fifo/lib/server")).unwrap();
        let st =
            Command::new("mkfifo").arg(root.join("fifo/lib/server/libjvm.so")).status().unwrap();
        assert!(st.success());
        // libjvm.so that is a character device (/dev/null's numbers; we are root in CI)
        std::fs::create_dir_all(root.join("dev/lib/server")).unwrap();
        let st = Command::new("mknod")
            .arg(root.join("dev/lib/server/libjvm.so"))
            .args(["c", "1", "3"])
            .status()
            .unwrap();
        assert!(st.success(), "mknod needs root");
        std::fs::write(root.join("big"), vec![b'x'; 10_000]).unwrap();
        Fixture { tmp }
    }
    fn root(&self, r: Resolver) -> ProcRoot {
        ProcRoot::from_dir(&self.tmp.path().join("root")).unwrap().with_resolver(r)
    }
}

const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];

/// Runs `f` on another thread and fails the test if it does not return in 5 s (a FIFO open
/// that blocks would hang the agent).
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("blocked: the open did not return within 5 s")
}

fn never_host(r: &Result<Vec<u8>, Error>) {
    if let Ok(b) = r {
        assert_ne!(b.as_slice(), HOST_SECRET, "read a host file through the container root");
    }
}

#[test]
fn symlinked_hsperfdata_dir_to_etc_shadow() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let root = fx.root(r);
        let e = root.list_dir(Path::new("/tmp/hsperfdata_x"), 100).unwrap_err();
        assert!(matches!(e, Error::NotRegularFile { found: "symbolic link", .. }), "{r:?}: {e}");
        let e = root.read_file(Path::new("/tmp/hsperfdata_x"), 1 << 20).unwrap_err();
        assert!(matches!(e, Error::NotRegularFile { found: "symbolic link", .. }), "{r:?}: {e}");
        // The real listing of /tmp shows the link as a name (the agent skips it on open).
        let mut names = root.list_dir(Path::new("/tmp"), 100).unwrap();
        names.sort();
        assert_eq!(names, ["hsperfdata_app", "hsperfdata_x", "hsperfdata_y"]);
        assert_eq!(root.read_file(Path::new("/tmp/hsperfdata_app/1"), 100).unwrap(), INSIDE);
    }
}

#[test]
fn perf_file_linked_to_a_host_file() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let got = fx.root(r).read_file(Path::new("/tmp/hsperfdata_y/7"), 1 << 20);
        never_host(&got);
        assert!(
            matches!(got, Err(Error::NotRegularFile { found: "symbolic link", .. })),
            "{r:?}: {got:?}"
        );
    }
}

#[test]
fn dotdot_in_the_path_is_refused() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        for p in ["/../host/secret", "../../host/secret", "/tmp/../../host/secret"] {
            let got = fx.root(r).read_file(Path::new(p), 1 << 20);
            never_host(&got);
            assert!(matches!(got, Err(Error::OutsideRoot { .. })), "{r:?} {p}: {got:?}");
        }
    }
}

#[test]
fn absolute_symlink_to_a_host_dir_resolves_inside_the_root() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        // /opt/jdk -> <host>/jvm: resolved as <root>/<host>/jvm, which does not exist.
        let got = fx.root(r).read_file(Path::new("/opt/jdk/libjvm.so"), 1 << 20);
        never_host(&got);
        assert!(got.as_ref().is_err_and(Error::is_not_found), "{r:?}: {got:?}");
        // Create that path inside the root: now the link works, and gives the inside file.
        let inside = fx
            .tmp
            .path()
            .join("root")
            .join(fx.tmp.path().join("host/jvm").strip_prefix("/").unwrap());
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("libjvm.so"), INSIDE).unwrap();
        assert_eq!(
            fx.root(r).read_file(Path::new("/opt/jdk/libjvm.so"), 1 << 20).unwrap(),
            INSIDE,
            "{r:?}"
        );
        std::fs::remove_dir_all(
            fx.tmp
                .path()
                .join("root")
                .join(fx.tmp.path().strip_prefix("/").unwrap().components().next().unwrap()),
        )
        .unwrap();
    }
}

#[test]
fn relative_symlink_climbing_out_is_clamped_at_the_root() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let root = fx.root(r);
        // a/b/updir -> ../../../../host: clamped to <root>/host (absent).
        let got = root.read_file(Path::new("/a/b/updir/secret"), 1 << 20);
        never_host(&got);
        assert!(got.as_ref().is_err_and(Error::is_not_found), "{r:?}: {got:?}");
        // last component symlink: refused outright
        let got = root.read_file(Path::new("/a/b/up"), 1 << 20);
        never_host(&got);
        assert!(
            matches!(got, Err(Error::NotRegularFile { found: "symbolic link", .. })),
            "{r:?}: {got:?}"
        );
        // with <root>/host/secret present, the climb lands there
        std::fs::create_dir_all(fx.tmp.path().join("root/host")).unwrap();
        std::fs::write(fx.tmp.path().join("root/host/secret"), INSIDE).unwrap();
        assert_eq!(
            root.read_file(Path::new("/a/b/updir/secret"), 1 << 20).unwrap(),
            INSIDE,
            "{r:?}"
        );
        std::fs::remove_dir_all(fx.tmp.path().join("root/host")).unwrap();
    }
}

#[test]
fn inside_symlinked_dirs_still_work() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let got =
            fx.root(r).read_file(Path::new("/lib/jvm/real/lib/server/libjvm.so"), 1 << 20).unwrap();
        assert_eq!(got, INSIDE, "{r:?}");
    }
}

#[test]
fn link_loop_is_refused() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let got = fx.root(r).read_file(Path::new("/loop1/x"), 1 << 20);
        assert!(matches!(got, Err(Error::OutsideRoot { .. })), "{r:?}: {got:?}");
    }
}

#[test]
fn fifo_libjvm_is_refused_without_blocking() {
    let fx = std::sync::Arc::new(Fixture::new());
    for r in RESOLVERS {
        let fx2 = fx.clone();
        let got = bounded(move || {
            fx2.root(r).read_file(Path::new("/fifo/lib/server/libjvm.so"), 1 << 30).map(|_| ())
        });
        assert!(matches!(got, Err(Error::NotRegularFile { found: "FIFO", .. })), "{r:?}: {got:?}");
        let fx2 = fx.clone();
        let got = bounded(move || {
            fx2.root(r).open_file(Path::new("/fifo/lib/server/libjvm.so"), 1 << 30).map(|_| ())
        });
        assert!(matches!(got, Err(Error::NotRegularFile { found: "FIFO", .. })), "{r:?}: {got:?}");
    }
}

#[test]
fn device_libjvm_is_refused() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let got = fx.root(r).read_file(Path::new("/dev/lib/server/libjvm.so"), 1 << 30);
        assert!(
            matches!(got, Err(Error::NotRegularFile { found: "character device", .. })),
            "{r:?}: {got:?}"
        );
    }
}

#[test]
fn directory_and_size_limits() {
    let fx = Fixture::new();
    for r in RESOLVERS {
        let root = fx.root(r);
        let got = root.read_file(Path::new("/usr"), 1 << 20);
        assert!(
            matches!(got, Err(Error::NotRegularFile { found: "directory", .. })),
            "{r:?}: {got:?}"
        );
        let got = root.read_file(Path::new("/big"), 9_999);
        assert!(
            matches!(got, Err(Error::TooLarge { size: 10_000, max: 9_999, .. })),
            "{r:?}: {got:?}"
        );
        assert_eq!(root.read_file(Path::new("/big"), 10_000).unwrap().len(), 10_000);
        let got = root.list_dir(Path::new("/tmp"), 2);
        assert!(matches!(got, Err(Error::TooLarge { .. })), "{r:?}: {got:?}");
        let got = root.list_dir(Path::new("/big"), 10);
        assert!(got.is_err(), "{r:?}: a file is not a directory");
    }
}

#[test]
fn magic_links_are_not_followed() {
    // /proc/self as the "root": its `root` entry is a magic link to our own /.
    for r in RESOLVERS {
        let root = ProcRoot::from_dir(Path::new("/proc/self")).unwrap().with_resolver(r);
        let got = root.read_file(Path::new("/root/etc/hostname"), 1 << 20);
        if let Ok(b) = &got {
            assert_ne!(b, &std::fs::read("/etc/hostname").unwrap(), "{r:?}: followed a magic link");
        }
        assert!(got.is_err(), "{r:?}: {got:?}");
        if r == Resolver::Openat2 {
            assert!(matches!(got, Err(Error::OutsideRoot { .. })), "{got:?}");
        }
    }
}

#[test]
fn every_file_opened_is_inside_the_root() {
    // The audit view: whatever path we ask for, the kernel's name of what got opened.
    let fx = Fixture::new();
    let root_dir = std::fs::canonicalize(fx.tmp.path().join("root")).unwrap();
    let tries = [
        "/tmp/hsperfdata_app/1",
        "/lib/jvm/real/lib/server/libjvm.so",
        "/usr/lib/jvm/real/lib/server/libjvm.so",
        "/etc/shadow",
        "/tmp/hsperfdata_x",
        "/tmp/hsperfdata_y/7",
        "/opt/jdk/libjvm.so",
        "/a/b/up",
        "/a/b/updir/secret",
        "/big",
    ];
    for r in RESOLVERS {
        let mut opened = 0;
        for p in tries {
            if let Ok(f) = fx.root(r).open_file(Path::new(p), 1 << 20) {
                let real = real_path_of(&f).unwrap();
                assert!(real.starts_with(&root_dir), "{r:?}: {p} opened {}", real.display());
                opened += 1;
            }
        }
        assert_eq!(
            opened, 5,
            "{r:?}: the five plain files inside (one of them through the inside /lib link)"
        );
    }
}

#[test]
fn proc_root_of_a_live_process() {
    // The agent's real entry point: /proc/PID/root of a process (ourselves here).
    let root = ProcRoot::open(std::process::id()).unwrap();
    assert_eq!(
        root.read_file(Path::new("/etc/hostname"), 4096).unwrap(),
        std::fs::read("/etc/hostname").unwrap()
    );
    let e = root.read_file(Path::new("/etc/hostname"), 0).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }));
    assert!(e.to_string().contains("/etc/hostname"), "{e}");
}

#[test]
fn links_in_last_position_are_followed_inside_the_root_when_asked() {
    let fx = Fixture::new();
    let root = fx.tmp.path().join("root");
    // A ConfigMap volume: the file is a relative link into ..data/.
    std::fs::create_dir_all(root.join("etc/config/..data")).unwrap();
    std::fs::write(root.join("etc/config/..data/jvm.args"), INSIDE).unwrap();
    symlink("..data/jvm.args", root.join("etc/config/jvm.args")).unwrap();
    for r in RESOLVERS {
        let follow = |p: &str| fx.root(r).read_file_following_links(Path::new(p), 1 << 20);
        assert_eq!(follow("/etc/config/jvm.args").unwrap(), INSIDE, "{r:?}");
        assert!(
            fx.root(r).read_file(Path::new("/etc/config/jvm.args"), 1 << 20).is_err(),
            "{r:?}: read_file never follows"
        );
        // Absolute links resolve from the container's root, never the host's.
        assert_eq!(
            follow("/tmp/hsperfdata_x").unwrap(),
            INSIDE,
            "{r:?}: /etc/shadow of the container"
        );
        for p in ["/tmp/hsperfdata_y/7", "/a/b/up", "/loop1", "/big/x"] {
            let got = follow(p);
            never_host(&got);
            assert!(got.is_err(), "{r:?}: {p} must not be read");
        }
        assert!(
            follow("/big").is_ok()
                && matches!(
                    fx.root(r).read_file_following_links(Path::new("/big"), 100),
                    Err(Error::TooLarge { .. })
                )
        );
        let fifo = fx.root(r);
        let got = bounded(move || {
            fifo.read_file_following_links(Path::new("/fifo/lib/server/libjvm.so"), 1 << 20)
                .map(|_| ())
        });
        assert!(matches!(got, Err(Error::NotRegularFile { .. })), "{r:?}: {got:?}");
    }
}
