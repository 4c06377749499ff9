//! The `oauth2_code` connection: loopback listener, client choice, authorize
//! URL, callback, code exchange, who the account is, bound storage.

use std::time::Duration;

use secrecy::SecretString;
use warden_core::spec::{AuthRecipe, OAuth2Recipe};
use warden_egress::auth::AuthError;
use warden_egress::auth::discovery::{self, ClientRegistration};
use warden_egress::auth::grant::{self, StoredGrant};
use warden_egress::auth::identity::{self, Claims};
use warden_egress::auth::loopback::{Callback, Loopback};
use warden_egress::auth::oauth2::{
    ClientAuth, OAuth2Client, OAuth2Flow, PendingAuthorization, TokenSet,
};
use warden_egress::auth::server_callback::{
    CallbackWait, SERVER_CALLBACK_PATH, START_PATH, StartPage,
};
use warden_egress::secrets::{Account, AccountAudience, AccountKey};

use super::{AuthTarget, ConnectError, OAuthClientConfig, method_name};
use crate::location::Location;

/// A started OAuth connection: show [`OAuthConnect::url`] to the user, then
/// [`OAuthConnect::finish`].
#[derive(Debug)]
pub struct OAuthConnect {
    location: Location,
    target: AuthTarget,
    recipe: OAuth2Recipe,
    client: OAuth2Client,
    registered: bool,
    pending: PendingAuthorization,
    callback: Waiting,
    /// The caller the account is for (`None`: the deployment's).
    owner: Option<String>,
    /// The page on the server's origin a person opens first (through the
    /// server only): it says whose account this connects.
    start_page: Option<String>,
}

/// Where the browser comes back with the code.
#[derive(Debug)]
enum Waiting {
    /// A loopback listener of this process (`warden auth connect`).
    Loopback(Loopback),
    /// The server's own origin (`serve --public-url`).
    Server(CallbackWait),
}

/// For whom, and through what, an OAuth connection completes.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The authenticated caller whose account it becomes (see
    /// [`crate::Invocation::for_caller`]); `None`: the deployment's.
    pub owner: Option<String>,
    /// The browser returns to the host's public origin
    /// ([`crate::HostConfig::public_url`]) rather than a loopback listener
    /// of this process: for a person whose browser is elsewhere.
    pub through_server: bool,
}

impl ConnectOptions {
    /// A connection for `owner`, returning through the server.
    pub fn for_caller(owner: impl Into<String>) -> Self {
        ConnectOptions {
            owner: Some(owner.into()),
            through_server: true,
        }
    }
}

impl Location {
    /// Start connecting an `oauth2_code` account for `target`: bind the
    /// loopback listener and build the authorize URL. The client is
    /// `client` (operator configuration), else the secret-store handles the
    /// recipe's `client_credentials` name, else a public client: the
    /// operator's client ID metadata document where the server accepts it,
    /// or one registered dynamically (RFC 7591) and kept per vendor.
    pub async fn begin_oauth(
        &self,
        target: &AuthTarget,
        client: Option<OAuthClientConfig>,
    ) -> Result<OAuthConnect, ConnectError> {
        self.begin_oauth_with(target, client, ConnectOptions::default())
            .await
    }

