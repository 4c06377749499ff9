//! The values an operator enters for a package's `[admin_configuration]`:
//! the deployment's settings of a package it runs (a workspace id, an
//! organization's API key), one form per `group_id` shared by every package
//! that names it.
//!
//! Values are kept in the secret store, sealed like accounts (non-secret
//! ones too: one place, shared by every host of a store), as host records
//! named `#admin/<group_id>/<handle>` that no account can be named like.
//! A field is set only as its manifest declares it: a declared handle, not
//! host-managed, not empty. A secret field's value is never shown.

use secrecy::{ExposeSecret as _, SecretString};
use warden_egress::secrets::{AccountKey, SecretError};
use warden_manifest::{AdminConfiguration, AdminField};

use crate::location::Location;

/// The vendor the records are kept under.
const RECORDS: &str = "warden";

/// Why an admin value cannot be set or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// No active package has this id.
    #[error("no package `{0}` is installed")]
    NoPackage(String),
    /// The package has no `[admin_configuration]`.
    #[error("package `{0}` has no [admin_configuration] to fill in")]
    NoForm(String),
    /// The form has no such field.
    #[error("package `{package}`'s [admin_configuration] has no field `{field}` (it has: {known})")]
    NoField {
        /// The package.
        package: String,
        /// The field asked for.
        field: String,
        /// The handles it has.
        known: String,
    },
    /// The host owns the field's value.
    #[error("field `{field}` of `{package}` is host-managed: the host sets it, not an operator")]
    HostManaged {
        /// The package.
        package: String,
        /// The field.
        field: String,
    },
    /// An empty value.
    #[error("an empty value for `{0}`: unset the field instead")]
    Empty(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] SecretError),
}

/// One field of a package's form, as `warden admin show` lists it.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct AdminValue {
    /// The form it belongs to (`group_id`).
    pub group: String,
    /// The field as the manifest declares it.
    #[serde(flatten)]
    pub field: AdminField,
    /// Whether a value is set.
    pub set: bool,
    /// The value, for a field that is not secret.
    pub value: Option<String>,
}

fn record(group: &str, handle: &str) -> AccountKey {
    AccountKey::new(RECORDS, format!("#admin/{group}/{handle}"), [""; 0])
}

impl Location {
    /// The `[admin_configuration]` of the active package `id`.
    fn admin_form(&self, id: &str) -> Result<AdminConfiguration, AdminError> {
        let package = self
            .package(id)
            .ok_or_else(|| AdminError::NoPackage(id.to_owned()))?;
        package
            .package
            .admin_configuration
            .clone()
            .ok_or_else(|| AdminError::NoForm(id.to_owned()))
    }

    /// Every field of package `id`'s form, with whether (and, unless
    /// secret, what) it is set.
    pub async fn admin_values(&self, id: &str) -> Result<Vec<AdminValue>, AdminError> {
        let form = self.admin_form(id)?;
        let store = self.shared.egress.store();
        let mut values = Vec::new();
        for field in form.fields {
            let stored = store.get(&record(&form.group_id, &field.handle)).await?;
            values.push(AdminValue {
                group: form.group_id.clone(),
                set: stored.is_some(),
                value: stored
                    .filter(|_| !field.secret)
                    .map(|v| v.expose_secret().to_owned()),
                field,
            });
        }
        Ok(values)
    }

    /// Set field `handle` of package `id`'s form to `value` (for every
    /// package sharing its `group_id`).
    pub async fn set_admin_value(
        &self,
        id: &str,
        handle: &str,
        value: SecretString,
    ) -> Result<AdminField, AdminError> {
        let (form, field) = self.admin_field(id, handle)?;
        if value.expose_secret().is_empty() {
            return Err(AdminError::Empty(handle.to_owned()));
        }
        let store = self.shared.egress.store();
        store.put(&record(&form.group_id, handle), value).await?;
        Ok(field)
    }

    /// Remove field `handle` of package `id`'s form; whether it was set.
    pub async fn unset_admin_value(&self, id: &str, handle: &str) -> Result<bool, AdminError> {
        let (form, _) = self.admin_field(id, handle)?;
        let store = self.shared.egress.store();
        Ok(store.delete(&record(&form.group_id, handle)).await?)
    }

    /// The value the operator entered for field `handle` of a form of a
    /// package of `vendor`'s family (the recipe's `client_credentials`
    /// name such fields: the deployment's OAuth client). Forms are the
    /// deployment's own packages' only, and every package of the family
    /// declares the recipe these values are read for (install keeps it so),
    /// so the value goes only to the token endpoint the operator's package
    /// names.
    pub(crate) async fn admin_value_of_vendor(
        &self,
        vendor: &str,
        handle: &str,
    ) -> Result<Option<SecretString>, SecretError> {
        let store = self.shared.egress.store();
        for package in self.vendor_family(vendor) {
            let Some(form) = &package.admin_configuration else {
                continue;
            };
            if form.fields.iter().any(|f| f.handle == handle)
                && let Some(value) = store.get(&record(&form.group_id, handle)).await?
            {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    fn admin_field(
        &self,
        id: &str,
        handle: &str,
    ) -> Result<(AdminConfiguration, AdminField), AdminError> {
        let form = self.admin_form(id)?;
        let Some(field) = form.fields.iter().find(|f| f.handle == handle).cloned() else {
            let known: Vec<&str> = form.fields.iter().map(|f| f.handle.as_str()).collect();
            return Err(AdminError::NoField {
                package: id.to_owned(),
                field: handle.to_owned(),
                known: known.join(", "),
            });
        };
        if field.host_managed {
            return Err(AdminError::HostManaged {
                package: id.to_owned(),
                field: handle.to_owned(),
            });
        }
        Ok((form, field))
    }
}
