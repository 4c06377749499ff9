//! Invocation scopes and the scoped persistent grants that cover them.

use warden_core::Origin;

use crate::{LocationId, UnixMillis};

/// Where an invocation happens: the Location and, optionally, the session
/// (conversation, run) inside it. Grants and fingerprints are scoped by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct InvocationScope {
    /// The Location.
    pub location: LocationId,
    /// The session within the Location, if the host has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl InvocationScope {
    /// A Location-wide scope without a session.
    pub fn location(location: impl Into<String>) -> Self {
        InvocationScope {
            location: LocationId(location.into()),
            session: None,
        }
    }

    /// The same scope inside `session`.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }
}

/// Identifies a grant.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct GrantId(pub String);

impl std::fmt::Display for GrantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A scoped persistent grant: calls of `capability_id` from `origin` in
/// `location` (and `session`, when set) need no approval while it lives.
/// `ask_always` gates and effect floors ignore grants.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    /// The grant's id.
    pub id: GrantId,
    /// The capability it covers.
    pub capability_id: String,
    /// The Location it covers.
    pub location: LocationId,
    /// The only session it covers; `None` covers the whole Location.
    pub session: Option<String>,
    /// The origin it covers.
    pub origin: Origin,
    /// When it was made.
    pub created_at: UnixMillis,
    /// When it stops covering; `None` never.
    pub expires_at: Option<UnixMillis>,
}

impl Grant {
    /// Whether this grant covers a call of `capability_id` from `origin` in
    /// `scope` at `now`.
    pub fn covers(
        &self,
        capability_id: &str,
        scope: &InvocationScope,
        origin: Origin,
        now: UnixMillis,
    ) -> bool {
        self.capability_id == capability_id
            && self.location == scope.location
            && self.origin == origin
            && self
                .session
                .as_ref()
                .is_none_or(|s| scope.session.as_ref() == Some(s))
            && self.expires_at.is_none_or(|t| now < t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(session: Option<&str>, expires_at: Option<i64>) -> Grant {
        Grant {
            id: GrantId("g".into()),
            capability_id: "gh.read".into(),
            location: "loc".into(),
            session: session.map(str::to_owned),
            origin: Origin::LoopRun,
            created_at: 0,
            expires_at,
        }
    }

    #[test]
    fn grants_are_scoped() {
        let scope = InvocationScope::location("loc").with_session("s1");
        assert!(grant(None, None).covers("gh.read", &scope, Origin::LoopRun, 5));
        assert!(grant(Some("s1"), None).covers("gh.read", &scope, Origin::LoopRun, 5));
        assert!(!grant(Some("s2"), None).covers("gh.read", &scope, Origin::LoopRun, 5));
        assert!(!grant(None, None).covers("gh.write", &scope, Origin::LoopRun, 5));
        assert!(!grant(None, None).covers("gh.read", &scope, Origin::Automation, 5));
        let other = InvocationScope::location("elsewhere");
        assert!(!grant(None, None).covers("gh.read", &other, Origin::LoopRun, 5));
        assert!(!grant(None, Some(5)).covers("gh.read", &scope, Origin::LoopRun, 5));
    }
}
