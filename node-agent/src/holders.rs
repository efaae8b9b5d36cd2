//! The holders' stacks, on demand: `hotspot:monitor__contended__exit` attached to a contended
//! JVM for a short window at a time.
//!
//! The holder's stack (kind `monitor_hold`) is taken where the owner releases a monitor that
//! others wait for. HotSpot fires that probe on every such release, also where no thread ever
//! blocked (a `notify` hand-off re-enters through the wait path, not a contended enter), so
//! attached for good it would trap on every hand-off of a wait-heavy pool whatever the stack
//! budget: a fifth of a wait storm's throughput. So twice a second the agent reads each JVM's
//! contended enters (the monitors collector's counts) and, when a JVM has at least
//! [`THRESHOLD`] a second, attaches the probe to that process alone for a [`WINDOW`]. At the
//! window's end it reads how often the probe fired there (`mon_exits`): under
//! [`CHEAP_EXITS`] a second (a lock held long, as a stall holds it: the traps cost nothing
//! measurable) it stays for another window; above, it is detached and kept off for at least
//! [`PAUSE`], so a contention storm pays the trap one second in fifteen. A JVM whose monitors
//! are never contended never pays it. The budget (`--stack-samples-per-second`) still bounds
//! the stacks taken while it is attached; a window of a second takes up to twice the budget
//! (the bucket holds a second of tokens). The links are released on the detach thread
//! (`probe::detach`), so windows that end never hold up the main loop.
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use anyhow::Result;
use libbpf_rs::Link;

use crate::attach::{AttachManager, JvmState};

/// Contended monitor enters a second that open a window.
pub const THRESHOLD: u64 = 1;
/// Probe hits a second under which a window is followed by another (each a trap and a short
/// program, ~2-3 µs: 500 a second cost ~0.15 % of one core).
pub const CHEAP_EXITS: u64 = 500;
/// How long the probe stays attached.
pub const WINDOW: Duration = Duration::from_secs(1);
/// How long it then stays off at least.
pub const PAUSE: Duration = Duration::from_secs(14);
/// How often each JVM's contended enters are read (a window opens within about twice this
/// of the contention's start).
const CHECK_EVERY: Duration = Duration::from_millis(500);

/// One JVM's window state: what [`Window::check`] decides from.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Window {
    /// (when, contended enters then) at the previous check.
    last: Option<(Instant, u64)>,
    /// While attached: when the window ends.
    pub until: Option<Instant>,
    /// While attached: (when, probe hits then) at the window's start.
    since: Option<(Instant, u64)>,
    /// After a window: the earliest next one.
    next_allowed: Option<Instant>,
    pub windows: u64,
}

impl Window {
    /// Reads the JVM's enters so far (`total`) at `now`: true when a window should open (the
    /// rate since the previous check is at least `threshold` a second, none is open, and the
    /// pause after the last one is over).
    pub fn check(&mut self, now: Instant, total: u64, threshold: u64) -> bool {
        let Some((t0, n0)) = self.last.replace((now, total)) else { return false };
        let dt = now.duration_since(t0).as_secs_f64().max(1e-3);
        let rate = total.saturating_sub(n0) as f64 / dt;
        threshold > 0
            && rate >= threshold as f64
            && self.until.is_none()
            && self.next_allowed.is_none_or(|t| now >= t)
    }

    /// A window opened with the probe's hits so far at `exits` (None: unknown), or failed to
    /// (`opened` false: retried after a pause).
    pub fn open(&mut self, now: Instant, opened: bool, exits: Option<u64>) {
        if opened {
            self.until = Some(now + WINDOW);
            self.since = exits.map(|e| (now, e));
            self.windows += 1;
        } else {
            self.next_allowed = Some(now + PAUSE);
        }
    }

