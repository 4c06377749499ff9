//! Connections open per peer, so one client cannot hold every one of the
//! HTTP endpoint's connection slots (before it has authenticated, each for
//! up to the header-read timeout).
//!
//! A peer is an IPv4 address, or an IPv6 /64 (what one host is usually
//! given: counting single IPv6 addresses would let one host open its share
//! from each of its 2^64). Behind a proxy or load balancer every client is
//! the proxy's address: raise the share to the cap there.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Open connections per peer, each held by a [`PeerSlot`].
#[derive(Debug)]
pub(crate) struct Peers {
    share: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl Peers {
    /// At most `share` connections per peer (at least one).
    pub(crate) fn new(share: usize) -> Arc<Peers> {
        Arc::new(Peers {
            share: share.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a connection from `ip`; `None` when its peer has its share.
    pub(crate) fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<PeerSlot> {
        let peer = peer_of(ip);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(peer).or_insert(0);
        if *count >= self.share {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: self.clone(),
            peer,
        })
    }
}

/// One open connection of a peer; dropped when the connection closes.
#[derive(Debug)]
pub(crate) struct PeerSlot {
    peers: Arc<Peers>,
    peer: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

/// The peer `ip` counts toward: IPv4 as is (an IPv4-mapped IPv6 address
/// too), IPv6 by its /64.
fn peer_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(prefix.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_gets_its_share_and_gets_it_back_as_connections_close() {
        let peers = Peers::new(2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let first = peers.enter(a).unwrap();
        let _second = peers.enter(a).unwrap();
        assert!(peers.enter(a).is_none());
        assert!(peers.enter("192.0.2.2".parse().unwrap()).is_some());
        // The same address mapped into IPv6 is the same peer.
        assert!(peers.enter("::ffff:192.0.2.1".parse().unwrap()).is_none());
        drop(first);
        assert!(peers.enter(a).is_some());
    }

    #[test]
    fn an_ipv6_peer_is_its_64() {
        let peers = Peers::new(1);
        let _held = peers.enter("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert!(
            peers
                .enter("2001:db8:1:2:ffff::9".parse().unwrap())
                .is_none()
        );
        assert!(peers.enter("2001:db8:1:3::1".parse().unwrap()).is_some());
    }
}
