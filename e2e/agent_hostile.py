#!/usr/bin/env python3
"""End-to-end test: hostile "containers" next to a normal JVM.

Each hostile container is a pid + mount namespace chrooted into a private root made here,
whose only process (pid 1, a tiny static C program) maps a crafted `/lib/server/libjvm.so`
and whose `/tmp/hsperfdata_root/1` is crafted: a symlink to /etc/shadow, an absolute symlink
to a host canary file, a relative `..` escape, a symlinked hsperfdata directory, a FIFO.
The agent is straced (open, openat, openat2) while it discovers them and traces a normal
JDK 17 Storm; the test then checks, independently of the agent's own output:
  - the normal JVM's thread starts equal its hsperfdata java.threads.started delta;
  - each hostile pid is reported (jvmdiag_agent_jvm_not_traced or an untraced/attach-failure
    reason), never traced (no jvm_info, no counters) and never silently skipped;
  - the agent still answers /healthz;
  - the strace log shows no successful open of /etc/shadow or the host canary, and that
    strace did see the agent open the hostile processes' files (so the check can fail).
Usage: agent_hostile.py AGENT_BINARY WORKDIR JDK17 JDK25 (same as agent_standalone.py, whose helpers it uses).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_standalone as standalone  # noqa: E402  (reads AGENT WORKDIR JDK17 JDK25 from sys.argv)
from agent_standalone import check_storm, start_agent  # noqa: E402
from harness import kill_leftovers, log, port, procs, run, samples, scrape, summary, wait_file  # noqa: E402

WORK = standalone.WORK
PORT = port(4)
HOSTILE_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
/* hostile ROOT LIB READY LIBFIFO HSPERF, run as pid 1 of fresh pid + mount namespaces.
   Makes ROOT the namespace's root (pivot_root, old root detached, as a container runtime
   does, so maps names files by their path inside ROOT); maps LIB (so discovery sees a
   libjvm.so) and /tmp/hsperfdata_root/1 (so the agent looks for its hsperfdata); then
   swaps what those paths name, by mounting over them: LIBFIFO ("-" for none) is bind-mounted
   over LIB, and HSPERF says what /tmp/hsperfdata_root/1 becomes: "keep" (the crafted file),
   "link:TARGET" (a symlink), "fifo", or "dirlink:TARGET" (/tmp/hsperfdata_root a symlink). */
static void die(const char *what) { perror(what); _exit(1); }
static void map(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) die(path);
    close(fd);
}
int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: hostile ROOT LIB READY LIBFIFO HSPERF\n"); return 2; }
    if (mount(argv[1], argv[1], 0, MS_BIND | MS_REC, 0) != 0 || chdir(argv[1]) != 0) die("bind root");
    mkdir("oldroot", 0700);
    if (syscall(SYS_pivot_root, ".", "oldroot") != 0) die("pivot_root");
    if (chdir("/") != 0 || umount2("/oldroot", MNT_DETACH) != 0) die("umount old root");
    rmdir("/oldroot");
    map(argv[2]);
    map("/tmp/hsperfdata_root/1");
    if (strcmp(argv[4], "-") != 0 && mount(argv[4], argv[2], 0, MS_BIND, 0) != 0) die("bind fifo");
    const char *h = argv[5];
    if (strncmp(h, "dirlink:", 8) == 0) {
        if (mount("tmpfs", "/tmp", "tmpfs", 0, 0) != 0 || symlink(h + 8, "/tmp/hsperfdata_root") != 0) die("dirlink");
    } else if (strcmp(h, "keep") != 0) {
        if (mount("tmpfs", "/tmp/hsperfdata_root", "tmpfs", 0, 0) != 0) die("tmpfs");
        if (strncmp(h, "link:", 5) == 0 ? symlink(h + 5, "/tmp/hsperfdata_root/1") : mkfifo("/tmp/hsperfdata_root/1", 0644))
            die("hsperfdata");
    }
    int r = open(argv[3], O_WRONLY | O_CREAT, 0644);
    if (r < 0) die(argv[3]);
    close(r);
    for (;;) pause();
}
"""


