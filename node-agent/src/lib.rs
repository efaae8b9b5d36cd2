//! jvmdiag-agent as a library: the node agent and the sidecar (see docs/agent.md), used by
//! the thin binary (src/main.rs) and by the integration tests in tests/.
//!
//! A scrape goes one way: kernel maps → `maps` (decoded with the generated types) →
//! `collector` (families from the `metrics` catalog) → `exposition`; `perfdata` maps what
//! hsperfdata has for the fallback and the sidecar; `serve` is the one main loop and its HTTP
//! server (`slots`: its connection limits, `auth`: the authorization of `/metrics`).
pub mod agent;
pub mod attach;
pub mod auth;
pub mod capacity;
pub mod cli;
pub mod collector;
pub mod discovery;
pub mod exposition;
pub mod fallback;
pub mod file_identity;
#[cfg(test)]
mod golden_test;
pub mod holders;
pub mod kube;
pub mod labels;
pub mod limits;
pub mod log;
pub mod maps;
pub mod metrics;
pub mod model;
pub mod perfdata;
pub mod preflight;
pub mod probe;
pub mod report;
pub mod serve;
pub mod sidecar;
pub mod sigbus;
pub mod skel;
pub mod slots;
pub mod stacks;
pub mod starters;
pub mod symbols;

/// Runs the mode the flags ask for (agent or sidecar) until killed or `--exit-after`.
pub fn run(cfg: cli::Config) -> Result<(), preflight::Fatal> {
    if cfg.cli.sidecar {
        sidecar::run(cfg)
    } else {
        agent::run(cfg)
    }
}