    /// [`Location::begin_oauth`] for `options.owner`, returning through the
    /// server's public origin when `options.through_server` (refused when
    /// the host has no public URL).
    pub async fn begin_oauth_with(
        &self,
        target: &AuthTarget,
        client: Option<OAuthClientConfig>,
        options: ConnectOptions,
    ) -> Result<OAuthConnect, ConnectError> {
        let AuthRecipe::Oauth2Code(recipe) = &target.recipe else {
            return Err(ConnectError::Method {
                vendor: target.vendor.clone(),
                method: method_name(&target.recipe),
                what: "is not oauth2_code",
            });
        };
        let recipe = (**recipe).clone();
        // Refused before the user is sent to consent when the account the
        // requested scopes would make is another extension's (checked again
        // with the granted scopes before anything is kept).
        let scopes = target.requested_scopes();
        for (handle, declared) in &target.credentials {
            let key = owned(
                AccountKey::new(
                    target.vendor.clone(),
                    handle.clone(),
                    scopes.iter().cloned(),
                ),
                options.owner.as_deref(),
            );
            self.check_connectable(&declared.extension, &key).await?;
        }
        let (listener, redirect) = if options.through_server {
            let Some((uri, _)) = &self.shared.server_callbacks else {
                return Err(ConnectError::NoPublicUrl);
            };
            (None, uri.clone())
        } else {
            let loopback = Loopback::bind().await?;
            let redirect = loopback.redirect_uri().to_owned();
            (Some(loopback), redirect)
        };
        let client = match client {
            Some(client) => Some(client),
            None => self.stored_client(target, &recipe).await?,
        };
        if let Some(config) = &client
            && let Some(pinned) = &config.token_endpoint
            && *pinned != recipe.token_endpoint
        {
            return Err(client_elsewhere(
                target,
                &recipe.token_endpoint,
                Some(pinned.clone()),
            ));
        }
        let (client, registered) = match client {
            Some(config) => {
                let auth = ClientAuth::for_recipe(&recipe, config.client_secret.is_some());
                let client = OAuth2Client {
                    client_id: config.client_id,
                    client_secret: config.client_secret,
                    redirect_uri: redirect,
                    auth,
                };
                (client, false)
            }
            None => self.public_client(target, &recipe, &redirect).await?,
        };
        let scopes = target.requested_scopes();
        let pending = flow(&recipe, &client, target.resource.as_deref())
            .with_egress_config(self.shared.egress.config())
            .start(&scopes)?;
        let (callback, start_page) = match (listener, &self.shared.server_callbacks) {
            (Some(loopback), _) => (Waiting::Loopback(loopback), None),
            (None, Some((redirect_uri, router))) => {
                let page = StartPage {
                    authorize_url: pending.url.clone(),
                    vendor: target.vendor.clone(),
                    owner: options.owner.clone(),
                    extensions: target.consenting().iter().map(|e| e.to_string()).collect(),
                    expires: 0,
                };
                let waiting = router.expect(&pending.state, page).await?;
                let origin = redirect_uri.trim_end_matches(SERVER_CALLBACK_PATH);
                let state: String =
                    url::form_urlencoded::byte_serialize(pending.state.as_bytes()).collect();
                let link = format!("{origin}{START_PATH}?state={state}");
                (Waiting::Server(waiting), Some(link))
            }
            (None, None) => return Err(ConnectError::NoPublicUrl),
        };
        Ok(OAuthConnect {
            location: self.clone(),
            target: target.clone(),
            recipe,
            client,
            registered,
            pending,
            callback,
            owner: options.owner,
            start_page,
        })
    }

    /// The client the recipe's `client_credentials` handles name in the
    /// secret store: deployment records under
    /// [`client_key`](warden_egress::auth::grant::client_key)
    /// (`warden secret set <vendor> <handle> --oauth-client --token-endpoint
    /// <url>`), never an account (a package naming another account's handle
    /// would send its value to the authorization server the package names),
    /// and only with the token endpoint recorded with the client id
    /// ([`client_pin_key`](warden_egress::auth::grant::client_pin_key)):
    /// one recorded without is refused.
    async fn stored_client(
        &self,
        target: &AuthTarget,
        recipe: &OAuth2Recipe,
    ) -> Result<Option<OAuthClientConfig>, ConnectError> {
        let Some(handles) = &recipe.client_credentials else {
            return Ok(None);
        };
        let store = self.shared.egress.store();
        let key = |handle: &str| warden_egress::auth::grant::client_key(&target.vendor, handle);
        let Some(id) = store.get(&key(&handles.client_id_handle)).await? else {
            return self.admin_client(target, recipe).await;
        };
        use secrecy::ExposeSecret as _;
        use warden_egress::auth::grant::client_pin_key;
        let pin = client_pin_key(&target.vendor, &handles.client_id_handle);
        let Some(pinned) = store.get(&pin).await? else {
            return Err(client_elsewhere(target, &recipe.token_endpoint, None));
        };
        let client_secret = match &handles.client_secret_handle {
            Some(handle) => {
                // The secret goes with the id only when it was recorded for
                // the same token endpoint (a recipe could pair one client's
                // id with another's secret).
                let secret_pin = client_pin_key(&target.vendor, handle);
                let secret_pinned = store.get(&secret_pin).await?;
                let same = secret_pinned
                    .as_ref()
                    .is_some_and(|p| p.expose_secret() == pinned.expose_secret());
                if !same {
                    return Err(client_elsewhere(
                        target,
                        &recipe.token_endpoint,
                        secret_pinned.map(|p| p.expose_secret().to_owned()),
                    ));
                }
                store.get(&key(handle)).await?
            }
            None => None,
        };
        Ok(Some(OAuthClientConfig {
            client_id: id.expose_secret().to_owned(),
            client_secret,
            token_endpoint: Some(pinned.expose_secret().to_owned()),
        }))
    }

