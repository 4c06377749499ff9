//! Accounts: what a stored credential may be used for, and the one rule that
//! decides whether a call may use it.
//!
//! A stored credential (an account) is bound to the audiences (scheme, host,
//! port) it may be sent to and to the extensions allowed to use it. The
//! binding is fixed when the account is connected (from the manifest of the
//! extension it is set up for), never by a later manifest: a package that
//! declares the same vendor and handle gets nothing until the user allows it
//! (reason [`AuthReason::Consent`]), and even then only toward the account's
//! own audiences ([`AuthReason::Audience`]).
//!
//! Consent is given to a package's content, not to its id: the binding pins,
//! for each allowed extension, the content the user consented to (the
//! package digest, or [`BUNDLED`] for a package shipped in the binary). A
//! package replaced under the same id gets nothing until the user allows it
//! again ([`AuthReason::Changed`]), as a grant of approval is bound to the
//! digest it was given for. A request that names no content (an embedder
//! that does not track packages) is judged by the id alone.
//!
//! Migration: an account with no recorded audience is bound on its first use
//! by the extension recorded as its creator; an account with no creator
//! either (stored before bindings existed) is refused
//! ([`AuthReason::Unbound`]) until the user stores it again. An allowed
//! extension with no pin (stored before consent was pinned) is pinned to the
//! content of its next call.

use std::collections::BTreeMap;
use std::fmt;

use secrecy::{ExposeSecret as _, SecretString};
use warden_core::spec::{Audience, CredentialSpec};

use super::{AccountKey, Candidate, SecretError, SecretStore};

/// An origin a credential may be sent to: scheme, host (lowercase) and the
/// effective port.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AccountAudience {
    /// `https` for every audience a valid manifest declares.
    pub scheme: String,
    /// Host name, lowercase.
    pub host: String,
    /// Port (the scheme default when the manifest names none).
    pub port: u16,
}

impl AccountAudience {
    /// The audience a manifest declares, normalized.
    pub fn of(audience: &Audience) -> Self {
        Self {
            scheme: audience.scheme.to_ascii_lowercase(),
            host: audience.host.to_ascii_lowercase(),
            port: audience.effective_port(),
        }
    }
}

impl fmt::Display for AccountAudience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// Where an account may be sent and who may use it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccountBinding {
    /// The audiences the value may be sent to (sorted). Empty: not yet bound.
    #[serde(default)]
    pub audiences: Vec<AccountAudience>,
    /// Extension ids allowed to use the account (sorted).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// The extension the account was connected for (binds it on first use
    /// when no audience is recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// The content each allowed extension had when the user consented:
    /// extension id → package digest (or [`BUNDLED`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pins: BTreeMap<String, String>,
}

/// The pin of a package shipped inside the warden binary: as trusted as the
/// binary, so consent to it carries over when the binary (and with it the
/// package's digest) is upgraded, but not to a package installed over it.
pub const BUNDLED: &str = "bundled";

/// Who asks to use an account: an extension id and the content of the
/// package the call runs, when the host knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requester<'a> {
    /// The calling extension (from the host, never from a manifest field).
    pub extension: &'a str,
    /// The package's digest, or [`BUNDLED`]; `None` judges by the id alone.
    pub content: Option<&'a str>,
    /// The authenticated caller the call is made for, whose own accounts
    /// serve it ([`AccountKey::owner`]); `None`: the deployment's accounts.
    pub owner: Option<&'a str>,
    /// The vendors whose deployment accounts also serve an `owner` that
    /// has none of its own (`[accounts] shared`).
    pub shared: &'a [String],
}

impl<'a> Requester<'a> {
    /// `extension` running `content` (a digest or [`BUNDLED`]).
    pub fn new(extension: &'a str, content: &'a str) -> Self {
        Self {
            extension,
            content: Some(content),
            owner: None,
            shared: &[],
        }
    }

    /// `extension` running `content` when known.
    pub fn of(extension: &'a str, content: Option<&'a str>) -> Self {
        Self {
            extension,
            content,
            owner: None,
            shared: &[],
        }
    }

    /// This requester calling for `owner` (when there is one), who may also
    /// use the deployment's accounts of the `shared` vendors.
    pub fn acting_for(mut self, owner: Option<&'a str>, shared: &'a [String]) -> Self {
        self.owner = owner;
        self.shared = shared;
        self
    }

