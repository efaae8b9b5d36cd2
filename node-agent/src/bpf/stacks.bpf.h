/* Culprit stacks: walks the current thread's Java frames in the kernel and counts the stack.
 * Included (after fold.bpf.h) by each object whose probe runs in the culprit thread (the
 * starter, the requester, the waiter, the holder at release, the parker), whose folded native
 * name the stack is counted under; its maps are the agent's, shared by every such object
 * (src/stacks.rs), so one JVM's stacks, budget and layout are one set whichever probe took them.
 *
 * The walk starts at the thread's last Java frame, which HotSpot records in the JavaThread's
 * frame anchor whenever Java code calls into the VM (a native method, a runtime call): every
 * probe here runs inside such a call, so no native frame is unwound. The JavaThread is the
 * thread-local Thread::_thr_current of libjvm. From there each frame is one of:
 *  - interpreted (pc in the interpreter's code): Method* and bytecode pointer in the frame at
 *    fixed slots of the x86-64 interpreter frame, the caller through the saved frame pointer;
 *  - compiled or a stub (pc in a code heap): its CodeBlob found through the heap's segment
 *    map, the caller at sp + the blob's frame size; a compiled frame HotSpot deoptimized while
 *    it waited for its callee returns to its nmethod's deopt handler, and is recorded at the
 *    pc it was at, which HotSpot saved in the frame (deopt_original_pc);
 *  - an entry frame (pc = the call stub's return address): the VM called Java there. Its
 *    JavaCallWrapper's frame anchor holds the Java frames that called into the VM (class
 *    loading, a class initializer, a JNI upcall): the walk goes on from them, as HotSpot's
 *    own walk does; an empty anchor means the thread's first Java frame was its callee, and
 *    the walk is complete.
 * Every offset comes from the JVM's own VMStructs tables (src/stacks.rs writes them into
 * stack_layout); every read is of untrusted memory and may fail, which ends the walk and is
 * counted by reason (stack_stats). Stacks are counted in stack_counts by a hash of their frames;
 * user space names the frames and drains the table at each read (so a JVM's share bounds the
 * distinct stacks between two reads, not over its life). */
#ifndef JVMDIAG_STACKS_BPF_H
#define JVMDIAG_STACKS_BPF_H

#include "stacks.h"

/* Samples per second per JVM (--stack-samples-per-second; a JVM's own limit may lower it).
 * 0: no stacks. */
const volatile __u32 stack_rate = 0;
/* Distinct stacks per JVM in stack_counts (--max-stacks-per-jvm). */
const volatile __u32 stack_share = 64;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, struct stack_layout);
} stack_layout SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS * STACK_KINDS);
	__type(key, __u32);
	__type(value, struct stack_tokens);
} stack_tokens SEC(".maps");

/* Entries each JVM has put in stack_counts (only BPF writes it, atomically). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} stack_held SEC(".maps");

/* Entries of each JVM user space has taken out of stack_counts (only user space writes it: a
 * user-space update rewrites the whole value, which would lose BPF's concurrent adds). A JVM
 * holds stack_held - stack_released entries (u32, wrap-safe). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} stack_released SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, STACK_TABLE_SIZE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct stack_key);
	__type(value, struct stack_value);
} stack_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STACK_OUTCOMES * STACK_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} stack_stats SEC(".maps");

/* The walk in progress (per CPU: a stack_value is too large for the BPF stack). */
struct stack_walk {
	struct stack_value v;
	__u64 sp;
	__u64 fp;
	__u64 pc;
	__u32 slot;
	__u32 entries; /* entry frames followed */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_walk);
} stack_scratch SEC(".maps");

/* x86-64 interpreter frame slots, in words from the frame pointer (frame_x86.hpp; the same
 * in JDK 11 to 25): the caller's sp, the Method*, the bytecode pointer. */
