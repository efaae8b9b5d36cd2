/* Culprit stacks: the Java stack of the thread at a probe (the starter in JVM_StartThread, …),
 * walked in the kernel from the thread's last Java frame and counted by stack. Shapes shared
 * with src/stacks.rs. */
#ifndef JVMDIAG_STACKS_H
#define JVMDIAG_STACKS_H

#include "jvm.h"

/* Frames kept per stack; a deeper stack is cut (STACK_TRUNCATED) at its caller end. */
#define STACK_MAX_FRAMES 48
/* Code heaps looked at (HotSpot has 1 or 3). */
#define STACK_MAX_HEAPS 4
/* Hops back through a code heap's segment map to a blob's first segment: each hop moves up
 * to 254 segments, so 64 hops cover a 1 MiB blob at 64-byte segments. */
#define STACK_SEGMAP_HOPS 64
/* Entry frames followed on to the Java frames below them (a Java call from the VM: class
 * loading, a class initializer, a JNI upcall) before the stack counts as truncated. */
#define STACK_MAX_ENTRY_HOPS 8
/* VM frames followed to the first Java frame when the thread has no frame anchor. */
#define STACK_NATIVE_FRAMES 8
/* A compiled frame larger than this (in words) is taken as a bad read. */
#define STACK_MAX_FRAME_WORDS 65536
/* Distinct stacks held at once: one table for every JVM, sized by the loader to --max-jvms x
 * --max-stacks-per-jvm (this is the object's default), so every JVM always has room for its
 * share and none can take another's. Entries are allocated as used (BPF_F_NO_PREALLOC). */
#define STACK_TABLE_SIZE 4096

/* Why a stack was taken (the kind; the first frame of every line of /stacks). */
enum stack_kind {
	STACK_KIND_THREAD_START = 0,
	STACK_KIND_VM_OPERATION = 1,
	STACK_KIND_MONITOR_WAIT = 2,
	STACK_KIND_MONITOR_HOLD = 3,
	STACK_KIND_PARK = 4,
	STACK_KINDS = 5,
};

/* What became of a wanted stack (map stack_stats, index = value). */
enum stack_outcome {
	STACK_TAKEN = 0,         /* walked to the thread's first Java frame */
	STACK_TRUNCATED = 1,     /* walked STACK_MAX_FRAMES frames and stopped */
	STACK_NO_TOKEN = 2,      /* the JVM's sampling budget for this second was spent */
	STACK_NO_LAYOUT = 3,     /* the agent has no layout for this JVM (yet, or it cannot read one) */
	STACK_NO_THREAD = 4,     /* the current JavaThread could not be read through TLS */
	STACK_NO_JAVA_FRAME = 5, /* the thread has no last Java frame (not called from Java) */
	STACK_UNKNOWN_PC = 6,    /* a return address outside the interpreter and the code heaps */
	STACK_BAD_FRAME = 7,     /* a frame that cannot be stepped over (size, free segment) */
	STACK_READ_FAILED = 8,   /* a read of the thread's stack or the JVM's memory failed */
	STACK_TABLE_FULL = 9,    /* a new stack found no room (the JVM's share, or the table) */
	STACK_OUTCOMES = 10,
};

/* Frame types. */
#define STACK_FRAME_INTERPRETED 1 /* ptr: Method*, at: bytecode pointer */
#define STACK_FRAME_COMPILED 2    /* ptr: CodeBlob*, at: pc */

struct java_frame {
	__u64 ptr;
	__u64 at;
	__u32 type;
	/* Detects a freed and reused ptr at symbolization: the Method's ConstMethod* (low 32
	 * bits), the nmethod's compile id. */
	__u32 cookie;
};

/* stack_layout.deopt_flags: how a deoptimized compiled frame's original pc is found. */
#define STACK_DEOPT_KNOWN 1      /* the JVM exports the deopt handler and _orig_pc_offset */
#define STACK_DEOPT_OFFSETS 2    /* handler fields: int offsets from the nmethod (25), not addresses */
#define STACK_DEOPT_MH_HANDLER 4 /* the JVM exports the method handle call sites' handler too */

/* One code heap: [low, high) and its segment map (one byte per segment). */
struct stack_code_heap {
	__u64 low;
	__u64 high;
	__u64 segmap;
	__u32 log2_segment;
	__u32 pad;
};

/* Map stack_layout, per JVM slot, written by the loader from the JVM's own VMStructs tables
 * and its memory (src/stacks.rs). ready == 0: no stacks for this slot. */
struct stack_layout {
	__u32 ready;
	__u32 nheaps;
	/* glibc x86-64 TLS: &Thread::_thr_current = dtv[tls_module].val + tls_offset, the dtv
	 * at the thread pointer + 8, 16 bytes per entry. */
	__u64 tls_module;
	__u64 tls_offset;
	__u64 interp_low;
	__u64 interp_high;
	__u64 call_stub_return; /* an entry frame: the thread's first Java frame was its callee */
	struct stack_code_heap heaps[STACK_MAX_HEAPS];
	__u32 anchor_sp;       /* JavaThread::_anchor + JavaFrameAnchor::_last_Java_sp */
	__u32 anchor_pc;       /* … _last_Java_pc */
	__u32 anchor_fp;       /* … _last_Java_fp */
	__u32 heap_block_size; /* sizeof(HeapBlock): the CodeBlob follows it */
	__u32 blob_frame_size; /* CodeBlob::_frame_size (int, words) */
	__u32 nmethod_compile_id;
	__u32 method_const_method;
	__u32 task_fsbase; /* offsetof(struct task_struct, thread.fsbase), from the kernel's BTF */
	__u32 deopt_flags;      /* STACK_DEOPT_*; 0: deoptimized frames not recognized */
	__u32 deopt_handler;    /* CompiledMethod::_deopt_handler_begin, nmethod::_deopt_handler_offset */
	__u32 deopt_mh_handler; /* … _deopt_mh_handler_begin / _offset */
	__u32 orig_pc_offset;   /* nmethod::_orig_pc_offset (int): where in the frame the pc was saved */
	/* An entry frame's JavaCallWrapper* is at its fp + entry_wrapper_slot words
	 * (frame::entry_frame_call_wrapper_offset); the wrapper's JavaFrameAnchor, at
	 * wrapper_anchor, holds the frames of the Java code that called into the VM.
	 * entry_known == 0: the JVM does not export them, the walk ends at the first entry frame. */
	__u32 entry_known;
	__s32 entry_wrapper_slot;
	__u32 wrapper_anchor_sp; /* JavaCallWrapper::_anchor + JavaFrameAnchor::_last_Java_sp */
	__u32 wrapper_anchor_pc;
	__u32 wrapper_anchor_fp;
	__u32 pad2;
};

/* Map stack_counts: stack_key -> stack_value. */
struct stack_key {
	__u32 slot;
	__u32 kind;
	__u64 hash; /* FNV-1a of the frames, mixed with the hash of the thread's folded name */
};

struct stack_value {
	__u64 count;
	__u32 depth;
	__u32 outcome; /* STACK_TAKEN, STACK_TRUNCATED, or why the walk stopped early */
	/* The native name (comm) of the thread whose stack it is, folded as every collector folds
	 * it (fold.bpf.h): the same stack taken in two pools is two entries. */
	char thread_name[COMM_LEN];
	struct java_frame frames[STACK_MAX_FRAMES];
};

/* Map stack_tokens, per JVM slot and kind (slot * STACK_KINDS + kind): the sampling budget of
 * the current second, so one kind's storm never takes another kind's samples. */
struct stack_tokens {
	__u64 second;
	__u64 used;
};

#endif
