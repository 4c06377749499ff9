//! `warden auth status` and `warden auth disconnect`: connected accounts
//! with their scopes, expiry and the extensions that use them.

use std::time::UNIX_EPOCH;

use warden_egress::auth::grant;
use warden_egress::secrets::{Account, AccountKey};

use super::ConnectError;
use crate::location::Location;

/// One connected account as `warden auth status` shows it (never a value).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AccountStatus {
    /// Vendor, handle, scopes, audiences and allowed extensions.
    #[serde(flatten)]
    pub account: Account,
    /// `oauth2` when a refreshable grant is kept beside it, else `secret`.
    pub kind: &'static str,
    /// When the access token expires (seconds since the epoch), if known.
    pub expires_at: Option<u64>,
    /// Whether a refresh token is kept.
    pub refreshable: bool,
    /// Who the account is (`account_id` and named claims), when its recipe
    /// says how to read it.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub identity: std::collections::BTreeMap<String, String>,
    /// The installed extensions that declare a credential this account
    /// serves (allowed or not).
    pub used_by: Vec<String>,
}

impl Location {
    /// Every connected account (host records such as grants and client
    /// registrations are not accounts and are not listed).
    pub async fn auth_status(&self) -> Result<Vec<AccountStatus>, ConnectError> {
        let store = self.shared.egress.store();
        let mut out = Vec::new();
        for account in store.accounts().await? {
            if is_host_record(&account.key) {
                continue;
            }
            let kept = grant::load(store.as_ref(), &account.key).await?;
            let used_by = self
                .credential_declarations(&account.key.vendor, &account.key.handle)
                .into_iter()
                .map(|d| d.extension)
                .collect();
            out.push(AccountStatus {
                kind: if kept.is_some() { "oauth2" } else { "secret" },
                expires_at: kept
                    .as_ref()
                    .and_then(|g| g.expiry())
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map(|d| d.as_secs()),
                refreshable: kept.as_ref().is_some_and(|g| g.refresh_token.is_some()),
                identity: kept.as_ref().map(|g| g.claims.clone()).unwrap_or_default(),
                used_by,
                account,
            });
        }
        Ok(out)
    }

    /// Remove every account of `vendor` and its refresh material, after a
    /// best-effort revocation at the recipe's revoke endpoint (a failed
    /// revocation is logged; the account is removed anyway); the keys
    /// removed. A dynamically registered client and the deployment's OAuth
    /// client records (`#client`, `#client-for`) are kept: they are not
    /// accounts.
    pub async fn disconnect(&self, vendor: &str) -> Result<Vec<AccountKey>, ConnectError> {
        let egress = &self.shared.egress;
        let store = egress.store();
        let mut removed = Vec::new();
        for key in store.list().await? {
            if key.vendor != vendor
                || key.handle == warden_egress::auth::discovery::REGISTRATION_HANDLE
                || warden_egress::auth::grant::is_client_key(&key)
            {
                continue;
            }
            if is_host_record(&key) {
                store.delete(&key).await?;
                continue;
            }
            // In the account's turn: a refresh under way finishes first (and
            // its new token is the one revoked); none writes it back after.
            let _turn = grant::hold_account(egress, &key).await?;
            if let Some(access) = store.get(&key).await?
                && let Err(error) = grant::revoke(egress, &key, &access).await
            {
                tracing::warn!(account = %key, %error, "could not revoke the account at the provider");
            }
            grant::remove_held(store.as_ref(), &key).await?;
            removed.push(key);
        }
        if removed.is_empty() {
            return Err(ConnectError::NotConnected(vendor.to_owned()));
        }
        Ok(removed)
    }
}

/// Whether `key` is a host record (a grant or a registration), not an account.
fn is_host_record(key: &AccountKey) -> bool {
    key.handle.contains('#')
}