    /// The client the operator entered in the `[admin_configuration]` of a
    /// package of the vendor (`warden admin set gmail
    /// google_oauth_client_id …`) under the handles the recipe's
    /// `client_credentials` name; `None` when the id is not set.
    async fn admin_client(
        &self,
        target: &AuthTarget,
        recipe: &OAuth2Recipe,
    ) -> Result<Option<OAuthClientConfig>, ConnectError> {
        let Some(handles) = &recipe.client_credentials else {
            return Ok(None);
        };
        let vendor = &target.vendor;
        let Some(id) = self
            .admin_value_of_vendor(vendor, &handles.client_id_handle)
            .await?
        else {
            return Ok(None);
        };
        let client_secret = match &handles.client_secret_handle {
            Some(handle) => self.admin_value_of_vendor(vendor, handle).await?,
            None => None,
        };
        use secrecy::ExposeSecret as _;
        Ok(Some(OAuthClientConfig {
            client_id: id.expose_secret().to_owned(),
            client_secret,
            token_endpoint: Some(recipe.token_endpoint.clone()),
        }))
    }

    /// The vendor's public client without a configured one: the operator's
    /// client ID metadata document URL when the authorization server
    /// accepts one (CIMD), else the kept dynamic registration, else a new
    /// one with the authorization server the recipe points at. The
    /// `bool` says whether it was registered dynamically.
    async fn public_client(
        &self,
        target: &AuthTarget,
        recipe: &OAuth2Recipe,
        redirect: &str,
    ) -> Result<(OAuth2Client, bool), ConnectError> {
        let egress = &self.shared.egress;
        let store = egress.store().as_ref();
        let discovered = match &target.server {
            Some(metadata) => Some(metadata.clone()),
            None => self.discover_server(target, recipe).await,
        };
        let metadata = match discovered {
            Some(metadata) => metadata,
            None => {
                let issuer = discovery::issuer_of(&recipe.authorization_endpoint)?;
                if target.client_metadata_document.is_none()
                    && let Some(kept) = discovery::load_registration(
                        store,
                        &target.vendor,
                        &issuer,
                        &recipe.token_endpoint,
                    )
                    .await?
                    && kept.serves(redirect)
                {
                    return Ok((kept.client(redirect), true));
                }
                discovery::server_metadata(egress, &issuer).await?
            }
        };
        // The operator's identity (its client ID metadata document) and a
        // registration with this authorization server go only with the
        // token endpoint the server names: a recipe naming the server's
        // authorize endpoint with a token endpoint of its own would receive
        // the codes issued to them. Metadata naming none (RFC 8414 requires
        // it for the code grant) vouches for no token endpoint.
        if metadata.token_endpoint.as_deref() != Some(recipe.token_endpoint.as_str()) {
            let named = metadata.token_endpoint.clone().unwrap_or_else(|| {
                "no token endpoint: the authorization server's metadata names none".to_owned()
            });
            return Err(client_elsewhere(
                target,
                &recipe.token_endpoint,
                Some(named),
            ));
        }
        if let Some(document) = &target.client_metadata_document
            && metadata.client_id_metadata_document_supported
        {
            let client = OAuth2Client {
                client_id: document.clone(),
                client_secret: None,
                redirect_uri: redirect.to_owned(),
                auth: ClientAuth::None,
            };
            return Ok((client, false));
        }
        let issuer = &metadata.issuer;
        let kept =
            discovery::load_registration(store, &target.vendor, issuer, &recipe.token_endpoint);
        if let Some(kept) = kept.await?.filter(|kept| kept.serves(redirect)) {
            return Ok((kept.client(redirect), true));
        }
        let mut registration: ClientRegistration =
            discovery::register(egress, &metadata, redirect).await?;
        registration.token_endpoint = Some(recipe.token_endpoint.clone());
        discovery::save_registration(store, &target.vendor, &registration).await?;
        tracing::info!(vendor = %target.vendor, issuer = %issuer, "registered an OAuth client");
        Ok((registration.client(redirect), true))
    }

