//! The refresh material of an OAuth account, and refresh before expiry.
//!
//! Beside each OAuth account (`vendor/handle [scopes]`, the access token a
//! call stages) the store keeps its grant under `handle#oauth2`: refresh
//! token, expiry, and the recipe and client it was connected with — a later
//! manifest never moves the token endpoint. The grant record has no binding,
//! so no call can ever stage it (and `#` is not valid in a manifest handle).
//!
//! [`refresh_due`] runs before a call stages credentials: an account whose
//! access token expires within the skew is refreshed first, one flight per
//! account across concurrent calls ([`Flights`]); the rotated refresh token
//! is stored before the new access token, so a crash between the two writes
//! leaves a usable refresh token. A refused refresh is an `auth_required`
//! with reason `expired`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use secrecy::{ExposeSecret, SecretString};
use warden_core::net::AuthNeeded;
use warden_core::spec::{CredentialSpec, OAuth2Recipe};

use super::AuthError;
use super::identity::Claims;
use super::oauth2::{ClientAuth, OAuth2Client, OAuth2Flow, TokenSet};
use crate::secrets::{AccountAudience, AccountKey, AuthReason, Requester, SecretStore};
use crate::session::{AuthRequired, CallSession, Egress};

pub use crate::secrets::GRANT_SUFFIX;
/// The suffix of [`client_key`].
pub const CLIENT_SUFFIX: &str = "#client";
/// The suffix of [`client_pin_key`].
const CLIENT_PIN_SUFFIX: &str = "#client-for";
/// Refresh this long before expiry unless the recipe says otherwise.
pub const DEFAULT_SKEW: Duration = Duration::from_secs(60);

/// What is kept to refresh an account. Secrets are wiped on drop.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StoredGrant {
    /// The current refresh token.
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch).
    pub expires_at: Option<u64>,
    /// The recipe the account was connected with.
    pub recipe: OAuth2Recipe,
    /// Client id used.
    pub client_id: String,
    /// Client secret, for a confidential client.
    pub client_secret: Option<String>,
    /// Token endpoint client authentication.
    pub auth: ClientAuth,
    /// Redirect URI of the authorization.
    pub redirect_uri: String,
    /// The RFC 8707 resource the tokens were asked for (an MCP server);
    /// refreshes ask for it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Who the account is (`account_id`, named claims), when the recipe
    /// says how to read it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: Claims,
}

impl std::fmt::Debug for StoredGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredGrant")
            .field("expires_at", &self.expires_at)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Drop for StoredGrant {
    fn drop(&mut self) {
        for secret in [&mut self.refresh_token, &mut self.client_secret]
            .into_iter()
            .flatten()
        {
            zeroize::Zeroize::zeroize(secret);
        }
    }
}

impl StoredGrant {
    /// A grant for `tokens` obtained with `recipe` and `client`.
    pub fn new(recipe: &OAuth2Recipe, client: &OAuth2Client, tokens: &TokenSet) -> Self {
        Self {
            refresh_token: tokens
                .refresh_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            expires_at: tokens.expires_at.map(epoch_seconds),
            recipe: recipe.clone(),
            client_id: client.client_id.clone(),
            client_secret: client
                .client_secret
                .as_ref()
                .map(|s| s.expose_secret().to_owned()),
            auth: client.auth,
            redirect_uri: client.redirect_uri.clone(),
            resource: None,
            claims: tokens.claims.clone(),
        }
    }

    /// The same grant, for tokens asked for `resource`.
    pub fn for_resource(mut self, resource: Option<&str>) -> Self {
        self.resource = resource.map(str::to_owned);
        self
    }

    /// The same grant with `claims` added (read from an identity endpoint).
    pub fn with_claims(mut self, claims: Claims) -> Self {
        self.claims.extend(claims);
        self
    }

