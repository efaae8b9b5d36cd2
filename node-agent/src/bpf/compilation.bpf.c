// SPDX-License-Identifier: GPL-2.0
/* JIT compilations and the code cache, per JVM.
 *
 * - hotspot:method__compile__begin/end (no JVM flag needed: HotSpot fires them from
 *   CompileBroker::invoke_compiler_on_method unconditionally): compilations and their
 *   durations per compiler, and compilations per method for methods compiled again and
 *   again (bounded per JVM). Without USDT notes: a uprobe on invoke_compiler_on_method
 *   (counts and durations per compiler, named from the compiler thread; no methods).
 * - CodeCache::report_codemem_full: the JVM's "CodeCache is full" moments (the call that
 *   prints the warning and increments the heap's full_count that jcmd Compiler.codecache
 *   shows).
 * - CodeHeapPool::get_memory_usage returns: used / committed / max per code heap, as
 *   HotSpot computes them for its memory pools. HotSpot calls it after every code cache
 *   allocation (MemoryService::track_code_cache_memory_usage), so the values are those of
 *   the last allocation; the loader reads the heap's current use at each scrape from the
 *   JVM's memory (see code_heap.rs), so frees show too. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "inflight.bpf.h"
#include "compilation.h"

/* Set by the loader before load. */
const volatile __u32 max_compilers = 8;   /* distinct compiler names per JVM */
const volatile __u32 hot_budget = 256;    /* distinct methods counted by name per JVM */
const volatile __u32 hot_threshold = 3;   /* compilations before a method gets its own entry */
const volatile __u32 max_heaps = 8;       /* distinct code heaps per JVM */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_compilers + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_key);
	__type(value, struct comp_stats);
} comp_stats SEC(".maps");

/* Methods seen fewer than hot_threshold times: a staging area, an LRU by design, so no JVM
 * can fill it (sized by the loader, 16,384 by default). A method evicted before its
 * hot_threshold-th compilation starts counting again, so its promotion comes later, and its
 * earlier compilations are in jvmdiag_compilations_total only. The kernel counts no eviction:
 * the programs count what they insert and delete here (seen_counts), and the loader derives
 * the evictions from those, the entries it deletes itself and the entries present. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct name_key);
	__type(value, __u64);
} method_seen SEC(".maps");

/* Per JVM slot: method_seen entries inserted and deleted by the programs (struct seen_count). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, struct seen_count);
} seen_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * hot_budget */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct name_key);
	__type(value, __u64);
} method_hot SEC(".maps");

/* Per-JVM budgets: distinct methods in method_hot, distinct heaps in heap_usage
 * (compiler names use name_budget from common.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} method_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} heap_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * max_heaps */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_key);
	__type(value, struct heap_value);
} heap_usage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u64);
} code_full SEC(".maps");

/* In-flight tables COMP_TABLE_COMPILE and COMP_TABLE_POOL (inflight.bpf.h), sized by the
 * loader (compilation.h). A compilation whose begin found no room is counted untimed. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COMP_INFLIGHT_MAX);
	__type(key, struct inflight_key);
	__type(value, struct comp_inflight);
} comp_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COMP_INFLIGHT_MAX);
	__type(key, struct inflight_key);
	__type(value, struct pool_inflight);
} pool_inflight SEC(".maps");

struct scratch {
	char buf[2 * NAME_LEN];
	struct name_key key;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} comp_scratch SEC(".maps");

static __always_inline struct scratch *scratch(__u32 slot)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&comp_scratch, &zero);
	if (!s)
		return NULL;
	__builtin_memset(s, 0, sizeof(*s));
	s->key.slot = slot;
	return s;
}

static __always_inline void count_compilation(struct name_key *key, __u64 begin_ns)
{
	struct comp_stats init = {};
	struct comp_stats *st = bounded_lookup(&comp_stats, key, &init, max_compilers);
	if (!st)
		return;
	if (begin_ns) {
		__u64 now = bpf_ktime_get_ns();
		hist_add(&st->timed, now > begin_ns ? now - begin_ns : 0);
	} else {
		__sync_fetch_and_add(&st->untimed, 1);
	}
}

static __always_inline __u64 take_begin(__u32 slot)
{
	struct inflight_key k = inflight_key_of(slot);
	struct comp_inflight *in = bpf_map_lookup_elem(&comp_inflight, &k);
	if (!in)
		return 0;
	__u64 t = in->begin_ns;
	inflight_done(&comp_inflight, COMP_TABLE_COMPILE, &k);
	return t;
}

static __always_inline void mark_begin(__u32 slot)
{
	struct inflight_key k = inflight_key_of(slot);
	struct comp_inflight in = { .begin_ns = bpf_ktime_get_ns() };
	inflight_put(&comp_inflight, COMP_TABLE_COMPILE, &k, &in);
}

/* "pkg/Class" + "." + "method" into s->buf (at most NAME_LEN - 1 bytes, NUL-padded). A class
 * name too long to fit loses its leading characters: the simple name and method stay. */
static __always_inline void method_name(struct scratch *s, const char *cls, long clen,
					const char *m, long mlen)
{
	if (mlen < 0 || !m)
		mlen = 0;
	if (mlen > NAME_LEN - 2)
		mlen = NAME_LEN - 2;
	if (clen < 0 || !cls)
		clen = 0;
	long room = NAME_LEN - 2 - mlen;
	long keep = clen < room ? clen : room;
	long skip = clen - keep;
	if (keep > 0)
		bpf_probe_read_user(s->buf, keep & (NAME_LEN - 1), cls + skip);
	s->buf[keep & (NAME_LEN - 1)] = '.';
	if (mlen > 0)
		bpf_probe_read_user(s->buf + ((keep + 1) & (NAME_LEN - 1)), mlen & (NAME_LEN - 1), m);
}

