//! jvmdiag-agent: see docs/agent.md. The agent is the library (src/lib.rs); this parses the
//! flags, starts the logger and runs it.
use jvmdiag_agent::{cli, log};

fn main() {
    big_allocations_return_to_the_kernel();
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

/// Allocations of 128 KiB and more (a scrape's page, ELF sections read at an attach, libbpf's
/// copies of an object being loaded) get pages of their own, given back when freed, and grown
/// in place (mremap) rather than copied. glibc's default raises this threshold once such a
/// block is freed, after which those blocks come from the heap: a growing page is copied at
/// each doubling (the old and new buffers resident at once) and the freed heap stays resident.
/// Measured with 50 JVMs: see docs/performance.md (footprint).
fn big_allocations_return_to_the_kernel() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter, before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
