"""What every agent end-to-end script shares: reading /metrics, running named tests, and
cleaning up. One "ok NAME" / "FAIL NAME: why" line per test, then the cargo-style summary
line hack/suites/20-agent.sh counts.

Ports: each script's agents listen on 127.0.0.1 at JVMDIAG_E2E_PORT_BASE + a fixed offset
(`port(n)`), so two checkouts can run their agent tests side by side with different bases.
"""
import os, re, signal, subprocess, sys, time, urllib.request

PORT_BASE = int(os.environ.get("JVMDIAG_E2E_PORT_BASE", "19465"))
procs = []    # every process a test starts; killed at the end
results = []  # one bool per test run


def port(offset):
    return PORT_BASE + offset


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def scrape(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
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
    print(f"FAIL {name} ({dt:.0f}s): " + "; ".join(problems) if problems else f"ok {name} ({dt:.0f}s)", flush=True)
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
    print(f"test result: {'ok' if failed == 0 else 'FAILED'}. {passed} passed; {failed} failed; 0 ignored", flush=True)
    return 1 if failed else 0


def stop(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
