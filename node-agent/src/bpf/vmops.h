/* vmops collector: shapes shared with src/collector/vmops.rs. */
#ifndef JVMDIAG_VMOPS_H
#define JVMDIAG_VMOPS_H

#include "jvm.h"

enum vmops_probe {
	VMOPS_PROBE_BEGIN = 0, /* USDT hotspot:vmops__begin(name, len, mode) */
	VMOPS_PROBE_END = 1,   /* USDT hotspot:vmops__end(name, len, mode) */
	VMOPS_PROBE_BEGIN_SYM = 2, /* uprobe VMThread::evaluate_operation (no USDT notes) */
	VMOPS_PROBE_END_SYM = 3,   /* its uretprobe */
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
