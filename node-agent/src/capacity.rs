//! Who may take a JVM slot, and which refused JVM gets a slot that frees: pure rules, applied
//! by the attach manager (src/attach.rs), no I/O.
//!
//! The agent traces at most `--max-jvms` JVMs at once. Three rules keep a tenant from starving
//! the others of that capacity (docs/agent.md, "Fair share per namespace"):
//!
//! - **share**: in Kubernetes mode one namespace holds at most `--max-jvms-per-namespace`
//!   slots (`namespace_share` beyond);
//! - **reserve**: a namespace that holds a slot already may not take the last
//!   [`default_reserve`] free slots (`slots_reserved`); they go to namespaces that hold none, so
//!   a namespace's first JVM is traced however many slots the others hold;
//! - **retry**: a JVM refused for capacity waits ([`Waiting`]) and is offered the slots that
//!   free later, namespaces holding the fewest slots first, each namespace's JVMs in the order
//!   they were refused. It is counted once, however often it is refused again.
//!
//! Standalone mode has no namespaces: only the node's bound applies, no reserve.
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Why a JVM was refused a slot. Each is a capacity refusal: retried when a slot frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No slot is free (`--max-jvms`).
    SlotsExhausted,
    /// The free slots left are the reserve, kept for namespaces that hold none.
    SlotsReserved,
    /// Its namespace holds its share (`--max-jvms-per-namespace`).
    NamespaceShare,
}

impl Refusal {
    pub const ALL: [Refusal; 3] =
        [Refusal::SlotsExhausted, Refusal::SlotsReserved, Refusal::NamespaceShare];

    /// The `reason` label (`jvmdiag_agent_attach_failures_total`, `…_jvms_untraced`).
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::SlotsExhausted => "slots_exhausted",
            Refusal::SlotsReserved => "slots_reserved",
            Refusal::NamespaceShare => "namespace_share",
        }
    }

    /// The capacity refusal a failure reason names (None: another failure, not retried).
    pub fn of_reason(reason: &str) -> Option<Refusal> {
        Refusal::ALL.into_iter().find(|r| r.reason() == reason)
    }
}

/// The node's capacity rules (Kubernetes mode; standalone has no namespaces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Slots one namespace may hold (`--max-jvms-per-namespace`).
    pub per_namespace: u32,
    /// Free slots only a namespace holding none may take.
    pub reserve: u32,
}

impl Rule {
    /// The rules for `--max-jvms` slots with `per_namespace` per namespace: the default reserve.
    pub fn for_slots(max_jvms: u32, per_namespace: u32) -> Rule {
        Rule { per_namespace, reserve: default_reserve(max_jvms) }
    }
}

/// Free slots kept for namespaces that hold none: a sixteenth of the node's slots, at least
/// one (16 of the default 256). So the first JVMs of that many namespaces arriving at once
/// are traced however many slots the others hold; more wait for a slot to free, and get it
/// before any namespace that holds one.
pub const fn default_reserve(max_jvms: u32) -> u32 {
    if max_jvms / 16 > 1 {
        max_jvms / 16
    } else {
        1
    }
}

/// May a JVM take a slot now? `free`: the slots free; `held`: the slots its namespace holds,
/// live JVMs and exited ones not released yet (None: no namespaces, standalone, where only
/// the node's bound applies). The share first, so a namespace at its share is told so even
/// when no slot is free.
pub fn admit(rule: Rule, free: usize, held: Option<usize>) -> Result<(), Refusal> {
    let Some(held) = held else {
        return if free > 0 { Ok(()) } else { Err(Refusal::SlotsExhausted) };
    };
    if held >= rule.per_namespace as usize {
        Err(Refusal::NamespaceShare)
    } else if free == 0 {
        Err(Refusal::SlotsExhausted)
    } else if held > 0 && free <= rule.reserve as usize {
        Err(Refusal::SlotsReserved)
    } else {
        Ok(())
    }
}

/// JVMs waiting for a slot (more wait in no list: refused once and for all, as other failures).
pub const MAX_WAITING: usize = 4096;
/// Of them, at most this many of one namespace, so one namespace cannot fill the list.
pub const MAX_WAITING_PER_NAMESPACE: usize = MAX_WAITING / 4;

