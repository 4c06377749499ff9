//! Fetching a resource server's signing keys again when the issuer rotates
//! them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{JwtAuth, parse_keys, token_kid};

/// The least time between two fetches of the signing keys.
pub const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

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
}

impl Rotation {
    pub(super) fn new(source: Arc<dyn JwksSource>) -> Self {
        Rotation {
            source,
            last_fetch: Mutex::new(None),
        }
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
        let fetched = rotation.source.fetch().await;
        match fetched.and_then(|jwks| parse_keys(&jwks).map_err(|e| e.to_string())) {
            Ok(keys) => {
                tracing::info!(kid, "the issuer's signing keys were fetched again");
                *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
                true
            }
            Err(error) => {
                tracing::warn!(%error, "fetching the issuer's signing keys again failed; the current keys stay");
                false
            }
        }
    }
}