#define INTERP_SENDER_SP_SLOT (-1)
#define INTERP_METHOD_SLOT (-3)
#define INTERP_BCP_SLOT (-8)

static __always_inline void stack_outcome(__u32 kind, __u32 outcome)
{
	__u32 i = outcome * STACK_KINDS + kind;
	__u64 *v = bpf_map_lookup_elem(&stack_stats, &i);
	if (v)
		*v += 1;
}

static __always_inline int read_word(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* One token of the JVM's budget for this kind and second. */
static __always_inline int take_stack_token(__u32 slot, __u32 kind)
{
	__u32 rate = jvm_limit(slot, stacks, stack_rate);
	if (!rate)
		return 0;
	__u32 i = slot * STACK_KINDS + kind;
	struct stack_tokens *t = bpf_map_lookup_elem(&stack_tokens, &i);
	if (!t)
		return 0;
	__u64 second = bpf_ktime_get_ns() / 1000000000ULL;
	if (t->second != second) {
		/* Racing CPUs may both reset: a second can take a few more than `rate`. */
		t->second = second;
		t->used = 0;
	}
	return __sync_fetch_and_add(&t->used, 1) < rate;
}

/* The code heap holding pc, or -1. */
static __always_inline int heap_of(const struct stack_layout *L, __u64 pc)
{
	for (int i = 0; i < STACK_MAX_HEAPS; i++) {
		if (i >= L->nheaps)
			break;
		if (pc >= L->heaps[i].low && pc < L->heaps[i].high)
			return i;
	}
	return -1;
}

/* Where in the nmethod at `blob` one of its deopt handlers is (the field at `field` holds its
 * address, or with STACK_DEOPT_OFFSETS its int offset from the nmethod): 0 with *handler set
 * (0 when the field holds no such thing: the blob is not an nmethod), -1 when unreadable. */
static __always_inline int deopt_handler(const struct stack_layout *L, __u64 blob, __u32 field, __u64 *handler)
{
	*handler = 0;
	if (L->deopt_flags & STACK_DEOPT_OFFSETS) {
		__s32 off = 0;
		if (bpf_probe_read_user(&off, sizeof(off), (const void *)(blob + field)))
			return -1;
		if (off > 0)
			*handler = blob + (__u64)off;
		return 0;
	}
	return read_word(handler, blob + field) ? -1 : 0;
}

/* The pc a compiled frame is at, given the return address `pc` its callee holds. HotSpot
 * deoptimizes a compiled frame that is not on top (its nmethod was invalidated while the frame
 * waited for a callee: a class load broke an assumption it was compiled on) by saving that
 * return address in the frame, at sp + nmethod::_orig_pc_offset, and patching it to the
 * nmethod's deopt handler (frame::deoptimize), where the callee's return converts the frame
 * into interpreted ones. The saved pc is where the frame is, with the debug information (the
 * inlined methods, the line) of its call; the handler's pc has none. A saved pc is taken only
 * where HotSpot would have put it: inside the nmethod's code, before its handlers.
 * Returns 0 with *at set, or the outcome that ends the walk. */
static __always_inline __u32 deopt_original_pc(const struct stack_layout *L, __u64 blob, __u64 pc, __u64 sp,
					       __s32 words, __u64 *at)
{
	__u64 handler = 0, mh_handler = 0;
	*at = pc;
	if (deopt_handler(L, blob, L->deopt_handler, &handler))
		return STACK_READ_FAILED;
	if (!handler)
		return 0; /* not an nmethod */
	if (pc != handler) {
		if (!(L->deopt_flags & STACK_DEOPT_MH_HANDLER))
			return 0;
		if (deopt_handler(L, blob, L->deopt_mh_handler, &mh_handler))
			return STACK_READ_FAILED;
		if (pc != mh_handler)
			return 0; /* not a deoptimized frame */
	}
	__s32 slot = 0;
	__u64 orig = 0;
	if (bpf_probe_read_user(&slot, sizeof(slot), (const void *)(blob + L->orig_pc_offset)))
		return STACK_READ_FAILED;
	if (slot < 0 || (__u64)slot + 8 > (__u64)words * 8)
		return STACK_BAD_FRAME; /* not a slot of this frame */
	if (read_word(&orig, sp + (__u64)slot))
		return STACK_READ_FAILED;
	if (orig <= blob || orig >= handler)
		return STACK_BAD_FRAME;
	*at = orig;
	return 0;
}

/* Steps over one frame: records it and moves sp/fp/pc to its caller. Returns 1 to stop. */
static long stack_step(__u64 index, void *ctx)
{
	__u32 zero = 0;
	struct stack_walk *w = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w)
		return 1;
	__u32 slot = w->slot;
	struct stack_layout *L = bpf_map_lookup_elem(&stack_layout, &slot);
	if (!L)
		return 1;
	__u32 depth = w->v.depth;
	if (depth >= STACK_MAX_FRAMES) {
		w->v.outcome = STACK_TRUNCATED;
		return 1;
	}
	struct java_frame *f = &w->v.frames[depth];
	__u64 pc = w->pc, sp = w->sp, fp = w->fp;
	if (L->call_stub_return && pc == L->call_stub_return) {
		__u64 wrapper = 0, next_sp = 0, next_fp = 0, next_pc = 0;
		if (!L->entry_known) {
			w->v.outcome = STACK_TAKEN;
			return 1;
		}
		if (read_word(&wrapper, fp + (__s64)L->entry_wrapper_slot * 8) || !wrapper ||
		    read_word(&next_sp, wrapper + L->wrapper_anchor_sp)) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		if (!next_sp) {
			w->v.outcome = STACK_TAKEN; /* the thread's first call into Java */
			return 1;
		}
		if (w->entries >= STACK_MAX_ENTRY_HOPS) {
			w->v.outcome = STACK_TRUNCATED;
			return 1;
		}
		if (read_word(&next_fp, wrapper + L->wrapper_anchor_fp) ||
		    read_word(&next_pc, wrapper + L->wrapper_anchor_pc) ||
		    (!next_pc && read_word(&next_pc, next_sp - 8))) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		if (next_sp <= sp) {
			w->v.outcome = STACK_BAD_FRAME; /* the caller's frames are older: higher up */
			return 1;
		}
		w->entries++;
		w->sp = next_sp;
		w->fp = next_fp;
		w->pc = next_pc;
		return 0;
	}
	if (pc >= L->interp_low && pc < L->interp_high) {
		__u64 method = 0, bcp = 0, sender_sp = 0, ret = 0, link = 0, cm = 0;
		if (read_word(&method, fp + INTERP_METHOD_SLOT * 8) || read_word(&bcp, fp + INTERP_BCP_SLOT * 8) ||
		    read_word(&sender_sp, fp + INTERP_SENDER_SP_SLOT * 8) || read_word(&ret, fp + 8) ||
		    read_word(&link, fp) || !method) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		read_word(&cm, method + L->method_const_method);
		f->ptr = method;
		f->at = bcp;
		f->type = STACK_FRAME_INTERPRETED;
		f->cookie = (__u32)cm;
		w->sp = sender_sp;
		w->fp = link;
		w->pc = ret;
	} else {
		int h = heap_of(L, pc);
		if (h < 0 || h >= STACK_MAX_HEAPS) {
			w->v.outcome = STACK_UNKNOWN_PC;
			return 1;
		}
		const struct stack_code_heap *heap = &L->heaps[h];
		__u32 shift = heap->log2_segment & 63;
		__u64 seg = (pc - heap->low) >> shift;
		__u8 hop = 0;
		if (bpf_probe_read_user(&hop, 1, (const void *)(heap->segmap + seg))) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		for (int i = 0; i < STACK_SEGMAP_HOPS && hop != 0; i++) {
			if (hop == 0xff || hop > seg) {
				w->v.outcome = STACK_BAD_FRAME; /* a free segment, or a hop out of the heap */
				return 1;
			}
			seg -= hop;
			if (bpf_probe_read_user(&hop, 1, (const void *)(heap->segmap + seg))) {
				w->v.outcome = STACK_READ_FAILED;
				return 1;
			}
		}
		if (hop != 0) {
			w->v.outcome = STACK_BAD_FRAME;
			return 1;
		}
		__u64 blob = heap->low + (seg << shift) + L->heap_block_size;
		__s32 words = 0;
		__u32 compile_id = 0;
		if (bpf_probe_read_user(&words, sizeof(words), (const void *)(blob + L->blob_frame_size))) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		bpf_probe_read_user(&compile_id, sizeof(compile_id), (const void *)(blob + L->nmethod_compile_id));
		if (words <= 0 || words > STACK_MAX_FRAME_WORDS) {
			w->v.outcome = STACK_BAD_FRAME;
			return 1;
		}
		__u64 at = pc;
		if (L->deopt_flags & STACK_DEOPT_KNOWN) {
			__u32 outcome = deopt_original_pc(L, blob, pc, sp, words, &at);
			if (outcome) {
				w->v.outcome = outcome;
				return 1;
			}
		}
		f->ptr = blob;
		f->at = at;
		f->type = STACK_FRAME_COMPILED;
		f->cookie = compile_id;
		__u64 sender_sp = sp + (__u64)words * 8, ret = 0, link = 0;
		if (read_word(&ret, sender_sp - 8) || read_word(&link, sender_sp - 16)) {
			w->v.outcome = STACK_READ_FAILED;
			return 1;
		}
		w->sp = sender_sp;
		w->fp = link;
		w->pc = ret;
	}
	w->v.depth = depth + 1;
	return 0;
}