    /// The authorization server's metadata of an MCP server's account, found
    /// again the way `warden mcp add` found it (RFC 9728 → RFC 8414), so a
    /// registration goes to the real issuer — which may have a path
    /// (`/realms/x`) the authorization endpoint's origin does not show.
    /// `None` (the origin is then asked) when the target is not for a
    /// resource, discovery fails, or it names another authorization
    /// endpoint than the recipe's.
    async fn discover_server(
        &self,
        target: &AuthTarget,
        recipe: &OAuth2Recipe,
    ) -> Option<discovery::ServerMetadata> {
        let resource = target.resource.as_deref()?;
        let found = warden_egress::auth::resource::discover(&self.shared.egress, resource, None)
            .await
            .inspect_err(|error| {
                tracing::debug!(%resource, %error, "no metadata for the resource; asking the authorization endpoint's origin");
            })
            .ok()?;
        (found.server.authorization_endpoint.as_deref() == Some(&recipe.authorization_endpoint))
            .then_some(found.server)
    }
}

/// `key`, as the account of `owner` when there is one.
fn owned(key: AccountKey, owner: Option<&str>) -> AccountKey {
    match owner {
        Some(owner) => key.owned_by(owner),
        None => key,
    }
}

/// The engine for `recipe` and `client`, sending the RFC 8707 `resource`
/// when the account is for an MCP server.
fn flow<'a>(
    recipe: &'a OAuth2Recipe,
    client: &'a OAuth2Client,
    resource: Option<&'a str>,
) -> OAuth2Flow<'a> {
    let flow = OAuth2Flow::new(recipe, client);
    match resource {
        Some(resource) => flow.with_resource(resource),
        None => flow,
    }
}

impl OAuthConnect {
    /// The URL the user opens: the authorization server's authorize URL,
    /// or, through the server, the server's page that says whose account
    /// this connects and leads on to it.
    pub fn url(&self) -> &str {
        self.start_page.as_deref().unwrap_or(&self.pending.url)
    }

    /// The loopback redirect URI the provider sends the browser back to.
    pub fn redirect_uri(&self) -> &str {
        &self.client.redirect_uri
    }

    /// What is being connected.
    pub fn target(&self) -> &AuthTarget {
        &self.target
    }

