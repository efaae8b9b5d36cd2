//! jvmdiag-agent: see docs/agent.md. The agent is the library (src/lib.rs); this parses the
//! flags, starts the logger and runs it.
use jvmdiag_agent::{cli, log};

fn main() {
    let cfg = match cli::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Err(e) = log::init(&cfg.cli.log_level, cfg.cli.log_format) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    if let Err(e) = jvmdiag_agent::run(cfg) {
        tracing::error!("{e}");
        std::process::exit(1);
    }
}