static __always_inline void count_method(struct scratch *s)
{
	__builtin_memcpy(s->key.name, s->buf, NAME_LEN);
	s->key.name[NAME_LEN - 1] = 0;
	struct name_key *k = &s->key;
	__u64 *c = bpf_map_lookup_elem(&method_hot, k);
	if (c) {
		__sync_fetch_and_add(c, 1);
		return;
	}
	__u64 n = 1;
	__u64 *seen = bpf_map_lookup_elem(&method_seen, k);
	struct seen_count *sc = bpf_map_lookup_elem(&seen_counts, &k->slot);
	if (seen)
		n = __sync_fetch_and_add(seen, 1) + 1;
	else if (bpf_map_update_elem(&method_seen, k, &n, BPF_NOEXIST) == 0 && sc)
		__sync_fetch_and_add(&sc->inserted, 1);
	if (n < hot_threshold)
		return;
	/* Compiled again and again: give it its own exact counter, if the JVM has budget. */
	if (take_name_unit(&method_budget, k->slot, hot_budget) != NAME_UNIT_TAKEN)
		return;
	if (bpf_map_update_elem(&method_hot, k, &n, BPF_NOEXIST) == 0) {
		/* Not found: evicted since the lookup above, which the loader counts as such. */
		if (bpf_map_delete_elem(&method_seen, k) == 0 && sc)
			__sync_fetch_and_add(&sc->removed, 1);
	} else if (!bpf_map_lookup_elem(&method_hot, k))
		stat_inc(STAT_MAP_ERRORS); /* not a racing CPU's insert of the same method: full */
}

SEC("usdt")
int BPF_USDT(compile_begin, void *comp, long comp_len, void *cls, long cls_len, void *m, long m_len)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_BEGIN);
	mark_begin(slot);
	return 0;
}

SEC("usdt")
int BPF_USDT(compile_end, void *comp, long comp_len, void *cls, long cls_len, void *m, long m_len)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_END);
	__u64 begin = take_begin(slot);
	struct scratch *s = scratch(slot);
	if (!s)
		return 0;
	s->key.flags = COMP_FLAG_USDT;
	read_name(s->key.name, comp, comp_len);
	count_compilation(&s->key, begin);
	s->key.flags = 0;

	__builtin_memset(s->key.name, 0, NAME_LEN);
	method_name(s, cls, cls_len, m, m_len);
	count_method(s);
	return 0;
}

/* Without USDT notes: the function that fires those probes. */
SEC("uprobe")
int BPF_UPROBE(invoke_compiler)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_INVOKE);
	mark_begin(slot);
	return 0;
}

SEC("uretprobe")
int BPF_URETPROBE(invoke_compiler_ret)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_INVOKE_RET);
	__u64 begin = take_begin(slot);
	struct scratch *s = scratch(slot);
	if (!s)
		return 0;
	/* HotSpot names compiler threads "<compiler> CompilerThread<N>": keep "<compiler>". */
	char comm[16] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 15; i++) {
		if (comm[i] == ' ' || comm[i] == 0)
			break;
		s->key.name[i] = comm[i];
	}
	count_compilation(&s->key, begin);
	return 0;
}

SEC("uprobe")
int BPF_UPROBE(codemem_full)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_FULL);
	__u64 *n = bpf_map_lookup_elem(&code_full, &slot);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

/* MemoryUsage CodeHeapPool::get_memory_usage(): returned through a hidden pointer (first
 * argument), `this` second. */
SEC("uprobe")
int BPF_UPROBE(pool_usage, void *sret, void *pool)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct pool_inflight in = { .sret = (__u64)sret, .pool = (__u64)pool, .layout = bpf_get_attach_cookie(ctx) };
	inflight_put(&pool_inflight, COMP_TABLE_POOL, &k, &in);
	return 0;
}

SEC("uretprobe")
int BPF_URETPROBE(pool_usage_ret)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct pool_inflight *in = bpf_map_lookup_elem(&pool_inflight, &k);
	if (!in)
		return 0;
	struct pool_inflight call = *in;
	inflight_done(&pool_inflight, COMP_TABLE_POOL, &k);
	stat_inc(STAT_EVENTS_0 + COMP_PROBE_POOL_RET);

	struct memory_usage mu;
	if (bpf_probe_read_user(&mu, sizeof(mu), (void *)call.sret))
		return 0;
	struct scratch *s = scratch(slot);
	if (!s)
		return 0;
	/* MemoryPool's first field after the vtable pointer: const char* _name. */
	__u64 name_ptr = 0;
	if (bpf_probe_read_user(&name_ptr, sizeof(name_ptr), (void *)(call.pool + 8)) || !name_ptr ||
	    bpf_probe_read_user_str(s->key.name, NAME_LEN, (void *)name_ptr) <= 0) {
		__builtin_memset(s->key.name, 0, NAME_LEN);
		__builtin_memcpy(s->key.name, "unknown", 8);
	}
	struct heap_value zero = {};
	struct heap_value *v = budgeted_lookup(&heap_usage, &heap_budget, &s->key, &zero, max_heaps);
	if (v) {
		v->mu = mu;
		v->pool = call.pool;
		v->tgid = bpf_get_current_pid_tgid() >> 32;
		v->layout = (__u32)call.layout;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
