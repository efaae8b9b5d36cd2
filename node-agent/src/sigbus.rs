//! A container's `libjvm.so` changing while libbpf reads it must not kill the agent.
//!
//! libbpf reads the USDT notes and resolves uprobe symbols through libelf, which maps the
//! file (`ELF_C_READ_MMAP`). If the container truncates the file meanwhile, a read of a page
//! past the new end raises SIGBUS, whose default action kills the process. While a [`Guard`]
//! is held (around the collectors' attach to one file, on one thread), the handler maps a
//! page of zeros over the faulting page and lets the read go on; the guard then reports the
//! fault and the caller drops whatever was attached and refuses the file (`libjvm_changed`).
//! A SIGBUS outside a guard keeps its default action (the handler restores it and the
//! faulting access repeats).
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Once;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static FAULTS: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // Only async-signal-safe work here: atomics, mmap, sigaction.
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if ACTIVE.load(Ordering::SeqCst) && addr != 0 {
        // SAFETY: sysconf is async-signal-safe in practice (a constant read).
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let start = addr & !(page - 1);
        // SAFETY: replaces one page of a read-only file mapping (libelf's) with zeros; the
        // mapping stays the caller's to unmap.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            FAULTS.fetch_add(1, Ordering::SeqCst);
            return;
        }
    }
    // Not ours: back to the default action, which the repeated access then takes.
    // SAFETY: plain sigaction with SIG_DFL.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: installs a handler that only does async-signal-safe work.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) != 0 {
                tracing::warn!(error = %std::io::Error::last_os_error(), "cannot install the SIGBUS handler: a libjvm.so truncated while libbpf reads it would stop the agent");
            }
        }
    });
}

/// Held while libbpf reads one container file (one at a time: the attach runs on the
/// collection loop's thread).
pub struct Guard {
    faults_before: u64,
}

impl Guard {
    pub fn take() -> Guard {
        install();
        ACTIVE.store(true, Ordering::SeqCst);
        Guard { faults_before: FAULTS.load(Ordering::SeqCst) }
    }

    /// Pages of the file that vanished under a read since the guard was taken.
    pub fn faults(&self) -> u64 {
        FAULTS.load(Ordering::SeqCst) - self.faults_before
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        ACTIVE.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_read_past_a_truncated_mapping_reads_zeros_under_a_guard() {
        let path = std::env::temp_dir().join(format!("jvmdiag-sigbus-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&[7u8; 3 * 4096]).unwrap();
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: maps the file read-only; unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * 4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        } as *const u8;
        assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
        f.set_len(4096).unwrap(); // the last two pages are past the end now
        let g = Guard::take();
        // SAFETY: inside the mapping; page 2 is past the file's end (SIGBUS without the guard).
        let (first, past) =
            unsafe { (std::ptr::read_volatile(p), std::ptr::read_volatile(p.add(2 * 4096 + 10))) };
        assert_eq!((first, past), (7, 0));
        assert_eq!(g.faults(), 1);
        drop(g);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(p as *mut libc::c_void, 3 * 4096) };
        let _ = std::fs::remove_file(&path);
    }
}
