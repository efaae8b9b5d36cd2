//! Connection slots of the HTTP listeners (src/serve.rs): a cap on the connections open at once
//! and a smaller one per peer address, so that no single client — any pod of the node can
//! connect — takes every slot and starves Prometheus or the kubelet's probes. Pure: the accept
//! loop asks [`Slots::admit`] and holds the returned [`Slot`] for the connection's life.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Connections open at once on the metrics listener (`--listen`).
pub const MAX_CONNECTIONS: usize = 64;
/// `--max-connections-per-peer`'s default: room for a few scrapers behind one address (a
/// Prometheus pair behind a node's SNAT) while one pod holds at most an eighth of the slots.
pub const DEFAULT_PER_PEER: u32 = 8;
/// Connections open at once on the probe listener (`--probe-listen`): the kubelet opens one per
/// probe and closes it; the rest is room for peers that hold theirs.
pub const PROBE_MAX_CONNECTIONS: usize = 16;
/// Per peer address on the probe listener: the kubelet's liveness and readiness probes at once,
/// twice; a pod that holds its four leaves twelve.
pub const PROBE_MAX_PER_PEER: usize = 4;

/// Why a connection was closed at accept (the `reason` label of
/// `jvmdiag_agent_http_connections_refused_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its peer address already holds its share.
    PerPeer,
    /// Every slot is taken.
    Total,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::PerPeer => "per_peer",
            Refusal::Total => "total",
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    /// Only addresses holding at least one slot: at most `total` entries.
    by_peer: HashMap<IpAddr, usize>,
}

/// The slots of one listener.
#[derive(Debug, Clone)]
pub struct Slots {
    total: usize,
    per_peer: usize,
    held: Arc<Mutex<Held>>,
}

/// A slot held: released when dropped (the connection ended).
#[derive(Debug)]
pub struct Slot {
    peer: IpAddr,
    held: Arc<Mutex<Held>>,
}

impl Slots {
    pub fn new(total: usize, per_peer: usize) -> Slots {
        Slots { total, per_peer, held: Arc::default() }
    }

    /// A slot for a connection from `peer`, or why not. The per-peer share is checked first:
    /// a peer over its share is counted as such even when every slot is taken too.
    pub fn admit(&self, peer: IpAddr) -> Result<Slot, Refusal> {
        let peer = peer_key(peer);
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if h.by_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer {
            return Err(Refusal::PerPeer);
        }
        if h.total >= self.total {
            return Err(Refusal::Total);
        }
        h.total += 1;
        *h.by_peer.entry(peer).or_default() += 1;
        Ok(Slot { peer, held: self.held.clone() })
    }

    /// Slots held now: (all, by `peer`).
    pub fn held(&self, peer: IpAddr) -> (usize, usize) {
        let h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        (h.total, h.by_peer.get(&peer_key(peer)).copied().unwrap_or(0))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        h.total = h.total.saturating_sub(1);
        if let Some(n) = h.by_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                h.by_peer.remove(&self.peer);
            }
        }
    }
}

/// The address a peer is counted by: an IPv4 client of a dual-stack (`[::]`) listener arrives
/// as `::ffff:a.b.c.d` and is the same peer as `a.b.c.d`.
pub fn peer_key(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_peer_gets_its_share_and_no_more_and_others_still_get_theirs() {
        let slots = Slots::new(10, 3);
        let a: Vec<Slot> = (0..3).map(|_| slots.admit(ip("10.0.0.1")).unwrap()).collect();
        assert_eq!(slots.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerPeer);
        let b = slots.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(slots.held(ip("10.0.0.1")), (4, 3));
        drop(a);
        assert_eq!(slots.held(ip("10.0.0.1")), (1, 0), "released with the connections");
        assert!(slots.admit(ip("10.0.0.1")).is_ok());
        drop(b);
    }

    #[test]
    fn the_total_caps_every_peer_together_and_frees_on_drop() {
        let slots = Slots::new(4, 2);
        let held: Vec<Slot> = ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3"]
            .iter()
            .map(|p| slots.admit(ip(p)).unwrap())
            .collect();
        assert_eq!(slots.admit(ip("10.0.0.4")).unwrap_err(), Refusal::Total);
        assert_eq!(
            slots.admit(ip("10.0.0.1")).unwrap_err(),
            Refusal::PerPeer,
            "over its share is said first"
        );
        drop(held);
        assert_eq!(slots.held(ip("10.0.0.1")), (0, 0));
        assert!(slots.held.lock().unwrap().by_peer.is_empty(), "no address kept without a slot");
        assert!(slots.admit(ip("10.0.0.4")).is_ok());
    }

    #[test]
    fn an_ipv4_peer_is_one_peer_whether_it_arrives_as_v4_or_v4_mapped_v6() {
        let slots = Slots::new(10, 1);
        let _a = slots.admit(ip("192.0.2.7")).unwrap();
        assert_eq!(slots.admit(ip("::ffff:192.0.2.7")).unwrap_err(), Refusal::PerPeer);
        assert!(slots.admit(ip("2001:db8::7")).is_ok());
    }
}