/// What [`Waiting::refused`] made of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The process's first refusal: it waits now (count it).
    Waits,
    /// Already waiting (a retry refused again): not counted again.
    Again,
    /// The list (or its namespace's part) is full: refused once and for all (count it).
    Full,
}

struct Entry<T> {
    start: u64,
    namespace: Option<String>,
    /// Refusal order.
    seq: u64,
    item: T,
}

/// (refusal order, pid) of one namespace's waiting JVMs.
type Queue = Vec<(u64, u32)>;

/// The JVMs refused for capacity that wait for a slot, by pid (with the start time that names
/// the process), bounded. `T` is what a retry needs (discovery's `Found`).
pub struct Waiting<T> {
    entries: HashMap<u32, Entry<T>>,
    per_namespace: HashMap<Option<String>, usize>,
    seq: u64,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Waiting { entries: HashMap::new(), per_namespace: HashMap::new(), seq: 0 }
    }
}

impl<T: Clone> Waiting<T> {
    /// Records a capacity refusal of the process `pid` started at `start`.
    pub fn refused(&mut self, pid: u32, start: u64, namespace: Option<&str>, item: T) -> Recorded {
        if self.contains(pid, start) {
            return Recorded::Again;
        }
        self.remove(pid); // an earlier process under this pid
        let ns = namespace.map(str::to_string);
        let of_ns = self.per_namespace.get(&ns).copied().unwrap_or(0);
        if self.entries.len() >= MAX_WAITING || of_ns >= MAX_WAITING_PER_NAMESPACE {
            return Recorded::Full;
        }
        self.seq += 1;
        *self.per_namespace.entry(ns.clone()).or_default() += 1;
        self.entries.insert(pid, Entry { start, namespace: ns, seq: self.seq, item });
        Recorded::Waits
    }

    /// Is this process waiting?
    pub fn contains(&self, pid: u32, start: u64) -> bool {
        self.entries.get(&pid).is_some_and(|e| e.start == start)
    }

    /// Stops waiting (traced, failed otherwise, or gone).
    pub fn remove(&mut self, pid: u32) {
        if let Some(e) = self.entries.remove(&pid) {
            if let Some(n) = self.per_namespace.get_mut(&e.namespace) {
                *n -= 1;
                if *n == 0 {
                    self.per_namespace.remove(&e.namespace);
                }
            }
        }
    }

    /// Keeps the processes `keep(pid, start)` says are still there.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, u64) -> bool) {
        let gone: Vec<u32> =
            self.entries.iter().filter(|(p, e)| !keep(**p, e.start)).map(|(p, _)| *p).collect();
        for pid in gone {
            self.remove(pid);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The waiting JVMs to offer `free` slots now, in the order to offer them: the namespace
    /// holding the fewest slots first (`held`: slots per namespace; ties: the earlier refusal),
    /// each namespace's JVMs in refusal order, counting each one taken as its namespace's, and
    /// only those [`admit`] lets in as the free slots go. A namespace refused once is refused
    /// for the rest of the round (its count only grows and the free slots only shrink). Costs
    /// one pass over the list and one step per namespace per slot handed out; no I/O.
    pub fn pick(&self, rule: Rule, free: usize, held: &HashMap<String, usize>) -> Vec<(u32, T)> {
        let mut queues: BTreeMap<Option<&str>, Queue> = BTreeMap::new();
        for (pid, e) in &self.entries {
            queues.entry(e.namespace.as_deref()).or_default().push((e.seq, *pid));
        }
        // Per namespace: (namespace, slots it holds now, its JVMs still to offer, oldest last).
        let mut groups: Vec<(Option<&str>, usize, Queue)> = queues
            .into_iter()
            .map(|(ns, mut v)| {
                v.sort_unstable_by(|a, b| b.cmp(a));
                (ns, ns.map_or(0, |ns| held.get(ns).copied().unwrap_or(0)), v)
            })
            .collect();
        let mut free = free;
        let mut out = Vec::new();
        while free > 0 {
            let Some(i) = (0..groups.len())
                .min_by_key(|&i| (groups[i].1, groups[i].2.last().map_or(u64::MAX, |e| e.0)))
            else {
                break;
            };
            let (ns, count, queue) = &mut groups[i];
            if admit(rule, free, ns.map(|_| *count)).is_err() {
                groups.swap_remove(i);
                continue;
            }
            let Some((_, pid)) = queue.pop() else {
                groups.swap_remove(i);
                continue;
            };
            *count += 1;
            free -= 1;
            if queue.is_empty() {
                groups.swap_remove(i);
            }
            out.push((pid, self.entries[&pid].item.clone()));
        }
        out
    }
}

/// Small ids for the namespaces that hold slots, written into the `slot_namespace` map so
/// the in-flight tables can count entries per namespace (src/bpf/inflight.bpf.h): one id per
/// namespace while it holds a slot, from 1 to `ids` (0 is "no namespace"). A namespace's id is
/// freed with its last slot and reused last (first in, first out), so an id whose units a
/// collector gives back late (the starter probe forgets a slot at the poll after its release)
/// is not another namespace's by then while fewer namespaces hold slots than there are ids.
pub struct NamespaceIds {
    /// Namespace -> (id, slots holding it).
    by_name: HashMap<String, (u32, u32)>,
    /// Slot -> its namespace.
    of_slot: HashMap<u32, String>,
    free: VecDeque<u32>,
}

impl NamespaceIds {
    /// Ids 1..=ids (as many as there are slots: every slot's namespace gets one).
    pub fn new(ids: u32) -> NamespaceIds {
        NamespaceIds { by_name: HashMap::new(), of_slot: HashMap::new(), free: (1..=ids).collect() }
    }

