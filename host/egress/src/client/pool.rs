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

/// Idle connections. HTTP/2 senders are shared; HTTP/1 senders are lent out one at a time.
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

    /// A live sender for `key`, if one is idle.
    pub(crate) fn checkout(&self, key: &PoolKey) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(key)?;
        let now = Instant::now();
        list.retain(|i| {
            now.duration_since(i.since) < self.idle_timeout
                && match &i.sender {
                    Sender::Http1(s) => !s.is_closed(),
                    Sender::Http2(s) => !s.is_closed(),
                }
        });
        if let Some(pos) = list
            .iter()
            .position(|i| matches!(&i.sender, Sender::Http2(s) if s.is_ready()))
        {
            let Sender::Http2(s) = &list[pos].sender else {
                unreachable!("position matched an HTTP/2 sender")
            };
            return Some(Sender::Http2(s.clone()));
        }
        list.pop().map(|i| i.sender)
    }

    /// Return `sender` for reuse.
    pub(crate) fn checkin(&self, key: PoolKey, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.entry(key).or_default();
        let now = Instant::now();
        match &sender {
            Sender::Http2(s) => {
                if s.is_closed() || list.iter().any(|i| matches!(i.sender, Sender::Http2(_))) {
                    return;
                }
            }
            Sender::Http1(s) => {
                if s.is_closed() || list.len() >= self.max_idle {
                    return;
                }
            }
        }
        list.push(Idle { sender, since: now });
    }
}
