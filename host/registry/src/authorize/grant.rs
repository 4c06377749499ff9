//! GatedCall scopes and the scoped persistent grants that cover them.

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
    /// The content digest of the package it was given to; it covers only
    /// that package (`None`: a tool not from a package).
    pub package_digest: Option<String>,
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
    /// Whether this grant covers a call of `capability_id`, provided by the
    /// package whose digest is `package_digest`, from `origin` in `scope` at
    /// `now`. Every field must match exactly: nothing left empty widens it.
    pub fn covers(
        &self,
        capability_id: &str,
        package_digest: Option<&str>,
        scope: &InvocationScope,
        origin: Origin,
        now: UnixMillis,
    ) -> bool {
        self.capability_id == capability_id
            && self.package_digest.as_deref() == package_digest
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
            package_digest: Some("d1".into()),
            location: "loc".into(),
            session: session.map(str::to_owned),
            origin: Origin::LoopRun,
            created_at: 0,
            expires_at,
        }
    }

    const D1: Option<&str> = Some("d1");

    #[test]
    fn grants_are_scoped() {
        let scope = InvocationScope::location("loc").with_session("s1");
        assert!(grant(None, None).covers("gh.read", D1, &scope, Origin::LoopRun, 5));
        assert!(grant(Some("s1"), None).covers("gh.read", D1, &scope, Origin::LoopRun, 5));
        assert!(!grant(Some("s2"), None).covers("gh.read", D1, &scope, Origin::LoopRun, 5));
        assert!(!grant(None, None).covers("gh.write", D1, &scope, Origin::LoopRun, 5));
        assert!(!grant(None, None).covers("gh.read", D1, &scope, Origin::Automation, 5));
        let other = InvocationScope::location("elsewhere");
        assert!(!grant(None, None).covers("gh.read", D1, &other, Origin::LoopRun, 5));
        assert!(!grant(None, Some(5)).covers("gh.read", D1, &scope, Origin::LoopRun, 5));
    }

    #[test]
    fn a_grant_covers_only_the_package_content_it_was_given_to() {
        let scope = InvocationScope::location("loc");
        let g = grant(None, None);
        assert!(!g.covers("gh.read", Some("d2"), &scope, Origin::LoopRun, 5));
        assert!(!g.covers("gh.read", None, &scope, Origin::LoopRun, 5));
        let unbound = Grant {
            package_digest: None,
            ..grant(None, None)
        };
        assert!(!unbound.covers("gh.read", D1, &scope, Origin::LoopRun, 5));
    }

    #[test]
    fn empty_stored_fields_do_not_widen_a_grant() {
        // A grant stored with an empty capability, Location or session must
        // not match calls that have other values.
        let scope = InvocationScope::location("loc").with_session("s1");
        let empty = |g: Grant| g.covers("gh.read", D1, &scope, Origin::LoopRun, 5);
        assert!(!empty(Grant {
            capability_id: String::new(),
            ..grant(None, None)
        }));
        assert!(!empty(Grant {
            location: "".into(),
            ..grant(None, None)
        }));
        assert!(!empty(grant(Some(""), None)));
        assert!(!empty(Grant {
            package_digest: Some(String::new()),
            ..grant(None, None)
        }));
    }
}
