/* monitors collector: shapes shared with src/collector/monitors.rs. */
#ifndef JVMDIAG_MONITORS_H
#define JVMDIAG_MONITORS_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i. */
enum monitors_probe {
	MON_PROBE_ENTER = 0,   /* USDT hotspot:monitor__contended__enter */
	MON_PROBE_ENTERED = 1, /* USDT hotspot:monitor__contended__entered */
};

/* Contended enters in flight at once (one per blocked thread), over all JVMs: the loader
 * sizes mon_inflight MON_INFLIGHT_PER_JVM x --max-jvms (preallocated), at most
 * MON_INFLIGHT_MAX; one JVM may hold a quarter of it, at least MON_INFLIGHT_PER_JVM. */
#define MON_INFLIGHT_MAX 65536
#define MON_INFLIGHT_PER_JVM 32
#define MON_TABLE_INFLIGHT 0 /* mon_inflight's table number (inflight.bpf.h) */

/* Per JVM and monitor class (struct name_key, name = the class's internal name as
 * HotSpot's Symbol holds it, java/lang/Object, at most NAME_LEN - 1 bytes). */
struct mon_stat {
	struct hist blocked; /* enter -> entered, added at entered */
};

/* Contended enters per JVM, monitor class and the folded native name (fold.bpf.h) of the
 * thread that had to wait: the class as in mon_stats (possibly "other"), the thread name
 * "other" once the JVM's (class, thread) pairs are spent. Summed over thread names, a class's
 * enters. */
struct mon_thread_key {
	struct name_key cls;
	char thread_name[COMM_LEN];
};

struct mon_inflight {
	__u64 begin_ns;
	struct name_key key;
};

/* Per-CPU scratch of a contended enter. */
struct mon_scratch {
	struct mon_inflight in;
	struct mon_thread_key pair;
};

/* Maps: mon_stats: name_key -> mon_stat; mon_threads: mon_thread_key -> __u64 enters;
 * mon_inflight: struct inflight_key -> mon_inflight; mon_thread_budget: slot -> pairs named. */

#endif
