/* compilation collector: shapes shared with src/collector/compilation.rs. */
#ifndef JVMDIAG_COMPILATION_H
#define JVMDIAG_COMPILATION_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i (PROBES in compilation.rs names them by these). */
enum compilation_probe {
	COMP_PROBE_BEGIN = 0,      /* USDT hotspot:method__compile__begin */
	COMP_PROBE_END = 1,        /* USDT hotspot:method__compile__end */
	COMP_PROBE_INVOKE = 2,     /* uprobe CompileBroker::invoke_compiler_on_method (no USDT) */
	COMP_PROBE_INVOKE_RET = 3, /* its return */
	COMP_PROBE_FULL = 4,       /* uprobe CodeCache::report_codemem_full */
	COMP_PROBE_POOL_RET = 5,   /* uretprobe CodeHeapPool::get_memory_usage */
};

/* Map comp_stats: struct name_key (name = compiler as the JVM names it: "C1", "C2",
 * "JVMCI"; or the compiler thread's name prefix in uprobe mode) -> struct comp_stats. */
#define COMP_FLAG_USDT 1 /* name_key.flags: counted by the USDT probes (methods are named) */
struct comp_stats {
	struct hist timed;  /* compilations whose begin was seen: durations */
	__u64 untimed;      /* compilations whose begin was not seen (attached mid-compile) */
};

/* Map method_hot: struct name_key (name = "pkg/Class.method", class truncated from the
 * left to fit) -> __u64 compilations, for methods compiled at least hot_threshold times. */

/* Map seen_counts: per JVM slot, what the programs did to the method_seen staging table (an
 * LRU whose evictions the kernel does not count): entries inserted (a successful NOEXIST
 * insert) and deleted (a method promoted to method_hot). The loader derives the evictions:
 * inserted - removed - entries it deleted itself - entries present (compilation/staging.rs). */
struct seen_count {
	__u64 inserted;
	__u64 removed;
};

/* HotSpot's MemoryUsage (services/memoryUsage.hpp), returned by value from
 * CodeHeapPool::get_memory_usage(): four size_t, unchanged since JDK 5. */
struct memory_usage {
	__u64 init;
	__u64 used;
	__u64 committed;
	__u64 max;
};

/* Map heap_usage: struct name_key (name = the pool's name: "CodeHeap 'profiled nmethods'",
 * "CodeCache", ...) -> struct heap_value: the MemoryUsage as of the JVM's last code cache
 * allocation, plus where the loader can read the heap's current use at a scrape. */
struct heap_value {
	struct memory_usage mu;
	__u64 pool;   /* CodeHeapPool* in the JVM */
	__u32 tgid;   /* host pid of the JVM */
	__u32 layout; /* attach cookie: 1 + index of the CodeHeap field layout, 0 = unknown */
};

/* Per-thread state between an entry probe and its return / end probe: in-flight tables
 * (inflight.bpf.h) keyed by struct inflight_key, sized COMP_INFLIGHT_PER_JVM x --max-jvms,
 * at most COMP_INFLIGHT_MAX; one JVM may hold a quarter of one, at least the per-JVM size. */
#define COMP_INFLIGHT_MAX 4096
#define COMP_INFLIGHT_PER_JVM 16
#define COMP_TABLE_COMPILE 0 /* comp_inflight: a compilation (begin -> end) */
#define COMP_TABLE_POOL 1    /* pool_inflight: a CodeHeapPool::get_memory_usage call */
struct comp_inflight {
	__u64 begin_ns;
};
struct pool_inflight {
	__u64 sret;   /* where the MemoryUsage is returned */
	__u64 pool;   /* CodeHeapPool* this */
	__u64 layout; /* the attach cookie */
};

#endif
