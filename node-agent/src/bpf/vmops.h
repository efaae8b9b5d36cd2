/* vmops collector: shapes shared with src/collector/vmops.rs. */
#ifndef JVMDIAG_VMOPS_H
#define JVMDIAG_VMOPS_H

#include "jvm.h"

enum vmops_probe {
	VMOPS_PROBE_BEGIN = 0, /* USDT hotspot:vmops__begin(name, len, mode) */
	VMOPS_PROBE_END = 1,   /* USDT hotspot:vmops__end(name, len, mode) */
	VMOPS_PROBE_BEGIN_SYM = 2, /* uprobe VMThread::evaluate_operation (no USDT notes) */
	VMOPS_PROBE_END_SYM = 3,   /* its uretprobe */
	VMOPS_PROBE_REQUEST = 4,   /* USDT hotspot:vmops__request(name, len, mode), in the requester */
};

/* The requester of a VM operation is the requesting thread's native name (comm, COMM_LEN):
 * the first 15 bytes of the Java name HotSpot gives each thread it starts, folded
 * (fold.bpf.h). */

/* Map vmop_requests: struct vmop_req_key -> __u64 requests. */
struct vmop_req_key {
	__u32 slot;
	__u32 pad;
	char op[NAME_LEN];
	char requester[COMM_LEN];
};

/* Per-JVM budget of vmop_requests entries: `pairs` (operation, requester) pairs named in
 * full, at most the JVM's thread-name limit; after that the requester is "other", and at
 * most max_names such entries (`others`) keep the operation's name, then it is "other" too. */
struct vmop_req_budget {
	__u32 pairs;
	__u32 others;
};

/* Per-JVM operation in flight (the VM thread evaluates one operation at a time). */
struct vmop_state {
	__u64 begin_ns;
	__u32 active;
	__u32 at_safepoint;
	/* Uprobe mode: inside SafepointSynchronize::begin() ... end(), and the operation's
	 * vtable name taken at begin. */
	__u32 in_safepoint;
	__u32 pad;
	char op[NAME_LEN];
};

/* Map vmops_hist: struct name_key (flags = at_safepoint) -> struct hist. */

#endif