/* The current JavaThread*, through libjvm's thread-local Thread::_thr_current. */
static __always_inline __u64 current_java_thread(const struct stack_layout *L)
{
#if defined(__TARGET_ARCH_x86)
	__u64 task = bpf_get_current_task(), fsbase = 0, dtv = 0, block = 0, thread = 0;
	if (!L->task_fsbase || bpf_probe_read_kernel(&fsbase, sizeof(fsbase), (const void *)(task + L->task_fsbase)) ||
	    !fsbase || read_word(&dtv, fsbase + 8) || !dtv || read_word(&block, dtv + L->tls_module * 16) ||
	    !block || block == (__u64)-1 || read_word(&thread, block + L->tls_offset))
		return 0;
	return thread;
#else
	return 0;
#endif
}

/* The hash of the frames, started from the hash of the thread's folded name. */
static __always_inline __u64 stack_hash(const struct stack_walk *w, __u64 name_hash)
{
	__u64 h = (FNV_OFFSET ^ name_hash) * FNV_PRIME;
	for (int i = 0; i < STACK_MAX_FRAMES; i++) {
		if (i >= w->v.depth)
			break;
		h = (h ^ w->v.frames[i].ptr) * FNV_PRIME;
		h = (h ^ w->v.frames[i].at) * FNV_PRIME;
	}
	return h;
}

