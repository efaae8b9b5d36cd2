//! The one main loop of both modes, and the HTTP server beside it.
//!
//! The loop (the calling thread) polls on a timer and renders `/metrics` when asked: a poll
//! and a scrape never run at the same time, so a mode's state needs no lock. HTTP is served
//! by hyper on a thread of its own (a current-thread tokio runtime): every connection is its
//! own task, so a client that connects and never sends, sends half a request, or never reads
//! its response stalls neither the loop nor other scrapes nor `/healthz`.
//!
//! **Snapshots.** The loop renders a page at most once per [`FRESH`], however many scrapers
//! ask: a scrape within [`FRESH`] of the end of the last render gets that render's
//! [`Snapshot`] (the loop drops it once stale, so no page is held between scrapes). The page
//! reports the duration of the render before it (`jvmdiag_agent_scrape_duration_seconds`).
//! A snapshot is never copied: the Prometheus text form is sent as slices of it with the few
//! lines that differ ([`exposition::prometheus_text_chunks`]), made once per snapshot; the
//! gzip forms (for a request whose Accept-Encoding takes gzip, [`accepts_gzip`]) are
//! compressed once per snapshot and form, on tokio's blocking pool rather than the HTTP
//! thread, and shared by every scraper of that snapshot.
//!
//! **Listeners and their bounds.** Any pod of the node can connect, so no client may take
//! what the others need:
//!
//! - `--listen` serves `/metrics`, `/healthz` and `/`, at most [`MAX_CONNECTIONS`] connections
//!   at once and `--max-connections-per-peer` of them from one peer address;
//! - `--probe-listen` (optional) serves only `/healthz`, with slots of its own
//!   ([`PROBE_MAX_CONNECTIONS`], [`PROBE_MAX_PER_PEER`] per address): clients holding every
//!   slot of `--listen` cannot fail the kubelet's probes;
//! - a connection over a cap is closed at accept and counted by listener and reason
//!   (`jvmdiag_agent_http_connections_refused_total`, which the loop adds to every page);
//! - request headers within [`HEADER_TIMEOUT`] (hyper's `header_read_timeout`), a whole
//!   connection at most [`CONNECTION_TIMEOUT`] (so a response nobody reads is dropped;
//!   keep-alive scrapers just reconnect), a snapshot within [`RENDER_TIMEOUT`], else 503.
//!
//! Every page of either mode also has `jvmdiag_agent_build_info` (what the binary was built
//! from), added by the loop like the refusal counters.
//!
//! `/metrics` may need a Kubernetes bearer token (`--metrics-auth kubernetes`, src/auth.rs),
//! checked before the loop is asked for anything. `/healthz` never does: it is 200 while the
//! loop has turned within [`LOOP_STALE`], else 503 (a wedged loop fails the liveness probe).
//! Both listeners are served by the one HTTP thread, so a wedged HTTP thread fails it too.
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Bytes, Frame, SizeHint};
use hyper::header;

use crate::auth::{self, Authorizer};
use crate::cli::Config;
use crate::exposition;
use crate::metrics;
use crate::model::Value;
use crate::preflight::Fatal;
use crate::report;
use crate::slots::{Refusal, Slots};
pub use crate::slots::{MAX_CONNECTIONS, PROBE_MAX_CONNECTIONS, PROBE_MAX_PER_PEER};

pub trait Mode {
    /// What `/` answers before the endpoint list.
    fn banner(&self) -> &'static str;
    /// Called every `--poll-interval-ms`: look for new and exited JVMs, read what must not
    /// be missed between scrapes.
    fn poll(&mut self);
    /// The whole /metrics page (OpenMetrics text); `previous` is how long the previous
    /// render took (`jvmdiag_agent_scrape_duration_seconds`).
    fn scrape(&mut self, previous: Option<Duration>) -> String;
    /// The culprit stacks of the page `scrape` just rendered (`/stacks`).
    fn stacks(&mut self) -> crate::stacks::Page {
        Default::default()
    }
}

pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
pub const RENDER_TIMEOUT: Duration = Duration::from_secs(10);
pub const LOOP_STALE: Duration = Duration::from_secs(15);
/// A page rendered this recently is served again rather than rendered anew.
pub const FRESH: Duration = Duration::from_secs(1);

/// The bound sockets: `--listen` and, if given, `--probe-listen`.
#[derive(Debug)]
pub struct Listeners {
    pub metrics: TcpListener,
    pub probe: Option<TcpListener>,
}

/// Listens on `--listen` and `--probe-listen` (an error names the flag).
pub fn listen(cfg: &Config) -> Result<Listeners, Fatal> {
    let metrics = bind(cfg.cli.listen, "--listen")?;
    let probe = cfg.cli.probe_listen.map(|a| bind(a, "--probe-listen")).transpose()?;
    Ok(Listeners { metrics, probe })
}

fn bind(addr: SocketAddr, flag: &str) -> Result<TcpListener, Fatal> {
    TcpListener::bind(addr).map_err(|e| {
        Fatal(format!("cannot listen on {addr} ({e}): choose a free address with {flag}"))
    })
}

/// One rendered page and the forms it is sent in, each made at most once.
pub struct Snapshot {
    /// The OpenMetrics page as rendered.
    om: Bytes,
    /// The Prometheus text form: slices of `om` and the lines that differ.
    prom: OnceLock<Vec<Bytes>>,
    /// gzip of each form (None: compression failed; sent uncompressed).
    gzip_om: tokio::sync::OnceCell<Option<Bytes>>,
    gzip_prom: tokio::sync::OnceCell<Option<Bytes>>,
    /// The culprit stacks of the same render (`/stacks`).
    stacks: crate::stacks::Page,
}

impl Snapshot {
    fn new(om: Bytes) -> Snapshot {
        Snapshot {
            stacks: Default::default(),
            om,
            prom: OnceLock::new(),
            gzip_om: tokio::sync::OnceCell::new(),
            gzip_prom: tokio::sync::OnceCell::new(),
        }
    }

    /// The page in the content type `ct` ([`exposition::negotiate`]), as chunks.
    fn chunks(&self, ct: &str) -> Vec<Bytes> {
        if ct == exposition::PROMETHEUS_TEXT {
            self.prom.get_or_init(|| exposition::prometheus_text_chunks(&self.om)).clone()
        } else {
            vec![self.om.clone()]
        }
    }

    /// The page in `ct`, gzipped: the first scraper to ask compresses it off the HTTP thread,
    /// the others wait for that and share it.
    async fn gzipped(&self, ct: &str) -> Option<Bytes> {
        let cell = if ct == exposition::PROMETHEUS_TEXT { &self.gzip_prom } else { &self.gzip_om };
        cell.get_or_init(|| async {
            let parts = self.chunks(ct);
            tokio::task::spawn_blocking(move || gzip(&parts)).await.ok()
        })
        .await
        .clone()
    }
}

/// `parts` as one gzip stream. Fastest level: a page of repeated metric names compresses
/// about tenfold even so, and its time is the scrape's.
pub fn gzip(parts: &[Bytes]) -> Bytes {
    let len: usize = parts.iter().map(Bytes::len).sum();
    let mut z = flate2::write::GzEncoder::new(
        Vec::with_capacity(len / 8 + 64),
        flate2::Compression::fast(),
    );
    for p in parts {
        z.write_all(p).expect("writing to a Vec cannot fail");
    }
    Bytes::from(z.finish().expect("writing to a Vec cannot fail"))
}

