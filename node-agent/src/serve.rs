//! The one main loop of both modes, and the HTTP server beside it.
//!
//! The loop (the calling thread) polls on a timer and renders `/metrics` when asked: a poll
//! and a scrape never run at the same time, so a mode's state needs no lock. HTTP is served
//! by hyper on a thread of its own (a current-thread tokio runtime): every connection is its
//! own task, so a client that connects and never sends, sends half a request, or never reads
//! its response stalls neither the loop nor other scrapes nor `/healthz`. The loop hands
//! each scrape a snapshot (the rendered text, shared by the scrapes that asked at the same
//! time, never copied: the Prometheus text form is sent as slices of it with the few lines
//! that differ, [`exposition::prometheus_text_chunks`]); writing it to a client is the HTTP
//! thread's job, bounded by timeouts:
//!
//! - request headers within [`HEADER_TIMEOUT`] (hyper's `header_read_timeout`);
//! - a whole connection at most [`CONNECTION_TIMEOUT`] (so a response nobody reads is
//!   dropped; keep-alive scrapers just reconnect);
//! - at most [`MAX_CONNECTIONS`] at once (more are closed at accept, counted in the log);
//! - a snapshot within [`RENDER_TIMEOUT`], else 503.
//!
//! `/healthz` is answered by the HTTP thread: 200 while the loop has turned within
//! [`LOOP_STALE`], else 503 (a wedged loop fails the liveness probe).
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Bytes, Frame, SizeHint};

use crate::cli::Config;
use crate::exposition;
use crate::preflight::Fatal;

pub trait Mode {
    /// What `/` answers before the endpoint list.
    fn banner(&self) -> &'static str;
    /// Called every `--poll-interval-ms`: look for new and exited JVMs, read what must not
    /// be missed between scrapes.
    fn poll(&mut self);
    /// The whole /metrics page (OpenMetrics text); `previous` is how long the previous
    /// scrape took (`jvmdiag_agent_scrape_duration_seconds`).
    fn scrape(&mut self, previous: Option<Duration>) -> String;
}

pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
pub const RENDER_TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_CONNECTIONS: usize = 64;
pub const LOOP_STALE: Duration = Duration::from_secs(15);

/// Listens on `--listen` (the error names the flag).
pub fn listen(cfg: &Config) -> Result<TcpListener, Fatal> {
    TcpListener::bind(cfg.cli.listen).map_err(|e| {
        Fatal(format!(
            "cannot listen on {} ({e}): choose a free address with --listen",
            cfg.cli.listen
        ))
    })
}

/// A scrape waiting for the loop's next snapshot.
type Reply = tokio::sync::oneshot::Sender<Bytes>;

/// What the HTTP thread shares with the loop.
struct Shared {
    started: Instant,
    /// Milliseconds since `started` at the loop's last turn.
    alive_ms: AtomicU64,
    scrapes: mpsc::Sender<Reply>,
    banner: &'static str,
}

impl Shared {
    fn loop_alive(&self) -> bool {
        let last = Duration::from_millis(self.alive_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last) < LOOP_STALE
    }
}

/// Runs `mode` until killed (or `--exit-after`).
pub fn run(cfg: &Config, listener: TcpListener, mode: &mut dyn Mode) -> Result<(), Fatal> {
    let (tx, rx) = mpsc::channel::<Reply>();
    let shared = Arc::new(Shared {
        started: Instant::now(),
        alive_ms: AtomicU64::new(0),
        scrapes: tx,
        banner: mode.banner(),
    });
    spawn_http(listener, shared.clone())?;
    let started = Instant::now();
    let mut next_poll = Instant::now();
    let mut last_scrape: Option<Duration> = None;
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
        match rx.recv_timeout(next_poll.saturating_duration_since(Instant::now())) {
            Ok(first) => {
                // Every scrape that asked meanwhile shares this snapshot.
                let mut waiting = vec![first];
                waiting.extend(rx.try_iter());
                let t0 = Instant::now();
                let text = Bytes::from(mode.scrape(last_scrape));
                last_scrape = Some(t0.elapsed());
                for w in waiting {
                    let _ = w.send(text.clone()); // the client may have given up
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Fatal("the HTTP server thread stopped".into()))
            }
        }
    }
}

fn spawn_http(listener: TcpListener, shared: Arc<Shared>) -> Result<(), Fatal> {
    listener.set_nonblocking(true).map_err(|e| Fatal(format!("--listen socket: {e}")))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Fatal(format!("HTTP server runtime: {e}")))?;
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || rt.block_on(accept_loop(listener, shared)))
        .map_err(|e| Fatal(format!("HTTP server thread: {e}")))?;
    Ok(())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!("HTTP server: {e}"),
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut refused: u64 = 0;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning.
                tracing::warn!("HTTP accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            refused += 1;
            if refused.is_power_of_two() {
                tracing::warn!(
                    refused,
                    "HTTP: more than {MAX_CONNECTIONS} connections at once; closing new ones"
                );
            }
            continue; // dropping the stream closes it
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::task::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(req, &shared).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            drop(permit);
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

fn text(status: u16, content_type: &'static str, body: String) -> hyper::Response<Body> {
    chunks(status, content_type, vec![Bytes::from(body)])
}

fn chunks(status: u16, content_type: &'static str, body: Vec<Bytes>) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(status)
        .header("Content-Type", content_type)
        .body(Body(body.into()))
        .expect("a valid static response")
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    shared: &Shared,
) -> hyper::Response<Body> {
    const PLAIN: &str = "text/plain; charset=utf-8";
    match req.uri().path() {
        "/metrics" => {
            let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok());
            let ct = exposition::negotiate(accept);
            let (tx, rx) = tokio::sync::oneshot::channel();
            if shared.scrapes.send(tx).is_err() {
                return text(503, PLAIN, "the agent is stopping\n".into());
            }
            match tokio::time::timeout(RENDER_TIMEOUT, rx).await {
                Ok(Ok(om)) => {
                    let body = if ct == exposition::PROMETHEUS_TEXT {
                        exposition::prometheus_text_chunks(&om)
                    } else {
                        vec![om]
                    };
                    chunks(200, ct, body)
                }
                _ => text(503, PLAIN, "the collection loop did not answer in time\n".into()),
            }
        }
        "/healthz" if shared.loop_alive() => text(200, PLAIN, "ok\n".into()),
        "/healthz" => text(
            503,
            PLAIN,
            format!("the collection loop has not run for {}s\n", LOOP_STALE.as_secs()),
        ),
        "/" => text(200, PLAIN, format!("{}: /metrics /healthz\n", shared.banner)),
        _ => text(404, PLAIN, "not found\n".into()),
    }
}
