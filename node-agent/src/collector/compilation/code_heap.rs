//! A code heap's current use, read from the JVM's memory at a scrape.
//!
//! HotSpot updates a code heap pool's MemoryUsage (what the uprobe sees) only when it
//! allocates code; frees (flushing, unloading, a compiler giving up its buffer when the cache
//! is full) show at the next allocation, which may never come. `jcmd Compiler.codecache`
//! computes "used" as `CodeHeap::allocated_capacity()`:
//! `(_next_segment - _freelist_segments) << _log2_segment_size`. The field offsets differ
//! between releases (JDK 17: 0x108/0x120/0x100, JDK 25: 0x100/0x118/0xf8), so they are
//! taken from the JVM's own code: the five instructions of `allocated_capacity()` and the
//! load of `CodeHeapPool::_codeHeap` before `get_memory_usage()` calls it. A build compiled
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

/// One x86-64 `op disp(%base), %reg` with a ModRM memory operand: (opcode, rex.w, reg, base, disp).
fn modrm_mem(code: &[u8]) -> Option<(u8, bool, u8, u8, u32, usize)> {
    let (rex_w, rest) = match code.first()? {
        0x48 => (true, code.get(1..)?),
        _ => (false, code),
    };
    let op = *rest.first()?;
    let modrm = *rest.get(1)?;
    let (md, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
    if rm == 4 {
        return None; // SIB: not what these functions use
    }
    let (disp, dlen) = match md {
        1 => (rest.get(2).map(|&d| d as i8 as i32 as u32)?, 1),
        2 => (u32::from_le_bytes(rest.get(2..6)?.try_into().ok()?), 4),
        _ => return None,
    };
    Some((op, rex_w, reg, rm, disp, usize::from(rex_w) + 2 + dlen))
}

/// `CodeHeap::allocated_capacity() const`: mov log2(%rdi),%ecx; mov next(%rdi),%rax;
/// sub free(%rdi),%rax; shl %cl,%rax; ret (the two movs in either order).
pub fn decode_allocated_capacity(code: &[u8]) -> Option<(u32, u32, u32)> {
    const RDI: u8 = 7;
    let (mut log2, mut next, mut free) = (None, None, None);
    let mut i = 0;
    for _ in 0..3 {
        let (op, w, reg, base, disp, len) = modrm_mem(code.get(i..)?)?;
        if base != RDI {
            return None;
        }
        match (op, w, reg) {
            (0x8b, false, 1) => log2 = Some(disp), // mov disp(%rdi),%ecx
            (0x8b, true, 0) if next.is_none() => next = Some(disp), // mov disp(%rdi),%rax
            (0x2b, true, 0) if next.is_some() => free = Some(disp), // sub disp(%rdi),%rax
            _ => return None,
        }
        i += len;
    }
    if code.get(i..i + 4)? != [0x48, 0xd3, 0xe0, 0xc3] {
        return None; // shl %cl,%rax; ret
    }
    Some((log2?, next?, free?))
}

/// In `CodeHeapPool::get_memory_usage()` (at `addr`): `mov disp(%rsi),%rdi` directly followed
/// by `call allocated_capacity`; returns disp.
pub fn decode_pool_heap(code: &[u8], addr: u64, allocated_capacity: u64) -> Option<u32> {
    const RSI: u8 = 6;
    const RDI: u8 = 7;
    for i in 0..code.len() {
        let Some((0x8b, true, RDI, RSI, disp, len)) = modrm_mem(&code[i..]) else { continue };
        let Some(c) = code.get(i + len..i + len + 5) else { continue };
        if c[0] != 0xe8 {
            continue;
        }
        let rel = i32::from_le_bytes(c[1..5].try_into().ok()?) as i64;
        let target = (addr as i64).checked_add((i + len + 5) as i64)?.checked_add(rel)?;
        if target as u64 == allocated_capacity {
            return Some(disp);
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_allocated_capacity_of_jdk17_and_jdk25() {
        // objdump of the two libjvm.so builds in CI
        let jdk17 = [
            0x8b, 0x8f, 0x00, 0x01, 0, 0, 0x48, 0x8b, 0x87, 0x08, 0x01, 0, 0, 0x48, 0x2b, 0x87,
            0x20, 0x01, 0, 0, 0x48, 0xd3, 0xe0, 0xc3,
        ];
        assert_eq!(decode_allocated_capacity(&jdk17), Some((0x100, 0x108, 0x120)));
        let jdk25 = [
            0x8b, 0x8f, 0xf8, 0, 0, 0, 0x48, 0x8b, 0x87, 0x00, 0x01, 0, 0, 0x48, 0x2b, 0x87, 0x18,
            0x01, 0, 0, 0x48, 0xd3, 0xe0, 0xc3,
        ];
        assert_eq!(decode_allocated_capacity(&jdk25), Some((0xf8, 0x100, 0x118)));
        assert_eq!(decode_allocated_capacity(&jdk25[..10]), None);
        let mut other = jdk25;
        other[23] = 0x90;
        assert_eq!(decode_allocated_capacity(&other), None);
    }

    #[test]
    fn finds_the_heap_load_before_the_call() {
        // mov 0xc8(%rsi),%rdi ; call <addr + 7 + 5 + rel>
        let mut code = vec![0x90, 0x48, 0x8b, 0xbe, 0xc8, 0, 0, 0, 0xe8];
        code.extend_from_slice(&100i32.to_le_bytes());
        assert_eq!(decode_pool_heap(&code, 0x1000, 0x1000 + 13 + 100), Some(0xc8));
        assert_eq!(decode_pool_heap(&code, 0x1000, 0x2000), None);
    }
}