    /// At `now`, with the probe's hits so far at `exits` (None: unknown): true when the open
    /// window is over and the probe fired often in it, or how often is unknown (then closed,
    /// and the pause begins); a window where it fired less than [`CHEAP_EXITS`] a second is
    /// followed by another.
    pub fn close_if_over(&mut self, now: Instant, exits: Option<u64>) -> bool {
        if self.until.is_none_or(|u| now < u) {
            return false;
        }
        if let (Some((t0, e0)), Some(e)) = (self.since, exits) {
            let dt = now.duration_since(t0).as_secs_f64().max(1e-3);
            if (e.saturating_sub(e0) as f64) < CHEAP_EXITS as f64 * dt {
                self.until = Some(now + WINDOW);
                self.since = Some((now, e));
                return false;
            }
        }
        self.until = None;
        self.since = None;
        self.next_allowed = Some(now + PAUSE);
        true
    }
}

struct JvmHolder {
    slot: u32,
    window: Window,
    links: Vec<Link>,
    /// Duplicates of the links' kernel descriptors, closed on the detach thread.
    kernel: Vec<OwnedFd>,
}

impl JvmHolder {
    fn detach(&mut self) {
        self.links.clear();
        crate::probe::detach(std::mem::take(&mut self.kernel));
    }
}

#[derive(Default)]
pub struct Holders {
    jvms: HashMap<u32, JvmHolder>,
    last_check: Option<Instant>,
}

impl Holders {
    /// Links held now (part of `jvmdiag_agent_bpf_links`).
    pub fn links(&self) -> usize {
        self.jvms.values().map(|j| j.links.len()).sum()
    }

    /// Called every discovery poll: forgets released JVMs, closes windows that ended, and
    /// twice a second opens one for each JVM contended enough.
    pub fn poll(&mut self, mgr: &mut AttachManager, now: Instant) {
        self.jvms.retain(|pid, h| {
            let same = mgr.jvms.get(pid).is_some_and(|j| j.slot == h.slot);
            if !same {
                h.detach();
            }
            same
        });
        for (pid, h) in self.jvms.iter_mut() {
            let exited = mgr.jvms.get(pid).is_none_or(|j| j.state != JvmState::Live);
            let over = h.window.until.is_some_and(|u| now >= u)
                && h.window.close_if_over(now, exits(mgr, h.slot));
            if over || (exited && !h.links.is_empty()) {
                h.detach();
                tracing::debug!(pid = *pid, "holder probe detached");
            }
        }
        if self.last_check.is_some_and(|t| now.duration_since(t) < CHECK_EVERY) {
            return;
        }
        self.last_check = Some(now);
        let Some(Ok(enters)) = mgr.collectors.iter().find_map(|c| c.contended_per_slot()) else {
            return;
        };
        let live: Vec<(u32, u32, bool)> = mgr
            .jvms
            .iter()
            .filter(|(_, j)| j.state == JvmState::Live)
            .map(|(pid, j)| (*pid, j.slot, j.limits.stack_samples != Some(0)))
            .collect();
        for (pid, slot, wants_stacks) in live {
            let total = enters.get(&slot).copied().unwrap_or(0);
            let h = self.jvms.entry(pid).or_insert(JvmHolder {
                slot,
                window: Window::default(),
                links: Vec::new(),
                kernel: Vec::new(),
            });
            if !h.window.check(now, total, if wants_stacks { THRESHOLD } else { 0 }) {
                continue;
            }
            let before = crate::probe::open_fds();
            let r = attach(mgr, pid);
            let kernel = crate::probe::new_link_fds(&before);
            let hits = exits(mgr, slot);
            let h = self.jvms.get_mut(&pid).expect("inserted above");
            h.window.open(now, r.is_ok(), hits);
            match r {
                Ok(links) => {
                    (h.links, h.kernel) = (links, kernel);
                    tracing::debug!(pid, "holder probe attached");
                }
                Err(e) => {
                    tracing::warn!(pid, error = format!("{e:#}"), "holder probe not attached")
                }
            }
        }
    }
}

