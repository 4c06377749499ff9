//! Connecting accounts by running an installed package's `[auth.<vendor>]`
//! recipe generically — `warden auth connect|status|disconnect` call these.
//!
//! - [`Location::auth_target`] picks the extension and recipe a name means
//!   (an extension id, or a vendor exactly one extension has a recipe for).
//! - `api_key`: [`Location::connect_api_key`] runs the validation probe
//!   (which must target one of the credential's audiences) and stores only
//!   values that passed.
//! - `oauth2_code`: [`Location::begin_oauth`] binds a loopback listener,
//!   chooses the client (operator configuration, the secret store handles the
//!   recipe names, or dynamic registration) and returns the authorize URL;
//!   [`OAuthConnect::finish`] waits for the callback, checks the state once,
//!   exchanges the code and stores the tokens.
//!
//! Scopes requested are what the extension declares for the vendor, capped
//! by the recipe's scopes. Every account is stored bound (see
//! [`Location::connect_account`]); a failed step stores nothing and leaves
//! the previous account as it was.

mod connect;
mod probe;
pub(crate) mod refresh;
mod status;

pub(crate) use refresh::refused_after_call;

pub use connect::{ConnectOptions, OAuthConnect};
pub use probe::{PROBE_EXTENSION, ProbeAuth, ProbeCall, ProbeError, ProbeFound};
pub use status::AccountStatus;

use std::collections::BTreeSet;

use secrecy::SecretString;
use warden_core::spec::AuthRecipe;
use warden_egress::auth::AuthError;
use warden_manifest::Implementation;

use crate::accounts::{AccountError, DeclaredCredential};
use crate::location::Location;

/// Why connecting, listing or disconnecting an account failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// No installed extension has a recipe for this name.
    #[error(
        "no installed extension has an auth recipe for `{0}` (name an extension id or a vendor)"
    )]
    NoRecipe(String),
    /// A connection through the server was asked of a host without a
    /// public URL ([`crate::HostConfig::public_url`]).
    #[error(
        "this host has no public URL to take the authorization's callback on \
         (warden serve --public-url)"
    )]
    NoPublicUrl,
    /// The extension has recipes for several vendors.
    #[error("extension `{extension}` has auth recipes for several vendors ({}); name the vendor", vendors.join(", "))]
    SeveralVendors {
        /// The extension named.
        extension: String,
        /// Its recipes' vendors.
        vendors: Vec<String>,
    },
    /// The recipe's method is not the one asked for, or Warden cannot run it.
    #[error("the `{vendor}` recipe uses method `{method}`, which {what}")]
    Method {
        /// The vendor.
        vendor: String,
        /// The recipe's method.
        method: &'static str,
        /// What is wrong with it.
        what: &'static str,
    },
    /// The OAuth client for the vendor (configured, stored, the operator's
    /// client ID metadata document or a registration with the authorization
    /// server) belongs to another token endpoint than the recipe's (or names
    /// none where one is required).
    #[error(
        "the OAuth client for `{vendor}` is not for the token endpoint {recipe} that extension \
         `{extension}`'s recipe names{}",
        match pinned {
            Some(pinned) => format!(" (it is for {pinned})"),
            None => " (it names no token endpoint: record the one it is for with \
                 `warden secret set <vendor> <handle> --oauth-client --token-endpoint <url>`)"
                .to_owned(),
        }
    )]
    ClientElsewhere {
        /// The vendor.
        vendor: String,
        /// The extension whose recipe was to be run.
        extension: String,
        /// The recipe's token endpoint.
        recipe: String,
        /// The token endpoint the client is for, if it names one.
        pinned: Option<String>,
    },
    /// The extension declares no credential of the recipe's vendor.
    #[error("extension `{extension}` declares no `{vendor}` credential to connect")]
    NoCredential {
        /// The extension.
        extension: String,
        /// The vendor.
        vendor: String,
    },
    /// A value for a recipe field was not given.
    #[error("no value was given for the field `{0}`")]
    MissingValue(String),
    /// The recipe step failed (a typed error naming what was wrong).
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// Storing the account failed.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// No stored account has this vendor.
    #[error("no `{0}` account is connected")]
    NotConnected(String),
}