    /// Whether the account `key` may serve this requester at all: the
    /// caller's own, or the deployment's (for a caller, only of a shared
    /// vendor). Its binding decides the rest.
    pub fn may_use(&self, key: &AccountKey) -> bool {
        match (&key.owner, self.owner) {
            (Some(owner), Some(caller)) => owner == caller,
            (Some(_), None) => false,
            (None, None) => true,
            (None, Some(_)) => self.shared.contains(&key.vendor),
        }
    }
}

impl<'a> From<&'a str> for Requester<'a> {
    /// An extension judged by its id alone (embedders without packages, tests).
    fn from(extension: &'a str) -> Self {
        Self::of(extension, None)
    }
}

impl AccountBinding {
    /// An account connected for `extension`, sendable to `audiences`.
    pub fn new(
        extension: impl Into<String>,
        audiences: impl IntoIterator<Item = AccountAudience>,
    ) -> Self {
        let extension = extension.into();
        let mut binding = Self {
            audiences: audiences.into_iter().collect(),
            extensions: vec![extension.clone()],
            created_by: Some(extension),
            pins: BTreeMap::new(),
        };
        binding.normalize();
        binding
    }

    /// Pin `requester`'s consent to its content (builder style).
    pub fn pinned(mut self, requester: Requester<'_>) -> Self {
        self.pin(requester);
        self
    }

    /// Allow `requester` too, pinned to its content; whether that changed
    /// anything.
    pub fn allow<'r>(&mut self, requester: impl Into<Requester<'r>>) -> bool {
        let requester = requester.into();
        let mut changed = false;
        if !self.extensions.iter().any(|e| e == requester.extension) {
            self.extensions.push(requester.extension.to_owned());
            self.normalize();
            changed = true;
        }
        self.pin(requester) || changed
    }

    /// Record `requester`'s content as what its consent covers; whether the
    /// pin changed.
    pub fn pin(&mut self, requester: Requester<'_>) -> bool {
        let Some(content) = requester.content else {
            return false;
        };
        let previous = self
            .pins
            .insert(requester.extension.to_owned(), content.to_owned());
        previous.as_deref() != Some(content)
    }

    /// Whether `requester` is allowed but its consent is not pinned yet (an
    /// account stored before consent was pinned: its next call pins it).
    pub(crate) fn needs_pin(&self, requester: Requester<'_>) -> bool {
        requester.content.is_some()
            && self.extensions.iter().any(|e| e == requester.extension)
            && !self.pins.contains_key(requester.extension)
    }

    /// Add audiences (a user re-connecting the account for another extension).
    pub fn add_audiences(&mut self, audiences: impl IntoIterator<Item = AccountAudience>) {
        self.audiences.extend(audiences);
        self.normalize();
    }

    /// Whether `requester` may send the value to `audience`.
    pub fn check<'r>(
        &self,
        requester: impl Into<Requester<'r>>,
        audience: &AccountAudience,
    ) -> Result<(), AuthReason> {
        let requester = requester.into();
        let extension = requester.extension;
        if self.audiences.is_empty() {
            return Err(match &self.created_by {
                None => AuthReason::Unbound,
                Some(creator) if creator != extension => AuthReason::Consent,
                // The creator binds it on first use (see `lookup`).
                Some(_) => AuthReason::Unbound,
            });
        }
        if !self.extensions.iter().any(|e| e == extension) {
            return Err(AuthReason::Consent);
        }
        if let (Some(pinned), Some(content)) = (self.pins.get(extension), requester.content)
            && pinned != content
        {
            return Err(AuthReason::Changed);
        }
        if !self.audiences.contains(audience) {
            return Err(AuthReason::Audience);
        }
        Ok(())
    }

    fn normalize(&mut self) {
        self.audiences.sort();
        self.audiences.dedup();
        self.extensions.sort();
        self.extensions.dedup();
    }
}

/// A stored account as listed: its key and binding (never its value).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Account {
    /// Vendor, handle and scopes.
    #[serde(flatten)]
    pub key: AccountKey,
    /// Audiences and allowed extensions.
    #[serde(flatten)]
    pub binding: AccountBinding,
}