    /// Wait up to `timeout` for the callback, exchange the code and store the
    /// tokens as bound accounts (one per credential handle the extension
    /// declares for the vendor, with the granted scopes). On any error
    /// nothing is stored. A dynamically registered client the token endpoint
    /// refuses (`invalid_client`) is forgotten, so the next connect
    /// registers anew.
    pub async fn finish(self, timeout: Duration) -> Result<Vec<Account>, ConnectError> {
        let state = self.pending.state.clone();
        let callback: Callback = match self.callback {
            Waiting::Loopback(loopback) => loopback.wait(state, timeout).await?,
            Waiting::Server(waiting) => waiting.wait(timeout).await?,
        };
        let egress = &self.location.shared.egress;
        let resource = self.target.resource.as_deref();
        let flow = flow(&self.recipe, &self.client, resource);
        let tokens = match flow
            .exchange(egress, self.pending, &callback.code, &callback.state)
            .await
        {
            Ok(tokens) => tokens,
            Err(error) => {
                let refused_client = matches!(&error, AuthError::Rejected { status: 401, .. })
                    || matches!(&error, AuthError::Rejected { error: Some(e), .. } if e == "invalid_client");
                if self.registered && refused_client {
                    discovery::forget_registration(egress.store().as_ref(), &self.target.vendor)
                        .await?;
                    tracing::warn!(vendor = %self.target.vendor, "the registered client was refused and is forgotten");
                }
                return Err(error.into());
            }
        };
        let claims = read_identity(&self.location, &self.target, &self.recipe, &tokens).await;
        let store = egress.store();
        let key = |handle: &String| {
            owned(
                AccountKey::new(
                    self.target.vendor.clone(),
                    handle.clone(),
                    tokens.scopes.iter().cloned(),
                ),
                self.owner.as_deref(),
            )
        };
        // Each account held for its check and writes (in key order, so two
        // connects never wait on each other): no other connect or refresh
        // of it lands in between.
        let mut keys: Vec<AccountKey> = self
            .target
            .credentials
            .iter()
            .map(|(h, _)| key(h))
            .collect();
        keys.sort();
        keys.dedup();
        let mut turns = Vec::new();
        for key in &keys {
            turns.push(grant::hold_account(egress, key).await?);
        }
        // Nothing is kept when an account is another extension's: its
        // refresh material would be replaced too.
        for (handle, declared) in &self.target.credentials {
            self.location
                .check_connectable(&declared.extension, &key(handle))
                .await?;
        }
        // Refresh material first: an account never exists without it.
        let grant = StoredGrant::new(&self.recipe, &self.client, &tokens)
            .for_resource(resource)
            .with_claims(claims);
        for key in &keys {
            grant::save(store.as_ref(), key, &grant).await?;
        }
        // One account per handle, joined by every extension it is
        // connected for (the vendor's family when the vendor was named).
        let mut accounts: Vec<Account> = Vec::new();
        for (handle, declared) in &self.target.credentials {
            let key = key(handle);
            let value = SecretString::from(
                secrecy::ExposeSecret::expose_secret(&tokens.access_token).to_owned(),
            );
            let account = self
                .location
                .connect_declared(declared, &key, value)
                .await?;
            accounts.retain(|a| a.key != account.key);
            accounts.push(account);
        }
        Ok(accounts)
    }
}

/// The claims of the recipe's identity endpoint, read with the new
/// token from one of the audiences the account is bound to. Who the
/// account is only labels it: a failure is logged and the connect goes
/// on (the token response's claims are in `tokens` already).
async fn read_identity(
    location: &Location,
    target: &AuthTarget,
    recipe: &OAuth2Recipe,
    tokens: &TokenSet,
) -> Claims {
    let (Some(endpoint), false) = (
        recipe.identity_endpoint.as_deref(),
        recipe.identity.is_empty(),
    ) else {
        return Claims::new();
    };
    let audiences: Vec<AccountAudience> = target
        .credentials
        .iter()
        .flat_map(|(_, declared)| declared.audiences.iter().cloned())
        .collect();
    let read = identity::fetch(
        &location.shared.egress,
        &target.vendor,
        endpoint,
        &recipe.identity,
        &audiences,
        &tokens.access_token,
    )
    .await;
    match read {
        Ok(claims) => identity::without_tokens(claims, tokens),
        Err(error) => {
            tracing::warn!(vendor = %target.vendor, %error, "could not read who the account is");
            Claims::new()
        }
    }
}

/// [`ConnectError::ClientElsewhere`] for `target`'s recipe naming
/// `token_endpoint`, the client being for `pinned`.
fn client_elsewhere(
    target: &AuthTarget,
    token_endpoint: &str,
    pinned: Option<String>,
) -> ConnectError {
    ConnectError::ClientElsewhere {
        vendor: target.vendor.clone(),
        extension: target.extension.clone(),
        recipe: token_endpoint.to_owned(),
        pinned,
    }
}
