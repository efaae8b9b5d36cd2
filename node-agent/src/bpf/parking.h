/* parking collector: shapes shared with src/collector/parking.rs. */
#ifndef JVMDIAG_PARKING_H
#define JVMDIAG_PARKING_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i. */
enum parking_probe {
	PARK_PROBE_BEGIN = 0, /* USDT hotspot:thread__park__begin */
	PARK_PROBE_END = 1,   /* USDT hotspot:thread__park__end */
	PARK_PROBE_BEGIN_SYM = 2, /* uprobe Parker::park(bool, long) (no USDT notes) */
	PARK_PROBE_END_SYM = 3,   /* uretprobe Parker::park */
};

/* The thread's name is its native name (comm, COMM_LEN): the first 15 bytes of the Java name,
 * which HotSpot sets for every Java thread it starts. Folded (fold.bpf.h) and keyed by the
 * FNV-1a hash of the folded text, as the threads collector does; OTHER_HASH means "other". */
/* Parks in flight at once (one per parked thread), over all JVMs: the loader sizes
 * park_inflight PARK_INFLIGHT_PER_JVM x --max-jvms (an entry allocated per park), at most PARK_INFLIGHT_MAX;
 * one JVM may hold a quarter of it, at least PARK_INFLIGHT_PER_JVM (src/collector/inflight.rs). */
#define PARK_INFLIGHT_MAX 65536
#define PARK_INFLIGHT_PER_JVM 64
#define PARK_TABLE_INFLIGHT 0 /* park_inflight's table number (inflight.bpf.h) */

struct park_key {
	__u32 slot;
	__u32 pad;
	__u64 hash;
};

struct park_count {
	__u64 parks;     /* Unsafe.park calls (counted at begin) */
	__u64 parked_ns; /* time parked, begin -> end (added at end) */
};

struct park_name {
	char name[COMM_LEN];
};

struct park_inflight {
	__u64 begin_ns;
	struct park_key key;
};

/* Maps: park_counts: park_key -> park_count; park_names: park_key -> park_name;
 * park_inflight: struct inflight_key -> park_inflight. */

#endif
