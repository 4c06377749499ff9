//! Fetching a resource server's signing keys again when the issuer rotates
//! them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{JwtAuth, parse_keys, token_kid};

/// The least time between two fetches of the signing keys.
pub const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// How old the keys may grow while an event stream is open before its next
/// check fetches them again (a withdrawn key is noticed without a request
/// naming a new one).
pub const KEY_MAX_AGE: Duration = Duration::from_secs(600);

/// Where a resource server's current signing keys come from: the issuer's
/// `jwks_uri` (`warden serve --oauth-issuer`) or a JWKS file the operator
/// replaces (`--oauth-jwks-file`).
#[async_trait::async_trait]
pub trait JwksSource: Send + Sync + std::fmt::Debug {
    /// The current JWKS document, or why it could not be read.
    async fn fetch(&self) -> Result<String, String>;
}

#[derive(Debug)]
pub(super) struct Rotation {
    source: Arc<dyn JwksSource>,
    last_fetch: Mutex<Option<Instant>>,
    /// When the keys held were read (at start, or by the last fetch).
    read_at: Mutex<Instant>,
}

impl Rotation {
    pub(super) fn new(source: Arc<dyn JwksSource>) -> Self {
        Rotation {
            source,
            last_fetch: Mutex::new(None),
            read_at: Mutex::new(Instant::now()),
        }
    }

    fn age(&self) -> Duration {
        self.read_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    /// Claims the next fetch: false when one was made less than
    /// [`KEY_REFETCH_INTERVAL`] ago (or is under way).
    fn claim(&self) -> bool {
        let mut last = self.last_fetch.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < KEY_REFETCH_INTERVAL) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }
}

impl JwtAuth {
    /// When `token` names a key this server does not know, fetches the keys
    /// again (rate limited) and replaces them; whether they changed, so the
    /// caller verifies the token once more.
    pub(crate) async fn refresh_keys_for(&self, token: &[u8]) -> bool {
        let Some(rotation) = &self.rotation else {
            return false;
        };
        let Some(kid) = token_kid(token) else {
            return false;
        };
        if self.keys().iter().any(|k| k.kid.as_deref() == Some(&kid)) || !rotation.claim() {
            return false;
        }
        tracing::info!(
            kid,
            "a token names an unknown key: fetching the issuer's keys again"
        );
        self.fetch_keys(rotation).await
    }

    /// Fetch the keys again when they are [`KEY_MAX_AGE`] old (an open
    /// event stream's check: a key the issuer withdrew stops verifying).
    pub(crate) async fn refresh_stale_keys(&self) {
        let Some(rotation) = &self.rotation else {
            return;
        };
        if rotation.age() >= KEY_MAX_AGE && rotation.claim() {
            self.fetch_keys(rotation).await;
        }
    }

    /// Replace the keys with the source's; whether that worked.
    async fn fetch_keys(&self, rotation: &Rotation) -> bool {
        let fetched = rotation.source.fetch().await;
        match fetched.and_then(|jwks| parse_keys(&jwks).map_err(|e| e.to_string())) {
            Ok(keys) => {
                tracing::info!("the issuer's signing keys were fetched again");
                *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
                *rotation.read_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                true
            }
            Err(error) => {
                tracing::warn!(%error, "fetching the issuer's signing keys again failed; the current keys stay");
                false
            }
        }
    }
}