def elf_hostile_header():
    """An ELF64 LE header claiming 65535 sections at an offset far past the end, and 65535
    program headers (a PT_NOTE among them) past the end too."""
    import struct

    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    hdr = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        3,
        62,
        1,
        0,
        0x7FFF_FFFF_FFFF_0000,
        0xFFFF_FFFF_FFFF_FF00,
        0,
        64,
        56,
        0xFFFF,
        64,
        0xFFFF,
        0xFFFE,
    )
    # A "note" whose namesz/descsz are huge, in case a parser looks at fixed offsets.
    note = struct.pack("<III", 0xFFFF_FFF0, 0xFFFF_FFF0, 3) + b"stapsdt"  # name without NUL
    return hdr + note + b"\xff" * (8192 - len(hdr) - len(note))


def hostile_hsperfdata():
    """hsperfdata with a valid header, 2^31-1 entries and an entry pointing past the end."""
    import struct

    hdr = struct.pack("<IBBBBiiqii", 0xC0C0FECA, 1, 2, 0, 1, 32768, 0, 0, 32, 0x7FFFFFFF)
    entry = struct.pack("<iiiBBBBi", 20, 0x7FFFFFF0, 0, ord("J"), 1, 1, 0, 0x7FFFFFF0)
    return hdr + entry + b"A" * (32768 - len(hdr) - len(entry))  # names without NUL


def make_root(base, name, libjvm_bytes):
    """A private root: /hostile, /lib/server/libjvm.so, /tmp/hsperfdata_root/1 (crafted)."""
    root = os.path.join(base, name)
    for d in ("lib/server", "tmp/hsperfdata_root"):
        os.makedirs(os.path.join(root, d))
    shutil.copy(os.path.join(base, "hostile"), os.path.join(root, "hostile"))
    open(os.path.join(root, "lib/server/libjvm.so"), "wb").write(libjvm_bytes)
    open(os.path.join(root, "tmp/hsperfdata_root/1"), "wb").write(hostile_hsperfdata())
    return root


