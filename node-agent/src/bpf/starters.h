/* starters: the on-demand probe naming the thread that starts threads; shapes shared with
 * src/starters.rs. */
#ifndef JVMDIAG_STARTERS_H
#define JVMDIAG_STARTERS_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i. */
enum starters_probe {
	STARTERS_PROBE_JVM_START = 0, /* uprobe JVM_StartThread, in the starting thread */
	STARTERS_PROBE_FORK = 1,      /* tp_btf sched_process_fork, the clone inside it */
	STARTERS_PROBE_START = 2,     /* USDT hotspot:thread__start, in the started thread */
};

/* The starter is the starting thread's native name (comm, COMM_LEN): the first 15 bytes of
 * its Java name, folded (fold.bpf.h). */
/* Threads in JVM_StartThread, and started threads not yet named, at once: in-flight tables
 * (inflight.bpf.h) sized STARTERS_PENDING_PER_JVM x --max-jvms, at most STARTERS_PENDING; one
 * JVM may hold a quarter of one, at least the per-JVM size. */
#define STARTERS_PENDING 8192
#define STARTERS_PENDING_PER_JVM 64
#define STARTERS_TABLE_STARTING 0 /* starting: keyed by the starter's tid */
#define STARTERS_TABLE_STARTED 1  /* started: keyed by the new thread's tid */

/* A thread between JVM_StartThread and its clone (keyed by the starter's host tid), then
 * the new thread until its thread__start (keyed by the new thread's host tid). */
struct starter_of {
	__u32 slot;
	__u32 pad;
	__u64 begin_ns; /* bpf_ktime_get_ns() at JVM_StartThread (CLOCK_MONOTONIC, as System.nanoTime) */
	char starter[COMM_LEN];
};

/* Map starts_by_starter: struct starter_key -> __u64 starts. */
struct starter_key {
	__u32 slot;
	__u32 pad;
	char thread_name[NAME_LEN];
	char starter[COMM_LEN];
};

/* Map start_seconds: struct name_key (flags 0, name = folded thread name) -> struct hist of
 * JVM_StartThread entry -> thread__start in the new thread. Per JVM at most max_pairs names
 * (its own budget, start_seconds_budget), the rest "other". */

#endif
