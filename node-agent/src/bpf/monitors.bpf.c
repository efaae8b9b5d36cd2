// SPDX-License-Identifier: GPL-2.0
/* Contended monitor enters per JVM, monitor class and waiting thread's name, and the time
 * each thread was blocked (contended enter -> entered of the same thread) per class, as a
 * histogram. HotSpot fires these probes only with -XX:+DTraceMonitorProbes; without it they
 * cost nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "inflight.bpf.h"
#include "monitors.h"

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

/* In-flight table MON_TABLE_INFLIGHT (inflight.bpf.h): one entry per blocked thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_INFLIGHT_MAX); /* resized by the loader (monitors.h) */
	__type(key, struct inflight_key);
	__type(value, struct mon_inflight);
} mon_inflight SEC(".maps");

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

/* hotspot:monitor__contended__enter(java tid, monitor, class name, class name length), in the
 * thread that must wait. */
SEC("usdt")
int monitor_enter(struct pt_regs *ctx)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_ENTER);
	struct mon_scratch *sc = bpf_map_lookup_elem(&mon_scratch, &zero);
	struct mon_stat *init = bpf_map_lookup_elem(&mon_zero, &zero);
	if (!sc || !init)
		return 0;
	struct mon_inflight *in = &sc->in;
	long name = 0, len = 0;
	bpf_usdt_arg(ctx, 2, &name);
	bpf_usdt_arg(ctx, 3, &len);
	__builtin_memset(&in->key, 0, sizeof(in->key));
	in->key.slot = slot;
	read_name(in->key.name, (const void *)name, len);
	/* The class, bounded per JVM (may become "other"); only a class in mon_stats is counted,
	 * so the pairs' classes are bounded too. */
	if (bounded_lookup(&mon_stats, &in->key, init, jvm_limit(slot, classes, max_names))) {
		struct mon_thread_key *k = &sc->pair;
		k->cls = in->key;
		__builtin_memset(k->thread_name, 0, COMM_LEN);
		char comm[COMM_LEN] = {};
		bpf_get_current_comm(comm, sizeof(comm));
		fold(k->thread_name, comm, COMM_LEN, COMM_LEN);
		__u64 none = 0;
		__u64 *n = budgeted_lookup_at(&mon_threads, &mon_thread_budget, k, slot, k->thread_name, COMM_LEN, &none,
					      jvm_limit(slot, thread_names, max_thread_names));
		if (n)
			__sync_fetch_and_add(n, 1);
	}
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

char LICENSE[] SEC("license") = "GPL";
