// SPDX-License-Identifier: GPL-2.0
/* Who starts the threads, on demand: attached to one JVM for a bounded window when its
 * thread start rate passes a threshold (src/starters.rs), then detached.
 *
 * JVM_StartThread (the JNI entry of Thread.start) runs in the starting thread; the clone it
 * makes (pthread_create) is seen by sched_process_fork in that thread, with the new
 * thread's tid; the new thread then fires hotspot:thread__start with its name. So a start
 * is counted by (folded thread name, starter's folded native name), and only starts that
 * went through JVM_StartThread while attached are counted. The time from JVM_StartThread's
 * entry to the new thread's thread__start goes into a histogram by folded thread name.
 *
 * Unlike the collectors this object reads a kernel struct (the new task's pid), so it
 * keeps CO-RE relocations (build.rs compiles every object with BPF_NO_PRESERVE_ACCESS_INDEX). */
#undef BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "inflight.bpf.h"
#include "starters.h"
#include "stacks.bpf.h"

/* (thread name, starter) pairs named per JVM (--max-thread-names; a JVM's own
 * maxThreadNames may lower it); the rest are ("other", "other"). */
const volatile __u32 max_pairs = 50;

/* In-flight tables STARTERS_TABLE_STARTING and STARTERS_TABLE_STARTED (inflight.bpf.h),
 * sized by the loader (starters.h). A start whose entry found no room is not attributed. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, STARTERS_PENDING);
	__type(key, struct inflight_key);
	__type(value, struct starter_of);
} starting SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, STARTERS_PENDING);
	__type(key, struct inflight_key);
	__type(value, struct starter_of);
} started SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_pairs + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct starter_key);
	__type(value, __u64);
} starts_by_starter SEC(".maps");

/* start_seconds (starters.h): per JVM and folded thread name, the time from JVM_StartThread's
 * entry to the new thread's thread__start. Its names have their own per-JVM budget of
 * max_pairs (a (thread name, starter) pair takes a unit of name_budget, a thread name one of
 * start_seconds_budget), so one table never spends the other's. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_pairs + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct name_key);
	__type(value, struct hist);
} start_seconds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} start_seconds_budget SEC(".maps");

/* The new thread's raw name, the key it is counted under and the key of its time. */
struct scratch {
	char raw[NAME_LEN];
	struct starter_key key;
	struct name_key time_key;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} starters_scratch SEC(".maps");

/* JVM_StartThread(JNIEnv *env, jobject jthread), in the thread calling Thread.start(). */
SEC("uprobe")
int BPF_UPROBE(starter_enter)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + STARTERS_PROBE_JVM_START);
	capture_stack(ctx, slot, STACK_KIND_THREAD_START);
	/* Stamped after the stack walk: the agent's own work is not the JVM's start time. */
	struct starter_of s = { .slot = slot, .begin_ns = bpf_ktime_get_ns() };
	char comm[COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	fold(s.starter, comm, COMM_LEN, COMM_LEN);
	struct inflight_key k = inflight_key_of(slot);
	inflight_put(&starting, STARTERS_TABLE_STARTING, &k, &s);
	return 0;
}

/* The clone JVM_StartThread makes, in the starting thread: its new thread inherits the
 * starter. Every other fork on the host costs one hash lookup while a window is open. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(starter_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 slot;
	if (current_slot(&slot))
		return 0;
	struct inflight_key k = inflight_key_of(slot);
	struct starter_of *s = bpf_map_lookup_elem(&starting, &k);
	if (!s)
		return 0;
	stat_inc(STAT_EVENTS_0 + STARTERS_PROBE_FORK);
	struct inflight_key child_key = { .slot = slot, .tid = child->pid };
	inflight_put(&started, STARTERS_TABLE_STARTED, &child_key, s);
	inflight_done(&starting, STARTERS_TABLE_STARTING, &k);
	return 0;
}

static __always_inline void count(struct starter_key *k)
{
	__u64 *n = bpf_map_lookup_elem(&starts_by_starter, k);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return;
	}
	int unit = take_name_unit(&name_budget, k->slot, jvm_limit(k->slot, thread_names, max_pairs));
	if (unit == NAME_UNIT_NONE)
		return;
	if (unit == NAME_UNIT_SPENT) {
		__builtin_memset(k->thread_name, 0, NAME_LEN);
		__builtin_memcpy(k->thread_name, "other", 6);
		__builtin_memset(k->starter, 0, COMM_LEN);
		__builtin_memcpy(k->starter, "other", 6);
	}
	__u64 zero = 0;
	n = insert_lookup(&starts_by_starter, k, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* hotspot:thread__start(name, name_len, java_tid, native_tid, daemon), in the new thread:
 * counted when its clone came from JVM_StartThread. */
SEC("usdt")
int BPF_USDT(starter_thread_start, void *name, long len)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct inflight_key k = inflight_key_of(slot);
	struct starter_of *s = bpf_map_lookup_elem(&started, &k);
	if (!s)
		return 0; /* started by the JVM itself, before the window, or found no room */
	stat_inc(STAT_EVENTS_0 + STARTERS_PROBE_START);
	struct scratch *sc = bpf_map_lookup_elem(&starters_scratch, &zero);
	if (!sc)
		return 0;
	__builtin_memset(sc, 0, sizeof(*sc));
	sc->key.slot = slot;
	__builtin_memcpy(sc->key.starter, s->starter, COMM_LEN);
	__u64 ns = now > s->begin_ns ? now - s->begin_ns : 0;
	inflight_done(&started, STARTERS_TABLE_STARTED, &k); /* s is gone from here on */
	if (len > NAME_LEN - 1)
		len = NAME_LEN - 1;
	if (len > 0 && name && bpf_probe_read_user(sc->raw, len & (NAME_LEN - 1), name))
		len = 0;
	if (len < 0)
		len = 0;
	fold_loop(sc->key.thread_name, sc->raw, (__u32)len);
	/* The time's key before count(), which may turn the pair into ("other", "other"). */
	sc->time_key.slot = slot;
	__builtin_memcpy(sc->time_key.name, sc->key.thread_name, NAME_LEN);
	count(&sc->key);
	struct hist init = {};
	struct hist *h = budgeted_lookup(&start_seconds, &start_seconds_budget, &sc->time_key, &init,
					 jvm_limit(slot, thread_names, max_pairs));
	if (h)
		hist_add(h, ns);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
