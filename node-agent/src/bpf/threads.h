/* threads collector: shapes shared with src/collector/threads.rs. */
#ifndef JVMDIAG_THREADS_H
#define JVMDIAG_THREADS_H

#include "jvm.h"

/* Probe indexes for STAT_EVENTS_0 + i. */
enum threads_probe {
	THREADS_PROBE_START = 0,     /* USDT hotspot:thread__start */
	THREADS_PROBE_JVM_START = 1, /* uprobe JVM_StartThread (--threads-jvm-start-thread) */
	THREADS_PROBE_NATIVE_NAME = 2, /* uprobe os::set_native_thread_name (no USDT notes) */
};

/* Folded names (fold.bpf.h) are keyed by their 64-bit FNV-1a hash (cheap to hash and compare
 * in the probe); the text is stored once per new name in threads_names. */
#define HIDDEN_MAX 8

struct name_hkey {
	__u32 slot;
	__u32 pad;
	__u64 hash;
};

struct name_text {
	char name[NAME_LEN];
};

/* Maps: threads_counts: name_hkey -> __u64 starts; threads_names: name_hkey -> name_text. */

#endif