    /// Gives `slot` to `namespace`: its id (None: no id left, more namespaces than ids).
    pub fn assign(&mut self, slot: u32, namespace: &str) -> Option<u32> {
        self.release(slot);
        let id = match self.by_name.get_mut(namespace) {
            Some((id, n)) => {
                *n += 1;
                *id
            }
            None => {
                let id = self.free.pop_front()?;
                self.by_name.insert(namespace.to_string(), (id, 1));
                id
            }
        };
        self.of_slot.insert(slot, namespace.to_string());
        Some(id)
    }

    /// Takes `slot` back; its namespace's id goes with the namespace's last slot.
    pub fn release(&mut self, slot: u32) -> Option<u32> {
        let ns = self.of_slot.remove(&slot)?;
        let (id, n) = self.by_name.get_mut(&ns)?;
        let id = *id;
        *n -= 1;
        if *n == 0 {
            self.by_name.remove(&ns);
            self.free.push_back(id);
        }
        Some(id)
    }

    /// Does a namespace hold this id now?
    pub fn in_use(&self, id: u32) -> bool {
        self.by_name.values().any(|(i, _)| *i == id)
    }

    /// The id of the namespace holding `slot` (0: none).
    pub fn of_slot(&self, slot: u32) -> u32 {
        self.of_slot.get(&slot).and_then(|ns| self.by_name.get(ns)).map_or(0, |(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Refusal::*;

    const RULE: Rule = Rule { per_namespace: 6, reserve: 1 };

    #[test]
    fn admit_applies_the_share_then_the_node_then_the_reserve() {
        // (free, held by the JVM's namespace) -> verdict, with 8 slots: 6 per namespace, 1 kept.
        let table: &[(usize, Option<usize>, Result<(), Refusal>)] = &[
            (8, Some(0), Ok(())),
            (2, Some(5), Ok(())),
            (1, Some(0), Ok(())), // the reserve: a namespace holding none takes it
            (1, Some(1), Err(SlotsReserved)),
            (1, Some(5), Err(SlotsReserved)),
            (0, Some(0), Err(SlotsExhausted)),
            (0, Some(3), Err(SlotsExhausted)),
            (3, Some(6), Err(NamespaceShare)),
            (0, Some(6), Err(NamespaceShare)), // its share first, whatever is free
            (0, Some(9), Err(NamespaceShare)),
            // Standalone: no namespaces, no reserve; only the node's bound.
            (1, None, Ok(())),
            (0, None, Err(SlotsExhausted)),
        ];
        for &(free, held, want) in table {
            assert_eq!(admit(RULE, free, held), want, "free {free}, held {held:?}");
        }
    }

    #[test]
    fn a_namespace_holding_none_is_traced_however_many_the_others_hold() {
        // Simulated arrivals on 8 slots: namespace a starts JVMs without end, then b, c arrive.
        let rule = Rule::for_slots(8, 8);
        assert_eq!(rule.reserve, 1);
        let mut held: HashMap<&str, usize> = HashMap::new();
        let mut free = 8;
        let mut arrive = |ns: &'static str| {
            let r = admit(rule, free, Some(held.get(ns).copied().unwrap_or(0)));
            if r.is_ok() {
                free -= 1;
                *held.entry(ns).or_default() += 1;
            }
            r
        };
        for _ in 0..7 {
            assert_eq!(arrive("a"), Ok(()));
        }
        assert_eq!(arrive("a"), Err(SlotsReserved), "a may not take the last slot");
        assert_eq!(arrive("b"), Ok(()), "b holds none: it takes the reserve");
        assert_eq!(arrive("c"), Err(SlotsExhausted), "a second newcomer waits for a slot");
    }

    #[test]
    fn the_reserve_is_a_sixteenth_at_least_one() {
        for (slots, reserve) in [(1, 1), (8, 1), (31, 1), (32, 2), (256, 16), (1024, 64)] {
            assert_eq!(default_reserve(slots), reserve, "{slots} slots");
        }
        // With the defaults, a namespace at its share (a quarter, at least 64) still leaves the
        // reserve: four of them cannot take the slots a fifth namespace's first JVM needs.
        for slots in [64, 256, 1024] {
            let per = (slots / 4).max(64);
            let rule = Rule::for_slots(slots, per);
            assert!(rule.reserve >= 1 && rule.reserve < per);
        }
    }

    #[test]
    fn refusal_reasons_round_trip_and_other_failures_are_not_capacity() {
        for r in Refusal::ALL {
            assert_eq!(Refusal::of_reason(r.reason()), Some(r));
        }
        for other in ["no_access", "not_selected", "exited_before_attach", ""] {
            assert_eq!(Refusal::of_reason(other), None);
        }
    }

    fn waiting(entries: &[(u32, Option<&str>)]) -> Waiting<u32> {
        let mut w = Waiting::default();
        for &(pid, ns) in entries {
            assert_eq!(w.refused(pid, 1000 + u64::from(pid), ns, pid), Recorded::Waits);
        }
        w
    }

    fn pids(v: Vec<(u32, u32)>) -> Vec<u32> {
        v.into_iter().map(|(p, _)| p).collect()
    }

    #[test]
    fn a_refusal_is_recorded_once_per_process() {
        let mut w = waiting(&[(10, Some("a"))]);
        assert_eq!(w.refused(10, 1010, Some("a"), 10), Recorded::Again, "a retry refused again");
        assert_eq!(w.len(), 1);
        assert_eq!(
            w.refused(10, 2020, Some("a"), 10),
            Recorded::Waits,
            "the pid reused by another process: a new refusal"
        );
        assert!(w.contains(10, 2020) && !w.contains(10, 1010));
        w.retain(|_, start| start != 2020);
        assert!(w.is_empty());
    }

    #[test]
    fn the_list_is_bounded_and_no_namespace_fills_it() {
        let mut w = Waiting::default();
        for pid in 0..MAX_WAITING_PER_NAMESPACE as u32 {
            assert_eq!(w.refused(pid, 1, Some("greedy"), ()), Recorded::Waits);
        }
        assert_eq!(w.refused(99_999, 1, Some("greedy"), ()), Recorded::Full);
        assert_eq!(w.refused(99_999, 1, Some("other"), ()), Recorded::Waits);
        for (i, ns) in ["b", "c", "d"].iter().enumerate() {
            for pid in 0..MAX_WAITING_PER_NAMESPACE as u32 {
                let pid = 200_000 + i as u32 * 10_000 + pid;
                if w.len() < MAX_WAITING {
                    assert_eq!(w.refused(pid, 1, Some(ns), ()), Recorded::Waits);
                }
            }
        }
        assert_eq!(w.len(), MAX_WAITING);
        assert_eq!(w.refused(999_999, 7, Some("e"), ()), Recorded::Full);
        w.remove(0);
        assert_eq!(w.refused(0, 3, Some("greedy"), ()), Recorded::Waits, "room again");
    }

    #[test]
    fn freed_slots_go_to_the_namespaces_holding_fewest_then_to_the_oldest_refusal() {
        // Refused in this order: a's 1 and 2, b's 3, c's 4 and 5; held now: a 5, b 1, c 0.
        let w = waiting(&[
            (1, Some("a")),
            (2, Some("a")),
            (3, Some("b")),
            (4, Some("c")),
            (5, Some("c")),
        ]);
        let held: HashMap<String, usize> =
            [("a".to_string(), 5), ("b".to_string(), 1)].into_iter().collect();
        let rule = Rule { per_namespace: 6, reserve: 0 };
        // Free slots -> the pids offered, in order. c holds none: its oldest first; then b and
        // c hold one each, b's refusal is older; a holds 5 of 6: one more, then its share.
        let table: &[(usize, &[u32])] = &[
            (0, &[]),
            (1, &[4]),
            (2, &[4, 3]),
            (3, &[4, 3, 5]),
            (4, &[4, 3, 5, 1]),
            (9, &[4, 3, 5, 1]),
        ];
        for &(free, want) in table {
            assert_eq!(pids(w.pick(rule, free, &held)), want, "{free} free");
        }
    }

    #[test]
    fn the_reserve_holds_in_the_retry_round_too() {
        // 1 slot free, the reserve 1: only a namespace holding none may have it.
        let w = waiting(&[(1, Some("a")), (2, Some("b")), (3, Some("c"))]);
        let held: HashMap<String, usize> =
            [("a".to_string(), 6), ("b".to_string(), 2)].into_iter().collect();
        let rule = Rule { per_namespace: 6, reserve: 1 };
        assert_eq!(pids(w.pick(rule, 1, &held)), [3], "c holds none");
        assert_eq!(pids(w.pick(rule, 2, &held)), [3], "then 1 free: b may not take the reserve");
        assert_eq!(pids(w.pick(rule, 3, &held)), [3, 2], "a is at its share");
        let held_c: HashMap<String, usize> =
            held.iter().map(|(k, v)| (k.clone(), *v)).chain([("c".to_string(), 1)]).collect();
        assert!(w.pick(rule, 1, &held_c).is_empty(), "the reserve waits for a newcomer");
    }

    #[test]
    fn standalone_jvms_are_offered_in_refusal_order() {
        let w = waiting(&[(30, None), (10, None), (20, None)]);
        let held = HashMap::new();
        assert_eq!(pids(w.pick(RULE, 2, &held)), [30, 10]);
        assert_eq!(pids(w.pick(RULE, 9, &held)), [30, 10, 20]);
    }

    #[test]
    fn a_namespace_keeps_its_id_while_it_holds_a_slot_and_freed_ids_come_back_last() {
        let mut ids = NamespaceIds::new(3);
        assert_eq!(ids.assign(0, "a"), Some(1));
        assert_eq!(ids.assign(1, "a"), Some(1));
        assert_eq!(ids.assign(2, "b"), Some(2));
        assert_eq!((ids.of_slot(0), ids.of_slot(2), ids.of_slot(7)), (1, 2, 0));
        assert_eq!(ids.release(0), Some(1));
        assert_eq!(ids.of_slot(1), 1, "a still holds slot 1");
        assert!(ids.in_use(1));
        assert_eq!(ids.release(1), Some(1), "a's last slot: its id is freed");
        assert!(!ids.in_use(1));
        assert_eq!(ids.release(1), None, "released already");
        assert_eq!(ids.assign(3, "c"), Some(3), "the id freed last is not reused first");
        assert_eq!(ids.assign(4, "d"), Some(1));
        assert_eq!(ids.assign(5, "e"), None, "more namespaces than ids");
        assert_eq!(ids.assign(2, "c"), Some(3), "a slot given again leaves its namespace");
        assert_eq!(ids.release(3), Some(3));
        assert_eq!(ids.assign(6, "e"), Some(2), "b left with its slot: its id is free");
    }
}