/// Why a call cannot use an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthReason {
    /// No account with this vendor, handle and (covering) scopes is stored.
    Missing,
    /// An account exists but records no audience and no creator (stored
    /// before accounts were bound): store it again with `warden secret set`.
    Unbound,
    /// An account exists but this extension is not allowed to use it
    /// (`warden secret allow <extension> <vendor>`).
    Consent,
    /// The extension was allowed, but the package installed under its id
    /// is not the one the user consented to (replaced since): allow it again.
    Changed,
    /// The extension is allowed, but the credential's audience is not one
    /// of the account's.
    Audience,
    /// The account's access token expired and the provider refused to
    /// refresh it, or refused the token on a call: connect it again.
    Expired,
    /// The provider needs scopes the account was not granted (a `403`
    /// `insufficient_scope`): connect it again to ask for them.
    InsufficientScope,
}

impl AuthReason {
    /// The stable machine word (`missing`, `unbound`, `consent`, `audience`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthReason::Missing => "missing",
            AuthReason::Unbound => "unbound",
            AuthReason::Consent => "consent",
            AuthReason::Changed => "changed",
            AuthReason::Audience => "audience",
            AuthReason::Expired => "expired",
            AuthReason::InsufficientScope => "insufficient_scope",
        }
    }

    /// What a user does about it.
    pub fn advice(self, extension: &str, vendor: &str) -> String {
        match self {
            AuthReason::Missing => format!(
                "connect a `{vendor}` account for `{extension}` with `warden auth connect {extension}`"
            ),
            AuthReason::Unbound => format!(
                "the stored `{vendor}` account was saved before accounts were bound to \
                 audiences; store it again with `warden secret set`"
            ),
            AuthReason::Consent => format!(
                "`{extension}` is not allowed to use the `{vendor}` account; \
                 allow it with `warden secret allow {extension} {vendor}`"
            ),
            AuthReason::Changed => format!(
                "`{extension}` was replaced by another package since it was allowed the \
                 `{vendor}` account; allow the new one with `warden secret allow {extension} {vendor}`"
            ),
            AuthReason::Audience => format!(
                "`{extension}` asks to send the `{vendor}` account to a host it is not bound to"
            ),
            AuthReason::Expired => format!(
                "the `{vendor}` account expired or was revoked; connect it again with \
                 `warden auth connect {extension}`"
            ),
            AuthReason::InsufficientScope => format!(
                "the `{vendor}` account lacks scopes the server needs; connect it again with \
                 `warden auth connect {extension}`"
            ),
        }
    }

    /// Which refusal to report when several accounts refuse: the most specific.
    fn rank(self) -> u8 {
        match self {
            AuthReason::Missing => 0,
            AuthReason::Unbound => 1,
            AuthReason::Consent => 2,
            AuthReason::Changed => 3,
            AuthReason::Audience => 4,
            AuthReason::Expired => 5,
            AuthReason::InsufficientScope => 6,
        }
    }
}

impl fmt::Display for AuthReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One credential one call of one extension asks for.
#[derive(Debug, Clone)]
pub struct CredentialRequest<'a> {
    /// Vendor the manifest names.
    pub vendor: &'a str,
    /// Handle the manifest names.
    pub handle: &'a str,
    /// Scopes the capability needs.
    pub scopes: &'a [String],
    /// The calling extension and its package's content.
    pub requester: Requester<'a>,
    /// The audience the manifest would send it to.
    pub audience: AccountAudience,
}

impl<'a> CredentialRequest<'a> {
    /// The request `spec` of `requester` makes.
    pub fn of(spec: &'a CredentialSpec, requester: impl Into<Requester<'a>>) -> Self {
        Self {
            vendor: &spec.vendor,
            handle: &spec.handle,
            scopes: &spec.scopes,
            requester: requester.into(),
            audience: AccountAudience::of(&spec.audience),
        }
    }
}

/// The answer to a [`CredentialRequest`].
#[derive(Debug)]
pub enum Lookup {
    /// A bound account allows it: the value.
    Found(SecretString),
    /// No account may serve it; the most specific reason.
    Refused(AuthReason),
}

/// The answer to a [`CredentialRequest`] with what a call does next with
/// it: the account that serves it and that account's grant (its OAuth
/// refresh material, read in the same go, so the call knows whether to
/// refresh without reading the store again).
#[derive(Debug)]
pub struct AccountLookup {
    /// The value, or why there is none.
    pub lookup: Lookup,
    /// The account whose value was found.
    pub account: Option<AccountKey>,
    /// The grant stored beside that account (JSON), if any.
    pub grant: Option<SecretString>,
}

impl AccountLookup {
    /// A refusal.
    pub fn refused(reason: AuthReason) -> Self {
        AccountLookup {
            lookup: Lookup::Refused(reason),
            account: None,
            grant: None,
        }
    }
}

