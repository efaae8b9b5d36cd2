// SPDX-License-Identifier: GPL-2.0
/* Safepoint pauses and time to safepoint per JVM and VM operation, as histograms in
 * hash maps. The durations are the very values HotSpot adds to its own counters
 * (sun.rt.safepointSyncTime, sun.rt.safepointTime): the arguments of
 * RuntimeService::record_safepoint_synchronized / record_safepoint_end. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "safepoints.h"

const volatile __u32 max_names = 64;
/* HotSpot ticks per second (sun.os.hrt.frequency; 1e9 on Linux): ns = ticks * 1e9 / hz. */
const volatile __u64 ticks_per_sec = 1000000000ULL;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, struct sp_state);
} sp_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_key);
	__type(value, struct hist);
} sp_pause SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_key);
	__type(value, struct hist);
} sp_sync SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct name_key);
} sp_scratch SEC(".maps");

static __always_inline __u64 ticks_to_ns(__u64 t)
{
	if (ticks_per_sec == 1000000000ULL)
		return t;
	return ticks_per_sec ? t * 1000000000ULL / ticks_per_sec : t;
}

static __always_inline struct sp_state *state(__u32 *slot)
{
	if (current_slot(slot))
		return NULL;
	return bpf_map_lookup_elem(&sp_state, slot);
}

static __always_inline int begin(__u32 probe)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st)
		return 0;
	stat_inc(STAT_EVENTS_0 + probe);
	st->begin_ns = bpf_ktime_get_ns();
	st->sync_ns = 0;
	st->sync_arg = 0;
	st->has_sync = 0;
	st->active = 1;
	__builtin_memset(st->op, 0, NAME_LEN);
	return 0;
}

SEC("usdt")
int BPF_USDT(safepoint_begin)
{
	return begin(SP_PROBE_BEGIN);
}

/* Without USDT notes: SafepointSynchronize::begin(). */
SEC("uprobe")
int BPF_UPROBE(safepoint_begin_sym)
{
	return begin(SP_PROBE_BEGIN_SYM);
}

SEC("uprobe")
int BPF_UPROBE(safepoint_synchronized, long sync_ticks)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st)
		return 0;
	stat_inc(STAT_EVENTS_0 + SP_PROBE_SYNC);
	st->sync_ns = bpf_ktime_get_ns();
	st->sync_arg = sync_ticks > 0 ? sync_ticks : 0;
	st->has_sync = 1;
	return 0;
}

/* The first VM operation evaluated inside the safepoint names it. */
SEC("usdt")
int BPF_USDT(safepoint_vmop, void *name, long len, long mode)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st || !st->active || st->op[0])
		return 0;
	stat_inc(STAT_EVENTS_0 + SP_PROBE_VMOP);
	read_name(st->op, name, len);
	return 0;
}

/* Without USDT notes: VMThread::evaluate_operation(VM_Operation *op) names the safepoint
 * by op's vtable (resolved by the loader). */
SEC("uprobe")
int BPF_UPROBE(safepoint_vmop_sym, void *vmthread, void *op)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st || !st->active || st->op[0])
		return 0;
	stat_inc(STAT_EVENTS_0 + SP_PROBE_VMOP_SYM);
	vtable_name(ctx, op, st->op);
	return 0;
}

static __always_inline void record(__u32 slot, struct sp_state *st, __u64 pause_ns)
{
	__u32 zero = 0;
	struct name_key *k = bpf_map_lookup_elem(&sp_scratch, &zero);
	if (!k)
		return;
	__builtin_memset(k, 0, sizeof(*k));
	k->slot = slot;
	if (st->op[0])
		__builtin_memcpy(k->name, st->op, NAME_LEN);
	else
		__builtin_memcpy(k->name, "none", 5);

	struct hist init = {};
	struct hist *h = bounded_lookup(&sp_pause, k, &init, max_names);
	if (h)
		hist_add(h, pause_ns);
	/* Same key (possibly folded to "other" above) for the sync histogram. */
	__u64 sync_ns = st->has_sync ? ticks_to_ns(st->sync_arg) : 0;
	h = bpf_map_lookup_elem(&sp_sync, k);
	if (!h) {
		bpf_map_update_elem(&sp_sync, k, &init, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&sp_sync, k);
	}
	if (h)
		hist_add(h, sync_ns);
	else
		stat_inc(STAT_MAP_ERRORS);
	st->active = 0;
}

SEC("uprobe")
int BPF_UPROBE(safepoint_end, long safepoint_ticks)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st || !st->active)
		return 0;
	stat_inc(STAT_EVENTS_0 + SP_PROBE_END);
	record(slot, st, ticks_to_ns(safepoint_ticks > 0 ? safepoint_ticks : 0));
	return 0;
}

/* When record_safepoint_end is not in .symtab: our own clock, sync -> end, from USDT
 * safepoint__end or, without notes, SafepointSynchronize::end(). */
static __always_inline int own_end(__u32 probe)
{
	__u32 slot;
	struct sp_state *st = state(&slot);
	if (!st || !st->active)
		return 0;
	stat_inc(STAT_EVENTS_0 + probe);
	__u64 now = bpf_ktime_get_ns();
	__u64 from = st->has_sync ? st->sync_ns : st->begin_ns;
	record(slot, st, now - from);
	return 0;
}

SEC("usdt")
int BPF_USDT(safepoint_end_usdt)
{
	return own_end(SP_PROBE_END_USDT);
}

SEC("uprobe")
int BPF_UPROBE(safepoint_end_sym)
{
	return own_end(SP_PROBE_END_SYM);
}

char LICENSE[] SEC("license") = "GPL";
