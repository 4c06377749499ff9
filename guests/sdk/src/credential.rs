//! Credential handles. The guest never holds a secret, only a handle.

use crate::Failure;
use crate::bindings::warden::tool::credential as wit;

/// A handle to a credential staged by the host for this call.
#[derive(Debug)]
pub struct Credential {
    pub(crate) handle: wit::Handle,
}

impl Credential {
    /// The declared handle name.
    pub fn name(&self) -> String {
        self.handle.name()
    }
}

/// Acquire the credential the manifest declares as `name` for this capability.
///
/// A credential that is declared but not configured becomes an
/// `auth-required` failure naming the vendor and scopes, so the host can ask
/// the user to connect the account.
pub fn acquire(name: &str) -> Result<Credential, Failure> {
    match wit::acquire(name) {
        Ok(handle) => Ok(Credential { handle }),
        Err(wit::CredentialError::NotDeclared(name)) => Err(Failure::executor(
            "credential_not_declared",
            format!("the manifest declares no credential `{name}` for this capability"),
        )),
        Err(wit::CredentialError::NotConfigured(needed)) => Err(Failure::auth_required(
            "auth_required",
            format!("connect a `{}` account (scopes: {})", needed.vendor, needed.scopes.join(" ")),
        )),
    }
}
