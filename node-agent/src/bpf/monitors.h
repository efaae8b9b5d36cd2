/* monitors collector: shapes shared with src/collector/monitors.rs. */
#ifndef JVMDIAG_MONITORS_H
#define JVMDIAG_MONITORS_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i. */
enum monitors_probe {
	MON_PROBE_ENTER = 0,   /* USDT hotspot:monitor__contended__enter */
	MON_PROBE_ENTERED = 1, /* USDT hotspot:monitor__contended__entered */
	MON_PROBE_WAIT = 2,    /* USDT hotspot:monitor__wait (Object.wait) */
	MON_PROBE_WAITED = 3,  /* USDT hotspot:monitor__waited */
	MON_PROBE_EXIT = 4,    /* USDT hotspot:monitor__contended__exit (culprit stacks only) */
};

/* Contended enters in flight at once (one per blocked thread), over all JVMs: the loader
 * sizes mon_inflight MON_INFLIGHT_PER_JVM x --max-jvms (an entry allocated per enter), at most
 * MON_INFLIGHT_MAX; one JVM may hold a quarter of it, at least MON_INFLIGHT_PER_JVM. */
#define MON_INFLIGHT_MAX 65536
#define MON_INFLIGHT_PER_JVM 32
#define MON_TABLE_INFLIGHT 0 /* mon_inflight's table number (inflight.bpf.h) */
/* Object.wait calls in flight at once (one per waiting thread), sized and shared as
 * mon_inflight: a pool of threads waiting for work holds one entry per thread. */
#define WAIT_INFLIGHT_MAX 65536
#define WAIT_INFLIGHT_PER_JVM 32
#define MON_TABLE_WAIT 1 /* wait_inflight's table number (inflight.bpf.h) */

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

/* Object.wait per JVM, waited-on object's class and the folded native name of the waiting
 * thread (a mon_thread_key in mon_waits): counted at monitor__wait, its time (monitor__wait ->
 * monitor__waited of the same thread: the wait and the re-entry of the monitor) added at
 * monitor__waited. Classes are bounded per JVM in wait_classes (their own count, the JVM's
 * class limit), pairs in mon_waits (their own count, the JVM's thread-name limit). */
struct mon_wait {
	__u64 waits;
	__u64 waited_ns;
};

struct wait_inflight {
	__u64 begin_ns;
	struct mon_thread_key key; /* as counted: class and thread name possibly "other" */
};

/* Per-CPU scratch of a contended enter or a wait. */
struct mon_scratch {
	struct mon_inflight in;
	struct mon_thread_key pair;
	struct wait_inflight wait;
};

/* Maps: mon_stats: name_key -> mon_stat; mon_threads: mon_thread_key -> __u64 enters;
 * mon_inflight: struct inflight_key -> mon_inflight; mon_thread_budget: slot -> pairs named;
 * wait_classes: name_key -> __u32 (the set of classes waited on); mon_waits: mon_thread_key ->
 * mon_wait; wait_inflight: struct inflight_key -> wait_inflight; wait_class_budget,
 * wait_thread_budget: slot -> classes, pairs named. */

#endif