/// The rule, for any store: the exact account first, then any whose scopes
/// cover the request (an account with fewer scopes never serves a request
/// needing more: stored empty scopes match only requests with none). An
/// account is used only if its binding allows this extension and audience.
/// The store is read once ([`SecretStore::candidates`]); it is written only
/// to bind or pin an account on its first use.
pub(crate) async fn resolve<S: SecretStore + ?Sized>(
    store: &S,
    request: &CredentialRequest<'_>,
) -> Result<AccountLookup, SecretError> {
    let exact = AccountKey::new(
        request.vendor,
        request.handle,
        request.scopes.iter().cloned(),
    );
    let mut candidates = store.candidates(request.vendor, request.handle).await?;
    // Only the caller's own accounts, or the deployment's where it may use
    // them; the caller's own first.
    let requester = request.requester;
    candidates.retain(|c| requester.may_use(&c.key));
    // A caller with an account of their own that covers the request uses
    // it or none: a refusal of theirs is not a reason to act as the
    // deployment's shared account.
    let owns_one = requester.owner.is_some()
        && candidates.iter().any(|c| {
            c.key.owner.is_some() && c.key.covers(request.vendor, request.handle, request.scopes)
        });
    if owns_one {
        candidates.retain(|c| c.key.owner.is_some());
    }
    let exact = AccountKey {
        owner: requester.owner.map(str::to_owned),
        ..exact
    };
    // The exact account first, then the others in the store's order.
    if let Some(at) = candidates.iter().position(|c| c.key == exact) {
        let first = candidates.remove(at);
        candidates.insert(0, first);
    }
    candidates.sort_by_key(|c| c.key.owner.is_none() && requester.owner.is_some());
    let mut refusal = AuthReason::Missing;
    for candidate in candidates {
        if candidate.key != exact
            && !candidate
                .key
                .covers(request.vendor, request.handle, request.scopes)
        {
            continue;
        }
        if candidate.value.expose_secret().is_empty() {
            continue;
        }
        if allows(store, &candidate, request, &mut refusal).await? {
            return Ok(AccountLookup {
                lookup: Lookup::Found(candidate.value),
                account: Some(candidate.key),
                grant: candidate.grant,
            });
        }
    }
    Ok(AccountLookup::refused(refusal))
}

/// Whether `candidate`'s binding allows `request` (binding or pinning it on
/// its first use); otherwise raise `refusal` to this account's reason when
/// that is more specific.
async fn allows<S: SecretStore + ?Sized>(
    store: &S,
    candidate: &Candidate,
    request: &CredentialRequest<'_>,
    refusal: &mut AuthReason,
) -> Result<bool, SecretError> {
    let key = &candidate.key;
    let mut binding = candidate.binding.clone().unwrap_or_default();
    let requester = request.requester;
    match binding.check(requester, &request.audience) {
        Ok(()) => {
            if binding.needs_pin(requester) {
                binding.pin(requester);
                store.set_binding(key, &binding).await?;
                tracing::info!(account = %key, extension = requester.extension, "consent pinned to the package's content on first use");
            }
            Ok(true)
        }
        Err(AuthReason::Unbound) if binding.created_by.as_deref() == Some(requester.extension) => {
            binding.add_audiences([request.audience.clone()]);
            binding.allow(requester);
            store.set_binding(key, &binding).await?;
            tracing::info!(account = %key, audience = %request.audience, "account bound on first use by its creator");
            Ok(true)
        }
        Err(reason) => {
            if reason.rank() > refusal.rank() {
                *refusal = reason;
            }
            Ok(false)
        }
    }
}

/// Allow `requester` to use every account of `vendor`, pinned to its
/// content; the accounts it may now use.
pub(crate) async fn allow<S: SecretStore + ?Sized>(
    store: &S,
    vendor: &str,
    requester: Requester<'_>,
) -> Result<Vec<Account>, SecretError> {
    let mut accounts = Vec::new();
    for key in store
        .list()
        .await?
        .into_iter()
        .filter(|k| k.vendor == vendor)
    {
        let mut binding = store.binding(&key).await?.unwrap_or_default();
        if binding.audiences.is_empty() {
            // Allowing an unbound account would let the first caller pick its audience.
            continue;
        }
        if binding.allow(requester) {
            store.set_binding(&key, &binding).await?;
        }
        accounts.push(Account { key, binding });
    }
    Ok(accounts)
}
