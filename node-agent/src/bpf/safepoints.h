/* safepoints collector: shapes shared with src/collector/safepoints.rs. */
#ifndef JVMDIAG_SAFEPOINTS_H
#define JVMDIAG_SAFEPOINTS_H

#include "jvm.h"

enum safepoints_probe {
	SP_PROBE_BEGIN = 0, /* USDT hs_private:safepoint__begin */
	SP_PROBE_SYNC = 1,  /* uprobe RuntimeService::record_safepoint_synchronized(jlong) */
	SP_PROBE_VMOP = 2,  /* USDT hotspot:vmops__begin (names the safepoint) */
	SP_PROBE_END = 3,   /* uprobe RuntimeService::record_safepoint_end(jlong) */
	SP_PROBE_END_USDT = 4, /* USDT hs_private:safepoint__end (fallback without .symtab) */
	SP_PROBE_BEGIN_SYM = 5, /* uprobe SafepointSynchronize::begin() (no USDT notes) */
	SP_PROBE_VMOP_SYM = 6,  /* uprobe VMThread::evaluate_operation (no USDT notes) */
	SP_PROBE_END_SYM = 7,   /* uprobe SafepointSynchronize::end() (neither notes nor record_safepoint_end) */
};

/* Per-JVM safepoint in flight (only the VM thread runs safepoints: one at a time). */
struct sp_state {
	__u64 begin_ns;  /* bpf time at safepoint__begin */
	__u64 sync_ns;   /* bpf time at record_safepoint_synchronized */
	__u64 sync_arg;  /* its argument: time to safepoint as HotSpot measured it (ticks) */
	__u32 active;
	__u32 has_sync;
	char op[NAME_LEN];
};

/* Map sp_pause / sp_sync: struct name_key (flags 0, name = VM operation) -> struct hist. */

#endif
