//! No client of the agent's HTTP server can take what the others need, and many scrapers cost
//! one render: the real server (src/serve.rs) on loopback, real sockets, a stand-in mode that
//! counts its renders. Distinct peers are distinct loopback addresses (127.0.0.2 against
//! 127.0.0.1: loopback has the whole 127/8). No privileges needed.
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jvmdiag_agent::cli;
use jvmdiag_agent::serve::{self, Mode};

/// A page of counters and gauges (so the Prometheus text form differs from OpenMetrics), about
/// 200 KB, numbered by render.
struct Counting {
    renders: Arc<AtomicU64>,
    previous: Arc<Mutex<Vec<Option<Duration>>>>,
}

impl Mode for Counting {
    fn banner(&self) -> &'static str {
        "test"
    }
    fn poll(&mut self) {}
    fn scrape(&mut self, previous: Option<Duration>) -> String {
        let n = self.renders.fetch_add(1, Ordering::SeqCst) + 1;
        self.previous.lock().unwrap().push(previous);
        let mut page = String::from("# HELP test_renders Renders.\n# TYPE test_renders counter\n");
        page.push_str(&format!("test_renders_total {n}\n# TYPE filler gauge\n"));
        for i in 0..8000 {
            page.push_str(&format!("filler{{i=\"{i}\"}} 1\n"));
        }
        page.push_str("# EOF\n");
        page
    }
}

struct Agent {
    metrics: SocketAddr,
    probe: Option<SocketAddr>,
    renders: Arc<AtomicU64>,
    previous: Arc<Mutex<Vec<Option<Duration>>>>,
}

fn start(extra: &[&str]) -> Agent {
    let mut args = vec![
        "a",
        "--standalone",
        "--listen",
        "127.0.0.1:0",
        "--poll-interval-ms",
        "20",
        "--exit-after",
        "120",
    ];
    if extra.contains(&"--node-name") {
        args.retain(|a| *a != "--standalone");
    }
    args.extend_from_slice(extra);
    let cfg = cli::parse_from(args).unwrap();
    let listeners = serve::listen(&cfg).unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let probe = listeners.probe.as_ref().map(|p| p.local_addr().unwrap());
    let renders = Arc::new(AtomicU64::new(0));
    let previous = Arc::new(Mutex::new(Vec::new()));
    let mut mode = Counting { renders: renders.clone(), previous: previous.clone() };
    std::thread::spawn(move || serve::run(&cfg, listeners, &mut mode).unwrap());
    Agent { metrics, probe, renders, previous }
}

/// A connection from `src` (a loopback address) to `to`.
fn connect_from(src: &str, to: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::new(src.parse::<IpAddr>().unwrap(), 0)).unwrap();
        sock.connect(to).await.unwrap()
    });
    let s = s.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// One request on `s` (kept open: keep-alive); None when the server closed the connection
/// without an answer (a connection closed at accept).
fn request(s: &mut TcpStream, path: &str, headers: &[&str]) -> Option<Response> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: test\r\n");
    for h in headers {
        req.push_str(&format!("{h}\r\n"));
    }
    req.push_str("\r\n");
    // A refused connection may be reset before or after the request is written.
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8(buf).unwrap();
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse().unwrap())
        .expect("the server sends a Content-Length");
    let mut body = vec![0; len];
    s.read_exact(&mut body).ok()?;
    Some(Response { status, headers, body })
}

/// One request on a new connection from `src`.
fn get_from(src: &str, to: SocketAddr, path: &str, headers: &[&str]) -> Option<Response> {
    request(&mut connect_from(src, to), path, headers)
}

fn get(to: SocketAddr, path: &str, headers: &[&str]) -> Response {
    get_from("127.0.0.1", to, path, headers).expect("an answer")
}

/// The value of `jvmdiag_agent_http_connections_refused_total{listener,reason}` in a page.
fn refused(page: &str, listener: &str, reason: &str) -> u64 {
    let series = format!(
        "jvmdiag_agent_http_connections_refused_total{{listener=\"{listener}\",reason=\"{reason}\"}} "
    );
    let line = page.lines().find_map(|l| l.strip_prefix(&series));
    line.unwrap_or_else(|| panic!("no {series}in the page")).parse().unwrap()
}

/// `n` connections from `src` to `to`: those the server answers (held open, keep-alive), and
/// how many it closed at accept.
fn hold(src: &str, to: SocketAddr, n: usize) -> (Vec<TcpStream>, usize) {
    let mut held = Vec::new();
    let mut closed = 0;
    for _ in 0..n {
        let mut s = connect_from(src, to);
        match request(&mut s, "/healthz", &[]) {
            Some(r) => {
                assert_eq!(r.status, 200);
                held.push(s);
            }
            None => closed += 1,
        }
    }
    (held, closed)
}

