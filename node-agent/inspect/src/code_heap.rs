//! The field offsets of HotSpot's `CodeHeap`, decoded from the machine code of two functions
//! of a container's `libjvm.so` (x86-64).
//!
//! `jcmd Compiler.codecache` computes a code heap's use as `CodeHeap::allocated_capacity()`:
//! `(_next_segment - _freelist_segments) << _log2_segment_size`. The field offsets differ
//! between releases (JDK 17: 0x108/0x120/0x100, JDK 25: 0x100/0x118/0xf8), so they are taken
//! from the JVM's own code: the five instructions of `allocated_capacity()` and the load of
//! `CodeHeapPool::_codeHeap` before `get_memory_usage()` calls it. Code compiled differently
//! does not match the patterns: `None`, never a guess. The bytes are the container's (the
//! caller reads at most a few KiB of each function): every access is bounds-checked.

/// One x86-64 `op disp(%base), %reg` with a ModRM memory operand:
/// (opcode, rex.w, reg, base, disp, instruction length).
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
/// sub free(%rdi),%rax; shl %cl,%rax; ret (the two movs in either order). Returns the offsets
/// (log2, next, free).
pub fn decode_allocated_capacity(code: &[u8]) -> Option<(u32, u32, u32)> {
    const RDI: u8 = 7;
    let (mut log2, mut next, mut free) = (None, None, None);
    let mut i = 0usize;
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

/// In `CodeHeapPool::get_memory_usage()` (its code `code`, at address `addr`):
/// `mov disp(%rsi),%rdi` directly followed by `call allocated_capacity`; returns disp.
pub fn decode_pool_heap(code: &[u8], addr: u64, allocated_capacity: u64) -> Option<u32> {
    const RSI: u8 = 6;
    const RDI: u8 = 7;
    for i in 0..code.len() {
        let Some((0x8b, true, RDI, RSI, disp, len)) = code.get(i..).and_then(modrm_mem) else {
            continue;
        };
        let Some(&[op, r0, r1, r2, r3]) = code.get(i + len..i + len + 5) else { continue };
        if op != 0xe8 {
            continue;
        }
        let rel = i32::from_le_bytes([r0, r1, r2, r3]) as i64;
        let target = (addr as i64).checked_add((i + len + 5) as i64)?.checked_add(rel)?;
        if target as u64 == allocated_capacity {
            return Some(disp);
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
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