/// The holder probe's hits so far in a JVM slot (None when they cannot be read: its window
/// then ends as one where it fired often).
fn exits(mgr: &AttachManager, slot: u32) -> Option<u64> {
    match mgr.collectors.iter().find_map(|c| c.holder_exits(slot))? {
        Ok(n) => Some(n),
        Err(e) => {
            tracing::debug!(slot, error = format!("{e:#}"), "holder probe: reading its hits");
            None
        }
    }
}

/// The monitors collector's holder probe, on this process alone.
fn attach(mgr: &mut AttachManager, pid: u32) -> Result<Vec<Link>> {
    // The collectors are set aside while the manager opens the JVM's file for them.
    let collectors = std::mem::take(&mut mgr.collectors);
    let r = mgr.attach_to_process(pid, |target| {
        collectors
            .iter()
            .find_map(|c| c.attach_holder(target))
            .unwrap_or_else(|| Err(anyhow::anyhow!("no monitors collector")))
    });
    mgr.collectors = collectors;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    /// A window opened at t0 + 2 s, after a quiet reading and one at the threshold.
    fn opened(t0: Instant, exits: u64) -> Window {
        let mut w = Window::default();
        assert!(!w.check(t0, 0, THRESHOLD), "the first reading has no rate");
        assert!(!w.check(t0 + S, 0, THRESHOLD), "no contention");
        assert!(w.check(t0 + 2 * S, THRESHOLD, THRESHOLD), "at the threshold");
        w.open(t0 + 2 * S, true, Some(exits));
        assert_eq!(w.windows, 1);
        w
    }

    #[test]
    fn a_busy_window_is_followed_by_a_pause() {
        let t0 = Instant::now();
        let mut w = opened(t0, 1_000);
        let half = t0 + 2 * S + WINDOW / 2;
        assert!(!w.check(half, 10_000, THRESHOLD), "open already");
        assert!(!w.close_if_over(half, Some(1_000_000)), "not over yet");
        let end = t0 + 2 * S + WINDOW;
        let busy = 1_000 + CHEAP_EXITS * WINDOW.as_secs() + 1;
        assert!(w.close_if_over(end, Some(busy)), "fired more than CHEAP_EXITS a second");
        assert!(w.until.is_none());
        assert!(!w.check(end + PAUSE / 2, 20_000, THRESHOLD), "within the pause");
        assert!(w.check(end + PAUSE, 40_000, THRESHOLD), "after the pause");
    }

    #[test]
    fn a_cheap_window_goes_on_and_an_unknown_one_ends() {
        let t0 = Instant::now();
        let mut w = opened(t0, 50);
        let mut end = t0 + 2 * S + WINDOW;
        for i in 1..=5 {
            // A lock held long: a few exits a second, the probe stays.
            assert!(!w.close_if_over(end, Some(50 + 20 * i)), "window {i} was cheap");
            assert!(w.until.is_some());
            end += WINDOW;
        }
        assert_eq!(w.windows, 1, "one window, extended");
        assert!(w.close_if_over(end, None), "hits unknown: it ends");
        let mut unknown = opened(t0, 0);
        unknown.since = None;
        assert!(unknown.close_if_over(t0 + 2 * S + WINDOW, Some(1)), "no count at its start");
    }

    #[test]
    fn no_window_without_contention_or_with_stacks_off() {
        let t0 = Instant::now();
        let mut w = Window::default();
        for i in 0..30 {
            assert!(!w.check(t0 + i * S, 0, THRESHOLD));
        }
        let mut off = Window::default();
        off.check(t0, 0, 0);
        assert!(!off.check(t0 + S, 1_000_000, 0), "threshold 0: never");
    }

    #[test]
    fn a_failed_attach_waits_a_pause() {
        let t0 = Instant::now();
        let mut w = Window::default();
        w.check(t0, 0, THRESHOLD);
        assert!(w.check(t0 + S, 100, THRESHOLD));
        w.open(t0 + S, false, None);
        assert_eq!(w.windows, 0);
        assert!(!w.check(t0 + 2 * S, 200, THRESHOLD));
        assert!(w.check(t0 + S + PAUSE, 100_000, THRESHOLD));
    }
}
