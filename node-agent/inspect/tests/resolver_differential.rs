//! Differential test of the two resolvers: random trees of directories, files and symlinks
//! (targets absolute, relative, climbing with `..`, dangling, looping, pointing at a host
//! directory), random lookups. The kernel's openat2(RESOLVE_IN_ROOT) and our user-space walk
//! must agree on every lookup (same inode, or both refuse), and every file opened must lie
//! inside the root.
mod common;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};

use jvmdiag_inspect::root::{real_path_of, ProcRoot, Resolver};

/// xorshift64*: deterministic, so a failure names its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[(self.next() % v.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &["a", "b", "c", "tmp", "lib"];

fn build(rng: &mut Rng, root: &Path, host: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::new()];
    let mut all = Vec::new();
    for _ in 0..14 {
        let parent = rng.pick(&dirs).clone();
        let p = parent.join(rng.pick(NAMES));
        if root.join(&p).symlink_metadata().is_ok() {
            continue;
        }
        match rng.next() % 4 {
            0 => {
                std::fs::create_dir(root.join(&p)).unwrap();
                dirs.push(p.clone());
            }
            1 => std::fs::write(root.join(&p), p.to_string_lossy().as_bytes()).unwrap(),
            _ => {
                let depth = (rng.next() % 6) as usize;
                let tail: Vec<&str> = (0..1 + rng.next() % 3).map(|_| *rng.pick(NAMES)).collect();
                let target = match rng.next() % 5 {
                    0 => format!("/{}", tail.join("/")),
                    1 => format!("{}{}", "../".repeat(depth), tail.join("/")),
                    2 => format!("{}/{}", host.display(), tail.join("/")),
                    3 => tail.join("/"),
                    _ => format!("./{}/..{}", tail[0], if depth > 2 { "/.." } else { "" }),
                };
                symlink(&target, root.join(&p)).unwrap();
            }
        }
        all.push(p);
    }
    all
}

#[test]
fn openat2_and_walk_agree() {
    let mut lookups = 0;
    let mut opened = 0;
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let tmp = common::TempDir::new("diff");
        let root_dir = tmp.path().join("root");
        let host = tmp.path().join("host");
        std::fs::create_dir_all(&root_dir).unwrap();
        // a host tree with the same names, so an escape would find something
        for n in NAMES {
            std::fs::create_dir_all(host.join(n)).unwrap();
            std::fs::write(host.join(n).join("secret"), b"host").unwrap();
            for m in NAMES {
                std::fs::write(host.join(n).join(m), b"host").unwrap();
            }
        }
        let made = build(&mut rng, &root_dir, &host);
        let real_root = std::fs::canonicalize(&root_dir).unwrap();
        let k = ProcRoot::from_dir(&root_dir).unwrap();
        let w = ProcRoot::from_dir(&root_dir).unwrap().with_resolver(Resolver::Walk);
        for _ in 0..40 {
            let mut p = if made.is_empty() || rng.next() % 3 == 0 {
                PathBuf::from("/")
            } else {
                Path::new("/").join(rng.pick(&made))
            };
            for _ in 0..rng.next() % 3 {
                p.push(rng.pick(NAMES));
            }
            lookups += 1;
            let a = k.open_file(&p, 1 << 20);
            let b = w.open_file(&p, 1 << 20);
            match (&a, &b) {
                (Ok(fa), Ok(fb)) => {
                    let (ma, mb) = (fa.metadata().unwrap(), fb.metadata().unwrap());
                    assert_eq!(
                        (ma.dev(), ma.ino()),
                        (mb.dev(), mb.ino()),
                        "seed {seed}: {} opened different files",
                        p.display()
                    );
                    let real = real_path_of(fa).unwrap();
                    assert!(
                        real.starts_with(&real_root),
                        "seed {seed}: {} escaped to {}",
                        p.display(),
                        real.display()
                    );
                    opened += 1;
                }
                (Err(_), Err(_)) => {}
                _ => panic!(
                    "seed {seed}: {}: openat2 {:?} vs walk {:?}",
                    p.display(),
                    a.as_ref().map(|_| ()),
                    b.as_ref().map(|_| ())
                ),
            }
            let a = k.list_dir(&p, 100).map(|mut v| {
                v.sort();
                v
            });
            let b = w.list_dir(&p, 100).map(|mut v| {
                v.sort();
                v
            });
            assert_eq!(a.as_ref().ok(), b.as_ref().ok(), "seed {seed}: list {}", p.display());
        }
    }
    eprintln!("{lookups} lookups, {opened} files opened by both");
    assert!(opened > 50, "the trees should make some lookups succeed: {opened}");
}
