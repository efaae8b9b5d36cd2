//! jvmdiag-agent: see docs/agent.md.
mod agent;
mod attach;
mod cli;
mod collector;
mod discovery;
mod exposition;
mod fallback;
mod file_identity;
#[cfg(test)]
mod golden_test;
mod kube;
mod labels;
mod log;
mod maps;
mod metrics;
mod model;
mod perfdata;
mod preflight;
mod probe;
mod report;
mod serve;
mod sidecar;
mod skel;
mod symbols;

fn main() {
    let cfg = match cli::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Err(e) = log::init(&cfg.cli.log_level, cfg.cli.log_format) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let run = if cfg.cli.sidecar { sidecar::run } else { agent::run };
    if let Err(e) = run(cfg) {
        tracing::error!("{e}");
        std::process::exit(1);
    }
}