impl From<warden_egress::secrets::SecretError> for ConnectError {
    fn from(error: warden_egress::secrets::SecretError) -> Self {
        ConnectError::Account(AccountError::Store(error))
    }
}

/// The client an operator configured for a vendor (`warden.toml` or an
/// embedder's settings); never taken from a package.
#[derive(Debug, Clone)]
pub struct OAuthClientConfig {
    /// Client id.
    pub client_id: String,
    /// Client secret, for a confidential client.
    pub client_secret: Option<SecretString>,
    /// The token endpoint the client belongs to. When set, the client (its
    /// id, its secret, and the codes its users' consent issues) goes only to
    /// a recipe whose `token_endpoint` is this URL; a connect whose recipe
    /// names another is refused ([`ConnectError::ClientElsewhere`]): a
    /// package naming the vendor with a token endpoint of its own would
    /// otherwise receive them. `None`: used as given, for a client named for
    /// one connection (`warden mcp probe --client-id`).
    pub token_endpoint: Option<String>,
}

/// What a name passed to `warden auth connect` resolves to.
#[derive(Debug, Clone)]
pub struct AuthTarget {
    /// The extension the account is connected for (bound to it).
    pub extension: String,
    /// The vendor of the recipe.
    pub vendor: String,
    /// The recipe, from that extension's manifest.
    pub recipe: AuthRecipe,
    /// The credentials of that vendor each extension the connection is
    /// for declares, by handle: `extension`'s, or every member of the
    /// vendor's family when the vendor was named (see [`Location::vendor_family`]).
    /// Connecting is those extensions' consent to the account.
    pub credentials: Vec<(String, DeclaredCredential)>,
    /// The scopes the vendor's other active packages declare: asked for too,
    /// so one account covers every package of the vendor (format §7.4;
    /// each still needs consent to use it).
    pub family_scopes: Vec<String>,
    /// The MCP server the account is for (an `[mcp]` package's `server`
    /// whose `[[mcp.credentials]]` use the vendor): sent as the RFC 8707
    /// `resource` when authorizing, exchanging and refreshing.
    pub resource: Option<String>,
    /// Scopes to ask for besides the declared ones: what a server's `403
    /// insufficient_scope` named (`warden auth connect --scope`). Capped by
    /// the recipe's scopes like the rest.
    pub step_up: Vec<String>,
    /// The authorization server's metadata, when it was discovered (an MCP
    /// server's, RFC 9728 → RFC 8414): registration and the CIMD check use
    /// it instead of guessing the issuer from the authorization endpoint.
    pub server: Option<warden_egress::auth::discovery::ServerMetadata>,
    /// The operator's client ID metadata document URL (CIMD): used as the
    /// `client_id` of a public client when no client is configured and the
    /// authorization server says it accepts one; otherwise Warden registers
    /// dynamically.
    pub client_metadata_document: Option<String>,
}

impl AuthTarget {
    /// The scopes to request: everything the extension declares for the
    /// vendor, capped by the recipe's scopes when it lists any.
    pub fn requested_scopes(&self) -> Vec<String> {
        let declared: BTreeSet<&String> = self
            .credentials
            .iter()
            .flat_map(|(_, d)| &d.scopes)
            .chain(&self.family_scopes)
            .chain(&self.step_up)
            .collect();
        let ceiling: Option<BTreeSet<&String>> = match &self.recipe {
            AuthRecipe::Oauth2Code(r) if !r.scopes.is_empty() => Some(r.scopes.iter().collect()),
            _ => None,
        };
        declared
            .into_iter()
            .filter(|s| ceiling.as_ref().is_none_or(|c| c.contains(s)))
            .cloned()
            .collect()
    }

    /// The command that connects this account.
    pub fn connect_command(&self) -> String {
        format!("warden auth connect {}", self.extension)
    }

