/* Idioms every collector shares: the pid filter, the health counters, the histogram,
 * bounded name tables. Included by each <collector>.bpf.c after vmlinux.h. */
#ifndef JVMDIAG_COMMON_BPF_H
#define JVMDIAG_COMMON_BPF_H

#include "jvm.h"

_Static_assert(MAX_JVMS <= (1u << SLOT_BITS), "a slot must fit below the collector bits");

#ifndef THIS_COLLECTOR
#error "define THIS_COLLECTOR (WANTS(COLLECTOR_...), jvm.h) before including common.bpf.h"
#endif

/* Registers are read at fixed offsets: build.rs defines BPF_NO_PRESERVE_ACCESS_INDEX, so
 * vmlinux.h's types carry no CO-RE relocation and libbpf does not load the kernel's BTF
 * (/sys/kernel/btf/vmlinux, 5+ MB) for each object. A uprobe's struct pt_regs is the
 * architecture's user register frame, the same on every kernel (libbpf's USDT argument
 * code uses these offsets too); the asserts fail the build if vmlinux.h says otherwise. */
#if defined(__TARGET_ARCH_x86)
_Static_assert(__builtin_offsetof(struct pt_regs, ax) == 80 && __builtin_offsetof(struct pt_regs, cx) == 88 &&
	       __builtin_offsetof(struct pt_regs, dx) == 96 && __builtin_offsetof(struct pt_regs, si) == 104 &&
	       __builtin_offsetof(struct pt_regs, di) == 112 && __builtin_offsetof(struct pt_regs, r8) == 72 &&
	       __builtin_offsetof(struct pt_regs, r9) == 64 && __builtin_offsetof(struct pt_regs, ip) == 128 &&
	       __builtin_offsetof(struct pt_regs, sp) == 152,
	       "x86-64 struct pt_regs is not the user register frame");
#elif defined(__TARGET_ARCH_arm64)
_Static_assert(__builtin_offsetof(struct user_pt_regs, regs) == 0 && __builtin_offsetof(struct user_pt_regs, sp) == 248 &&
	       __builtin_offsetof(struct user_pt_regs, pc) == 256,
	       "arm64 struct user_pt_regs is not the user register frame");
#endif

/* Host tgid -> JVM slot. One map for all collectors: the loader creates it and every
 * object reuses its fd, so one update starts (and one delete stops) a JVM everywhere. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} traced_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Per-JVM count of distinct names already in the tables (the budget of --max-*-names). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} name_budget SEC(".maps");

static __always_inline void stat_inc(__u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &id);
	if (v)
		*v += 1; /* per-CPU: no atomic needed */
}

/* The slot of the current process, or -1 when it is not a traced JVM or does not want
 * this collector. */
static __always_inline int current_slot(__u32 *slot)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *s = bpf_map_lookup_elem(&traced_pids, &tgid);
	if (!s || !(*s & THIS_COLLECTOR))
		return -1;
	*slot = *s & ((1u << SLOT_BITS) - 1);
	return 0;
}

/* Bucket bounds in ns; the last slot is +Inf. Must match docs/metrics.md and hist.rs. */
static __always_inline __u32 hist_slot(__u64 ns)
{
	const __u64 ms = 1000000ULL;
	if (ns <= 1 * ms) return 0;
	if (ns <= 2500000ULL) return 1;
	if (ns <= 5 * ms) return 2;
	if (ns <= 10 * ms) return 3;
	if (ns <= 25 * ms) return 4;
	if (ns <= 50 * ms) return 5;
	if (ns <= 100 * ms) return 6;
	if (ns <= 250 * ms) return 7;
	if (ns <= 500 * ms) return 8;
	if (ns <= 1000 * ms) return 9;
	if (ns <= 2500 * ms) return 10;
	if (ns <= 5000 * ms) return 11;
	if (ns <= 10000 * ms) return 12;
	if (ns <= 30000 * ms) return 13;
	if (ns <= 60000 * ms) return 14;
	return 15;
}

static __always_inline void hist_add(struct hist *h, __u64 ns)
{
	__u32 i = hist_slot(ns);
	if (i < HIST_SLOTS)
		__sync_fetch_and_add(&h->buckets[i], 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
	__sync_fetch_and_add(&h->count, 1);
}

/* Returns the value for key in a table whose names are bounded per JVM: a name seen
 * before is found; a new one takes one unit of the JVM's budget, and once the budget is
 * spent, new names are counted under "other". Fails (NULL) only if the map is full.
 * `budget` is a per-slot __u32 array (name_budget, or a collector's own). */
static __always_inline void *budgeted_lookup(void *map, void *budget, struct name_key *key,
					     const void *zero, __u32 budget_max)
{
	void *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	__u32 *used = bpf_map_lookup_elem(budget, &key->slot);
	if (!used)
		return NULL;
	if (*used >= budget_max || __sync_fetch_and_add(used, 1) >= budget_max) {
		__builtin_memset(key->name, 0, NAME_LEN);
		__builtin_memcpy(key->name, "other", 6);
		stat_inc(STAT_NAMES_OVERFLOW);
		v = bpf_map_lookup_elem(map, key);
		if (v)
			return v;
	}
	/* NOEXIST: a racing CPU may have inserted the same name; then just look it up. */
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v)
		stat_inc(STAT_MAP_ERRORS);
	return v;
}

/* budgeted_lookup against the shared per-JVM name budget. */
static __always_inline void *bounded_lookup(void *map, struct name_key *key, const void *zero,
					    __u32 budget_max)
{
	return budgeted_lookup(map, &name_budget, key, zero, budget_max);
}

/* Reads a (ptr, len) string from user memory into dst (NAME_LEN, zero-filled). */
static __always_inline void read_name(char *dst, const void *ptr, __s64 len)
{
	if (len <= 0 || !ptr)
		return;
	if (len > NAME_LEN - 1)
		len = NAME_LEN - 1;
	bpf_probe_read_user(dst, len & (NAME_LEN - 1), ptr);
}

/* Names a VM operation by its vtable (uprobe on VMThread::evaluate_operation(VM_Operation*)).
 * Cookie: the loader's file index (high 32 bits) and the probed function's address in the
 * file (low 32 bits), so ip - that = the load bias. */
static __always_inline void vtable_name(void *ctx_ip_regs, const void *op, char *dst)
{
	struct pt_regs *ctx = ctx_ip_regs;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 vptr = 0;
	if (!op || bpf_probe_read_user(&vptr, sizeof(vptr), op))
		return;
	struct vtable_name *vn = (struct vtable_name *)dst;
	vn->tag = VTABLE_TAG;
	vn->file = cookie >> 32;
	vn->rel = vptr - (PT_REGS_IP(ctx) - (cookie & 0xffffffffULL));
}

#endif