/// Whether a request's `Accept-Encoding` values (RFC 9110 §12.5.3) take gzip: `gzip` (or
/// `x-gzip`) with a weight above 0, else `*` with a weight above 0. An explicit `gzip;q=0`
/// refuses it even beside `*`; a weight that is not a qvalue counts as 0; no header, or only
/// other codings, means no gzip.
pub fn accepts_gzip<'a>(values: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut gzip, mut any): (Option<bool>, Option<bool>) = (None, None);
    for item in values.into_iter().flat_map(|v| v.split(',')) {
        let mut params = item.split(';');
        let coding = params.next().unwrap_or("").trim();
        let weight = params.find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim().eq_ignore_ascii_case("q").then(|| v.trim())
        });
        let takes = weight.is_none_or(qvalue_above_zero);
        let slot = if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            &mut gzip
        } else if coding == "*" {
            &mut any
        } else {
            continue;
        };
        *slot = Some(slot.unwrap_or(false) || takes);
    }
    gzip.or(any).unwrap_or(false)
}

/// A qvalue (`0`, `0.5`, `1.000`: "0" or "1", then a dot and at most three digits) above 0.
fn qvalue_above_zero(v: &str) -> bool {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    match int {
        "1" => frac.bytes().all(|b| b == b'0'),
        "0" => frac.bytes().any(|b| b != b'0'),
        _ => false,
    }
}

/// Which listener a connection came in on (the `listener` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listener {
    /// `--listen`: `/metrics`, `/healthz`, `/`.
    Metrics,
    /// `--probe-listen`: `/healthz` only.
    Probe,
}

impl Listener {
    fn as_str(self) -> &'static str {
        match self {
            Listener::Metrics => "metrics",
            Listener::Probe => "probe",
        }
    }
}

/// Connections closed at accept, by listener and reason.
#[derive(Debug, Default)]
struct Refused {
    metrics_per_peer: AtomicU64,
    metrics_total: AtomicU64,
    probe_per_peer: AtomicU64,
    probe_total: AtomicU64,
}

impl Refused {
    fn counter(&self, l: Listener, r: Refusal) -> &AtomicU64 {
        match (l, r) {
            (Listener::Metrics, Refusal::PerPeer) => &self.metrics_per_peer,
            (Listener::Metrics, Refusal::Total) => &self.metrics_total,
            (Listener::Probe, Refusal::PerPeer) => &self.probe_per_peer,
            (Listener::Probe, Refusal::Total) => &self.probe_total,
        }
    }

    /// Counts one; the new count.
    fn add(&self, l: Listener, r: Refusal) -> u64 {
        self.counter(l, r).fetch_add(1, Ordering::Relaxed) + 1
    }

    /// `jvmdiag_agent_http_connections_refused_total`, rendered (with its `# EOF`); the probe
    /// listener's series only when there is one.
    fn rendered(&self, probe: bool) -> String {
        let mut f = metrics::AGENT_HTTP_CONNECTIONS_REFUSED.family();
        let listeners: &[Listener] =
            if probe { &[Listener::Metrics, Listener::Probe] } else { &[Listener::Metrics] };
        for &l in listeners {
            for r in [Refusal::PerPeer, Refusal::Total] {
                f.agent(
                    vec![("listener", l.as_str().into()), ("reason", r.as_str().into())],
                    Value::Counter(self.counter(l, r).load(Ordering::Relaxed)),
                );
            }
        }
        exposition::render(vec![f], &HashMap::new())
    }
}

/// `jvmdiag_agent_build_info` of this binary, rendered (with its `# EOF`).
fn build_info_rendered() -> String {
    exposition::render(vec![report::build_info_family(&report::BUILD)], &HashMap::new())
}

/// `page` (OpenMetrics text) with the families of `more` (rendered, with its own `# EOF`)
/// before its `# EOF`. Appending moves only the `# EOF` line, never the page.
fn add_families(page: &mut String, more: &str) {
    const EOF: &str = "# EOF\n";
    let more = more.strip_suffix(EOF).unwrap_or(more);
    match page.strip_suffix(EOF).map(str::len) {
        Some(at) => page.insert_str(at, more),
        None => page.push_str(more),
    }
}

/// A scrape waiting for the loop's next snapshot.
type Reply = tokio::sync::oneshot::Sender<Arc<Snapshot>>;

