//! Per-call staging: the secrets of the credentials one capability declares,
//! looked up when the call starts and zeroized when it ends.
//!
//! A value is staged only if its account allows the calling extension and
//! includes the credential's audience ([`SecretStore::resolve`]: one read
//! of the store per credential, which also brings the account's grant, so
//! the host knows whether to refresh it without reading again). The policy
//! sends a staged value only to that same audience, so every injection goes
//! to one of the account's audiences.

use secrecy::{ExposeSecret, SecretString};
use warden_core::spec::CredentialSpec;

use crate::redact::Redactor;
use crate::secrets::{
    AccountKey, AuthReason, CredentialRequest, Lookup, Requester, SecretError, SecretStore,
};

/// One declared credential and its value, if one may be used.
#[derive(Debug)]
pub(crate) struct StagedCredential {
    pub(crate) spec: CredentialSpec,
    pub(crate) secret: Option<SecretString>,
    /// Why `secret` is `None`.
    pub(crate) refusal: Option<AuthReason>,
    /// The account the value came from.
    pub(crate) account: Option<AccountKey>,
    /// That account's grant (OAuth refresh material, JSON), if stored.
    pub(crate) grant: Option<SecretString>,
}

/// The staged credentials of one call. Dropping it zeroizes every value.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    entries: Vec<StagedCredential>,
}

impl Staged {
    /// Look up every credential `specs` of `requester` declares in `store`.
    pub(crate) async fn stage(
        store: &dyn SecretStore,
        requester: Requester<'_>,
        specs: &[CredentialSpec],
    ) -> Result<Self, SecretError> {
        let mut entries = Vec::with_capacity(specs.len());
        for spec in specs {
            let resolved = store
                .resolve(&CredentialRequest::of(spec, requester))
                .await?;
            let (secret, refusal) = match resolved.lookup {
                Lookup::Found(s) if !s.expose_secret().is_empty() => (Some(s), None),
                Lookup::Found(_) => (None, Some(AuthReason::Missing)),
                Lookup::Refused(reason) => (None, Some(reason)),
            };
            entries.push(StagedCredential {
                spec: spec.clone(),
                account: resolved.account.filter(|_| secret.is_some()),
                grant: resolved.grant.filter(|_| secret.is_some()),
                secret,
                refusal,
            });
        }
        Ok(Self { entries })
    }

    /// Staging with explicit values (host-run probes).
    pub(crate) fn with_values(entries: Vec<(CredentialSpec, SecretString)>) -> Self {
        Self {
            entries: entries
                .into_iter()
                .map(|(spec, secret)| StagedCredential {
                    spec,
                    secret: Some(secret),
                    refusal: None,
                    account: None,
                    grant: None,
                })
                .collect(),
        }
    }

    pub(crate) fn get(&self, handle: &str) -> Option<&StagedCredential> {
        self.entries.iter().find(|e| e.spec.handle == handle)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &StagedCredential> {
        self.entries.iter()
    }

    /// A redactor for every staged value.
    pub(crate) fn redactor(&self) -> Redactor {
        Redactor::new(
            self.entries
                .iter()
                .filter_map(|e| e.secret.as_ref())
                .map(|s| s.expose_secret().as_bytes()),
        )
    }
}
