/* In-flight tables: a thread's state between a begin probe and its end (a park, a contended
 * enter, a compilation, a thread start), shared by every JVM of the node. Included by the
 * collectors that have them, after common.bpf.h.
 *
 * Each table is a plain hash map (never an LRU, which evicts another thread's begin without a
 * trace when full) keyed by struct inflight_key {JVM slot, host tid}, and each JVM may hold at
 * most its share of it (inflight_share, set by the loader); in Kubernetes mode the JVMs of one
 * namespace may hold together at most the namespace's share (inflight_ns_share), so a
 * namespace running many JVMs cannot fill a table either. A begin that finds no room is
 * counted, per table and reason in `stats` and per JVM in inflight_lost; its event still
 * counts, only its end is not timed. So a JVM with more threads parked (or blocked, or
 * compiling) than its share loses its own time, counted under its name, and cannot take the
 * room of the others; a JVM's entries go with its slot (the agent deletes them when it
 * releases the slot, and gives their units back to its namespace), and a later JVM in the
 * slot starts from an empty share. */
#ifndef JVMDIAG_INFLIGHT_BPF_H
#define JVMDIAG_INFLIGHT_BPF_H

/* Set by the loader before load: entries one JVM may hold in each table of this object, and
 * entries the JVMs of one namespace may hold together (Kubernetes mode). */
const volatile __u32 inflight_share[INFLIGHT_TABLES] = {};
const volatile __u32 inflight_ns_share[INFLIGHT_TABLES] = {};

/* Slot -> the id of its JVM's namespace (NO_NAMESPACE: none, no namespace share). One map for
 * every object, created by the loader and reused like jvm_limits; written before the JVM's
 * traced_pids entry, so its first begin already counts for its namespace, and cleared when
 * the slot is released. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} slot_namespace SEC(".maps");

/* Entries the JVMs of each namespace hold now, per table: index table * NAMESPACE_IDS + id.
 * Mmapable: when the agent deletes a released slot's entries, it gives their units back with
 * an atomic subtraction on the mapped value, while the namespace's other JVMs take and give
 * back units here at the same time (src/collector/inflight.rs). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, INFLIGHT_TABLES * NAMESPACE_IDS);
	__type(key, __u32);
	__type(value, __u64);
} inflight_ns SEC(".maps");

/* Entries each JVM holds now, per table: index table * MAX_JVMS + slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INFLIGHT_TABLES * MAX_JVMS);
	__type(key, __u32);
	__type(value, __u32);
} inflight_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, INFLIGHT_TABLES * INFLIGHT_REASONS * MAX_JVMS); /* every key fits */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct inflight_lost_key);
	__type(value, __u64);
} inflight_lost SEC(".maps");

static __always_inline void inflight_lose(__u32 table, __u32 slot, __u32 reason)
{
	stat_inc(STAT_INFLIGHT_LOST_0 + table * INFLIGHT_REASONS + reason);
	struct inflight_lost_key k = { .slot = slot, .table = table, .reason = reason };
	__u64 *n = bpf_map_lookup_elem(&inflight_lost, &k);
	if (!n) {
		__u64 zero = 0;
		n = insert_lookup(&inflight_lost, &k, &zero);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline __u32 *inflight_held_of(__u32 table, __u32 slot)
{
	__u32 i = table * MAX_JVMS + slot;
	return bpf_map_lookup_elem(&inflight_held, &i);
}

/* The count of the namespace of the JVM in `slot`, in table `table`; NULL when it has none. */
static __always_inline __u64 *inflight_ns_of(__u32 table, __u32 slot)
{
	__u32 *ns = bpf_map_lookup_elem(&slot_namespace, &slot);
	if (!ns || *ns == NO_NAMESPACE)
		return NULL;
	__u32 i = table * NAMESPACE_IDS + *ns;
	return bpf_map_lookup_elem(&inflight_ns, &i);
}

/* Takes one unit of a count held below `share` (the plain read first keeps a JVM at its share
 * from bumping a shared counter on every begin). */
static __always_inline bool take_unit(__u32 *count, __u32 share)
{
	if (*count >= share)
		return false;
	if (__sync_fetch_and_add(count, 1) >= share) {
		__sync_fetch_and_sub(count, 1); /* a racing CPU took the last unit */
		return false;
	}
	return true;
}

static __always_inline bool take_ns_unit(__u64 *count, __u32 share)
{
	if (*count >= share)
		return false;
	if (__sync_fetch_and_add(count, 1) >= share) {
		__sync_fetch_and_sub(count, 1);
		return false;
	}
	return true;
}

/* Records a begin: `val` under `k` in `map`, table number `table`. The common path is one
 * reservation in the JVM's share (and in its namespace's, in Kubernetes mode) and one NOEXIST
 * insert. An entry already there is the same thread's earlier begin whose end was not seen
 * (attached or detached in between): it is replaced, already held. Returns 0 when recorded. */
static __always_inline int inflight_put(void *map, __u32 table, const struct inflight_key *k, const void *val)
{
	__u32 *held = inflight_held_of(table, k->slot);
	if (!held)
		return -1;
	__u64 *ns_held = inflight_ns_of(table, k->slot);
	__u32 reason = INFLIGHT_LOST_SHARE;
	bool room = take_unit(held, inflight_share[table]);
	if (room && ns_held && !take_ns_unit(ns_held, inflight_ns_share[table])) {
		__sync_fetch_and_sub(held, 1);
		reason = INFLIGHT_LOST_NAMESPACE;
		room = false;
	}
	if (!room) {
		if (bpf_map_update_elem(map, k, val, BPF_EXIST) == 0)
			return 0;
		inflight_lose(table, k->slot, reason);
		return -1;
	}
	if (bpf_map_update_elem(map, k, val, BPF_NOEXIST) == 0)
		return 0;
	__sync_fetch_and_sub(held, 1);
	if (ns_held)
		__sync_fetch_and_sub(ns_held, 1);
	if (bpf_map_update_elem(map, k, val, BPF_EXIST) == 0)
		return 0;
	inflight_lose(table, k->slot, INFLIGHT_LOST_FULL);
	return -1;
}

/* Ends a begin: deletes `k` from `map` and gives its room back, to the JVM and its namespace.
 * Call after reading the entry; a key already gone (never recorded, or deleted by the agent)
 * changes nothing. The counts never wrap below 0 (the agent zeroes the JVM's and gives its
 * namespace's back when it deletes a JVM's entries). */
static __always_inline void inflight_done(void *map, __u32 table, const struct inflight_key *k)
{
	if (bpf_map_delete_elem(map, k))
		return;
	__u32 *held = inflight_held_of(table, k->slot);
	if (held && *held)
		__sync_fetch_and_sub(held, 1);
	__u64 *ns_held = inflight_ns_of(table, k->slot);
	if (ns_held && *ns_held)
		__sync_fetch_and_sub(ns_held, 1);
}

/* The current thread's key in the JVM of `slot`. */
static __always_inline struct inflight_key inflight_key_of(__u32 slot)
{
	struct inflight_key k = { .slot = slot, .tid = (__u32)bpf_get_current_pid_tgid() };
	return k;
}

#endif