/// What the HTTP thread shares with the loop.
struct Shared {
    started: Instant,
    /// Milliseconds since `started` at the loop's last turn.
    alive_ms: AtomicU64,
    scrapes: mpsc::Sender<Reply>,
    banner: &'static str,
    /// The last snapshot and when its render ended, while it is fresh.
    latest: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    refused: Refused,
    /// `--probe-listen` is given.
    probe: bool,
    /// `--metrics-auth kubernetes`.
    auth: Option<Authorizer>,
    /// `jvmdiag_agent_build_info`, rendered once (with its `# EOF`).
    build_info: String,
}

impl Shared {
    fn loop_alive(&self) -> bool {
        let last = Duration::from_millis(self.alive_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last) < LOOP_STALE
    }

    /// The latest snapshot if it is fresh; a stale one is dropped (its page freed once the
    /// responses still sending it are done).
    fn fresh(&self) -> Option<Arc<Snapshot>> {
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        match latest.as_ref() {
            Some((at, s)) if at.elapsed() < FRESH => Some(s.clone()),
            Some(_) => {
                *latest = None;
                None
            }
            None => None,
        }
    }
}

/// Runs `mode` until killed (or `--exit-after`).
pub fn run(cfg: &Config, listeners: Listeners, mode: &mut dyn Mode) -> Result<(), Fatal> {
    let (tx, rx) = mpsc::channel::<Reply>();
    let shared = Arc::new(Shared {
        started: Instant::now(),
        alive_ms: AtomicU64::new(0),
        scrapes: tx,
        banner: mode.banner(),
        latest: Mutex::new(None),
        refused: Refused::default(),
        probe: listeners.probe.is_some(),
        auth: Authorizer::from_config(cfg)?,
        build_info: build_info_rendered(),
    });
    let per_peer = cfg.cli.max_connections_per_peer as usize;
    spawn_http(listeners, shared.clone(), per_peer)?;
    let started = Instant::now();
    let mut next_poll = Instant::now();
    let mut last_render: Option<Duration> = None;
    loop {
        let now = Instant::now();
        shared.alive_ms.store(shared.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        if cfg.cli.exit_after > 0 && now.duration_since(started).as_secs() >= cfg.cli.exit_after {
            return Ok(());
        }
        if now >= next_poll {
            mode.poll();
            next_poll = now + cfg.poll_interval();
        }
        let _ = shared.fresh(); // drops a stale page between scrapes
        match rx.recv_timeout(next_poll.saturating_duration_since(Instant::now())) {
            Ok(first) => {
                // Every scrape that asked meanwhile shares this snapshot, and so does every
                // scrape until it is stale.
                let mut waiting = vec![first];
                waiting.extend(rx.try_iter());
                let snap = match shared.fresh() {
                    Some(s) => s,
                    None => {
                        let t0 = Instant::now();
                        let mut page = mode.scrape(last_render);
                        add_families(&mut page, &shared.refused.rendered(shared.probe));
                        add_families(&mut page, &shared.build_info);
                        let mut snap = Snapshot::new(Bytes::from(page));
                        snap.stacks = mode.stacks();
                        let snap = Arc::new(snap);
                        last_render = Some(t0.elapsed());
                        let mut latest = shared.latest.lock().unwrap_or_else(|e| e.into_inner());
                        *latest = Some((Instant::now(), snap.clone()));
                        snap
                    }
                };
                for w in waiting {
                    let _ = w.send(snap.clone()); // the client may have given up
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Fatal("the HTTP server thread stopped".into()))
            }
        }
    }
}

fn spawn_http(listeners: Listeners, shared: Arc<Shared>, per_peer: usize) -> Result<(), Fatal> {
    let Listeners { metrics, probe } = listeners;
    metrics.set_nonblocking(true).map_err(|e| Fatal(format!("--listen socket: {e}")))?;
    if let Some(p) = &probe {
        p.set_nonblocking(true).map_err(|e| Fatal(format!("--probe-listen socket: {e}")))?;
        if let Ok(a) = p.local_addr() {
            tracing::info!("serving http://{a}/healthz for probes (--probe-listen)");
        }
    }
    if shared.auth.is_some() {
        tracing::info!(
            "/metrics needs a bearer token allowed to get /metrics (--metrics-auth kubernetes)"
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // gzip of a snapshot, the API client's name lookups.
        .max_blocking_threads(4)
        .build()
        .map_err(|e| Fatal(format!("HTTP server runtime: {e}")))?;
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || {
            rt.block_on(async move {
                if let Some(p) = probe {
                    let slots = Slots::new(PROBE_MAX_CONNECTIONS, PROBE_MAX_PER_PEER);
                    tokio::spawn(accept_loop(p, shared.clone(), Listener::Probe, slots));
                }
                let slots = Slots::new(MAX_CONNECTIONS, per_peer);
                accept_loop(metrics, shared, Listener::Metrics, slots).await
            })
        })
        .map_err(|e| Fatal(format!("HTTP server thread: {e}")))?;
    Ok(())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, which: Listener, slots: Slots) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!("HTTP server ({} listener): {e}", which.as_str()),
    };
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                tracing::warn!("HTTP accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match slots.admit(peer.ip()) {
            Ok(s) => s,
            Err(why) => {
                let refused = shared.refused.add(which, why);
                if refused.is_power_of_two() {
                    tracing::warn!(
                        listener = which.as_str(),
                        reason = why.as_str(),
                        refused,
                        %peer,
                        "HTTP: connection closed at accept (per_peer: its address holds its share of connections; total: every slot is taken)"
                    );
                }
                continue; // dropping the stream closes it
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::task::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(req, &shared, which, peer.ip()).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            drop(slot);
        });
    }
}

