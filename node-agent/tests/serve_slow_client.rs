//! A slow client cannot freeze the agent: clients that connect and never send,
//! send half a request, or ask for /metrics and never read the answer stall neither the
//! collection loop, nor other scrapes, nor /healthz. The real server (src/serve.rs) runs a
//! stand-in mode whose page is 8 MiB, far more than the socket buffers of a client that does
//! not read. No privileges needed.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jvmdiag_agent::cli;
use jvmdiag_agent::serve::{self, Mode};

struct Big {
    polls: Arc<AtomicU64>,
    page: String,
}

impl Mode for Big {
    fn banner(&self) -> &'static str {
        "test"
    }
    fn poll(&mut self) {
        self.polls.fetch_add(1, Ordering::Relaxed);
    }
    fn scrape(&mut self, _previous: Option<Duration>) -> String {
        self.page.clone()
    }
}

fn start() -> (SocketAddr, Arc<AtomicU64>) {
    let cfg = cli::parse_from([
        "a",
        "--standalone",
        "--listen",
        "127.0.0.1:0",
        "--poll-interval-ms",
        "20",
        "--exit-after",
        "120",
        // The stalled clients and the checking one share 127.0.0.1: this test is about the
        // timeouts, the per-peer share has tests/serve_limits.rs.
        "--max-connections-per-peer",
        "64",
    ])
    .unwrap();
    let listener = serve::listen(&cfg).unwrap();
    let addr = listener.metrics.local_addr().unwrap();
    let polls = Arc::new(AtomicU64::new(0));
    let p = polls.clone();
    std::thread::spawn(move || {
        // 8 MiB of valid OpenMetrics text.
        let mut page = String::from("# TYPE filler gauge\n");
        let mut i = 0u64;
        while page.len() < 8 << 20 {
            page.push_str(&format!("filler{{i=\"{i}\"}} 1\n"));
            i += 1;
        }
        page.push_str("# EOF\n");
        let mut mode = Big { polls: p, page };
        serve::run(&cfg, listener, &mut mode).unwrap();
    });
    (addr, polls)
}

/// One request with `Connection: close`; (status, body length, time taken).
fn get(addr: SocketAddr, path: &str) -> (u16, usize, Duration) {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf);
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.len()).unwrap_or(0);
    (status, body, t0.elapsed())
}

#[test]
fn clients_that_never_read_or_never_finish_stall_nothing() {
    let (addr, polls) = start();
    // Let the loop render once, so the first slow client gets a full page straight away.
    assert_eq!(get(addr, "/healthz").0, 200);

    let mut stalled = Vec::new();
    for _ in 0..3 {
        // Asks for /metrics (8 MiB) and never reads a byte.
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        stalled.push(s);
        // Sends half a request line.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metr").unwrap();
        stalled.push(s);
        // Connects and sends nothing.
        stalled.push(TcpStream::connect(addr).unwrap());
    }
    std::thread::sleep(Duration::from_millis(300));

    // A server stalled by those clients would never answer (they never read, never finish):
    // the bound only has to lie below the client's 5 s read timeout, and leaves room for a
    // loaded CI machine (a whole 8 MiB page takes milliseconds on an idle one).
    let bound = Duration::from_secs(4);
    let polls_before = polls.load(Ordering::Relaxed);
    for _ in 0..3 {
        let (status, _, took) = get(addr, "/healthz");
        assert_eq!(status, 200, "/healthz");
        assert!(took < bound, "/healthz took {took:?}");
        let (status, len, took) = get(addr, "/metrics");
        assert_eq!(status, 200, "/metrics");
        assert!(len >= 8 << 20, "a whole page: {len} bytes");
        assert!(took < bound, "/metrics took {took:?} beside stalled clients");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(polls.load(Ordering::Relaxed) > polls_before + 3, "the collection loop kept polling");
    assert_eq!(get(addr, "/nope").0, 404);
    drop(stalled);
}

#[test]
fn a_stalled_half_request_is_dropped_after_the_header_timeout() {
    let (addr, _) = start();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: te").unwrap();
    s.set_read_timeout(Some(serve::HEADER_TIMEOUT + Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf); // EOF (or a 408) once hyper gives up on the headers
    let took = t0.elapsed();
    assert!(took < serve::HEADER_TIMEOUT + Duration::from_secs(3), "closed after {took:?}");
    assert!(took >= serve::HEADER_TIMEOUT - Duration::from_secs(1), "closed too early: {took:?}");
}
