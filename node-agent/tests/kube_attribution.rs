//! Kubernetes mode against a real kube-apiserver (the local control plane), real JVMs, real
//! cgroups and real eBPF — without a kubelet: the test plays the kubelet's part. It creates
//! Pod objects bound to a node name of its own, starts JVMs inside cgroups shaped like a
//! container runtime's (`/…/pod<uid>/<64-hex id>`), and writes that ID into the pod's
//! `status.containerStatuses[].containerID`, as the kubelet does.
//!
//! Ignored by default (needs root, and a cluster): run by hack/suites/45-agent-kube.sh with
//! `JVMDIAG_TEST_KUBECONFIG` and `KUBECTL` set.
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
const JDK25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl(args: &[&str]) -> String {
    let k = std::env::var("KUBECTL").expect("KUBECTL");
    let out = Command::new(k).args(args).env("KUBECONFIG", kubeconfig()).output().unwrap();
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl_stdin(args: &[&str], input: &str) -> String {
    let k = std::env::var("KUBECTL").expect("KUBECTL");
    let mut c = Command::new(k)
        .args(args)
        .env("KUBECONFIG", kubeconfig())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A new namespace, once its default ServiceAccount exists (pods are refused before that).
fn create_namespace(ns: &str) {
    kubectl(&["create", "namespace", ns]);
    let k = std::env::var("KUBECTL").expect("KUBECTL");
    wait_for("the namespace's default ServiceAccount", Duration::from_secs(60), || {
        Command::new(&k)
            .args(["-n", ns, "get", "serviceaccount", "default"])
            .env("KUBECONFIG", kubeconfig())
            .output()
            .is_ok_and(|o| o.status.success())
    });
}

fn kubeconfig() -> PathBuf {
    PathBuf::from(
        std::env::var("JVMDIAG_TEST_KUBECONFIG")
            .expect("JVMDIAG_TEST_KUBECONFIG: the local control plane's kubeconfig"),
    )
}

fn container_id(seed: u32) -> String {
    format!("{:08x}", seed).repeat(8)
}

/// The JvmDiagnostics `name` in `ns` (the agent traces only pods whose resource exists; no
/// operator runs here, so nothing acts on it).
fn create_resource(ns: &str, name: &str) {
    let yaml = format!(
        "apiVersion: jvm.diagnostics.dev/v1alpha1\nkind: JvmDiagnostics\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{targetRef: {{kind: Deployment, name: {name}}}}}\n"
    );
    kubectl_stdin(&["apply", "-f", "-"], &yaml);
}

/// A pod bound to `node`; `injected`: the webhook's annotations, and its JvmDiagnostics
/// `res-<name>` created first. Returns its UID.
fn create_pod(ns: &str, name: &str, node: &str, injected: Option<(&str, &str)>) -> String {
    if injected.is_some() {
        create_resource(ns, &format!("res-{name}"));
    }
    create_pod_only(ns, name, node, injected)
}

/// A pod as `create_pod` makes it, without creating its JvmDiagnostics.
fn create_pod_only(ns: &str, name: &str, node: &str, injected: Option<(&str, &str)>) -> String {
    let ann = match injected {
        Some((collectors, containers)) => format!(
            "labels: {{jvm.diagnostics.dev/inject: res-{name}}}\n  annotations: {{jvm.diagnostics.dev/injected: \"h1\", jvm.diagnostics.dev/collectors: \"{collectors}\", jvm.diagnostics.dev/containers: \"{containers}\"}}"
        ),
        None => "labels: {app: plain}".to_string(),
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n  {ann}\nspec:\n  nodeName: {node}\n  tolerations: [{{operator: Exists}}]\n  containers: [{{name: app, image: none}}]\n"
    );
    kubectl_stdin(&["apply", "-f", "-"], &yaml);
    kubectl(&["-n", ns, "get", "pod", name, "-o", "jsonpath={.metadata.uid}"])
}

/// What the kubelet does once the container runs: reports its ID.
fn report_container(ns: &str, name: &str, id: &str) {
    let patch = format!(
        r#"{{"status":{{"phase":"Running","containerStatuses":[{{"name":"app","containerID":"containerd://{id}","image":"none","imageID":"","ready":true,"restartCount":0,"state":{{"running":{{}}}}}}]}}}}"#
    );
    kubectl(&[
        "-n",
        ns,
        "patch",
        "pod",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

/// A cgroup (v1 `pids` hierarchy) named like a container runtime's; removed on drop.
struct Cgroup(PathBuf);
impl Cgroup {
    fn new(top: &str, pod_uid: &str, id: &str) -> Cgroup {
        let p = Path::new("/sys/fs/cgroup/pids").join(top).join(format!("pod{pod_uid}")).join(id);
        std::fs::create_dir_all(&p).unwrap();
        Cgroup(p)
    }
}
impl Drop for Cgroup {
    fn drop(&mut self) {
        // The leaf once its (killed) processes are gone, then the pod and top directories
        // (the top one only when the last pod directory goes).
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let pod = self.0.parent().unwrap();
        let _ = std::fs::remove_dir(pod);
        let _ = std::fs::remove_dir(pod.parent().unwrap());
    }
}

struct Jvm {
    child: Kill,
    out: BufReader<std::process::ChildStdout>,
}

/// Starts SafepointBurst inside `cg` (or on the host) and waits for it to idle.
fn start_jvm(jdk: &str, classes: &Path, cg: Option<&Cgroup>, gcs: u32) -> Jvm {
    let java = format!("{jdk}/bin/java");
    let join = match cg {
        Some(c) => format!("echo $$ > {}/cgroup.procs && ", c.0.display()),
        None => String::new(),
    };
    let script = format!("{join}exec {java} -XX:+UnlockDiagnosticVMOptions -XX:GuaranteedSafepointInterval=0 -Xmx64m -cp {} SafepointBurst {gcs} 5 5 3000", classes.display());
    let mut child =
        Command::new("sh").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    Jvm { child: Kill(child), out }
}

impl Jvm {
    fn pid(&self) -> u32 {
        self.child.0.id()
    }
    fn wait_idle(&mut self) {
        let mut line = String::new();
        while !line.contains("IDLE") {
            line.clear();
            assert!(self.out.read_line(&mut line).unwrap() > 0, "JVM exited early");
        }
    }
}

/// How long the agent serves one rendered page to every scraper (at most one render a second):
/// a scrape that must see the state after the previous one waits this long after it.
const FRESH: Duration = Duration::from_millis(1100);

fn scrape(port: u16) -> String {
    static LAST: Mutex<Vec<(u16, Instant)>> = Mutex::new(Vec::new());
    let previous = LAST.lock().unwrap().iter().find(|(p, _)| *p == port).map(|(_, t)| *t);
    if let Some(wait) = previous.and_then(|t| FRESH.checked_sub(t.elapsed())) {
        std::thread::sleep(wait);
    }
    let text = scrape_now(port);
    let mut last = LAST.lock().unwrap();
    last.retain(|(p, _)| *p != port);
    last.push((port, Instant::now()));
    text
}

fn scrape_now(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

/// The agent in Kubernetes mode for `node` (its API access through `kubeconfig`), on a free
/// loopback port with `extra` flags; returned once it serves and its pod watch has synced.
fn start_synced_agent(node: &str, kubeconfig: &Path, extra: &[&str]) -> (u16, Kill) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let agent = Kill(
        Command::new(env!("CARGO_BIN_EXE_jvmdiag-agent"))
            .args(["--node-name", node, "--kubeconfig"])
            .arg(kubeconfig)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .spawn()
            .unwrap(),
    );
    wait_for("agent /metrics", Duration::from_secs(30), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    wait_for("watch synced", Duration::from_secs(30), || {
        value(&scrape(port), "jvmdiag_agent_kube_api_up", &[]) == Some(1.0)
    });
    (port, agent)
}

fn value(text: &str, name: &str, must: &[&str]) -> Option<f64> {
    let mut found = None;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, v)) = l.rsplit_once(' ') else { continue };
        let n = series.split('{').next().unwrap_or("");
        if n == name && must.iter().all(|m| series.contains(m)) {
            *found.get_or_insert(0.0) += v.parse::<f64>().unwrap_or(0.0);
        }
    }
    found
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn perf(jdk: &str, pid: u32) -> HashMap<String, String> {
    let out = Command::new(format!("{jdk}/bin/jcmd"))
        .arg(pid.to_string())
        .arg("PerfCounter.print")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// A TCP relay to the API server that the test can cut (an unreachable API server) and restore.
struct Relay {
    port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// Connections accepted and bytes relayed (both directions): the agent's API traffic.
    accepted: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

impl Relay {
    fn start(upstream: String) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, conns2) = (up.clone(), conns.clone());
        let (accepted, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (accepted2, bytes2) = (accepted.clone(), bytes.clone());
        std::thread::spawn(move || loop {
            match l.accept() {
                Ok((c, _)) => {
                    if !up2.load(Ordering::SeqCst) {
                        let _ = c.shutdown(Shutdown::Both);
                        continue;
                    }
                    c.set_nonblocking(false).unwrap();
                    accepted2.fetch_add(1, Ordering::SeqCst);
                    let Ok(u) = TcpStream::connect(&upstream) else { continue };
                    conns2.lock().unwrap().extend([c.try_clone().unwrap(), u.try_clone().unwrap()]);
                    for (mut a, mut b) in [(c.try_clone().unwrap(), u.try_clone().unwrap()), (u, c)]
                    {
                        let bytes = bytes2.clone();
                        std::thread::spawn(move || {
                            let mut buf = [0u8; 16384];
                            loop {
                                match a.read(&mut buf) {
                                    Ok(0) | Err(_) => break,
                                    Ok(n) => {
                                        bytes.fetch_add(n as u64, Ordering::SeqCst);
                                        if b.write_all(&buf[..n]).is_err() {
                                            break;
                                        }
                                    }
                                }
                            }
                            let _ = b.shutdown(Shutdown::Both);
                        });
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        });
        Relay { port, up, conns, accepted, bytes }
    }
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[test]
#[ignore = "needs root and a local control plane: hack/suites/45-agent-kube.sh"]
fn pods_are_attributed_by_cgroup_and_contract_and_survive_an_api_outage() {
    let tag = std::process::id();
    let ns = format!("jvmdiag-it-{tag}");
    let node = format!("jvmdiag-it-node-{tag}");
    let top = format!("jvmdiag-it-{tag}");
    let work = std::env::temp_dir().join(format!("jvmdiag-kube-it-{tag}"));
    std::fs::create_dir_all(&work).unwrap();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/workloads/sidecar/SafepointBurst.java");
    assert!(Command::new(format!("{JDK17}/bin/javac"))
        .args(["--release", "17", "-d"])
        .arg(&work)
        .arg(&src)
        .status()
        .unwrap()
        .success());
    // A Node object, so the pod garbage collector does not delete pods bound to an unknown node.
    kubectl_stdin(
        &["apply", "-f", "-"],
        &format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n"),
    );
    create_namespace(&ns);
    struct Cleanup(String, String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let k = std::env::var("KUBECTL").unwrap_or_default();
            let _ = Command::new(&k)
                .args(["-n", &self.0, "delete", "pods", "--all", "--force", "--grace-period=0"])
                .env("KUBECONFIG", kubeconfig())
                .output();
            let _ = Command::new(&k)
                .args(["delete", "namespace", &self.0, "--wait=false"])
                .env("KUBECONFIG", kubeconfig())
                .output();
            let _ = Command::new(&k)
                .args(["delete", "node", &self.1, "--wait=false"])
                .env("KUBECONFIG", kubeconfig())
                .output();
        }
    }
    let _cleanup = Cleanup(ns.clone(), node.clone());

    // The agent talks to the API server through a relay the test can cut.
    let kc = std::fs::read_to_string(kubeconfig()).unwrap();
    let server = kc
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))
        .expect("server in kubeconfig")
        .to_string();
    let relay = Relay::start(server.clone());
    let relayed = work.join("kubeconfig");
    std::fs::write(&relayed, kc.replace(&server, &format!("127.0.0.1:{}", relay.port))).unwrap();

    // A: injected (threads, safepoints; not vmOperations), JDK 17.  B: not injected, JDK 25.
    // C: a host JVM.  D: injected, JDK 25, its pod created only after the JVM runs.
    let (id_a, id_b, id_d) = (container_id(0xa), container_id(0xb), container_id(0xd));
    let uid_a = create_pod(&ns, "pod-a", &node, Some(("threads,safepoints", "app")));
    let uid_b = create_pod(&ns, "pod-b", &node, None);
    // E: the webhook's annotations written by the pod's author, with no JvmDiagnostics behind them.
    let id_e = container_id(0xe);
    let uid_e = create_pod_only(&ns, "pod-e", &node, Some(("threads,safepoints", "app")));
    report_container(&ns, "pod-a", &id_a);
    report_container(&ns, "pod-b", &id_b);
    report_container(&ns, "pod-e", &id_e);
    let uid_d = "d0d0d0d0-0000-4000-8000-00000000000d".to_string(); // placeholder until D exists
    let (cg_a, cg_b) = (Cgroup::new(&top, &uid_a, &id_a), Cgroup::new(&top, &uid_b, &id_b));
    let cg_d = Cgroup::new(&top, &uid_d, &id_d);
    let cg_e = Cgroup::new(&top, &uid_e, &id_e);

    let (port, _agent) = start_synced_agent(&node, &relayed, &["--poll-interval-ms", "100"]);

    let mut a = start_jvm(JDK17, &work, Some(&cg_a), 40);
    let mut b = start_jvm(JDK25, &work, Some(&cg_b), 10);
    let mut c = start_jvm(JDK17, &work, None, 10);
    let mut d = start_jvm(JDK25, &work, Some(&cg_d), 0);
    let mut e = start_jvm(JDK17, &work, Some(&cg_e), 10);
    for j in [&mut a, &mut b, &mut c, &mut d, &mut e] {
        j.wait_idle();
    }
    let pod_a = [
        "namespace=\"",
        "\",pod=\"pod-a\",container=\"app\",jvm=\"SafepointBurst\",jvmdiagnostics=\"res-pod-a\"",
    ];
    let sel_a = format!("{}{ns}{}", pod_a[0], pod_a[1]);
    wait_for("pod-a's JVM traced", Duration::from_secs(30), || {
        value(&scrape(port), "jvmdiag_safepoint_pause_seconds_count", &[&sel_a]).is_some()
    });
    // D's JVM waits for its pod: created now, its container reported a moment later.
    std::thread::sleep(Duration::from_secs(1));
    let text = scrape(port);
    // (other JVMs in containers on this shared host may wait too)
    assert!(
        value(&text, "jvmdiag_agent_kube_jvms_pending", &["reason=\"pod_unknown\""]).unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert!(!text.contains("pod=\"pod-d\""));
    // D's cgroup names a placeholder pod UID: attribution goes by container ID.
    create_pod(&ns, "pod-d", &node, Some(("threads,safepoints,vmOperations,compilation", "app")));
    std::thread::sleep(Duration::from_millis(500));
    report_container(&ns, "pod-d", &id_d);
    wait_for("pod-d's JVM traced after its pod appeared", Duration::from_secs(30), || {
        scrape(port).contains("pod=\"pod-d\"")
    });

    // A VM operation in D (all collectors asked for): a thread dump.
    assert!(Command::new(format!("{JDK25}/bin/jcmd"))
        .arg(d.pid().to_string())
        .arg("Thread.print")
        .output()
        .unwrap()
        .status
        .success());
    wait_for("pod-d's VM operation", Duration::from_secs(10), || {
        value(&scrape(port), "jvmdiag_vm_operation_seconds_count", &["pod=\"pod-d\""]).is_some()
    });

    // Counts equal the JVM's own counters; collectors not asked for are not exported.
    let text = scrape(port);
    let pc = perf(JDK17, a.pid());
    let sp: f64 = pc["sun.rt.safepoints"].parse().unwrap();
    assert_eq!(
        value(&text, "jvmdiag_safepoint_pause_seconds_count", &[&sel_a]),
        Some(sp),
        "{text}"
    );
    let started: f64 = pc["java.threads.started"].parse().unwrap();
    let starts = value(&text, "jvmdiag_thread_starts_total", &[&sel_a]).unwrap_or(0.0);
    assert!(
        starts >= 5.0 && starts <= started,
        "thread starts {starts} vs java.threads.started {started}"
    );
    assert!(
        value(&text, "jvmdiag_vm_operation_seconds_count", &["pod=\"pod-a\""]).is_none(),
        "vmops exported for pod-a: {text}"
    );
    // ... nor counted in the kernel: pod-a's 40 GCs are VM operations, yet the vmOperations
    // tables (durations and requests) hold exactly the rows exported (pod-d's): one per series.
    // (Retried: a VM operation may land between the scrape's table count and its read.)
    let rows_vs_series = |t: &str| {
        let series = t
            .lines()
            .filter(|l| {
                l.starts_with("jvmdiag_vm_operation_seconds_count{")
                    || l.starts_with("jvmdiag_vm_operation_requests_total{")
            })
            .count() as f64;
        (value(t, "jvmdiag_agent_map_entries", &["map=\"vmOperations\""]), series)
    };
    let mut last = rows_vs_series(&text);
    for _ in 0..5 {
        if last.0 == Some(last.1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        last = rows_vs_series(&scrape(port));
    }
    assert_eq!(
        last.0,
        Some(last.1),
        "vmops kernel table rows vs exported series (pod-a's not wanted)"
    );
    // Not injected, host JVM, annotations without a resource: not traced, counted by reason.
    assert!(!text.contains("pod=\"pod-b\""), "{text}");
    assert!(
        !text.contains("pod=\"pod-e\""),
        "a pod whose JvmDiagnostics does not exist is traced: {text}"
    );
    assert!(
        value(&text, "jvmdiag_agent_kube_jvms_skipped_total", &["reason=\"no_resource\""])
            .unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert!(
        value(&text, "jvmdiag_agent_kube_jvms_skipped_total", &["reason=\"not_injected\""])
            .unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert!(
        value(&text, "jvmdiag_agent_kube_jvms_skipped_total", &["reason=\"not_in_pod\""])
            .unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "jvmdiag_jvm_info", &["pid="]),
        None,
        "pid label in Kubernetes mode: {text}"
    );

    // API server unreachable: tracing goes on with the known pods, and the agent says so.
    relay.cut();
    wait_for("api_up 0", Duration::from_secs(60), || {
        value(&scrape(port), "jvmdiag_agent_kube_api_up", &[]) == Some(0.0)
    });
    let text = scrape(port);
    assert!(value(&text, "jvmdiag_safepoint_pause_seconds_count", &[&sel_a]).is_some(), "{text}");
    relay.restore();
    wait_for("api_up 1 again", Duration::from_secs(90), || {
        value(&scrape(port), "jvmdiag_agent_kube_api_up", &[]) == Some(1.0)
    });

    // Pod deleted (the kubelet kills its JVM): its series are shown once more, then gone.
    kubectl(&["-n", &ns, "delete", "pod", "pod-a", "--force", "--grace-period=0"]);
    drop(a);
    std::thread::sleep(Duration::from_millis(500)); // > poll interval: the exit is noticed
    let last = scrape(port);
    assert!(last.contains("pod=\"pod-a\""), "pod-a's final scrape missing");
    let after = scrape(port);
    assert!(!after.contains("pod=\"pod-a\""), "pod-a still exported after its final scrape");
    assert!(after.contains("pod=\"pod-d\""));
    drop((b, c, d, e));
    drop((cg_a, cg_b, cg_d, cg_e));
    let _ = std::fs::remove_dir_all(&work);
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
#[ignore = "needs root and a local control plane: hack/suites/45-agent-kube.sh"]
fn five_hundred_pods_cost_flat_memory_and_no_traffic_but_the_watch() {
    const PODS: usize = 500;
    let tag = std::process::id();
    let ns = format!("jvmdiag-scale-{tag}");
    let node = format!("jvmdiag-scale-node-{tag}");
    kubectl_stdin(
        &["apply", "-f", "-"],
        &format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n"),
    );
    create_namespace(&ns);
    struct Cleanup(String, String);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let k = std::env::var("KUBECTL").unwrap_or_default();
            let _ = Command::new(&k)
                .args(["delete", "namespace", &self.0, "--wait=false"])
                .env("KUBECONFIG", kubeconfig())
                .output();
            let _ = Command::new(&k)
                .args(["delete", "node", &self.1, "--wait=false"])
                .env("KUBECONFIG", kubeconfig())
                .output();
        }
    }
    let _cleanup = Cleanup(ns.clone(), node.clone());
    let kc = std::fs::read_to_string(kubeconfig()).unwrap();
    let server =
        kc.lines().find_map(|l| l.trim().strip_prefix("server: https://")).unwrap().to_string();
    let relay = Relay::start(server.clone());
    let relayed = std::env::temp_dir().join(format!("jvmdiag-scale-kubeconfig-{tag}"));
    std::fs::write(&relayed, kc.replace(&server, &format!("127.0.0.1:{}", relay.port))).unwrap();
    let (port, agent) = start_synced_agent(&node, &relayed, &[]);
    let pid = agent.0.id();
    for _ in 0..20 {
        scrape(port);
    }
    let rss0 = rss_kib(pid);

    // 500 pods on this node, looking like injected ones, with a container ID each.
    let mut yaml = String::new();
    for i in 0..PODS {
        yaml += &format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{i}\n  namespace: {ns}\n  labels: {{jvm.diagnostics.dev/inject: res}}\n  annotations: {{jvm.diagnostics.dev/injected: h, jvm.diagnostics.dev/collectors: \"threads,safepoints,vmOperations,compilation\", jvm.diagnostics.dev/containers: app}}\nspec:\n  nodeName: {node}\n  tolerations: [{{operator: Exists}}]\n  containers: [{{name: app, image: none, env: [{{name: JAVA_TOOL_OPTIONS, value: \"-Xmx1g -XX:+UseG1GC\"}}]}}]\n"
        );
    }
    kubectl_stdin(&["create", "-f", "-"], &yaml);
    for i in (0..PODS).step_by(5) {
        report_container(&ns, &format!("p-{i}"), &container_id(0x1000 + i as u32));
    }
    wait_for("500 pods in the agent's table", Duration::from_secs(180), || {
        value(&scrape(port), "jvmdiag_agent_kube_pods", &[]) == Some(PODS as f64)
    });
    for _ in 0..20 {
        scrape(port);
    }
    let rss1 = rss_kib(pid);

    // Quiet cluster: scrapes cause no API traffic (no new connection, only watch keep-alive).
    let (c0, b0) = (relay.accepted.load(Ordering::SeqCst), relay.bytes.load(Ordering::SeqCst));
    for _ in 0..50 {
        scrape(port);
        std::thread::sleep(Duration::from_millis(100));
    }
    let (c1, b1) = (relay.accepted.load(Ordering::SeqCst), relay.bytes.load(Ordering::SeqCst));

    kubectl(&["-n", &ns, "delete", "pods", "--all", "--force", "--grace-period=0", "--wait=false"]);
    wait_for("pods gone from the agent's table", Duration::from_secs(180), || {
        value(&scrape(port), "jvmdiag_agent_kube_pods", &[]) == Some(0.0)
    });
    let rss2 = rss_kib(pid);
    eprintln!("agent RSS: {rss0} KiB with 0 pods, {rss1} KiB with {PODS}, {rss2} KiB after deleting them; 50 scrapes over 5 s: {} new API connections, {} bytes", c1 - c0, b1 - b0);
    assert_eq!(c1, c0, "scrapes opened API connections");
    assert!(b1 - b0 < 16 * 1024, "{} bytes of API traffic during 50 scrapes", b1 - b0);
    assert!(rss1.saturating_sub(rss0) < 8 * 1024, "RSS grew {} KiB with {PODS} pods", rss1 - rss0);
    assert!(
        rss2.saturating_sub(rss0) < 8 * 1024,
        "RSS grew {} KiB after the pods went",
        rss2 - rss0
    );
    let _ = std::fs::remove_file(&relayed);
}

/// A Node object and namespaces in the control plane (no kubelet: the test writes pods as one
/// would), SafepointBurst compiled into `work`; all deleted when dropped.
struct NodeAndNamespaces(Vec<String>, String);

impl NodeAndNamespaces {
    fn create(work: &Path, node: &str, namespaces: &[String]) -> Self {
        std::fs::create_dir_all(work).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../e2e/workloads/sidecar/SafepointBurst.java");
        assert!(Command::new(format!("{JDK17}/bin/javac"))
            .args(["--release", "17", "-d"])
            .arg(work)
            .arg(&src)
            .status()
            .unwrap()
            .success());
        kubectl_stdin(
            &["apply", "-f", "-"],
            &format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n"),
        );
        for n in namespaces {
            create_namespace(n);
        }
        NodeAndNamespaces(namespaces.to_vec(), node.to_string())
    }
}

impl Drop for NodeAndNamespaces {
    fn drop(&mut self) {
        let k = std::env::var("KUBECTL").unwrap_or_default();
        for ns in &self.0 {
            let _ = Command::new(&k)
                .args(["-n", ns, "delete", "pods", "--all", "--force", "--grace-period=0"])
                .env("KUBECONFIG", kubeconfig())
                .output();
            let _ = Command::new(&k)
                .args(["delete", "namespace", ns, "--wait=false"])
                .env("KUBECONFIG", kubeconfig())
                .output();
        }
        let _ = Command::new(&k)
            .args(["delete", "node", &self.1, "--wait=false"])
            .env("KUBECONFIG", kubeconfig())
            .output();
    }
}

#[test]
#[ignore = "needs root and a local control plane: hack/suites/45-agent-kube.sh"]
fn a_namespace_over_its_share_leaves_the_other_namespaces_traced() {
    // The agent's share is 2 JVMs per namespace here (--max-jvms-per-namespace 2): namespace
    // "greedy" runs 3 injected JVMs, "quiet" 1, started after greedy's. Greedy gets 2 traced
    // and 1 refused (counted as namespace_share, with its reason in jvms_untraced); quiet's
    // JVM is traced though it came last.
    let tag = std::process::id();
    let (greedy, quiet) = (format!("jvmdiag-greedy-{tag}"), format!("jvmdiag-quiet-{tag}"));
    let node = format!("jvmdiag-share-node-{tag}");
    let top = format!("jvmdiag-share-{tag}");
    let work = std::env::temp_dir().join(format!("jvmdiag-kube-share-{tag}"));
    let _cleanup = NodeAndNamespaces::create(&work, &node, &[greedy.clone(), quiet.clone()]);

    let extra = ["--poll-interval-ms", "100", "--max-jvms-per-namespace", "2"];
    let (port, _agent) = start_synced_agent(&node, &kubeconfig(), &extra);

    let mut cgroups = Vec::new();
    let mut jvms = Vec::new();
    for (i, (ns, pod)) in [(&greedy, "g-0"), (&greedy, "g-1"), (&greedy, "g-2"), (&quiet, "q-0")]
        .into_iter()
        .enumerate()
    {
        let id = container_id(0x5a00 + i as u32);
        let uid = create_pod(ns, pod, &node, Some(("threads,safepoints", "app")));
        report_container(ns, pod, &id);
        let cg = Cgroup::new(&top, &uid, &id);
        let mut j = start_jvm(JDK17, &work, Some(&cg), 5);
        j.wait_idle();
        if ns == &greedy {
            // Greedy's JVMs are found first, one at a time.
            let n = i as f64 + 1.0;
            wait_for("greedy's JVM seen", Duration::from_secs(30), || {
                let t = scrape(port);
                let traced = t
                    .lines()
                    .filter(|l| {
                        l.starts_with("jvmdiag_jvm_info{")
                            && l.contains(&format!("namespace=\"{greedy}\""))
                    })
                    .count() as f64;
                traced
                    + value(
                        &t,
                        "jvmdiag_agent_attach_failures_total",
                        &["reason=\"namespace_share\""],
                    )
                    .unwrap_or(0.0)
                    >= n
            });
        }
        cgroups.push(cg);
        jvms.push(j);
    }
    wait_for("quiet's JVM traced", Duration::from_secs(30), || {
        scrape(port).contains(&format!("namespace=\"{quiet}\",pod=\"q-0\""))
    });
    let text = scrape(port);
    let info = |ns: &str| {
        text.lines()
            .filter(|l| {
                l.starts_with("jvmdiag_jvm_info{") && l.contains(&format!("namespace=\"{ns}\""))
            })
            .count()
    };
    assert_eq!(info(&greedy), 2, "greedy: 2 JVMs traced (its share)\n{text}");
    assert_eq!(info(&quiet), 1, "quiet: its JVM traced\n{text}");
    assert_eq!(
        value(&text, "jvmdiag_agent_attach_failures_total", &["reason=\"namespace_share\""]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "jvmdiag_agent_jvms_untraced", &["reason=\"namespace_share\""]),
        Some(1.0),
        "{text}"
    );
    // The refused JVM is named nowhere else: no series of its pod.
    let refused =
        ["g-0", "g-1", "g-2"].iter().filter(|p| !text.contains(&format!("pod=\"{p}\""))).count();
    assert_eq!(refused, 1, "{text}");
    drop(jvms);
    drop(cgroups);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
#[ignore = "needs root and a local control plane: hack/suites/45-agent-kube.sh"]
fn every_namespace_gets_a_slot_and_freed_slots_go_to_the_waiting() {
    // 8 slots (--max-jvms 8: the reserve is 1), 6 per namespace. Started one at a time, each
    // decided before the next: greedy's 7 JVMs (6 traced, the 7th refused namespace_share);
    // busy's 2 (the first traced, the second refused slots_reserved: only the reserve is free
    // and busy holds a slot); quiet's 1, traced though the others hold all but the reserve;
    // late's 1, refused slots_exhausted (all 8 held). Then: a greedy JVM exits, and late's
    // (its namespace holds none) gets the slot, not greedy's or busy's waiting JVM; a busy JVM
    // exits, and busy's waiting JVM gets it; quiet's exits, and greedy's waiting JVM does not
    // get it (greedy holds 5: the slot is the reserve). Each refusal is counted once.
    let tag = std::process::id();
    let names = ["greedy", "busy", "quiet", "late"];
    // Names of their own: the share test's namespaces of the same process may still be going.
    let ns: Vec<String> = names.iter().map(|n| format!("jvmdiag-slots-{n}-{tag}")).collect();
    let (greedy, busy, quiet, late) = (&ns[0], &ns[1], &ns[2], &ns[3]);
    let node = format!("jvmdiag-slots-node-{tag}");
    let top = format!("jvmdiag-slots-{tag}");
    let work = std::env::temp_dir().join(format!("jvmdiag-kube-slots-{tag}"));
    let _cleanup = NodeAndNamespaces::create(&work, &node, &ns);

    let extra = ["--poll-interval-ms", "100", "--max-jvms", "8", "--max-jvms-per-namespace", "6"];
    let (port, _agent) = start_synced_agent(&node, &kubeconfig(), &extra);

    const REASONS: [&str; 3] = ["namespace_share", "slots_reserved", "slots_exhausted"];
    let traced = |text: &str, ns: &str, pod: &str| {
        let labels = format!("namespace=\"{ns}\",pod=\"{pod}\"");
        text.lines().any(|l| l.starts_with("jvmdiag_jvm_info{") && l.contains(&labels))
    };
    // (attach failures, JVMs waiting) of a capacity reason.
    let refused = |text: &str, reason: &str| {
        let r = format!("reason=\"{reason}\"");
        (
            value(text, "jvmdiag_agent_attach_failures_total", &[&r]).unwrap_or(0.0) as u64,
            value(text, "jvmdiag_agent_jvms_untraced", &[&r]).unwrap_or(0.0) as u64,
        )
    };
    let decided = |text: &str| {
        let ours: usize = ns.iter().map(|n| count_of(text, n)).sum();
        ours as u64 + REASONS.iter().map(|r| refused(text, r).0).sum::<u64>()
    };

    let order: Vec<(&String, String)> = (0..7)
        .map(|i| (greedy, format!("g-{i}")))
        .chain((0..2).map(|i| (busy, format!("b-{i}"))))
        .chain([(quiet, "q-0".to_string()), (late, "l-0".to_string())])
        .collect();
    let mut cgroups = Vec::new();
    let mut jvms: HashMap<String, Jvm> = HashMap::new();
    for (i, (ns, pod)) in order.iter().enumerate() {
        let id = container_id(0x5b00 + i as u32);
        let uid = create_pod(ns, pod, &node, Some(("threads,safepoints", "app")));
        report_container(ns, pod, &id);
        let cg = Cgroup::new(&top, &uid, &id);
        let mut j = start_jvm(JDK17, &work, Some(&cg), 5);
        j.wait_idle();
        wait_for(&format!("{ns}/{pod} decided"), Duration::from_secs(30), || {
            decided(&scrape(port)) > i as u64
        });
        cgroups.push(cg);
        jvms.insert(pod.clone(), j);
    }
    let text = scrape(port);
    assert_eq!(
        [greedy, busy, quiet, late].map(|n| count_of(&text, n)),
        [6, 1, 1, 0],
        "traced per namespace\n{text}"
    );
    assert!(!traced(&text, greedy, "g-6") && !traced(&text, busy, "b-1"), "{text}");
    assert!(traced(&text, quiet, "q-0"), "quiet holds none: it takes the reserve\n{text}");
    for r in REASONS {
        assert_eq!(refused(&text, r), (1, 1), "{r}: (counted, waiting)\n{text}");
    }

    // A greedy JVM exits: the slot goes to late (its namespace holds none).
    drop(jvms.remove("g-0"));
    wait_for("late's JVM traced", Duration::from_secs(30), || traced(&scrape(port), late, "l-0"));
    let text = scrape(port);
    assert!(!traced(&text, greedy, "g-6") && !traced(&text, busy, "b-1"), "{text}");
    assert_eq!(
        REASONS.map(|r| refused(&text, r)),
        [(1, 1), (1, 1), (1, 0)],
        "counted once each; late's no longer waits\n{text}"
    );

    // A busy JVM exits: busy holds none now, its waiting JVM comes first.
    drop(jvms.remove("b-0"));
    wait_for("busy's second JVM traced", Duration::from_secs(30), || {
        traced(&scrape(port), busy, "b-1")
    });
    let text = scrape(port);
    assert!(!traced(&text, greedy, "g-6"), "{text}");
    assert_eq!(REASONS.map(|r| refused(&text, r)), [(1, 1), (1, 0), (1, 0)], "{text}");

    // Quiet's JVM exits: one slot free, the reserve; greedy (5 held) may not take it.
    drop(jvms.remove("q-0"));
    wait_for("quiet's JVM released", Duration::from_secs(30), || {
        !scrape(port).contains(&format!("namespace=\"{quiet}\""))
    });
    std::thread::sleep(Duration::from_secs(2)); // 20 polls
    let text = scrape(port);
    assert!(!traced(&text, greedy, "g-6"), "the reserve went to a namespace holding slots\n{text}");
    assert_eq!(count_of(&text, greedy), 5, "{text}");
    assert_eq!(REASONS.map(|r| refused(&text, r)), [(1, 1), (1, 0), (1, 0)], "{text}");
    drop(jvms);
    drop(cgroups);
    let _ = std::fs::remove_dir_all(&work);
}

/// JVMs of `ns` traced (their `jvmdiag_jvm_info` series).
fn count_of(text: &str, ns: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.starts_with("jvmdiag_jvm_info{") && l.contains(&format!("namespace=\"{ns}\""))
        })
        .count()
}
