"""What every agent end-to-end script shares: reading /metrics, running named tests, and
cleaning up. One "ok NAME" / "FAIL NAME: why" line per test, then the cargo-style summary
line hack/suites/20-agent.sh counts.

Ports: each script's agents listen on 127.0.0.1 at JVMDIAG_E2E_PORT_BASE + a fixed offset
(`port(n)`), so two checkouts can run their agent tests side by side with different bases.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

PORT_BASE = int(os.environ.get("JVMDIAG_E2E_PORT_BASE", "19465"))
procs = []  # every process a test starts; killed at the end
results = []  # one bool per test run


def port(offset):
    return PORT_BASE + offset


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# The agent renders /metrics at most once a second: a scrape within a second of the end of the
# last render gets that render's page (src/serve.rs, FRESH). A test compares a page with what
# happened before its scrape, so each scrape of a port waits until the page of the previous one
# is stale, and every page a test reads was rendered after its request.
FRESH = 1.1
_last_scrape = {}  # port -> time.monotonic() at the end of its last scrape


def scrape(port):
    wait = _last_scrape[port] + FRESH - time.monotonic() if port in _last_scrape else 0
    if wait > 0:
        time.sleep(wait)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    _last_scrape[port] = time.monotonic()
    return text


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text, pid=None):
    """(name, labels, value) of each sample; only those of one pid when given."""
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        if pid is None or labels.get("pid") == str(pid):
            yield m.group(1), labels, float(m.group(3))


# Kubernetes mode without an API server: the kubeconfig names one that does not answer. The
# agent retries the pod watch for ever and traces host JVMs with --all-jvms meanwhile, all in
# the namespace "" (JVMs outside pods count as one namespace): enough to test what it does per
# namespace (the shares, the reserve) without a cluster.
NO_APISERVER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: none, user: {}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def kube_mode_without_apiserver(work):
    """The agent's flags for Kubernetes mode without an API server (the kubeconfig written into
    `work`), tracing the host's JVMs with --all-jvms."""
    path = os.path.join(work, "no-apiserver.kubeconfig")
    with open(path, "w") as f:
        f.write(NO_APISERVER_KUBECONFIG)
    return ["--node-name", "jvmdiag-e2e-no-node", "--kubeconfig", path, "--all-jvms"]


def wait_serving(port, proc, log_path, timeout=60):
    """Waits until the agent `proc` serves /metrics on `port`; loading its BPF objects takes
    seconds on a machine busy with other builds, hence the margin. Raises with the end of its
    log if it exits first."""
    t = time.time() + timeout
    while time.time() < t:
        try:
            scrape(port)
            return proc
        except Exception:
            if proc.poll() is not None:
                # The scrape error is only "not serving yet"; the message is the agent's log.
                raise RuntimeError("agent exited: " + open(log_path).read()[-2000:])  # noqa: B904
            time.sleep(0.1)
    raise RuntimeError(f"agent did not serve /metrics within {timeout} s")


def wait_file(path, timeout, proc=None):
    t = time.time() + timeout
    while time.time() < t:
        if os.path.exists(path):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"workload exited early ({proc.returncode})")
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {path}")


def run(name, fn, *a):
    """Runs one test (ONLY=substring selects); a crash is a failure with its reason."""
    if os.environ.get("ONLY") and os.environ["ONLY"] not in name:
        return
    t0 = time.time()
    try:
        problems = fn(*a)
    except Exception as e:
        problems = [f"{type(e).__name__}: {e}"]
    dt = time.time() - t0
    print(
        f"FAIL {name} ({dt:.0f}s): " + "; ".join(problems)
        if problems
        else f"ok {name} ({dt:.0f}s)",
        flush=True,
    )
    results.append(not problems)


def kill_leftovers():
    """Kills whatever the tests left running (the whole group of a JVM run under unshare)."""
    for p in procs:
        if p.poll() is not None:
            continue
        try:
            if p.args and p.args[0] == "unshare":
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.kill()
        except OSError:
            try:
                p.kill()
            except OSError:
                pass


def summary():
    """Prints the summary line the suite counts; returns the exit code."""
    passed = sum(results)
    failed = len(results) - passed
    print(
        f"test result: {'ok' if failed == 0 else 'FAILED'}. {passed} passed; {failed} failed; 0 ignored",
        flush=True,
    )
    return 1 if failed else 0


def stop(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()


def bpf_ids_of(pid):
    """The ids of the BPF maps, links and programs a process holds: the kernel's fdinfo of its
    descriptors (map_id / link_id / prog_id)."""
    ids = {"map_id": set(), "link_id": set(), "prog_id": set()}
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            info = open(f"{fdinfo}/{fd}").read()
        except OSError:
            continue
        for field, found in ids.items():
            m = re.search(rf"^{field}:\s*(\d+)", info, re.M)
            if m:
                found.add(int(m.group(1)))
    return ids


def bpftool(*args):
    return json.loads(
        subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, check=True).stdout
    )


def bpf_objects_of(agent_pid):
    """Independent view of the agent's BPF maps and links: the kernel's fdinfo of the
    agent's descriptors (map_id / link_id), described by bpftool."""
    ids = bpf_ids_of(agent_pid)
    return [m for m in bpftool("map", "show") if m["id"] in ids["map_id"]], sorted(ids["link_id"])


def map_dump(map_id):
    """A map's entries as the kernel holds them, (key bytes, value bytes) each (bpftool)."""

    def raw(field):
        return bytes(int(b, 16) for b in field) if isinstance(field, list) else b""

    return [
        (raw(e.get("key")), raw(e.get("value"))) for e in bpftool("map", "dump", "id", str(map_id))
    ]


def map_entries(map_id):
    return len(bpftool("map", "dump", "id", str(map_id)))


def object_maps(agent_pid, program):
    """{map name: id} of the BPF object of the agent that has the program named `program`
    (several objects have maps of the same name: traced_pids, inflight_held, ...)."""
    ids = bpf_ids_of(agent_pid)
    progs = [
        p for p in bpftool("prog", "show") if p["id"] in ids["prog_id"] and p.get("name") == program
    ]
    if not progs:
        raise RuntimeError(f"the agent (pid {agent_pid}) holds no BPF program named {program}")
    wanted = set(progs[0].get("map_ids", []))
    return {m["name"]: m["id"] for m in bpftool("map", "show") if m["id"] in wanted}