/// A response body sent as it is held: one or more chunks, none of them copied.
struct Body(VecDeque<Bytes>);

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

const PLAIN: &str = "text/plain; charset=utf-8";

fn text(status: u16, body: String) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, PLAIN)
        .body(Body(VecDeque::from([Bytes::from(body)])))
        .expect("a valid static response")
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    shared: &Shared,
    which: Listener,
    peer: IpAddr,
) -> hyper::Response<Body> {
    match (which, req.uri().path()) {
        (_, "/healthz") if shared.loop_alive() => text(200, "ok\n".into()),
        (_, "/healthz") => {
            text(503, format!("the collection loop has not run for {}s\n", LOOP_STALE.as_secs()))
        }
        (Listener::Metrics, "/metrics") => metrics_page(&req, shared, peer).await,
        (Listener::Metrics, "/stacks") => stacks_page(&req, shared, peer).await,
        (Listener::Metrics, "/") => {
            text(200, format!("{}: /metrics /stacks /healthz\n", shared.banner))
        }
        _ => text(404, "not found\n".into()),
    }
}

async fn metrics_page(
    req: &hyper::Request<hyper::body::Incoming>,
    shared: &Shared,
    peer: IpAddr,
) -> hyper::Response<Body> {
    let headers = req.headers();
    if let Some(a) = &shared.auth {
        let given = headers.get_all(header::AUTHORIZATION).iter().map(|v| v.as_bytes());
        if let Some(refused) = refusal(a.check(peer, given).await) {
            return refused;
        }
    }
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let ct = exposition::negotiate(accept);
    let gzip = accepts_gzip(
        headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()),
    );
    let Some(snap) = snapshot(shared).await else {
        return text(503, "the collection loop did not answer in time\n".into());
    };
    let mut r = hyper::Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, ct)
        .header(header::VARY, "accept-encoding");
    let zipped = if gzip { snap.gzipped(ct).await } else { None };
    let body = match zipped {
        Some(z) => {
            r = r.header(header::CONTENT_ENCODING, "gzip");
            vec![z]
        }
        None => snap.chunks(ct),
    };
    r.body(Body(body.into())).expect("a valid response")
}

