//! The one main loop of both modes: poll on a timer, answer HTTP requests in between.
//! Single-threaded: a scrape and a poll never run at the same time, so a mode's state needs
//! no lock. The agent (src/agent.rs) and the sidecar (src/sidecar/) each implement `Mode`.
use std::time::{Duration, Instant};

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

/// Listens on `--listen` (the error names the flag).
pub fn listen(cfg: &Config) -> Result<tiny_http::Server, Fatal> {
    tiny_http::Server::http(cfg.cli.listen)
        .map_err(|e| Fatal(format!("cannot listen on {} ({e}): choose a free address with --listen", cfg.cli.listen)))
}

/// Runs `mode` until killed (or `--exit-after`).
pub fn run(cfg: &Config, server: tiny_http::Server, mode: &mut dyn Mode) -> Result<(), Fatal> {
    let started = Instant::now();
    let mut next_poll = Instant::now();
    let mut last_scrape: Option<Duration> = None;
    loop {
        let now = Instant::now();
        if cfg.cli.exit_after > 0 && now.duration_since(started).as_secs() >= cfg.cli.exit_after {
            return Ok(());
        }
        if now >= next_poll {
            mode.poll();
            next_poll = now + cfg.poll_interval();
        }
        match server.recv_timeout(next_poll.saturating_duration_since(Instant::now())) {
            Ok(Some(req)) => {
                let mut took = None;
                let previous = last_scrape;
                exposition::respond(req, mode.banner(), &mut took, || mode.scrape(previous));
                if took.is_some() {
                    last_scrape = took;
                }
            }
            Ok(None) => {}
            Err(e) => crate::log::warn(&format!("http: {e}")),
        }
    }
}
