//! Packages as registry artifacts (see `warden_oci`): a loaded package split
//! into its component and the rest of its kept files as a `.tar.gz`, and
//! the host's registry client, whose requests go through the host's egress.

use std::sync::Arc;

use secrecy::{ExposeSecret as _, SecretString};
use warden_egress::secrets::AccountKey;
use warden_manifest::Implementation;
use warden_oci::{Artifact, Client, Login, Logins, PullBounds, Reference};

use crate::error::HostError;
use crate::source::{LoadedPackage, MAX_FILE_BYTES, MAX_PACKAGE_BYTES, PackageSource, SUMS_FILE};

impl LoadedPackage {
    /// This package as an artifact: the component layer (its path and
    /// bytes) and every other kept file — manifest, `SHA256SUMS`, schemas,
    /// prompts, signature — in a `.tar.gz` whose entries carry no time,
    /// owner or mode of the machine that packed it, so the same package is
    /// the same artifact wherever it is pushed from. A package directory
    /// without `SHA256SUMS` gets one (a pull, like an archive, requires it);
    /// the content digest is the same either way.
    pub fn artifact(&self) -> Result<Artifact, HostError> {
        let module_path = match &self.package.implementation {
            Implementation::Wasm { module } => {
                Some(crate::source::normalised(module).map_err(|reason| {
                    HostError::InvalidPackage {
                        package: self.package.id.clone(),
                        reason: format!("module path `{module}`: {reason}"),
                    }
                })?)
            }
            _ => None,
        };
        let module = match (&module_path, &self.module) {
            (Some(path), Some(bytes)) => Some((path.clone(), bytes.clone())),
            _ => None,
        };
        let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        let mut files = std::borrow::Cow::Borrowed(&self.files);
        if !files.contains_key(SUMS_FILE) {
            let sums = crate::signature::digest_list(&self.files).into_bytes();
            files.to_mut().insert(SUMS_FILE.to_owned(), sums);
        }
        for (name, bytes) in files.iter() {
            if Some(name) == module_path.as_ref() {
                continue;
            }
            let mut header = tar::Header::new_ustar();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_entry_type(tar::EntryType::Regular);
            archive
                .append_data(&mut header, name, bytes.as_slice())
                .map_err(|e| HostError::InvalidPackage {
                    package: self.package.id.clone(),
                    reason: format!("packing `{name}`: {e}"),
                })?;
        }
        let package_layer = archive
            .into_inner()
            .and_then(|gz| gz.finish())
            .map_err(|e| HostError::InvalidPackage {
                package: self.package.id.clone(),
                reason: format!("packing the package layer: {e}"),
            })?;
        Ok(Artifact {
            package_id: self.package.id.clone(),
            module,
            package_layer,
        })
    }
}

/// Where the secret store keeps a registry's login: a host record (its
/// handle has a `#`), never an account a tool could be given.
fn login_key(registry: &str) -> AccountKey {
    AccountKey::new("oci", format!("registry#{registry}"), Vec::<String>::new())
}

impl crate::Host {
    /// The login kept in the secret store for `registry` (`HOST[:PORT]`),
    /// shared by every host of the store (so each can pull the
    /// deployment's packages).
    pub async fn registry_login(&self, registry: &str) -> Result<Option<Login>, HostError> {
        let Some(value) = self.secrets().get(&login_key(registry)).await? else {
            return Ok(None);
        };
        let (username, password) =
            value
                .expose_secret()
                .split_once(':')
                .ok_or_else(|| HostError::RegistryLogin {
                    registry: registry.to_owned(),
                    reason: "the stored value is not `user:password`".into(),
                })?;
        Ok(Some(Login::Basic {
            username: username.to_owned(),
            password: SecretString::from(password.to_owned()),
        }))
    }

    /// Keep `username` and `password` as the login for `registry`.
    pub async fn set_registry_login(
        &self,
        registry: &str,
        username: &str,
        password: &SecretString,
    ) -> Result<(), HostError> {
        if username.contains(':') {
            return Err(HostError::RegistryLogin {
                registry: registry.to_owned(),
                reason: "a user name cannot contain `:`".into(),
            });
        }
        let value = format!("{username}:{}", password.expose_secret());
        self.secrets()
            .put(&login_key(registry), SecretString::from(value))
            .await?;
        Ok(())
    }

    /// Forget the login for `registry`; whether there was one.
    pub async fn remove_registry_login(&self, registry: &str) -> Result<bool, HostError> {
        Ok(self.secrets().delete(&login_key(registry)).await?)
    }

    /// A registry client through this host's egress (its policy, address
    /// checks, TLS roots and limits), signing in with `logins`; a pull reads
    /// no more than the package reader accepts.
    pub fn registry(&self, logins: Arc<dyn Logins>) -> Client {
        Client::new(self.shared.egress.clone(), logins).with_bounds(PullBounds {
            module: MAX_FILE_BYTES,
            package: MAX_PACKAGE_BYTES,
            ..PullBounds::default()
        })
    }
}

/// Pull `reference` with `client`: a source the host reads like an
/// archive (every file checked against the package's `SHA256SUMS`, the
/// manifest validated) once the registry's digests checked out.
pub async fn pull(client: &Client, reference: &Reference) -> Result<PackageSource, HostError> {
    let pulled = client.pull(reference).await?;
    Ok(PackageSource::Pulled(Arc::new(pulled)))
}
