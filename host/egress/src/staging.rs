//! Per-call staging: the secrets of the credentials one capability declares,
//! looked up when the call starts and zeroized when it ends.

use secrecy::{ExposeSecret, SecretString};
use warden_core::spec::CredentialSpec;

use crate::redact::Redactor;
use crate::secrets::{SecretError, SecretStore};

/// One declared credential and its value, if one is configured.
#[derive(Debug)]
pub(crate) struct StagedCredential {
    pub(crate) spec: CredentialSpec,
    pub(crate) secret: Option<SecretString>,
}

/// The staged credentials of one call. Dropping it zeroizes every value.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    entries: Vec<StagedCredential>,
}

impl Staged {
    /// Look up every credential `specs` declares in `store`.
    pub(crate) fn stage(
        store: &dyn SecretStore,
        specs: &[CredentialSpec],
    ) -> Result<Self, SecretError> {
        let entries = specs
            .iter()
            .map(|spec| {
                let secret = store.find(&spec.vendor, &spec.handle, &spec.scopes)?;
                Ok(StagedCredential {
                    spec: spec.clone(),
                    secret: secret.filter(|s| !s.expose_secret().is_empty()),
                })
            })
            .collect::<Result<_, SecretError>>()?;
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
