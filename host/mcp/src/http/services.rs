//! The SDK services a request is routed to: one with server-side sessions,
//! one without ([`crate::Sessions`]), and who opened each session.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::{
    StreamableHttpService,
    session::{SessionManager, local::LocalSessionManager},
};

use crate::owners::{MAX_SESSIONS_PER_CALLER, SessionOwners};
use crate::{Backend, Sessions, WardenServer};

/// The SDK services a request is routed to.
pub(super) struct Services<B: Backend> {
    pub(super) stateful: StreamableHttpService<WardenServer<B>, LocalSessionManager>,
    pub(super) stateless: StreamableHttpService<WardenServer<B>, LocalSessionManager>,
    pub(super) sessions: Sessions,
    /// Who opened each session (authenticated endpoints only).
    pub(super) owners: Arc<SessionOwners>,
    /// The stateful service's sessions.
    pub(super) manager: Arc<LocalSessionManager>,
    /// [`HttpConfig::body_timeout`].
    pub(super) body_timeout: std::time::Duration,
    /// Where `/metrics` comes from.
    pub(super) backend: Arc<B>,
}

impl<B: Backend> Clone for Services<B> {
    fn clone(&self) -> Self {
        Self {
            stateful: self.stateful.clone(),
            stateless: self.stateless.clone(),
            sessions: self.sessions,
            owners: self.owners.clone(),
            manager: self.manager.clone(),
            body_timeout: self.body_timeout,
            backend: self.backend.clone(),
        }
    }
}

impl<B: Backend> Services<B> {
    /// Make room for one more session of `subject`: past
    /// [`MAX_SESSIONS_PER_CALLER`] that still exist (those that ended or
    /// idled out are forgotten here), its oldest is ended.
    pub(super) async fn make_room_for(&self, subject: &str) {
        let mine = self.owners.of(subject);
        if mine.len() < MAX_SESSIONS_PER_CALLER {
            return;
        }
        let mut live = Vec::new();
        for session in mine {
            let exists = self.manager.has_session(&session.as_str().into()).await;
            if exists.unwrap_or(false) {
                live.push(session);
            } else {
                self.owners.ended(&session);
            }
        }
        let excess = (live.len() + 1).saturating_sub(MAX_SESSIONS_PER_CALLER);
        for oldest in live.into_iter().take(excess) {
            let _ = self.manager.close_session(&oldest.as_str().into()).await;
            self.owners.ended(&oldest);
        }
    }

    /// The service for a request: one with a session id stays on its
    /// session; a POST without one gets a session only as
    /// [`HttpConfig::sessions`] says (`body` is its JSON-RPC message).
    pub(super) fn pick(
        &self,
        has_session: bool,
        body: Option<&[u8]>,
    ) -> &StreamableHttpService<WardenServer<B>, LocalSessionManager> {
        let stateful = match self.sessions {
            Sessions::All => true,
            Sessions::None => false,
            Sessions::Elicitation => has_session || body.is_some_and(initializes_with_elicitation),
        };
        if stateful {
            &self.stateful
        } else {
            &self.stateless
        }
    }
}

/// Whether `body` is an `initialize` whose client declares elicitation.
pub(crate) fn initializes_with_elicitation(body: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    message["method"] == "initialize"
        && message["params"]["capabilities"]["elicitation"].is_object()
}

#[cfg(test)]
mod sessions_tests {
    use super::initializes_with_elicitation;

    #[test]
    fn only_an_initialize_declaring_elicitation_asks_for_a_session() {
        let init = |capabilities: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"clientInfo":{{"name":"c","version":"0"}}}}}}"#
            )
        };
        assert!(initializes_with_elicitation(
            init(r#"{"elicitation":{}}"#).as_bytes()
        ));
        assert!(!initializes_with_elicitation(init("{}").as_bytes()));
        assert!(!initializes_with_elicitation(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"capabilities":{"elicitation":{}}}}"#
        ));
        assert!(!initializes_with_elicitation(b"not json"));
    }
}