    /// The extensions connecting gives consent to, by id.
    pub fn consenting(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .credentials
            .iter()
            .map(|(_, d)| d.extension.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

fn method_name(recipe: &AuthRecipe) -> &'static str {
    match recipe {
        AuthRecipe::Oauth2Code(_) => "oauth2_code",
        AuthRecipe::ApiKey(_) => "api_key",
        AuthRecipe::DeviceLink(_) => "device_link",
    }
}

impl Location {
    /// The extension and recipe `name` means: an installed extension id
    /// (with one recipe, or `vendor` to choose), or a vendor installed
    /// extensions have a recipe for — then the connection is for every one
    /// of them (the vendor's family: install keeps their recipes
    /// compatible). The recipe's scope ceiling and the scopes asked for
    /// are the family's, so one account serves each package of the vendor
    /// the user lets use it.
    pub fn auth_target(
        &self,
        name: &str,
        vendor: Option<&str>,
    ) -> Result<AuthTarget, ConnectError> {
        let packages = self.packages();
        let (members, vendor) = match packages.iter().find(|p| p.id == name) {
            Some(package) => {
                let vendors: Vec<String> = package.auth.keys().cloned().collect();
                let vendor = match (vendor, vendors.as_slice()) {
                    (Some(v), _) if package.auth.contains_key(v) => v.to_owned(),
                    (Some(v), _) => return Err(ConnectError::NoRecipe(format!("{name}/{v}"))),
                    (None, [only]) => only.clone(),
                    (None, []) => return Err(ConnectError::NoRecipe(name.to_owned())),
                    (None, _) => {
                        return Err(ConnectError::SeveralVendors {
                            extension: name.to_owned(),
                            vendors,
                        });
                    }
                };
                (vec![package.clone()], vendor)
            }
            None => {
                let family = self.vendor_family(name);
                if family.is_empty() {
                    return Err(ConnectError::NoRecipe(name.to_owned()));
                }
                (family, name.to_owned())
            }
        };
        let first = &members[0];
        let recipe = self.family_recipe(&vendor, &first.auth[&vendor]);
        let resource = crate::vendor::oauth_resource(first, &vendor).map(str::to_owned);
        let member_ids: BTreeSet<&str> = members.iter().map(|p| p.id.as_str()).collect();
        let mut credentials = Vec::new();
        let mut family_scopes = BTreeSet::new();
        for package in self.vendor_family(&vendor) {
            for handle in vendor_handles(&package, &vendor) {
                let Some(declared) = self
                    .credential_declarations(&vendor, &handle)
                    .into_iter()
                    .find(|d| d.extension == package.id)
                else {
                    continue;
                };
                if member_ids.contains(package.id.as_str()) {
                    credentials.push((handle, declared));
                } else {
                    family_scopes.extend(declared.scopes);
                }
            }
        }
        if credentials.is_empty() {
            return Err(ConnectError::NoCredential {
                extension: first.id.clone(),
                vendor,
            });
        }
        Ok(AuthTarget {
            extension: first.id.clone(),
            vendor,
            recipe,
            credentials,
            family_scopes: family_scopes.into_iter().collect(),
            resource,
            step_up: Vec::new(),
            server: None,
            client_metadata_document: None,
        })
    }

    /// Connect an `api_key` account: run the recipe's validation probe with
    /// `values` (field handle → value), then store each field the extension
    /// declares as a credential, bound. Nothing is stored if the probe fails.
    pub async fn connect_api_key(
        &self,
        target: &AuthTarget,
        values: Vec<(String, SecretString)>,
    ) -> Result<Vec<warden_egress::secrets::Account>, ConnectError> {
        let AuthRecipe::ApiKey(recipe) = &target.recipe else {
            return Err(ConnectError::Method {
                vendor: target.vendor.clone(),
                method: method_name(&target.recipe),
                what: "is not api_key",
            });
        };
        for field in &recipe.fields {
            if !values.iter().any(|(h, _)| *h == field.handle) {
                return Err(ConnectError::MissingValue(field.handle.clone()));
            }
        }
        let audiences: BTreeSet<_> = target
            .credentials
            .iter()
            .flat_map(|(_, d)| d.audiences.iter().cloned())
            .collect();
        let audiences: Vec<_> = audiences.into_iter().collect();
        // Every account checked before the probe sends anything and before
        // any is stored: none is stored when one is another extension's.
        // One account per handle, with the scopes every extension it is
        // connected for declares with it.
        let declaring = |handle: &str| -> Vec<&DeclaredCredential> {
            target
                .credentials
                .iter()
                .filter(|(h, _)| h == handle)
                .map(|(_, d)| d)
                .collect()
        };
        let key = |handle: &str| {
            let scopes: BTreeSet<&String> =
                declaring(handle).iter().flat_map(|d| &d.scopes).collect();
            warden_egress::secrets::AccountKey::new(target.vendor.clone(), handle, scopes)
        };
        for (handle, _) in &values {
            for declared in declaring(handle) {
                self.check_connectable(&declared.extension, &key(handle))
                    .await?;
            }
        }
        warden_egress::auth::api_key::validate(
            &self.shared.egress,
            &target.vendor,
            recipe,
            &audiences,
            &values,
        )
        .await?;
        let mut accounts = Vec::new();
        for (handle, value) in values {
            let key = key(&handle);
            for declared in declaring(&handle) {
                let account = self
                    .connect_account(&declared.extension, &key, value.clone())
                    .await?;
                accounts.retain(|a: &warden_egress::secrets::Account| a.key != account.key);
                accounts.push(account);
            }
        }
        if accounts.is_empty() {
            return Err(ConnectError::NoCredential {
                extension: target.extension.clone(),
                vendor: target.vendor.clone(),
            });
        }
        Ok(accounts)
    }
}

/// The handles of `package`'s credentials of `vendor` (its tools' and its
/// MCP server's).
fn vendor_handles(package: &warden_manifest::Package, vendor: &str) -> BTreeSet<String> {
    let mcp = match &package.implementation {
        Implementation::Mcp(mcp) => mcp.credentials.as_slice(),
        _ => &[],
    };
    package
        .capabilities
        .iter()
        .flat_map(|c| &c.credentials)
        .chain(mcp)
        .filter(|c| c.vendor == vendor)
        .map(|c| c.handle.clone())
        .collect()
}

impl crate::outcome::AuthDetails {
    /// The command a user runs about it: `warden secret allow …` when the
    /// account exists but this extension (or the package now installed
    /// under its id) may not use it, otherwise
    /// `warden auth connect <extension>`.
    pub fn connect_command(&self) -> String {
        use warden_egress::secrets::AuthReason;
        match (self.reason, &self.vendor) {
            (Some(AuthReason::Consent | AuthReason::Changed), Some(vendor)) => {
                format!("warden secret allow {} {vendor}", self.extension)
            }
            // Step-up: ask again, for the scopes the server named.
            (Some(AuthReason::InsufficientScope), _) => {
                let mut command = format!("warden auth connect {}", self.extension);
                // A scope is remote text: only plain ones go into a command
                // a person may paste into a shell (all are in `scopes`).
                let plain = |s: &&String| {
                    s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.:/".contains(c))
                };
                for scope in self.scopes.iter().filter(plain) {
                    command.push_str(" --scope ");
                    command.push_str(scope);
                }
                command
            }
            _ => format!("warden auth connect {}", self.extension),
        }
    }

    /// The structured form every boundary shows (`warden call --json`, MCP
    /// `structuredContent` and `_meta`): `code`, `reason`, `vendor`,
    /// `scopes`, `extension`, `handle` and `connect`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": "auth_required",
            "reason": self.reason.map(|r| r.as_str()),
            "vendor": self.vendor,
            "scopes": self.scopes,
            "extension": self.extension,
            "handle": self.handle,
            "connect": self.connect_command(),
        })
    }
}