    /// When the access token expires, if known.
    pub fn expiry(&self) -> Option<SystemTime> {
        // A stored time past what the clock holds is taken as never.
        self.expires_at
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)))
    }

    fn client(&self) -> OAuth2Client {
        OAuth2Client {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone().map(SecretString::from),
            redirect_uri: self.redirect_uri.clone(),
            auth: self.auth,
        }
    }

    fn skew(&self) -> Duration {
        self.recipe
            .refresh
            .as_ref()
            .and_then(|r| r.skew_seconds)
            .map_or(DEFAULT_SKEW, Duration::from_secs)
    }

    /// Whether the access token expires within the skew of `now`.
    pub fn due(&self, now: SystemTime) -> bool {
        self.expiry().is_some_and(|at| now + self.skew() >= at)
    }
}

fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The key the grant of account `key` is stored under.
pub fn grant_key(key: &AccountKey) -> AccountKey {
    key.sibling(&format!("{}{GRANT_SUFFIX}", key.handle))
}

/// The key a deployment's OAuth client credential (a recipe's
/// `client_credentials` handle: client id or secret) is stored under:
/// `<vendor>/<handle>#client`, a name no account can have (a manifest's
/// handles hold no `#`), so a recipe naming a handle never reads an
/// account's value as its client.
pub fn client_key(vendor: &str, handle: &str) -> AccountKey {
    AccountKey::new(
        vendor,
        format!("{handle}{CLIENT_SUFFIX}"),
        Vec::<String>::new(),
    )
}

/// The key of the token endpoint a deployment's OAuth client (the client
/// id stored under [`client_key`] for `handle`) is for:
/// `<vendor>/<handle>#client-for`.
pub fn client_pin_key(vendor: &str, handle: &str) -> AccountKey {
    AccountKey::new(
        vendor,
        format!("{handle}{CLIENT_PIN_SUFFIX}"),
        Vec::<String>::new(),
    )
}

/// Whether `key` names a deployment's OAuth client record ([`client_key`]
/// or [`client_pin_key`]) rather than an account.
pub fn is_client_key(key: &AccountKey) -> bool {
    key.handle.ends_with(CLIENT_SUFFIX) || key.handle.ends_with(CLIENT_PIN_SUFFIX)
}

/// Whether `key` names a grant record rather than an account.
pub fn is_grant_key(key: &AccountKey) -> bool {
    key.handle.ends_with(GRANT_SUFFIX)
}

/// The grant of account `key`, if it was connected with OAuth.
pub async fn load(
    store: &dyn SecretStore,
    key: &AccountKey,
) -> Result<Option<StoredGrant>, AuthError> {
    let Some(text) = store.get(&grant_key(key)).await? else {
        return Ok(None);
    };
    serde_json::from_str(text.expose_secret())
        .map(Some)
        .map_err(|_| AuthError::TokenResponse("the stored grant is unreadable"))
}

/// Store the grant of account `key` (write it before the access token).
pub async fn save(
    store: &dyn SecretStore,
    key: &AccountKey,
    grant: &StoredGrant,
) -> Result<(), AuthError> {
    let json = zeroize::Zeroizing::new(
        serde_json::to_string(grant).map_err(|_| AuthError::TokenResponse("serialize"))?,
    );
    store
        .put(&grant_key(key), SecretString::from(json.as_str()))
        .await?;
    Ok(())
}

/// One lock per account, so concurrent calls refresh it once.
#[derive(Debug, Default)]
pub struct Flights {
    locks: Mutex<HashMap<AccountKey, Weak<tokio::sync::Mutex<()>>>>,
}