def start_hostile(root, fifo_over_lib, hsperf):
    fifo = "-"
    if fifo_over_lib:
        os.mkfifo(os.path.join(root, "lib/server/fifo"))
        fifo = "/lib/server/fifo"
    cmd = [os.path.join(root, "hostile"), root, "/lib/server/libjvm.so", "/ready", fifo, hsperf]
    p = subprocess.Popen(
        ["unshare", "--pid", "--mount", "--fork", "--propagation", "private", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=open(root + ".stderr", "w"),
        start_new_session=True,
    )
    procs.append(p)
    wait_file(os.path.join(root, "ready"), 20, p)
    # The host pid of pid 1 in the new namespace: unshare's child.
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                status = open(f"/proc/{d}/status").read()
            except OSError:
                continue
            if re.search(rf"^PPid:\s+{p.pid}$", status, re.M) and re.search(
                r"^NSpid:.*\s1$", status, re.M
            ):
                return p, int(d)
    raise RuntimeError(f"no hostile process rooted at {root}")


def healthz(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10).read().decode()


def strace_opens(path):
    """(successful opens, all open lines) of an strace -f -y log."""
    ok, lines = [], []
    for line in open(path, errors="replace"):
        if not re.search(r"\bopen(at2?)?\(", line):
            continue
        lines.append(line.rstrip())
        m = re.search(r"\)\s+=\s+(-?\d+)", line)
        if m and int(m.group(1)) >= 0:
            ok.append(line.rstrip())
    return ok, lines


def fresh_base(name):
    """An empty WORK/name with the hostile pid-1 program compiled in it."""
    base = os.path.join(WORK, name)
    if os.path.isdir(base):
        shutil.rmtree(base)
    os.makedirs(base)
    src = os.path.join(base, "hostile.c")
    open(src, "w").write(HOSTILE_C)
    subprocess.run(["gcc", "-static", "-O1", "-o", os.path.join(base, "hostile"), src], check=True)
    return base


def test_hostile():
    base = fresh_base("hostile")
    # A host file no container may read; its directory is outside every hostile root.
    canary_dir = os.path.join(WORK, "host-secret")
    os.makedirs(canary_dir, exist_ok=True)
    canary = os.path.join(canary_dir, "1")
    open(canary, "w").write("HOST SECRET\n")
    real_libjvm = open(f"{standalone.JDK17}/lib/server/libjvm.so", "rb").read(4096)
    variants = [  # name, libjvm.so bytes, FIFO bound over libjvm.so, what /tmp/hsperfdata_root/1 becomes
        ("garbage_shadow_link", os.urandom(65536), False, "link:/etc/shadow"),
        ("truncated_elf_canary_link", real_libjvm, False, "link:" + canary),
        (
            "elf_hostile_headers_dotdot",
            elf_hostile_header(),
            False,
            "link:../../../../../../../../etc/shadow",
        ),
        ("elf_hostile_dir_link", elf_hostile_header(), False, "dirlink:" + canary_dir),
        ("hsperfdata_fifo", os.urandom(8192), False, "fifo"),
        ("hostile_hsperfdata_content", elf_hostile_header(), False, "keep"),
        ("libjvm_fifo", os.urandom(8192), True, "keep"),
    ]

    agent = start_agent(PORT)
    strace_log = os.path.join(WORK, "agent-strace.log")
    st = subprocess.Popen(
        [
            "strace",
            "-f",
            "-y",
            "-s",
            "256",
            "-e",
            "trace=open,openat,openat2",
            "-o",
            strace_log,
            "-p",
            str(agent.pid),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs.append(st)
    time.sleep(1)  # strace attached (it prints nothing until a traced call)
    problems = []
    hostile = {}
    try:
        for name, lib, fifo, hs in variants:
            _, pid = start_hostile(make_root(base, name, lib), fifo, hs)
            hostile[name] = pid
        log("hostile pids: " + ", ".join(f"{n}={p}" for n, p in hostile.items()))

        # The normal JVM, traced while the hostile ones are there.
        storm_problems, _, jpid = check_storm(PORT, standalone.JDK17, "hostile17", per_name=300)
        problems += [
            p for p in storm_problems if not p.startswith("only ")
        ]  # 1,200 threads here, not 10,000

        # Every hostile pid reported: named as not traced (no jvm_info, no counters) or untraced by reason.
        deadline = time.time() + 10
        while True:
            text = scrape(PORT)
            info = {l.get("pid"): l for n, l, _ in samples(text) if n == "jvmdiag_jvm_info"}
            untraced = {
                l["reason"]: v for n, l, v in samples(text) if n == "jvmdiag_agent_jvms_untraced"
            }
            failures = {
                (l["reason"], l.get("collector", "")): v
                for n, l, v in samples(text)
                if n == "jvmdiag_agent_attach_failures_total"
            }
            n_reported = sum(v for r, v in untraced.items() if r != "not_selected")
            if n_reported >= len(hostile) or time.time() > deadline:
                break
            time.sleep(0.2)
        not_traced = {
            l.get("pid") for n, l, _ in samples(text) if n == "jvmdiag_agent_jvm_not_traced"
        }
        log(
            f"hostile: untraced {untraced}; attach failures {failures}; hostile pids named as not traced "
            f"{[n for n, p in hostile.items() if str(p) in not_traced]}"
        )
        if n_reported < len(hostile):
            problems.append(
                f"only {n_reported} of {len(hostile)} hostile JVMs reported as untraced: {untraced}"
            )
        if not failures:
            problems.append("no jvmdiag_agent_attach_failures_total at all")
        for name, pid in hostile.items():
            if str(pid) in info:
                problems.append(
                    f"{name} (pid {pid}) is traced as probe_mode={info[str(pid)].get('probe_mode')}"
                )
            if any(
                l.get("pid") == str(pid)
                for n, l, _ in samples(text)
                if n == "jvmdiag_thread_starts_total"
            ):
                problems.append(
                    f"{name} (pid {pid}) has thread-start counters (read hsperfdata through its link?)"
                )
        if str(jpid) not in info or info[str(jpid)].get("probe_mode") != "usdt":
            problems.append(f"normal JVM {jpid}: jvm_info {info.get(str(jpid))}")
        if healthz(PORT).strip() != "ok" or agent.poll() is not None:
            problems.append("agent not healthy after the hostile containers")
    finally:
        st.send_signal(signal.SIGINT)
        try:
            st.wait(timeout=10)
        except subprocess.TimeoutExpired:
            st.kill()

    ok, lines = strace_opens(strace_log)
    bad_names = ("/etc/shadow", canary_dir)
    for line in ok:
        # With -y the returned fd is decoded as N</real/path>: the kernel's name of what was opened.
        opened = re.findall(r"=\s+\d+<([^>]*)>", line)
        if any(b in x for x in opened for b in bad_names) or any(
            f'"{b}' in line for b in bad_names
        ):
            problems.append(f"agent opened outside a container root: {line[:300]}")
    # The check can fail only if strace saw the agent read the hostile containers.
    for name, pid in hostile.items():
        if not any(f"/proc/{pid}/" in l for l in lines):
            problems.append(
                f"strace shows no open of /proc/{pid}/* by the agent ({name}): strace blind?"
            )
    if not any("openat2(" in l for l in lines):
        problems.append("strace shows no openat2 (ProcRoot) call by the agent")
    log(f"strace: {len(lines)} open calls, {len(ok)} succeeded; log {strace_log}")
    return problems


# The agent's peak RSS whatever a container's files hold (docs/untrusted-input.md: the
# bounds on one libjvm.so's tables, checked before they are read, keep it there).
PEAK_RSS_CAP_MIB = 96


def perf_file(entries):
    """A little-endian v2.0 hsperfdata file laid out like HotSpot's: entries are
    (name, int) for a long or (name, bytes) for a string."""
    import struct

    body = b""
    for name, v in entries:
        name = name.encode() + b"\0"
        data_off = 20 + len(name)
        data_off += (8 - data_off % 8) % 8
        if isinstance(v, int):
            dtype, vlen, units, data = b"J", 0, 4, struct.pack("<q", v)
        else:
            dtype, vlen, units, data = b"B", len(v) + 1, 5, v + b"\0"
        length = data_off + len(data)
        length += (8 - length % 8) % 8
        ent = (
            struct.pack("<iii", length, 20, vlen)
            + dtype
            + bytes([0, units, 1])
            + struct.pack("<i", data_off)
        )
        body += (ent + name).ljust(data_off, b"\0") + data.ljust(length - data_off, b"\0")
    used = 32 + len(body)
    return (
        b"\xca\xfe\xc0\xc0"
        + bytes([1, 2, 0, 1])
        + struct.pack("<iiqii", used, 0, 0, 32, len(entries))
        + body
    )


def with_symtab_size(lib, size):
    """libjvm.so bytes whose .symtab section header claims `size` bytes."""
    import struct

    b = bytearray(lib)
    (shoff,) = struct.unpack_from("<Q", b, 0x28)
    (shnum,) = struct.unpack_from("<H", b, 0x3C)
    for i in range(shnum):
        o = shoff + i * 64
        if struct.unpack_from("<I", b, o + 4)[0] == 2:  # SHT_SYMTAB
            struct.pack_into("<Q", b, o + 32, size)
            return bytes(b)
    raise RuntimeError("no .symtab")


def peak_rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


FLIPPER_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* flipper FILE READY: a container truncating its libjvm.so while the agent reads it. Watches
   FILE's opens (inotify IN_OPEN); from the third on (the first is the container process's own,
   the second the agent's, whose bounded checks must see the file whole; the next ones are
   libbpf's), waits 0-2 ms (a different moment of libbpf's read each time), cuts the file's last
   8 MiB (section headers, symbol and string tables), keeps it cut for 1 ms and writes it back. Runs until killed. */
static void pause_us(long us) { struct timespec t = {us / 1000000, (us % 1000000) * 1000}; nanosleep(&t, 0); }
int main(int argc, char **argv) {
    int ino = inotify_init1(0), fd = open(argv[1], O_RDWR);
    struct stat st;
    if (ino < 0 || fd < 0 || fstat(fd, &st) != 0 || inotify_add_watch(ino, argv[1], IN_OPEN) < 0) return 1;
    off_t cut = st.st_size - (8 << 20);
    char *tail = malloc(st.st_size - cut);
    if (!tail || pread(fd, tail, st.st_size - cut, cut) != st.st_size - cut) return 1;
    close(open(argv[2], O_WRONLY | O_CREAT, 0644));
    char ev[4096];
    long opens = 0;
    for (;;) {
        ssize_t n = read(ino, ev, sizeof ev);
        if (n <= 0) return 1;
        opens += n / sizeof(struct inotify_event);
        if (opens < 3) continue;
        pause_us(rand() % 2000);
        if (ftruncate(fd, cut) != 0) return 1;
        pause_us(1000);
        if (pwrite(fd, tail, st.st_size - cut, cut) != st.st_size - cut) return 1;
    }
}
"""


def test_hostile_files():
    """Files of a size or shape meant to exhaust the agent's memory or kill it, beside a normal
    JVM: a sparse 512 MiB libjvm.so whose .symtab claims 480 MiB, a 1 GiB sparse hsperfdata,
    an hsperfdata whose vendor string is 64 KiB of the text format's characters, and three
    copies of the real libjvm.so cut short while libbpf reads them (see flip). The agent stays alive and serving, its peak RSS under PEAK_RSS_CAP_MIB, every
    hostile pid is reported (traced or with a reason), the scrape passes promtool with the
    vendor bounded, and the normal JVM's thread starts equal its own counter."""
    port_ = port(5)
    base = fresh_base("hostile-files")
    open(os.path.join(base, "flipper.c"), "w").write(FLIPPER_C)
    subprocess.run(
        ["gcc", "-O1", "-o", os.path.join(base, "flipper"), os.path.join(base, "flipper.c")],
        check=True,
    )
    real = open(f"{standalone.JDK17}/lib/server/libjvm.so", "rb").read()
    plain_elf = open(
        os.path.realpath("/usr/bin/true"), "rb"
    ).read()  # ELF, no probes, no .symtab: hsperfdata mode
    vendor = (b'x"\\\n# TYPE jvmdiag_forged counter\n' * 3000)[: 64 * 1024 - 1]
    good_perf = perf_file(
        [
            ("java.property.java.version", b"17.0.99"),
            ("java.property.java.vendor", vendor),
            ("java.threads.live", 3),
            ("java.threads.started", 5),
        ]
    )

    agent = start_agent(port_)
    apid = standalone.AGENT_PIDS[port_]
    problems, hostile, flippers = [], {}, []
    try:

        def root(name, lib, perf=None):
            r = make_root(base, name, lib)
            if perf is not None:
                open(os.path.join(r, "tmp/hsperfdata_root/1"), "wb").write(perf)
            return r

        r = root(
            "sparse_512mib_libjvm", with_symtab_size(real, 480 << 20)
        )  # inside the file: refused by count
        os.truncate(os.path.join(r, "lib/server/libjvm.so"), 512 << 20)
        hostile["sparse_512mib_libjvm"] = start_hostile(r, False, "keep")[1]
        r = root("sparse_1gib_hsperfdata", plain_elf, good_perf)
        os.truncate(os.path.join(r, "tmp/hsperfdata_root/1"), 1 << 30)
        hostile["sparse_1gib_hsperfdata"] = start_hostile(r, False, "keep")[1]
        r = root("vendor_64kib", plain_elf, good_perf)
        hostile["vendor_64kib"] = start_hostile(r, False, "keep")[1]
        for i in range(3):
            name = f"libjvm_truncated_while_read_{i}"
            r = root(name, real)
            lib = os.path.join(r, "lib/server/libjvm.so")
            # Watching before the process starts: its own open is the first one counted, so
            # the agent's own checks see the file whole.
            ready = os.path.join(base, name + ".flipper-ready")
            f = subprocess.Popen(
                [os.path.join(base, "flipper"), lib, ready], stdout=subprocess.DEVNULL
            )
            procs.append(f)
            flippers.append(f)
            wait_file(ready, 20, f)
            hostile[name] = start_hostile(r, False, "keep")[1]
        log("hostile pids: " + ", ".join(f"{n}={p}" for n, p in hostile.items()))

        storm_problems, _, jpid = check_storm(
            port_, standalone.JDK17, "hostilefiles17", per_name=300
        )
        problems += [p for p in storm_problems if not p.startswith("only ")]

        deadline = time.time() + 20
        while True:
            text = scrape(port_)
            info = {l.get("pid"): l for n, l, _ in samples(text) if n == "jvmdiag_jvm_info"}
            not_traced = {
                l.get("pid"): l.get("reason")
                for n, l, _ in samples(text)
                if n == "jvmdiag_agent_jvm_not_traced"
            }
            untraced = {
                l["reason"]: v
                for n, l, v in samples(text)
                if n == "jvmdiag_agent_jvms_untraced" and v
            }
            n_untraced = sum(v for r_, v in untraced.items() if r_ != "not_selected")
            n_named = sum(1 for p in hostile.values() if str(p) in info or str(p) in not_traced)
            if n_named + n_untraced >= len(hostile) or time.time() > deadline:
                break
            time.sleep(0.2)
        for f in flippers:
            f.kill()
        failures = {
            (l["reason"], l.get("collector", "")): v
            for n, l, v in samples(text)
            if n == "jvmdiag_agent_attach_failures_total"
        }
        log(
            f"hostile files: traced {[n for n, p in hostile.items() if str(p) in info]}; untraced {untraced}; "
            f"attach failures {failures}"
        )
        if n_named + n_untraced < len(hostile):
            problems.append(
                f"hostile pids not all reported: traced or named {n_named}, untraced {untraced}"
            )
        if str(hostile["sparse_512mib_libjvm"]) in info or not failures.get(("libjvm_refused", "")):
            problems.append("the sparse 512 MiB libjvm.so was not refused (libjvm_refused)")
        v = info.get(str(hostile["vendor_64kib"]))
        if not v or v.get("probe_mode") != "hsperfdata" or v.get("java_version") != "17.0.99":
            problems.append(f"the 64 KiB-vendor JVM is not traced from its hsperfdata: {v}")
        elif len(re.sub(r"\\(.)", r"\1", v["vendor"])) > 64:
            problems.append(f"vendor label not bounded to 64 characters: {len(v['vendor'])}")
        for name, pid in hostile.items():
            # Cut while libbpf read it: whatever libbpf made of it is dropped (libjvm_changed),
            # or the agent's own checks saw it cut (libjvm_refused).
            if name.startswith("libjvm_truncated_while_read") and str(pid) in info:
                problems.append(f"{name} (pid {pid}) is traced from a file cut while it was read")
        if not failures.get(("libjvm_changed", "")):
            log(
                "hostile files: no libjvm_changed this run (every cut was seen by the agent's own checks)"
            )
        if str(hostile["sparse_1gib_hsperfdata"]) in info:
            problems.append("the JVM with a 1 GiB hsperfdata is traced from it")
        r = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
        )
        if r.returncode != 0 or "error" in (r.stdout + r.stderr):
            problems.append(f"promtool: {(r.stdout + r.stderr).strip()[:400]}")
        if any("forged" in l.split("{")[0] for l in text.splitlines()):
            problems.append("a forged series in the scrape")
        if str(jpid) not in info or info[str(jpid)].get("probe_mode") != "usdt":
            problems.append(f"normal JVM {jpid}: jvm_info {info.get(str(jpid))}")
        if agent.poll() is not None:
            problems.append(
                f"the agent died (exit {agent.returncode}); log {WORK}/agent-{port_}.log"
            )
        elif healthz(port_).strip() != "ok":
            problems.append("agent not healthy after the hostile files")
        else:
            peak = peak_rss_mib(apid)
            log(f"agent peak RSS (VmHWM) {peak:.1f} MiB (cap {PEAK_RSS_CAP_MIB})")
            if peak is None or peak > PEAK_RSS_CAP_MIB:
                problems.append(f"agent peak RSS {peak} MiB over its cap {PEAK_RSS_CAP_MIB} MiB")
    finally:
        for f in flippers:
            f.kill()
        agent.terminate()
    return problems


def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        run("hostile_containers_next_to_normal_jvm", test_hostile)
        run("hostile_files_sparse_truncated_huge_within_memory_cap", test_hostile_files)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