#[test]
fn one_address_opening_64_connections_starves_neither_other_scrapers_nor_the_probes() {
    let a = start(&["--probe-listen", "127.0.0.1:0"]);
    let probe = a.probe.unwrap();
    // A pod opens as many connections as the whole listener allows; it keeps its share (8).
    let (held, closed) = hold("127.0.0.2", a.metrics, serve::MAX_CONNECTIONS);
    assert_eq!((held.len(), closed), (8, serve::MAX_CONNECTIONS - 8));
    let t0 = Instant::now();
    let page = get(a.metrics, "/metrics", &[]);
    assert_eq!(page.status, 200, "another address's scrape");
    assert_eq!(get(probe, "/healthz", &[]).status, 200, "the probe listener");
    assert_eq!(get(a.metrics, "/healthz", &[]).status, 200, "/healthz on --listen too");
    assert!(t0.elapsed() < Duration::from_secs(4), "answered in {:?}", t0.elapsed());
    assert_eq!(refused(&page.text(), "metrics", "per_peer"), 56);
    assert_eq!(refused(&page.text(), "metrics", "total"), 0);
    assert_eq!(refused(&page.text(), "probe", "total"), 0);
    assert_eq!(get(probe, "/metrics", &[]).status, 404, "the probe listener serves /healthz only");
    drop(held);
}

#[test]
fn with_every_connection_of_the_listener_held_the_probe_listener_still_answers() {
    // What one pod could do before per-peer limits, or several pods together now.
    let a = start(&["--probe-listen", "127.0.0.1:0", "--max-connections-per-peer", "64"]);
    let probe = a.probe.unwrap();
    let (held, closed) = hold("127.0.0.2", a.metrics, serve::MAX_CONNECTIONS);
    assert_eq!((held.len(), closed), (serve::MAX_CONNECTIONS, 0));
    assert!(
        get_from("127.0.0.1", a.metrics, "/healthz", &[]).is_none(),
        "--listen is full: a new connection is closed at accept"
    );
    for _ in 0..3 {
        let t0 = Instant::now();
        assert_eq!(get(probe, "/healthz", &[]).status, 200, "the kubelet's probe");
        assert!(t0.elapsed() < Duration::from_secs(2), "answered in {:?}", t0.elapsed());
    }
    // The probe listener has slots per address too: the pod cannot fill it either.
    let (held_probe, closed_probe) = hold("127.0.0.2", probe, 10);
    assert_eq!((held_probe.len(), closed_probe), (serve::PROBE_MAX_PER_PEER, 6));
    assert_eq!(get(probe, "/healthz", &[]).status, 200, "another address on the probe listener");
    drop((held, held_probe));
    let page = retry_until_answered(a.metrics);
    assert!(refused(&page, "metrics", "total") >= 1, "the connection closed at accept");
    assert_eq!(refused(&page, "probe", "per_peer"), 6);
}