/// `/stacks`: the snapshot's culprit stacks in the collapsed format, filtered by the query
/// (`namespace`, `pod`, `kind`, `pid`); the same authorization as `/metrics`.
async fn stacks_page(
    req: &hyper::Request<hyper::body::Incoming>,
    shared: &Shared,
    peer: IpAddr,
) -> hyper::Response<Body> {
    if let Some(a) = &shared.auth {
        let given = req.headers().get_all(header::AUTHORIZATION).iter().map(|v| v.as_bytes());
        if let Some(refused) = refusal(a.check(peer, given).await) {
            return refused;
        }
    }
    let query = match crate::stacks::Query::parse(req.uri().query()) {
        Ok(q) => q,
        Err(why) => return text(400, format!("{why}\n")),
    };
    let Some(snap) = snapshot(shared).await else {
        return text(503, "the collection loop did not answer in time\n".into());
    };
    let page = &snap.stacks;
    let base = query.seconds.and_then(|n| page.baseline(n));
    let mut body = String::new();
    for s in page.lines.iter().filter(|s| query.wants(s)) {
        let n = match base {
            Some((_, then)) => s.count.saturating_sub(then.get(&s.key).copied().unwrap_or(0)),
            None => s.count,
        };
        if n > 0 {
            body.push_str(&format!("{} {n}\n", s.text));
        }
    }
    let mut r = text(200, body);
    if query.seconds.is_some() {
        // The window the counts cover: the kept counts nearest `seconds` ago (every 10 s for 10
        // minutes), or since the JVM was traced when none are kept yet.
        let window = base.map_or("all".to_string(), |(age, _)| age.as_secs().max(1).to_string());
        if let Ok(v) = header::HeaderValue::from_str(&window) {
            r.headers_mut().insert("x-window-seconds", v);
        }
    }
    r
}

/// The answer to a request `--metrics-auth` refuses (None: allowed).
fn refusal(outcome: auth::Outcome) -> Option<hyper::Response<Body>> {
    let (status, why) = match outcome {
        auth::Outcome::Allowed => return None,
        auth::Outcome::Unauthenticated => {
            (401, "unauthorized: send a bearer token the Kubernetes API authenticates")
        }
        auth::Outcome::Forbidden => (403, "forbidden: the token's user may not get /metrics"),
        auth::Outcome::Busy => (429, "too many token reviews in flight from this address"),
        auth::Outcome::Unavailable => (503, "the Kubernetes API did not review the token"),
    };
    let mut r = text(status, format!("{why}\n"));
    if status == 401 {
        // RFC 6750: what a client without a (valid) token should send.
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"jvmdiag-agent\""),
        );
    }
    Some(r)
}