/* A thread in a leaf call from Java into the VM (a monitor exit from compiled code or the
 * interpreter) has no frame anchor: its Java frames start below the VM's own frames, which
 * keep frame pointers (HotSpot builds libjvm with them on x86-64). Follows the frame-pointer
 * chain from the probe's registers to the first return address into Java code; 0 when found. */
static __always_inline int native_to_java(struct pt_regs *ctx, const struct stack_layout *L, struct stack_walk *w)
{
	__u64 fp = PT_REGS_FP(ctx);
	for (int i = 0; i < STACK_NATIVE_FRAMES; i++) {
		__u64 ret = 0, link = 0;
		if (!fp || read_word(&ret, fp + 8) || read_word(&link, fp))
			return -1;
		if ((ret >= L->interp_low && ret < L->interp_high) || heap_of(L, ret) >= 0) {
			w->sp = fp + 16;
			w->fp = link;
			w->pc = ret;
			return 0;
		}
		if (link <= fp)
			return -1; /* a frame chain goes up the stack */
		fp = link;
	}
	return -1;
}

/* Takes the current thread's stack for `kind` if the JVM's budget allows, and counts it under the
 * thread's folded name (a probe runs in the thread that fired it). */
static __always_inline void capture_stack(struct pt_regs *ctx, __u32 slot, __u32 kind)
{
	__u32 zero = 0;
	if (!stack_rate)
		return; /* stacks off: the verifier drops the rest (stack_rate is read-only) */
	if (!take_stack_token(slot, kind)) {
		stack_outcome(kind, STACK_NO_TOKEN);
		return;
	}
	struct stack_layout *L = bpf_map_lookup_elem(&stack_layout, &slot);
	if (!L || !L->ready) {
		stack_outcome(kind, STACK_NO_LAYOUT);
		return;
	}
	__u64 thread = current_java_thread(L);
	if (!thread) {
		stack_outcome(kind, STACK_NO_THREAD);
		return;
	}
	struct stack_walk *w = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!w)
		return;
	w->v.count = 1;
	w->v.depth = 0;
	w->v.outcome = STACK_READ_FAILED;
	w->slot = slot;
	w->entries = 0;
	w->sp = 0;
	w->fp = 0;
	w->pc = 0;
	if (read_word(&w->sp, thread + L->anchor_sp) || read_word(&w->fp, thread + L->anchor_fp) ||
	    read_word(&w->pc, thread + L->anchor_pc)) {
		stack_outcome(kind, STACK_READ_FAILED);
		return;
	}
	if (!w->sp && native_to_java(ctx, L, w)) {
		stack_outcome(kind, STACK_NO_JAVA_FRAME);
		return;
	}
	if (!w->pc && read_word(&w->pc, w->sp - 8)) {
		stack_outcome(kind, STACK_READ_FAILED);
		return;
	}
	bpf_loop(STACK_MAX_FRAMES + STACK_MAX_ENTRY_HOPS + 1, stack_step, NULL, 0);
	__u32 outcome = w->v.outcome;
	stack_outcome(kind, outcome);
	if (!w->v.depth)
		return;
	char comm[COMM_LEN] = {};
	bpf_get_current_comm(comm, sizeof(comm));
	__builtin_memset(w->v.thread_name, 0, COMM_LEN);
	__u64 name_hash = fold(w->v.thread_name, comm, COMM_LEN, COMM_LEN);
	struct stack_key key = { .slot = slot, .kind = kind, .hash = stack_hash(w, name_hash) };
	struct stack_value *v = bpf_map_lookup_elem(&stack_counts, &key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		return;
	}
	__u32 *held = bpf_map_lookup_elem(&stack_held, &slot);
	__u32 *released = bpf_map_lookup_elem(&stack_released, &slot);
	if (!held || !released || *held - *released >= stack_share) {
		stack_outcome(kind, STACK_TABLE_FULL);
		return;
	}
	if (__sync_fetch_and_add(held, 1) - *released >= stack_share) {
		/* Another CPU took the last of the share: give the unit back, user space counts
		 * only the entries it deletes as released. */
		__sync_fetch_and_add(held, -1);
		stack_outcome(kind, STACK_TABLE_FULL);
		return;
	}
	if (bpf_map_update_elem(&stack_counts, &key, &w->v, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(&stack_counts, &key);
		if (v)
			__sync_fetch_and_add(&v->count, 1); /* a racing CPU inserted it */
		else
			stack_outcome(kind, STACK_TABLE_FULL);
		__sync_fetch_and_add(held, -1);
	}
}

#endif
