// SPDX-License-Identifier: GPL-2.0
/* Duration of every VM operation per JVM, operation name and whether it ran at a
 * safepoint, as histograms in a hash map; and who requested each operation (requests per
 * JVM, operation and requesting thread's folded native name). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "vmops.h"
#include "stacks.bpf.h"

const volatile __u32 max_names = 64;
/* Requesters named per JVM (--max-thread-names; a JVM's own maxThreadNames may lower it). */
const volatile __u32 max_requesters = 50;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, struct vmop_state);
} vmop_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_key);
	__type(value, struct hist);
} vmops_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct name_key);
} vmops_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_requesters + max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct vmop_req_key);
	__type(value, __u64);
} vmop_requests SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, struct vmop_req_budget);
} vmop_req_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vmop_req_key);
} vmop_req_scratch SEC(".maps");

static __always_inline void count_request(struct vmop_req_key *k)
{
	__u64 *n = bpf_map_lookup_elem(&vmop_requests, k);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return;
	}
	struct vmop_req_budget *b = bpf_map_lookup_elem(&vmop_req_budget, &k->slot);
	if (!b)
		return;
	__u32 pairs = jvm_limit(k->slot, thread_names, max_requesters);
	if (b->pairs >= pairs || __sync_fetch_and_add(&b->pairs, 1) >= pairs) {
		__builtin_memset(k->requester, 0, COMM_LEN);
		__builtin_memcpy(k->requester, "other", 6);
		stat_inc(STAT_NAMES_OVERFLOW);
		n = bpf_map_lookup_elem(&vmop_requests, k);
		if (n) {
			__sync_fetch_and_add(n, 1);
			return;
		}
		if (b->others >= max_names || __sync_fetch_and_add(&b->others, 1) >= max_names) {
			__builtin_memset(k->op, 0, NAME_LEN);
			__builtin_memcpy(k->op, "other", 6);
		}
	}
	__u64 zero = 0;
	n = insert_lookup(&vmop_requests, k, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* hotspot:vmops__request(name, len, mode): fired by VMThread::execute in the thread that
 * requests the operation, before it is queued. Requests are rare (each is a VM operation),
 * so the name is folded on every event: a pid lookup, bpf_get_current_comm, a bounded read
 * of the operation's name and one hash map increment. */
SEC("usdt")
int BPF_USDT(vmop_request, void *name, long len, long mode)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + VMOPS_PROBE_REQUEST);
	capture_stack(ctx, slot, STACK_KIND_VM_OPERATION);
	struct vmop_req_key *k = bpf_map_lookup_elem(&vmop_req_scratch, &zero);
	if (!k)
		return 0;
	__builtin_memset(k, 0, sizeof(*k));
	k->slot = slot;
	read_name(k->op, name, len);
	char comm[COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	fold(k->requester, comm, COMM_LEN, COMM_LEN);
	count_request(k);
	return 0;
}

SEC("usdt")
int BPF_USDT(vmop_begin, void *name, long len, long mode)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct vmop_state *st = bpf_map_lookup_elem(&vmop_state, &slot);
	if (!st)
		return 0;
	stat_inc(STAT_EVENTS_0 + VMOPS_PROBE_BEGIN);
	st->begin_ns = bpf_ktime_get_ns();
	st->active = 1;
	/* HotSpot passes evaluate_at_safepoint() ? 0 : 1. */
	st->at_safepoint = mode == 0;
	return 0;
}

/* Ends the operation in flight; the name is read from (name, len), or, when name is
 * NULL, copied from the vtable name taken at begin (uprobe mode). */
static __always_inline int end(__u32 probe, const void *name, long len)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	struct vmop_state *st = bpf_map_lookup_elem(&vmop_state, &slot);
	if (!st || !st->active)
		return 0;
	stat_inc(STAT_EVENTS_0 + probe);
	st->active = 0;
	__u64 ns = bpf_ktime_get_ns() - st->begin_ns;

	struct name_key *k = bpf_map_lookup_elem(&vmops_scratch, &zero);
	if (!k)
		return 0;
	__builtin_memset(k, 0, sizeof(*k));
	k->slot = slot;
	k->flags = st->at_safepoint;
	if (name)
		read_name(k->name, name, len);
	else
		__builtin_memcpy(k->name, st->op, NAME_LEN);
	struct hist init = {};
	struct hist *h = bounded_lookup(&vmops_hist, k, &init, max_names);
	if (h)
		hist_add(h, ns);
	return 0;
}

SEC("usdt")
int BPF_USDT(vmop_end, void *name, long len, long mode)
{
	return end(VMOPS_PROBE_END, name, len);
}

/* Without USDT notes: VMThread::evaluate_operation(VM_Operation *op) entry and return
 * (where HotSpot fires vmops__begin/end); the operation is named by its vtable, and it
 * ran at a safepoint when it ran between SafepointSynchronize::begin() and end(). */
SEC("uprobe")
int BPF_UPROBE(vmop_begin_sym, void *vmthread, void *op)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct vmop_state *st = bpf_map_lookup_elem(&vmop_state, &slot);
	if (!st)
		return 0;
	stat_inc(STAT_EVENTS_0 + VMOPS_PROBE_BEGIN_SYM);
	__builtin_memset(st->op, 0, NAME_LEN);
	vtable_name(ctx, op, st->op);
	st->at_safepoint = st->in_safepoint;
	st->begin_ns = bpf_ktime_get_ns();
	st->active = 1;
	return 0;
}

SEC("uretprobe")
int BPF_URETPROBE(vmop_end_sym)
{
	return end(VMOPS_PROBE_END_SYM, NULL, 0);
}

static __always_inline int set_safepoint(__u32 on)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct vmop_state *st = bpf_map_lookup_elem(&vmop_state, &slot);
	if (st)
		st->in_safepoint = on;
	return 0;
}

SEC("uprobe")
int BPF_UPROBE(vmop_sp_begin)
{
	return set_safepoint(1);
}

SEC("uprobe")
int BPF_UPROBE(vmop_sp_end)
{
	return set_safepoint(0);
}

char LICENSE[] SEC("license") = "GPL";
