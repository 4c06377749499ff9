//! Which caller opened each MCP session over HTTP, so a session id is not
//! a bearer token: a request naming a session another caller opened is
//! answered as if the session did not exist (`404`), whatever token it
//! carries. Without the binding, anyone holding a valid token and another
//! caller's session id (a proxy's log, a shared client) could end that
//! session, read its event stream, or answer its pending approval prompt.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Sessions remembered at most; past it the oldest is forgotten, and a
/// request naming it is refused like one naming another's (its client
/// initializes anew, as for any session the server ended).
const MAX_SESSIONS: usize = 16_384;

/// Live sessions one caller may hold: each is a task and its buffers until
/// it is ended or idles out, so one token could otherwise open them
/// without end. Past it, opening one ends the caller's oldest (its client,
/// if still there, is told the session is gone and initializes anew): a
/// token many clients share (`bearer`) is never locked out.
pub(crate) const MAX_SESSIONS_PER_CALLER: usize = 64;

/// Session id → the subject of the caller that opened it.
#[derive(Debug, Default)]
pub(crate) struct SessionOwners {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    owners: HashMap<String, String>,
    /// Ids in the order they were opened, for forgetting the oldest.
    opened: VecDeque<String>,
}

impl SessionOwners {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `subject` may use `session`: it opened it.
    pub(crate) fn allows(&self, session: &str, subject: &str) -> bool {
        self.lock()
            .owners
            .get(session)
            .is_some_and(|owner| owner == subject)
    }

    /// `subject` opened `session`.
    pub(crate) fn opened(&self, session: String, subject: String) {
        let mut state = self.lock();
        if state.owners.insert(session.clone(), subject).is_none() {
            state.opened.push_back(session);
        }
        while state.owners.len() > MAX_SESSIONS {
            let Some(oldest) = state.opened.pop_front() else {
                break;
            };
            state.owners.remove(&oldest);
        }
    }

    /// The sessions `subject` opened that are remembered, oldest first.
    pub(crate) fn of(&self, subject: &str) -> Vec<String> {
        let state = self.lock();
        state
            .opened
            .iter()
            .filter(|session| state.owners.get(*session).is_some_and(|o| o == subject))
            .cloned()
            .collect()
    }

    /// `session` was ended.
    pub(crate) fn ended(&self, session: &str) {
        let mut state = self.lock();
        if state.owners.remove(session).is_some() {
            state.opened.retain(|id| id != session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_opener_uses_a_session_and_the_oldest_is_forgotten_first() {
        let owners = SessionOwners::default();
        owners.opened("s1".into(), "alice".into());
        assert!(owners.allows("s1", "alice"));
        assert!(!owners.allows("s1", "bob"));
        assert!(!owners.allows("unknown", "alice"));
        owners.ended("s1");
        assert!(!owners.allows("s1", "alice"));
        for i in 0..=MAX_SESSIONS {
            owners.opened(format!("s{i}"), "alice".into());
        }
        assert!(!owners.allows("s0", "alice"), "the oldest is forgotten");
        assert!(owners.allows(&format!("s{MAX_SESSIONS}"), "alice"));
    }
}