/// The fresh snapshot, or the one the loop renders next (None: the loop is gone or did not
/// answer within [`RENDER_TIMEOUT`]).
async fn snapshot(shared: &Shared) -> Option<Arc<Snapshot>> {
    if let Some(s) = shared.fresh() {
        return Some(s);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    shared.scrapes.send(tx).ok()?;
    tokio::time::timeout(RENDER_TIMEOUT, rx).await.ok()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_taken_when_accept_encoding_weighs_it_above_zero() {
        let takes = |v: &[&str]| accepts_gzip(v.iter().copied());
        // What Prometheus and curl --compressed send.
        assert!(takes(&["gzip"]));
        assert!(takes(&["deflate, gzip"]));
        assert!(takes(&["gzip, deflate, br, zstd"]));
        assert!(takes(&["GZip;Q=0.5"]));
        assert!(takes(&["x-gzip"]));
        assert!(takes(&["gzip ; q=1.000"]));
        assert!(takes(&["gzip;q=0.001"]));
        assert!(takes(&["*"]));
        assert!(takes(&["identity;q=1, *;q=0.1"]));
        assert!(takes(&["br", "gzip"]), "several headers are one list");
        // Not taken.
        assert!(!takes(&[]), "no header: identity");
        assert!(!takes(&[""]));
        assert!(!takes(&["identity"]));
        assert!(!takes(&["br, deflate"]));
        assert!(!takes(&["gzip;q=0"]));
        assert!(!takes(&["gzip;q=0.000"]));
        assert!(!takes(&["gzip;q=0, *"]), "an explicit refusal beats *");
        assert!(!takes(&["*;q=0"]));
        assert!(!takes(&["gzips"]));
        // Weights that are not qvalues count as 0.
        for q in ["1.5", "2", "-1", "0.0001", "abc", "", "1.01", "+1", "inf", "0,5"] {
            assert!(!takes(&[&format!("gzip;q={q}")]), "q={q}");
        }
        assert!(takes(&["gzip;level=9"]), "other parameters are not weights");
    }

    #[test]
    fn a_gzipped_page_decodes_to_the_chunks_it_was_made_of() {
        use std::io::Read;
        let parts = vec![Bytes::from("# TYPE a gauge\n"), Bytes::from("a 1\n".repeat(1000))];
        let z = gzip(&parts);
        assert!(z.len() < 200, "repetition compresses: {} bytes", z.len());
        let mut out = String::new();
        flate2::read::GzDecoder::new(&z[..]).read_to_string(&mut out).unwrap();
        assert_eq!(out.as_bytes(), parts.concat());
    }

    #[test]
    fn build_info_is_one_gauge_of_1_naming_version_revision_and_rustc() {
        let b = report::BuildInfo { version: "0.1.0", revision: "abc123", rustversion: "1.89.0" };
        let page = exposition::render(vec![report::build_info_family(&b)], &HashMap::new());
        assert!(page.contains("# TYPE jvmdiag_agent_build_info gauge\n"), "{page}");
        assert!(
            page.contains(
                "\njvmdiag_agent_build_info{version=\"0.1.0\",revision=\"abc123\",rustversion=\"1.89.0\"} 1.0\n"
            ),
            "{page}"
        );
        // This binary's: Cargo's version, a commit (or "unknown"), rustc's version.
        let own = build_info_rendered();
        assert!(own.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))), "{own}");
        let revision = report::BUILD.revision;
        assert!(
            revision == "unknown"
                || (revision.len() >= 7 && revision.chars().all(|c| c.is_ascii_hexdigit())),
            "{revision}"
        );
        assert!(report::BUILD.rustversion.starts_with("1."), "{}", report::BUILD.rustversion);
        let mut with = "# TYPE x gauge\nx 1\n# EOF\n".to_string();
        add_families(&mut with, &own);
        assert!(with.ends_with("} 1.0\n# EOF\n") && with.matches("# EOF").count() == 1, "{with}");
    }

    #[test]
    fn the_servers_families_go_before_the_pages_eof() {
        let refused = Refused::default();
        refused.add(Listener::Metrics, Refusal::PerPeer);
        refused.add(Listener::Metrics, Refusal::PerPeer);
        refused.add(Listener::Probe, Refusal::Total);
        let mut page = "# TYPE x gauge\nx 1\n# EOF\n".to_string();
        add_families(&mut page, &refused.rendered(true));
        let name = "jvmdiag_agent_http_connections_refused_total";
        assert!(
            page.starts_with("# TYPE x gauge\nx 1\n# HELP jvmdiag_agent_http_connections_refused ")
        );
        assert!(page.ends_with("\n# EOF\n") && page.matches("# EOF").count() == 1, "{page}");
        for (labels, n) in [
            ("listener=\"metrics\",reason=\"per_peer\"", 2),
            ("listener=\"metrics\",reason=\"total\"", 0),
            ("listener=\"probe\",reason=\"per_peer\"", 0),
            ("listener=\"probe\",reason=\"total\"", 1),
        ] {
            assert!(page.contains(&format!("{name}{{{labels}}} {n}\n")), "{labels} {n}:\n{page}");
        }
        let without_probe = refused.rendered(false);
        assert!(!without_probe.contains("listener=\"probe\""), "{without_probe}");
        assert_eq!(without_probe.matches(name).count(), 2, "{without_probe}");
    }
}
