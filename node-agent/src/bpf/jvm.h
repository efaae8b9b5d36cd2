/* Shapes shared by every probe triple and the Rust loader (fixed-width types only). */
#ifndef JVMDIAG_JVM_H
#define JVMDIAG_JVM_H

/* Names read from the JVM (thread names, VM operation names), NUL-padded. */
#define NAME_LEN 64
/* A thread's native name (comm, as bpf_get_current_comm reads it): the first 15 bytes of the
 * Java name HotSpot gives every thread it starts, NUL-terminated. */
#define COMM_LEN 16
/* Folded thread names (fold.bpf.h) are keyed by the 64-bit FNV-1a hash of their text where a
 * table stores each text once; hash 0 means "other". */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define OTHER_HASH 0ULL
/* Upper bound on JVMs traced at once (slots in per-JVM arrays). */
#define MAX_JVMS 1024

/* A traced_pids value: the JVM's slot in the low SLOT_BITS, above them one bit per
 * collector its pod asked for (jvm.diagnostics.dev/collectors; all of them outside
 * Kubernetes), so a collector's probes count only the JVMs that want it. A collector's bit
 * is its place in REGISTRY (src/collector/mod.rs); the loader sets it as `collector_bit`
 * (common.bpf.h) before load. */
#define SLOT_BITS 16

/* Duration histogram: the bounds of monitoring/histogram-bounds.txt plus +Inf (HIST_BOUNDS
 * is generated from that file by build.rs). Counts are per bucket (not cumulative); the
 * exposition accumulates. Nanoseconds in u64. */
#include "hist_bounds.h"
#define HIST_SLOTS (HIST_BOUNDS + 1)
struct hist {
	__u64 buckets[HIST_SLOTS];
	__u64 sum_ns;
	__u64 count;
};

/* Key of every per-JVM, per-name aggregate. */
struct name_key {
	__u32 slot;
	__u32 flags; /* collector-specific (vmops: 1 = at safepoint) */
	char name[NAME_LEN];
};

/* A VM operation named by its C++ vtable (uprobe mode, no USDT notes): stored in a
 * name[NAME_LEN] with name[0] == VTABLE_TAG (never a printable first byte); the loader
 * resolves (file, rel) against the file's .symtab `_ZTV` symbols. */
#define VTABLE_TAG 1
struct vtable_name {
	__u8 tag;
	__u8 pad[3];
	__u32 file; /* the loader's index of the libjvm.so (high 32 bits of the cookie) */
	__u64 rel;  /* vtable pointer minus the file's load bias */
};
_Static_assert(sizeof(struct vtable_name) <= NAME_LEN, "a vtable name must fit a name");

/* In-flight tables (inflight.bpf.h): a thread's state between a begin probe and its end (a
 * park, a contended enter, a compilation, a thread start), keyed by the JVM's slot and the
 * host thread id. At most INFLIGHT_TABLES per collector object, numbered from 0. */
#define INFLIGHT_TABLES 2
struct inflight_key {
	__u32 slot;
	__u32 tid;
};

/* Why a begin found no room (its event is counted; its end is not timed or attributed). */
enum inflight_reason {
	INFLIGHT_LOST_SHARE = 0,     /* the JVM already held its share of the table */
	INFLIGHT_LOST_FULL = 1,      /* the table was full */
	INFLIGHT_LOST_NAMESPACE = 2, /* the JVMs of its namespace held the namespace's share */
	INFLIGHT_REASONS = 3,
};

/* Kubernetes mode: each namespace that holds a JVM slot has a small id, 1..MAX_JVMS, which the
 * loader writes into the slot_namespace map (inflight.bpf.h) for each of its slots; an
 * in-flight table counts its entries per namespace id too. NO_NAMESPACE (standalone mode, a
 * free slot): no namespace share. */
#define NO_NAMESPACE 0
#define NAMESPACE_IDS 1025 /* MAX_JVMS + 1: the ids and NO_NAMESPACE */

/* Map inflight_lost: per JVM, table and reason, the begins that found no room (__u64). */
struct inflight_lost_key {
	__u32 slot;
	__u16 table;
	__u16 reason;
};

/* Agent-health counters, one per-CPU array per collector (index = enum value). */
enum stat_id {
	STAT_EVENTS_0 = 0, /* STAT_EVENTS_0 + probe index: probe hits from traced JVMs */
	STAT_MAP_ERRORS = 8,
	STAT_NAMES_OVERFLOW = 9, /* a name went to "other" because the per-JVM budget was spent */
	STAT_FILTERED = 10,      /* a collector-specific discard (threads: JVM-internal hidden threads) */
	/* + table * INFLIGHT_REASONS + reason: begins that found no room in an in-flight table */
	STAT_INFLIGHT_LOST_0 = 12,
	STAT_MAX = 18,
};

#endif
