// SPDX-License-Identifier: GPL-2.0
/* Contended monitor enters per JVM and monitor class, and the time each thread was
 * blocked (contended enter -> entered of the same thread), as a histogram. HotSpot fires
 * these probes only with -XX:+DTraceMonitorProbes; without it they cost nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "monitors.h"

/* Set by the loader before load: monitor classes per JVM (a JVM's own maxClasses in
 * jvm_limits may lower it). */
const volatile __u32 max_names = 20;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct name_key);
	__type(value, struct mon_stat);
} mon_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MON_INFLIGHT_MAX);
	__type(key, __u32);
	__type(value, struct mon_inflight);
} mon_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mon_inflight);
} mon_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mon_stat);
} mon_zero SEC(".maps");

/* hotspot:monitor__contended__enter(java tid, monitor, class name, class name length). */
SEC("usdt")
int monitor_enter(struct pt_regs *ctx)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_ENTER);
	struct mon_inflight *in = bpf_map_lookup_elem(&mon_scratch, &zero);
	struct mon_stat *init = bpf_map_lookup_elem(&mon_zero, &zero);
	if (!in || !init)
		return 0;
	long name = 0, len = 0;
	bpf_usdt_arg(ctx, 2, &name);
	bpf_usdt_arg(ctx, 3, &len);
	__builtin_memset(&in->key, 0, sizeof(in->key));
	in->key.slot = slot;
	read_name(in->key.name, (const void *)name, len);
	struct mon_stat *st = bounded_lookup(&mon_stats, &in->key, init, jvm_limit(slot, classes, max_names));
	if (st)
		__sync_fetch_and_add(&st->enters, 1);
	in->begin_ns = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&mon_inflight, &tid, in, BPF_ANY);
	return 0;
}

/* hotspot:monitor__contended__entered(same arguments): the thread owns the monitor. */
SEC("usdt")
int monitor_entered(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct mon_inflight *in = bpf_map_lookup_elem(&mon_inflight, &tid);
	if (!in)
		return 0; /* blocked before the attach (or not a traced JVM) */
	__u64 ns = bpf_ktime_get_ns() - in->begin_ns;
	stat_inc(STAT_EVENTS_0 + MON_PROBE_ENTERED);
	struct mon_stat *st = bpf_map_lookup_elem(&mon_stats, &in->key);
	if (st)
		hist_add(&st->blocked, ns);
	bpf_map_delete_elem(&mon_inflight, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
