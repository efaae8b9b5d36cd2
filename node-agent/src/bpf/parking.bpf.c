// SPDX-License-Identifier: GPL-2.0
/* Thread parks (LockSupport.park / Unsafe.park) per JVM and folded thread name: how many
 * and how long, begin -> end of the same thread. Parks can be far more frequent than
 * thread starts, so the common path is small: a pid lookup, bpf_get_current_comm, an
 * FNV-1a hash of at most 15 bytes, one hash map increment and one in-flight entry. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "inflight.bpf.h"
#include "parking.h"
#include "stacks.bpf.h"

/* Set by the loader before load: names per JVM (--max-thread-names; a JVM's own
 * maxThreadNames in jvm_limits may lower it). */
const volatile __u32 max_names = 50;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct park_key);
	__type(value, struct park_count);
} park_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader, as park_counts */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct park_key);
	__type(value, struct park_name);
} park_names SEC(".maps");

/* In-flight table PARK_TABLE_INFLIGHT (inflight.bpf.h): one entry per parked thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PARK_INFLIGHT_MAX); /* resized by the loader (parking.h) */
	__type(key, struct inflight_key);
	__type(value, struct park_inflight);
} park_inflight SEC(".maps");

static __noinline int count_new(struct park_key *key, const char *comm)
{
	struct park_name text = {};
	int unit = take_name_unit(&name_budget, key->slot, jvm_limit(key->slot, thread_names, max_names));
	if (unit == NAME_UNIT_NONE)
		return 0;
	if (unit == NAME_UNIT_SPENT) {
		key->hash = OTHER_HASH;
		__builtin_memcpy(text.name, "other", 6);
	} else {
		fold(text.name, comm, COMM_LEN, COMM_LEN);
	}
	struct park_count zero = {};
	/* NOEXIST: a racing CPU may have inserted the same name first; both then add. A count
	 * without its name is never shown, so a name that did not fit is a map error too. */
	bpf_map_update_elem(&park_names, key, &text, BPF_NOEXIST);
	bpf_map_update_elem(&park_counts, key, &zero, BPF_NOEXIST);
	struct park_count *c = bpf_map_lookup_elem(&park_counts, key);
	if (!c || !bpf_map_lookup_elem(&park_names, key)) {
		stat_inc(STAT_MAP_ERRORS);
		return 0;
	}
	__sync_fetch_and_add(&c->parks, 1);
	return 0;
}

static __always_inline int begin(struct pt_regs *ctx, __u32 probe)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + probe);
	capture_stack(ctx, slot, STACK_KIND_PARK);
	char comm[COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	__u64 h = fold(NULL, comm, COMM_LEN, COMM_LEN);
	struct park_inflight in = { .key = { .slot = slot, .hash = h } };
	struct park_count *c = bpf_map_lookup_elem(&park_counts, &in.key);
	if (c)
		__sync_fetch_and_add(&c->parks, 1);
	else
		count_new(&in.key, comm); /* may turn the key into "other" */
	in.begin_ns = bpf_ktime_get_ns();
	struct inflight_key k = inflight_key_of(slot);
	inflight_put(&park_inflight, PARK_TABLE_INFLIGHT, &k, &in);
	return 0;
}

static __always_inline int end(__u32 probe)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct park_inflight *in = bpf_map_lookup_elem(&park_inflight, &k);
	if (!in)
		return 0; /* parked before the attach, or its begin found no room */
	__u64 ns = bpf_ktime_get_ns() - in->begin_ns;
	struct park_key key = in->key;
	inflight_done(&park_inflight, PARK_TABLE_INFLIGHT, &k);
	stat_inc(STAT_EVENTS_0 + probe);
	struct park_count *c = bpf_map_lookup_elem(&park_counts, &key);
	if (c)
		__sync_fetch_and_add(&c->parked_ns, ns);
	return 0;
}

/* hotspot:thread__park__begin(parker, isAbsolute, time): fired by Unsafe.park before the
 * thread blocks (also when a permit is available and it returns at once). */
SEC("usdt")
int park_begin(struct pt_regs *ctx)
{
	return begin(ctx, PARK_PROBE_BEGIN);
}

/* hotspot:thread__park__end(parker): the same thread returns from Parker::park. */
SEC("usdt")
int park_end(struct pt_regs *ctx)
{
	return end(PARK_PROBE_END);
}

/* Without USDT notes: Parker::park(bool, jlong), which Unsafe_Park calls between the two
 * probes (its only caller), entry and return. */
SEC("uprobe")
int park_begin_sym(struct pt_regs *ctx)
{
	return begin(ctx, PARK_PROBE_BEGIN_SYM);
}

SEC("uretprobe")
int park_end_sym(struct pt_regs *ctx)
{
	return end(PARK_PROBE_END_SYM);
}

char LICENSE[] SEC("license") = "GPL";
