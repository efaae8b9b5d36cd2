//! Writes the fuzz targets' seed corpus (node-agent/fuzz/seeds/<target>/). Not a test:
//! run by hand when the formats change:
//!   FUZZ_SEEDS_DIR=node-agent/fuzz/seeds cargo test -p jvmdiag-inspect --test fuzz_seeds -- --ignored
mod common;
use std::path::Path;

fn put(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), data).unwrap();
}

const ID: &str = "8d0a1bd3c7a7a2d2e6f4c14b1f0b2d63f0d3b2a1c4e5f60718293a4b5c6d7e8f";

#[test]
#[ignore]
fn write_fuzz_seeds() {
    let Ok(dir) = std::env::var("FUZZ_SEEDS_DIR") else { return };
    let dir = Path::new(&dir);
    // maps: the head of a real JVM's maps (libjvm included), plus a deleted mapping
    let jdk = &common::jdks()[0];
    let jvm = common::start_jvm(jdk, "public class Main { public static void main(String[] a) throws Exception { System.out.println(\"ready\"); Thread.sleep(60000); } }", &["-Xmx32m"]);
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", jvm.pid())).unwrap();
    let jvm_lines: String = maps
        .lines()
        .filter(|l| l.contains("libjvm") || l.contains("[heap]") || l.contains("[stack]"))
        .map(|l| format!("{l}\n"))
        .collect();
    put(dir, "maps", "jvm", jvm_lines.as_bytes());
    put(dir, "maps", "deleted", b"7f0000000000-7f0000100000 r-xp 00000000 fd:01 4242   /usr/lib/jvm/x/lib/server/libjvm.so (deleted)\n");
    put(dir, "status", "jvm", &std::fs::read(format!("/proc/{}/status", jvm.pid())).unwrap());
    put(dir, "status", "nspid", b"Name:\tjava\nTgid:\t4242\nPPid:\t1\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t4242\t1\nThreads:\t30\n");
    put(dir, "cmdline", "jvm", &std::fs::read(format!("/proc/{}/cmdline", jvm.pid())).unwrap());
    put(
        dir,
        "cmdline",
        "jar",
        b"java\0-Xmx1g\0-Dx=y\0--add-opens\0java.base/java.lang=ALL-UNNAMED\0-jar\0/app/app.jar\0",
    );
    put(dir, "cmdline", "module", b"java\0--module-path\0mods\0-m\0com.acme/com.acme.Main\0");
    // hsperfdata: a real file and a hand-made small one
    let user = if std::fs::read_to_string("/proc/self/status").unwrap().contains("Uid:\t0\t") {
        "root".to_string()
    } else {
        std::env::var("USER").unwrap()
    };
    let perf = std::fs::read(format!("/tmp/hsperfdata_{user}/{}", jvm.pid())).unwrap();
    put(dir, "hsperfdata", "real", &perf);
    put(
        dir,
        "hsperfdata",
        "small",
        &common::perf_file(&[
            common::PerfEntry {
                name: b"sun.os.hrt.frequency".to_vec(),
                kind: common::PerfKind::Long(1_000_000_000),
            },
            common::PerfEntry {
                name: b"sun.rt.javaCommand".to_vec(),
                kind: common::PerfKind::Str(b"Main".to_vec(), 16),
            },
        ]),
    );
    drop(jvm);
    // cgroup
    let u = "5c9a1f2e_3b4d_4e6f_8a7b_9c0d1e2f3a4b";
    put(dir, "cgroup", "v2-systemd-containerd", format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{ID}.scope\n").as_bytes());
    put(dir, "cgroup", "v1-cgroupfs", format!("12:pids:/kubepods/burstable/pod5c9a1f2e-3b4d-4e6f-8a7b-9c0d1e2f3a4b/{ID}\n1:name=systemd:/kubepods/burstable/pod5c9a1f2e-3b4d-4e6f-8a7b-9c0d1e2f3a4b/crio-{ID}\n0::/\n").as_bytes());
    put(
        dir,
        "cgroup",
        "docker",
        format!("0::/system.slice/docker-{ID}.scope\n1:name=systemd:/docker/{ID}\n").as_bytes(),
    );
    put(dir, "cgroup", "unconverted", format!("1:name=systemd:/system.slice/containerd.service/kubepods-besteffort-pod{u}.slice:cri-containerd:{ID}\n").as_bytes());
    // ELF: the small hand-made library (real libjvm.so is 25 MB: too big for a seed)
    let e = common::sample_elf();
    put(dir, "elf_symbols", "sample", &e.bytes);
    // safepoint log: JDK 17, 25 and 11 lines
    put(dir, "safepoint_log", "jdk17", b"[0.755s][info ][safepoint        ] Safepoint \"G1CollectForAllocation\", Time since last: 688114443 ns, Reaching safepoint: 78146 ns, Cleanup: 164055 ns, At safepoint: 15411399 ns, Total: 15653600 ns\n[0.755s][info ][safepoint,stats  ] G1CollectForAllocation       [             11               0 ][            78146     164055   15411399   15653600 ]               0\n");
    put(dir, "safepoint_log", "jdk25", b"[1.212s][1211824636ns][info ][safepoint      ] Safepoint \"G1CollectFull\", Time since last: 257994616 ns, Reaching safepoint: 37005 ns, At safepoint: 25901863 ns, Leaving safepoint: 788265 ns, Total: 26727133 ns, Threads: 0 runnable, 10 total\n");
    put(dir, "safepoint_log", "jdk11", b"[10.001s][info][safepoint] Entering safepoint region: G1CollectForAllocation\n[10.012s][info][safepoint] Leaving safepoint region\n[10.012s][info][safepoint] Total time for which application threads were stopped: 0.0110234 seconds, Stopping threads took: 0.0000345 seconds\n");
}

/// The `hotspot` target's seed: the hand-built JVM image (no JVM needed).
#[test]
#[ignore]
fn write_hotspot_seed() {
    let Ok(dir) = std::env::var("FUZZ_SEEDS_DIR") else { return };
    let f = jvmdiag_inspect::hotspot::fake::fake_jvm(&[]);
    put(Path::new(&dir), "hotspot", "fake_jdk17", &f.image.bytes);
}
