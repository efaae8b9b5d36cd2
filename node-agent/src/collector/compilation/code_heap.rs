//! A code heap's current use, read from the JVM's memory at a scrape.
//!
//! HotSpot updates a code heap pool's MemoryUsage (what the uprobe sees) only when it
//! allocates code; frees (flushing, unloading, a compiler giving up its buffer when the cache
//! is full) show at the next allocation, which may never come. `jcmd Compiler.codecache`
//! computes "used" as `CodeHeap::allocated_capacity()`:
//! `(_next_segment - _freelist_segments) << _log2_segment_size`. The field offsets differ
//! between releases, so they are decoded from the JVM's own code
//! ([`jvmdiag_inspect::code_heap`]: the bytes are the container's). A build compiled
//! differently does not match the patterns and keeps the allocation-time value.
//!
//! Reading is `process_vm_readv` of 8-byte fields (the privilege uprobes already need);
//! values a JVM could fake are checked (shift < 32, used <= the heap's size).

/// Offsets into HotSpot's objects for one libjvm.so build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `CodeHeapPool::_codeHeap`.
    pub pool_heap: u32,
    /// `CodeHeap::_log2_segment_size` (int), `_next_segment`, `_freelist_segments` (size_t).
    pub log2: u32,
    pub next: u32,
    pub free: u32,
}

fn read_u64(pid: u32, addr: u64) -> Option<u64> {
    let mut buf = [0u8; 8];
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: 8 };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: 8 };
    // SAFETY: one local 8-byte buffer we own; the remote side is only read by the kernel,
    // which checks it against the target's address space.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    (n == 8).then(|| u64::from_ne_bytes(buf))
}

/// The heap's use now, or None (gone, unreadable, or values that make no sense).
pub fn used_now(pid: u32, pool: u64, l: &Layout, max: u64) -> Option<u64> {
    let heap = read_u64(pid, pool.checked_add(u64::from(l.pool_heap))?)?;
    let log2 = read_u64(pid, heap.checked_add(u64::from(l.log2))?)? & 0xffff_ffff;
    let next = read_u64(pid, heap.checked_add(u64::from(l.next))?)?;
    let free = read_u64(pid, heap.checked_add(u64::from(l.free))?)?;
    if log2 >= 32 || free > next {
        return None;
    }
    let used = (next - free).checked_shl(log2 as u32)?;
    (used <= max).then_some(used)
}
