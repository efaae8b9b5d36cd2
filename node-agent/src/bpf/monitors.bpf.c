// SPDX-License-Identifier: GPL-2.0
/* Contended monitor enters per JVM, monitor class and waiting thread's name, and the time
 * each thread was blocked (contended enter -> entered of the same thread) per class, as a
 * histogram; Object.wait calls and the time waited per JVM, waited-on object's class and
 * waiting thread's name (wait -> waited of the same thread). HotSpot fires these probes only
 * with -XX:+DTraceMonitorProbes; without it they cost nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "inflight.bpf.h"
#include "monitors.h"
#include "stacks.bpf.h"

/* Set by the loader before load: monitor classes per JVM (a JVM's own maxClasses in
 * jvm_limits may lower it). */
const volatile __u32 max_names = 20;
/* Set by the loader before load: (class, thread name) pairs per JVM (--max-thread-names; a
 * JVM's own maxThreadNames in jvm_limits may lower it). */
const volatile __u32 max_thread_names = 50;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct name_key);
	__type(value, struct mon_stat);
} mon_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* resized by the loader: MAX_JVMS * (max_thread_names + max_names + 1), the named pairs
	 * and one "other" per class */
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mon_thread_key);
	__type(value, __u64);
} mon_threads SEC(".maps");

/* Per-JVM count of (class, thread name) pairs named in mon_threads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} mon_thread_budget SEC(".maps");

/* Per-JVM count of monitor__contended__exit hits while the on-demand holder probe is attached:
 * what keeps it attached (few) or sends it into its pause (many; src/holders.rs). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u64);
} mon_exits SEC(".maps");

/* In-flight table MON_TABLE_INFLIGHT (inflight.bpf.h): one entry per blocked thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_INFLIGHT_MAX); /* resized by the loader (monitors.h) */
	__type(key, struct inflight_key);
	__type(value, struct mon_inflight);
} mon_inflight SEC(".maps");

/* Classes waited on per JVM (a set: the value is unused), bounded by wait_class_budget. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct name_key);
	__type(value, __u32);
} wait_classes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader, as mon_threads */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mon_thread_key);
	__type(value, struct mon_wait);
} mon_waits SEC(".maps");

/* Per-JVM counts of classes in wait_classes and of (class, thread) pairs named in mon_waits. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} wait_class_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} wait_thread_budget SEC(".maps");

/* In-flight table MON_TABLE_WAIT (inflight.bpf.h): one entry per waiting thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WAIT_INFLIGHT_MAX); /* resized by the loader (monitors.h) */
	__type(key, struct inflight_key);
	__type(value, struct wait_inflight);
} wait_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mon_scratch);
} mon_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mon_stat);
} mon_zero SEC(".maps");

/* The (class, thread name) pair of the current thread in `pairs` for the class named by the
 * probe's arguments 2 and 3 (class name, length; every monitor probe has them): the class
 * bounded per JVM in `classes` (budget `class_budget`, the JVM's class limit; may become
 * "other"), then the pair, whose class is the bounded one, in `pairs` (budget `pair_budget`,
 * the JVM's thread-name limit; its thread name may become "other"). *k holds the pair as
 * counted; NULL when the class or the pair found no room (a map error). */
