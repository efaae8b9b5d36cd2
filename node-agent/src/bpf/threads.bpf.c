// SPDX-License-Identifier: GPL-2.0
/* Thread starts per JVM and folded thread name, counted in a hash map (no event buffer:
 * nothing is lost at any start rate). One probe per thread start; the common path is a
 * pid lookup, a bounded read of the name, an FNV-1a hash of the folded name and one hash
 * map increment. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "common.bpf.h"
#include "fold.bpf.h"
#include "threads.h"

/* Set by the loader before load. */
const volatile __u32 max_names = 50;
/* FNV-1a hashes of the folded names of HotSpot's hidden threads (0 = unused slot). */
const volatile __u64 hidden_hashes[HIDDEN_MAX] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader: MAX_JVMS * (max_names + 1) */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_hkey);
	__type(value, __u64);
} threads_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by the loader, as threads_counts */
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for what is traced, not the worst case */
	__type(key, struct name_hkey);
	__type(value, struct name_text);
} threads_names SEC(".maps");

struct scratch {
	char raw[NAME_LEN];
	struct name_text folded;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} threads_scratch SEC(".maps");

static __noinline int count_new(struct name_hkey *key, struct scratch *s, __u32 len)
{
	int unit = take_name_unit(&name_budget, key->slot, jvm_limit(key->slot, thread_names, max_names));
	if (unit == NAME_UNIT_NONE)
		return 0;
	__builtin_memset(&s->folded, 0, sizeof(s->folded));
	if (unit == NAME_UNIT_SPENT) {
		key->hash = OTHER_HASH;
		__builtin_memcpy(s->folded.name, "other", 6);
	} else {
		/* Slow path only (a name not seen before): the folded text. */
		fold_loop(s->folded.name, s->raw, len);
	}
	__u64 zero = 0;
	/* NOEXIST: a racing CPU may have inserted the same name first; both then add. */
	bpf_map_update_elem(&threads_names, key, &s->folded, BPF_NOEXIST);
	__u64 *cnt = insert_lookup(&threads_counts, key, &zero);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 0;
}

/* Whether a folded name is one of HotSpot's JVM-internal thread names. */
static __always_inline bool hidden_name(__u64 h)
{
	for (int k = 0; k < HIDDEN_MAX; k++)
		if (hidden_hashes[k] && hidden_hashes[k] == h)
			return true;
	return false;
}

static __always_inline int count_hash(__u32 slot, __u64 h, struct scratch *s, long len)
{
	struct name_hkey key = { .slot = slot, .hash = h };
	__u64 *cnt = bpf_map_lookup_elem(&threads_counts, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		return 0;
	}
	return count_new(&key, s, (__u32)len);
}

/* hotspot:thread__start(name, name_len, java_tid, native_tid, daemon). Arguments are
 * fetched one by one (each costs a spec lookup) and only when needed. */
SEC("usdt")
int thread_start(struct pt_regs *ctx)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + THREADS_PROBE_START);
	long name = 0, len = 0, daemon = 0;
	bpf_usdt_arg(ctx, 0, &name);
	bpf_usdt_arg(ctx, 1, &len);

	struct scratch *s = bpf_map_lookup_elem(&threads_scratch, &zero);
	if (!s)
		return 0;
	if (len < 0 || !name)
		len = 0;
	if (len > NAME_LEN - 1)
		len = NAME_LEN - 1;
	/* The per-CPU scratch still holds the previous event's name: a failed read must count
	 * an empty name, never that one. */
	__builtin_memset(s->raw, 0, NAME_LEN);
	if (len > 0 && bpf_probe_read_user(s->raw, len & (NAME_LEN - 1), (const void *)name))
		len = 0;

	__u64 h = fold(NULL, s->raw, NAME_LEN, len);
	/* HotSpot's JVM-internal threads (hidden from java.threads.started) are daemon
	 * threads the JVM starts under fixed names: compare the folded name's hash. */
	if (hidden_name(h)) {
		bpf_usdt_arg(ctx, 4, &daemon);
		if (daemon) {
			stat_inc(STAT_FILTERED);
			return 0;
		}
	}
	return count_hash(slot, h, s, len);
}

/* Without USDT notes: os::set_native_thread_name(const char *name), counted only when
 * called from JavaThread::thread_main_inner (where HotSpot names every started Java
 * thread after its Java name, next to where thread__start fires). Other callers (the VM
 * thread, GC workers) are told apart by the return address: the attach cookie holds the
 * distance from this function to thread_main_inner (low 32 bits, signed) and
 * thread_main_inner's size (high 32 bits). The daemon flag is not at hand here, so the
 * hidden names are filtered by name alone. */
SEC("uprobe")
int BPF_UPROBE(native_thread_name, const char *name)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__s64 delta = (__s32)(cookie & 0xffffffffULL);
	__u64 size = cookie >> 32;
	__u64 ret = 0;
	if (bpf_probe_read_user(&ret, sizeof(ret), (const void *)PT_REGS_SP(ctx)))
		return 0;
	/* Offset of the return address inside thread_main_inner (wrapping arithmetic). */
	if (ret - (PT_REGS_IP(ctx) + (__u64)delta) >= size)
		return 0;
	stat_inc(STAT_EVENTS_0 + THREADS_PROBE_NATIVE_NAME);
	struct scratch *s = bpf_map_lookup_elem(&threads_scratch, &zero);
	if (!s)
		return 0;
	__builtin_memset(s->raw, 0, NAME_LEN); /* a failed read leaves no previous name behind */
	long len = bpf_probe_read_user_str(s->raw, NAME_LEN, name);
	len = len > 0 ? len - 1 : 0; /* without the NUL; at most NAME_LEN - 1 */
	if (len > NAME_LEN - 1)
		len = NAME_LEN - 1;
	__u64 h = fold(NULL, s->raw, NAME_LEN, len);
	if (hidden_name(h)) {
		stat_inc(STAT_FILTERED);
		return 0;
	}
	return count_hash(slot, h, s, len);
}

/* Alternative: the exported JNI entry, present even in stripped builds. It sees only
 * threads started from Java (Thread.start), without their names. */
SEC("uprobe")
int BPF_UPROBE(jvm_start_thread)
{
	__u32 slot, zero = 0;
	if (current_slot(&slot))
		return 0;
	stat_inc(STAT_EVENTS_0 + THREADS_PROBE_JVM_START);
	struct scratch *s = bpf_map_lookup_elem(&threads_scratch, &zero);
	if (!s)
		return 0;
	__builtin_memcpy(s->raw, "unknown", 7);
	__u64 h = fold(NULL, s->raw, NAME_LEN, 7);
	struct name_hkey key = { .slot = slot, .hash = h };
	__u64 *cnt = bpf_map_lookup_elem(&threads_counts, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		return 0;
	}
	return count_new(&key, s, 7);
}

char LICENSE[] SEC("license") = "GPL";