/// A scrape once the held connections' slots are released (the server sees them close).
fn retry_until_answered(to: SocketAddr) -> String {
    let t0 = Instant::now();
    loop {
        if let Some(r) = get_from("127.0.0.1", to, "/metrics", &[]) {
            assert_eq!(r.status, 200);
            return r.text();
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "slots never released");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_ninth_connection_from_one_address_is_closed_at_accept_and_counted() {
    let a = start(&[]);
    let (mut held, closed) = hold("127.0.0.2", a.metrics, 8);
    assert_eq!((held.len(), closed), (8, 0), "eight from one address are served");
    assert!(get_from("127.0.0.2", a.metrics, "/healthz", &[]).is_none(), "the ninth is closed");
    assert_eq!(get(a.metrics, "/healthz", &[]).status, 200, "another address is served");
    // The held connections were served and still are.
    assert_eq!(request(&mut held[0], "/healthz", &[]).map(|r| r.status), Some(200));
    // One of the eight closes: its slot is the address's again.
    drop(held.pop());
    let t0 = Instant::now();
    while get_from("127.0.0.2", a.metrics, "/healthz", &[]).is_none() {
        assert!(t0.elapsed() < Duration::from_secs(3), "the slot was never released");
        std::thread::sleep(Duration::from_millis(20));
    }
    let page = get(a.metrics, "/metrics", &[]).text();
    // The ninth, and any retry above before the server saw the eighth close.
    assert!(refused(&page, "metrics", "per_peer") >= 1);
    assert!(!page.contains("listener=\"probe\""), "no probe listener, no probe series");
}

#[test]
fn twenty_scrapes_within_a_second_render_once() {
    let a = start(&[]);
    let t0 = Instant::now();
    let pages: Vec<String> = (0..20)
        .map(|i| {
            // Both formats: forms of one snapshot.
            let accept = ["Accept: application/openmetrics-text; version=1.0.0", "Accept: */*"];
            let r = get(a.metrics, "/metrics", &[accept[i % 2]]);
            assert_eq!(r.status, 200);
            r.text()
        })
        .collect();
    let took = t0.elapsed();
    let renders = a.renders.load(Ordering::SeqCst);
    // Within a second: one render. A machine so loaded that 20 loopback requests take longer
    // may render once more per second taken, never once per scrape.
    assert!(
        renders >= 1 && renders <= 1 + took.as_secs(),
        "{renders} renders for 20 scrapes in {took:?}"
    );
    if renders == 1 {
        assert!(pages.iter().all(|p| p.contains("test_renders_total 1\n")), "one snapshot");
    }
    std::thread::sleep(serve::FRESH + Duration::from_millis(100));
    let page = get(a.metrics, "/metrics", &[]).text();
    assert_eq!(a.renders.load(Ordering::SeqCst), renders + 1, "a stale snapshot is rendered anew");
    assert!(page.contains(&format!("test_renders_total {}\n", renders + 1)));
    let previous = a.previous.lock().unwrap().clone();
    assert_eq!(previous.first(), Some(&None), "the first render has no previous duration");
    assert!(previous[1..].iter().all(Option::is_some), "each later render has its predecessor's");
}

#[test]
fn a_gzip_scrape_decodes_to_the_same_text_as_a_plain_one() {
    let a = start(&[]);
    for accept in ["Accept: application/openmetrics-text; version=1.0.0", "Accept: text/plain"] {
        // Both within one snapshot (retried if a render fell between them).
        let mut tries = 0;
        let (plain, zipped) = loop {
            tries += 1;
            assert!(tries <= 10, "a render between every two scrapes");
            let plain = get(a.metrics, "/metrics", &[accept]);
            let rendered = a.renders.load(Ordering::SeqCst);
            let zipped = get(a.metrics, "/metrics", &[accept, "Accept-Encoding: gzip"]);
            if a.renders.load(Ordering::SeqCst) == rendered {
                break (plain, zipped);
            }
        };
        assert_eq!((plain.status, zipped.status), (200, 200));
        assert_eq!(plain.header("content-encoding"), None);
        assert_eq!(zipped.header("content-encoding"), Some("gzip"));
        for r in [&plain, &zipped] {
            assert_eq!(
                r.header("vary").map(str::to_ascii_lowercase).as_deref(),
                Some("accept-encoding")
            );
        }
        assert_eq!(zipped.header("content-type"), plain.header("content-type"));
        assert!(
            zipped.body.len() * 5 < plain.body.len(),
            "{} vs {}",
            zipped.body.len(),
            plain.body.len()
        );
        let mut text = String::new();
        flate2::read::GzDecoder::new(&zipped.body[..]).read_to_string(&mut text).unwrap();
        assert_eq!(text, plain.text(), "{accept}");
        // The loop adds what the binary was built from to every page, before its end.
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            text.contains(&format!(
                "\njvmdiag_agent_build_info{{version=\"{version}\",revision=\""
            )) && text.contains("# TYPE jvmdiag_agent_build_info gauge\n"),
            "{accept}: no jvmdiag_agent_build_info in the gzipped page"
        );
    }
    for refused in
        ["Accept-Encoding: gzip;q=0", "Accept-Encoding: br", "Accept-Encoding: gzip;q=0, *"]
    {
        let r = get(a.metrics, "/metrics", &[refused]);
        assert_eq!(r.header("content-encoding"), None, "{refused}");
        assert!(r.text().contains("\nfiller{i=\"7999\"} 1\n"), "{refused}: plain text");
    }
    let r = get(a.metrics, "/metrics", &["Accept-Encoding: br;q=1, *;q=0.5"]);
    assert_eq!(r.header("content-encoding"), Some("gzip"), "* takes gzip");
}

#[test]
fn with_kubernetes_auth_metrics_needs_a_token_and_healthz_does_not() {
    // An API server that is not there: no token is a 401 without asking it; a token it cannot
    // review is a 503, asked again each time (not cached); nothing is rendered for either.
    let dir = std::env::temp_dir().join(format!("serve-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\n\
         users: [{name: u, user: {token: agent}}]\n\
         contexts: [{name: c, context: {cluster: c, user: u}}]\n",
    )
    .unwrap();
    let a = start(&[
        "--node-name",
        "n1",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--metrics-auth",
        "kubernetes",
        "--probe-listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(get(a.metrics, "/healthz", &[]).status, 200);
    assert_eq!(get(a.probe.unwrap(), "/healthz", &[]).status, 200);
    for h in [&[][..], &["Authorization: Basic dTpw"], &["Authorization: Bearer"]] {
        let r = get(a.metrics, "/metrics", h);
        assert_eq!(r.status, 401, "{h:?}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer realm=\"jvmdiag-agent\""));
    }
    for _ in 0..2 {
        let r = get(a.metrics, "/metrics", &["Authorization: Bearer abc.def"]);
        assert_eq!(r.status, 503, "the API did not review it: {}", r.text());
    }
    assert_eq!(a.renders.load(Ordering::SeqCst), 0, "nothing rendered for a refused request");
    std::fs::remove_dir_all(&dir).unwrap();
}