static __always_inline void *class_thread_lookup(struct pt_regs *ctx, __u32 slot, struct mon_thread_key *k, void *classes,
						 void *class_budget, const void *class_zero, void *pairs, void *pair_budget,
						 const void *pair_zero)
{
	long name = 0, len = 0;
	bpf_usdt_arg(ctx, 2, &name);
	bpf_usdt_arg(ctx, 3, &len);
	__builtin_memset(k, 0, sizeof(*k));
	k->cls.slot = slot;
	read_name(k->cls.name, (const void *)name, len);
	if (!budgeted_lookup(classes, class_budget, &k->cls, class_zero, jvm_limit(slot, classes, max_names)))
		return NULL;
	char comm[COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	fold(k->thread_name, comm, COMM_LEN, COMM_LEN);
	return budgeted_lookup_at(pairs, pair_budget, k, slot, k->thread_name, COMM_LEN, pair_zero,
				  jvm_limit(slot, thread_names, max_thread_names));
}

/* hotspot:monitor__contended__enter(java tid, monitor, class name, class name length), in the
 * thread that must wait. */
SEC("usdt")
int monitor_enter(struct pt_regs *ctx)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_ENTER);
	capture_stack(ctx, slot, STACK_KIND_MONITOR_WAIT);
	struct mon_scratch *sc = bpf_map_lookup_elem(&mon_scratch, &zero);
	struct mon_stat *init = bpf_map_lookup_elem(&mon_zero, &zero);
	if (!sc || !init)
		return 0;
	/* The class in mon_stats (its histogram), the enter under (class, thread name). */
	__u64 none = 0;
	__u64 *n = class_thread_lookup(ctx, slot, &sc->pair, &mon_stats, &name_budget, init, &mon_threads,
				       &mon_thread_budget, &none);
	if (n)
		__sync_fetch_and_add(n, 1);
	struct mon_inflight *in = &sc->in;
	in->key = sc->pair.cls;
	in->begin_ns = bpf_ktime_get_ns();
	struct inflight_key k = inflight_key_of(slot);
	inflight_put(&mon_inflight, MON_TABLE_INFLIGHT, &k, in);
	return 0;
}

/* hotspot:monitor__contended__entered(same arguments): the thread owns the monitor. */
SEC("usdt")
int monitor_entered(struct pt_regs *ctx)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct mon_inflight *in = bpf_map_lookup_elem(&mon_inflight, &k);
	if (!in)
		return 0; /* blocked before the attach, or its enter found no room */
	__u64 ns = bpf_ktime_get_ns() - in->begin_ns;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_ENTERED);
	struct mon_stat *st = bpf_map_lookup_elem(&mon_stats, &in->key);
	if (st)
		hist_add(&st->blocked, ns);
	inflight_done(&mon_inflight, MON_TABLE_INFLIGHT, &k);
	return 0;
}

/* hotspot:monitor__contended__exit(same arguments): the owner releases a monitor another
 * thread waits for; only its stack is taken (the holder's code, kind monitor_hold). */
SEC("usdt")
int monitor_exit(struct pt_regs *ctx)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_EXIT);
	__u64 *exits = bpf_map_lookup_elem(&mon_exits, &slot);
	if (exits)
		__sync_fetch_and_add(exits, 1);
	capture_stack(ctx, slot, STACK_KIND_MONITOR_HOLD);
	return 0;
}

/* hotspot:monitor__wait(java tid, monitor, class name, class name length, timeout ms): fired
 * by ObjectSynchronizer::wait (Object.wait) once the monitor is inflated, before
 * ObjectMonitor::wait. A thread that does not own the monitor: with lightweight locking (the
 * default from JDK 23) the owner check throws before this probe; with legacy stack locking
 * (JDK 11-22) ObjectMonitor::wait throws between the two probes, a wait of a few microseconds. */
SEC("usdt")
int monitor_wait(struct pt_regs *ctx)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_WAIT);
	struct mon_scratch *sc = bpf_map_lookup_elem(&mon_scratch, &zero);
	if (!sc)
		return 0;
	struct wait_inflight *w = &sc->wait;
	__u32 known = 0;
	struct mon_wait none = {};
	struct mon_wait *c = class_thread_lookup(ctx, slot, &w->key, &wait_classes, &wait_class_budget, &known, &mon_waits,
						 &wait_thread_budget, &none);
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->waits, 1);
	w->begin_ns = bpf_ktime_get_ns();
	struct inflight_key k = inflight_key_of(slot);
	inflight_put(&wait_inflight, MON_TABLE_WAIT, &k, w);
	return 0;
}

/* hotspot:monitor__waited(java tid, monitor, class name, class name length): ObjectMonitor::wait
 * returned (notified, timed out, interrupted, or at once), the thread owns the monitor again. */
SEC("usdt")
int monitor_waited(struct pt_regs *ctx)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct wait_inflight *w = bpf_map_lookup_elem(&wait_inflight, &k);
	if (!w)
		return 0; /* waiting since before the attach, or its wait found no room */
	__u64 ns = bpf_ktime_get_ns() - w->begin_ns;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_WAITED);
	struct mon_wait *c = bpf_map_lookup_elem(&mon_waits, &w->key);
	if (c)
		__sync_fetch_and_add(&c->waited_ns, ns);
	inflight_done(&wait_inflight, MON_TABLE_WAIT, &k);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
