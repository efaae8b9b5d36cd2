"""The JVM's own counters, read independently of the agent: a JVM's hsperfdata file (found
through /proc/PID/maps, read through /proc/PID/root), long counters by name. The tests compare
the agent's numbers with these."""

import re
import struct


def hsperf_path(pid):
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) >= 6 and re.search(r"/hsperfdata_[^/]+/\d+$", parts[5]):
            return f"/proc/{pid}/root{parts[5]}"
    raise RuntimeError(f"pid {pid} maps no hsperfdata file")


def hsperf(pid):
    b = open(hsperf_path(pid), "rb").read()
    assert b[:4] == b"\xca\xfe\xc0\xc0", "bad hsperfdata magic"
    e = "<" if b[4] == 1 else ">"
    entry_off, n = struct.unpack_from(e + "ii", b, 24)
    out, off = {}, entry_off
    for _ in range(n):
        length, name_off, vlen, dtype, _f, _u, _v, data_off = struct.unpack_from(
            e + "iiiBBBBi", b, off
        )
        name = b[off + name_off : b.index(b"\0", off + name_off)].decode()
        if dtype == ord("J") and vlen == 0:
            out[name] = struct.unpack_from(e + "q", b, off + data_off)[0]
        off += length
    return out
