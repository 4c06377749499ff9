//! `warden:tool/credential`: opaque handles naming a staged credential.

/// Most live handles one call may hold; past it the call traps (a host limit).
const MAX_HANDLES: u32 = 256;

/// The host side of a `handle` resource: the declared handle name only.
// `pub` because `bindgen!`'s `with` re-exports it from the (private) bindings.
#[allow(unreachable_pub)]
#[derive(Debug, Clone)]
pub struct Handle {
    pub(crate) name: String,
}

/// `credential` of one contract version (the same interface in each).
macro_rules! credential_host {
    ($version:ident) => {
        mod $version {
            use warden_core::net::CredentialError;
            use wasmtime::component::Resource;

            use super::{Handle, MAX_HANDLES};
            use crate::bindings::$version::warden::tool::credential as wit;
            use crate::state::CallState;

            impl wit::Host for CallState {
                async fn acquire(
                    &mut self,
                    name: String,
                ) -> wasmtime::Result<Result<Resource<Handle>, wit::CredentialError>> {
                    match self.network.acquire(&name) {
                        Ok(()) => {
                            if self.handles >= MAX_HANDLES {
                                return Err(wasmtime::format_err!(
                                    "more than {MAX_HANDLES} credential handles in one call"
                                ));
                            }
                            self.handles += 1;
                            Ok(Ok(self.table.push(Handle { name })?))
                        }
                        Err(CredentialError::NotConfigured(needed)) => {
                            self.auth_needed = Some(needed.clone());
                            Ok(Err(wit::CredentialError::NotConfigured(wit::AuthNeeded {
                                vendor: needed.vendor,
                                scopes: needed.scopes,
                            })))
                        }
                        Err(CredentialError::NotDeclared(name)) => {
                            Ok(Err(wit::CredentialError::NotDeclared(name)))
                        }
                        Err(_) => Ok(Err(wit::CredentialError::NotDeclared(name))),
                    }
                }
            }

            impl wit::HostHandle for CallState {
                async fn name(&mut self, handle: Resource<Handle>) -> wasmtime::Result<String> {
                    Ok(self.table.get(&handle)?.name.clone())
                }

                async fn drop(&mut self, handle: Resource<Handle>) -> wasmtime::Result<()> {
                    self.table.delete(handle)?;
                    self.handles = self.handles.saturating_sub(1);
                    Ok(())
                }
            }
        }
    };
}

credential_host!(v0_1);
credential_host!(v0_2);