impl Flights {
    fn lock_for(&self, key: &AccountKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.retain(|_, weak| weak.strong_count() > 0);
        if let Some(lock) = locks.get(key).and_then(Weak::upgrade) {
            return lock;
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(key.clone(), Arc::downgrade(&lock));
        lock
    }
}

/// Account `key` held against its refresh and against other connects of
/// it: on this host, and on the hosts sharing the store where the store
/// can lock across them ([`SecretStore::lock_refresh`]). Released when
/// dropped.
///
/// [`SecretStore::lock_refresh`]: crate::secrets::SecretStore::lock_refresh
#[derive(Debug)]
pub struct AccountTurn {
    _flight: tokio::sync::OwnedMutexGuard<()>,
    _turn: Option<crate::secrets::RefreshGuard>,
}

/// Hold account `key` (see [`AccountTurn`]): a connect checks the stored
/// account and writes its own in one turn, so neither another connect nor
/// a refresh lands in between.
pub async fn hold_account(egress: &Egress, key: &AccountKey) -> Result<AccountTurn, AuthError> {
    let flight = egress.flights().lock_for(key).lock_owned().await;
    let turn = egress.store().lock_refresh(key).await?;
    Ok(AccountTurn {
        _flight: flight,
        _turn: turn,
    })
}

/// Remove account `key`, its value and its OAuth refresh material, in the
/// account's turn: a refresh under way (on this host, or on another sharing
/// the store) finishes first, and finds nothing to refresh after. Without
/// the turn, a refresh that had read the grant before the removal wrote its
/// new tokens back after it: a live account after "removed". Whether a
/// value was stored.
pub async fn remove_account(egress: &Egress, key: &AccountKey) -> Result<bool, AuthError> {
    let _turn = hold_account(egress, key).await?;
    remove_held(egress.store().as_ref(), key).await
}

/// Remove account `key`'s value and its refresh material; its turn is held
/// ([`hold_account`]). Whether a value was stored.
pub async fn remove_held(store: &dyn SecretStore, key: &AccountKey) -> Result<bool, AuthError> {
    let removed = store.delete(key).await?;
    store.delete(&grant_key(key)).await?;
    Ok(removed)
}

/// Refresh account `key` if its access token expires within the skew of
/// `now`; whether it was refreshed (by this call or a concurrent one).
pub async fn refresh_account(
    egress: &Egress,
    key: &AccountKey,
    now: SystemTime,
) -> Result<bool, AuthError> {
    let store = egress.store().as_ref();
    // Cheap check first: most calls find a fresh token and take no lock.
    match load(store, key).await? {
        Some(grant) if grant.due(now) && grant.refresh_token.is_some() => {}
        _ => return Ok(false),
    }
    // This host's calls, then the hosts sharing the store.
    let _turn = hold_account(egress, key).await?;
    // Another call may have refreshed while this one waited.
    let Some(grant) = load(store, key).await? else {
        return Ok(false);
    };
    let Some(refresh_token) = grant.refresh_token.clone().map(SecretString::from) else {
        return Ok(false);
    };
    if !grant.due(now) {
        return Ok(true);
    }
    let client = grant.client();
    let mut flow = OAuth2Flow::new(&grant.recipe, &client);
    if let Some(resource) = &grant.resource {
        flow = flow.with_resource(resource);
    }
    let tokens = match flow.refresh(egress, &refresh_token, &key.scopes).await {
        Ok(tokens) => tokens,
        // The lock is per host: another host sharing the store may have
        // rotated the refresh token first, making this one stale.
        Err(error) => {
            return match rotated_elsewhere(store, key, &refresh_token, now).await? {
                true => Ok(true),
                false => Err(error),
            };
        }
    };
    let mut renewed =
        StoredGrant::new(&grant.recipe, &client, &tokens).for_resource(grant.resource.as_deref());
    // Who the account is does not change with its tokens: claims read at
    // connect stay unless the refresh response names them again.
    for (name, value) in &grant.claims {
        renewed
            .claims
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    save(store, key, &renewed).await?;
    store.put(key, tokens.access_token.clone()).await?;
    tracing::info!(account = %key, "refreshed an OAuth account");
    Ok(true)
}

/// How long a refused refresh waits for another host's rotation to land in
/// the store (its token response may arrive before its write).
const ROTATION_GRACE: Duration = Duration::from_millis(500);

/// Whether, after this host's refresh with `used` was refused, the store
/// holds a grant another host refreshed: a different refresh token and an
/// access token no longer due.
async fn rotated_elsewhere(
    store: &dyn SecretStore,
    key: &AccountKey,
    used: &SecretString,
    now: SystemTime,
) -> Result<bool, AuthError> {
    let deadline = tokio::time::Instant::now() + ROTATION_GRACE;
    loop {
        if let Some(current) = load(store, key).await?
            && current.refresh_token.as_deref() != Some(used.expose_secret())
            && !current.due(now)
        {
            tracing::info!(account = %key, "another host refreshed the account first");
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Revoke account `key` at its recipe's revoke endpoint (the refresh token
/// when one is kept, else `access`); whether a revocation was sent.
pub async fn revoke(
    egress: &Egress,
    key: &AccountKey,
    access: &SecretString,
) -> Result<bool, AuthError> {
    let Some(grant) = load(egress.store().as_ref(), key).await? else {
        return Ok(false);
    };
    let client = grant.client();
    let token = grant
        .refresh_token
        .clone()
        .map_or_else(|| access.clone(), SecretString::from);
    OAuth2Flow::new(&grant.recipe, &client)
        .revoke(egress, &token)
        .await
}

/// Refresh, before a call of `requester` stages `credentials`, every OAuth
/// account that would serve it and expires soon. The credentials whose
/// refresh the provider refused (the user must connect again). The host's
/// calls use [`due_for_refresh`] on their session instead (no second read
/// of the store); this is for an embedder that refreshes ahead of time.
pub async fn refresh_due<'r>(
    egress: &Egress,
    requester: impl Into<Requester<'r>>,
    credentials: &[CredentialSpec],
    now: SystemTime,
) -> Result<Vec<AuthRequired>, AuthError> {
    let requester = requester.into();
    let store = egress.store().as_ref();
    let mut due = Vec::new();
    let keys = store.list().await?;
    for spec in credentials {
        let audience = AccountAudience::of(&spec.audience);
        for key in keys
            .iter()
            .filter(|k| !is_grant_key(k) && k.covers(&spec.vendor, &spec.handle, &spec.scopes))
            // Only the accounts this call's caller may use at all.
            .filter(|k| requester.may_use(k))
        {
            // Only accounts this call may use: another extension's call
            // never triggers a refresh of an account it cannot send.
            let allowed = store
                .binding(key)
                .await?
                .is_some_and(|b| b.check(requester, &audience).is_ok());
            if allowed {
                due.push((spec.clone(), key.clone()));
            }
        }
    }
    Ok(refresh_accounts(egress, requester.extension, &due, now).await)
}

/// The accounts `session` staged whose access token expires within the
/// skew and can be refreshed, judged from the grants the staging read
/// brought (no read of the store).
pub fn due_for_refresh(
    session: &CallSession,
    now: SystemTime,
) -> Vec<(CredentialSpec, AccountKey)> {
    session
        .staged_accounts()
        .filter_map(|(spec, key, grant)| {
            let grant: StoredGrant = serde_json::from_str(grant?.expose_secret()).ok()?;
            (grant.due(now) && grant.refresh_token.is_some()).then(|| (spec.clone(), key.clone()))
        })
        .collect()
}

/// Refresh each of `due` (one flight per account) for a call of
/// `extension`; the credentials whose refresh the provider refused.
pub async fn refresh_accounts(
    egress: &Egress,
    extension: &str,
    due: &[(CredentialSpec, AccountKey)],
    now: SystemTime,
) -> Vec<AuthRequired> {
    let mut expired = Vec::new();
    for (spec, key) in due {
        // Boxed: the exchange is a ~15 KB future; inline, it made the
        // future of every call that stages an account that large
        // (`Location::invoke`'s was 16.5 KB, about 2 KB boxed), though
        // few calls find a token due.
        match Box::pin(refresh_account(egress, key, now)).await {
            Ok(_) => {}
            Err(error) if error.is_refusal() => {
                tracing::warn!(account = %key, %error, "the provider refused to refresh an account");
                expired.push(AuthRequired {
                    extension_id: extension.to_owned(),
                    handle: spec.handle.clone(),
                    needed: AuthNeeded {
                        vendor: spec.vendor.clone(),
                        scopes: spec.scopes.clone(),
                    },
                    reason: AuthReason::Expired,
                });
            }
            Err(error) => {
                // The stored token is sent as it is; a provider 401 on
                // it becomes an auth_required for this credential.
                tracing::warn!(account = %key, %error, "could not refresh an account");
            }
        }
    }
    expired
}
