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
import os, re, shutil, signal, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import log, scrape, samples, wait_file, procs, run, kill_leftovers, summary, port  # noqa: E402
import agent_standalone as standalone  # noqa: E402  (reads AGENT WORKDIR JDK17 JDK25 from sys.argv)
from agent_standalone import start_agent, check_storm  # noqa: E402

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
    hdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0x7fff_ffff_ffff_0000, 0xffff_ffff_ffff_ff00,
                              0, 64, 56, 0xffff, 64, 0xffff, 0xfffe)
    # A "note" whose namesz/descsz are huge, in case a parser looks at fixed offsets.
    note = struct.pack("<III", 0xffff_fff0, 0xffff_fff0, 3) + b"stapsdt"  # name without NUL
    return hdr + note + b"\xff" * (8192 - len(hdr) - len(note))


def hostile_hsperfdata():
    """hsperfdata with a valid header, 2^31-1 entries and an entry pointing past the end."""
    import struct
    hdr = struct.pack("<IBBBBiiqii", 0xc0c0feca, 1, 2, 0, 1, 32768, 0, 0, 32, 0x7fffffff)
    entry = struct.pack("<iiiBBBBi", 20, 0x7ffffff0, 0, ord("J"), 1, 1, 0, 0x7ffffff0)
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
    p = subprocess.Popen(["unshare", "--pid", "--mount", "--fork", "--propagation", "private", *cmd],
                         stdout=subprocess.DEVNULL, stderr=open(root + ".stderr", "w"), start_new_session=True)
    procs.append(p)
    wait_file(os.path.join(root, "ready"), 20, p)
    # The host pid of pid 1 in the new namespace: unshare's child.
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                status = open(f"/proc/{d}/status").read()
            except OSError:
                continue
            if re.search(rf"^PPid:\s+{p.pid}$", status, re.M) and re.search(r"^NSpid:.*\s1$", status, re.M):
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


def test_hostile():
    base = os.path.join(WORK, "hostile")
    if os.path.isdir(base):
        shutil.rmtree(base)
    os.makedirs(base)
    src = os.path.join(base, "hostile.c")
    open(src, "w").write(HOSTILE_C)
    subprocess.run(["gcc", "-static", "-O1", "-o", os.path.join(base, "hostile"), src], check=True)
    # A host file no container may read; its directory is outside every hostile root.
    canary_dir = os.path.join(WORK, "host-secret")
    os.makedirs(canary_dir, exist_ok=True)
    canary = os.path.join(canary_dir, "1")
    open(canary, "w").write("HOST SECRET\n")
    real_libjvm = open(f"{standalone.JDK17}/lib/server/libjvm.so", "rb").read(4096)
    variants = [  # name, libjvm.so bytes, FIFO bound over libjvm.so, what /tmp/hsperfdata_root/1 becomes
        ("garbage_shadow_link", os.urandom(65536), False, "link:/etc/shadow"),
        ("truncated_elf_canary_link", real_libjvm, False, "link:" + canary),
        ("elf_hostile_headers_dotdot", elf_hostile_header(), False, "link:../../../../../../../../etc/shadow"),
        ("elf_hostile_dir_link", elf_hostile_header(), False, "dirlink:" + canary_dir),
        ("hsperfdata_fifo", os.urandom(8192), False, "fifo"),
        ("hostile_hsperfdata_content", elf_hostile_header(), False, "keep"),
        ("libjvm_fifo", os.urandom(8192), True, "keep"),
    ]

    agent = start_agent(PORT)
    strace_log = os.path.join(WORK, "agent-strace.log")
    st = subprocess.Popen(["strace", "-f", "-y", "-s", "256", "-e", "trace=open,openat,openat2", "-o", strace_log,
                           "-p", str(agent.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        problems += [p for p in storm_problems if not p.startswith("only ")]  # 1,200 threads here, not 10,000

        # Every hostile pid reported: named as not traced (no jvm_info, no counters) or untraced by reason.
        deadline = time.time() + 10
        while True:
            text = scrape(PORT)
            info = {l.get("pid"): l for n, l, _ in samples(text) if n == "jvmdiag_jvm_info"}
            untraced = {l["reason"]: v for n, l, v in samples(text) if n == "jvmdiag_agent_jvms_untraced"}
            failures = {(l["reason"], l.get("collector", "")): v for n, l, v in samples(text)
                        if n == "jvmdiag_agent_attach_failures_total"}
            n_reported = sum(v for r, v in untraced.items() if r != "not_selected")
            if n_reported >= len(hostile) or time.time() > deadline:
                break
            time.sleep(0.2)
        not_traced = {l.get("pid") for n, l, _ in samples(text) if n == "jvmdiag_agent_jvm_not_traced"}
        log(f"hostile: untraced {untraced}; attach failures {failures}; hostile pids named as not traced "
            f"{[n for n, p in hostile.items() if str(p) in not_traced]}")
        if n_reported < len(hostile):
            problems.append(f"only {n_reported} of {len(hostile)} hostile JVMs reported as untraced: {untraced}")
        if not failures:
            problems.append("no jvmdiag_agent_attach_failures_total at all")
        for name, pid in hostile.items():
            if str(pid) in info:
                problems.append(f"{name} (pid {pid}) is traced as probe_mode={info[str(pid)].get('probe_mode')}")
            if any(l.get("pid") == str(pid) for n, l, _ in samples(text) if n == "jvmdiag_thread_starts_total"):
                problems.append(f"{name} (pid {pid}) has thread-start counters (read hsperfdata through its link?)")
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
        if any(b in x for x in opened for b in bad_names) or any(f'"{b}' in line for b in bad_names):
            problems.append(f"agent opened outside a container root: {line[:300]}")
    # The check can fail only if strace saw the agent read the hostile containers.
    for name, pid in hostile.items():
        if not any(f"/proc/{pid}/" in l for l in lines):
            problems.append(f"strace shows no open of /proc/{pid}/* by the agent ({name}): strace blind?")
    if not any("openat2(" in l for l in lines):
        problems.append("strace shows no openat2 (ProcRoot) call by the agent")
    log(f"strace: {len(lines)} open calls, {len(ok)} succeeded; log {strace_log}")
    return problems


def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        run("hostile_containers_next_to_normal_jvm", test_hostile)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
