//! Reuse of connections, keyed by the checked address and the server name.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};

/// What a pooled connection is for: the address it was checked and
/// connected to, the TLS server name it verified, and whether TLS is on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    pub(crate) addr: SocketAddr,
    pub(crate) server_name: String,
    pub(crate) tls: bool,
}

/// A request sender on one connection.
#[derive(Debug)]
pub(crate) enum Sender {
    Http1(http1::SendRequest<Full<Bytes>>),
    Http2(http2::SendRequest<Full<Bytes>>),
}

#[derive(Debug)]
struct Idle {
    sender: Sender,
    since: Instant,
}

/// Idle connections kept in all (every key together): past it the one idle
/// longest is closed. A key a connection is never asked for again (each of
/// a wildcard target's hosts, or an address a server's DNS hands out once)
/// kept its connection, held open by a server that stays silent, until the
/// host ran out of file descriptors.
pub const MAX_IDLE_TOTAL: usize = 64;

/// Idle connections. HTTP/2 senders are shared; HTTP/1 senders are lent out
/// one at a time. Every checkin drops what has expired or closed under any
/// key, and keeps the total under [`MAX_IDLE_TOTAL`].
#[derive(Debug)]
pub(crate) struct Pool {
    idle: Mutex<HashMap<PoolKey, Vec<Idle>>>,
    idle_timeout: Duration,
    max_idle: usize,
}

impl Pool {
    pub(crate) fn new(idle_timeout: Duration, max_idle: usize) -> Self {
        Self {
            idle: Mutex::new(HashMap::new()),
            idle_timeout,
            max_idle,
        }
    }

    /// Whether `idle` may still be used at `now`.
    fn usable(&self, idle: &Idle, now: Instant) -> bool {
        now.duration_since(idle.since) < self.idle_timeout
            && match &idle.sender {
                Sender::Http1(s) => !s.is_closed(),
                Sender::Http2(s) => !s.is_closed(),
            }
    }

    /// Idle connections held now, every key together.
    pub(crate) fn idle_count(&self) -> usize {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.values().map(Vec::len).sum()
    }

    /// A live sender for `key`, if one is idle.
    pub(crate) fn checkout(&self, key: &PoolKey) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(key)?;
        let now = Instant::now();
        list.retain(|i| self.usable(i, now));
        if let Some(pos) = list
            .iter()
            .position(|i| matches!(&i.sender, Sender::Http2(s) if s.is_ready()))
        {
            let Sender::Http2(s) = &list[pos].sender else {
                unreachable!("position matched an HTTP/2 sender")
            };
            return Some(Sender::Http2(s.clone()));
        }
        let taken = list.pop().map(|i| i.sender);
        if list.is_empty() {
            idle.remove(key);
        }
        taken
    }

    /// Return `sender` for reuse.
    pub(crate) fn checkin(&self, key: PoolKey, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // Dropping a sender closes its connection.
        idle.retain(|_, list| {
            list.retain(|i| self.usable(i, now));
            !list.is_empty()
        });
        // Kept at all? (A closed one, an HTTP/1 one past its key's bound, a
        // second HTTP/2 one for a key, are dropped.)
        let list = idle.get(&key).map_or(&[][..], Vec::as_slice);
        let keep = match &sender {
            Sender::Http2(s) => {
                !s.is_closed() && !list.iter().any(|i| matches!(i.sender, Sender::Http2(_)))
            }
            Sender::Http1(s) => !s.is_closed() && list.len() < self.max_idle,
        };
        if !keep {
            return;
        }
        let mut total: usize = idle.values().map(Vec::len).sum();
        while total >= MAX_IDLE_TOTAL {
            let oldest = idle
                .iter()
                .flat_map(|(key, list)| {
                    list.iter()
                        .enumerate()
                        .map(move |(at, i)| (i.since, key, at))
                })
                .min_by_key(|(since, _, _)| *since)
                .map(|(_, key, at)| (key.clone(), at));
            let Some((oldest_key, at)) = oldest else {
                break;
            };
            if let Some(list) = idle.get_mut(&oldest_key) {
                list.remove(at);
                if list.is_empty() {
                    idle.remove(&oldest_key);
                }
            }
            total -= 1;
        }
        let list = idle.entry(key).or_default();
        list.push(Idle { sender, since: now });
    }
}
