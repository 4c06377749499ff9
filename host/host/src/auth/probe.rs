//! Probing an MCP server that may require OAuth, as a one-shot client
//! (`warden mcp probe --auth`, which the MCP conformance suite's `auth/*`
//! scenarios run): list its tools and call one; when the server answers 401,
//! or 403 `insufficient_scope`, authorize as the MCP authorization spec says
//! and try again — at most [`ProbeAuth::max_authorizations`] times.
//!
//! Every step is the one an installed `[mcp]` package's account takes: the
//! challenge → RFC 9728/8414 discovery ([`resource::discover`]), the client
//! choice and PKCE flow of [`Location::begin_oauth`] (configured client,
//! client ID metadata document, or dynamic registration), the loopback
//! callback, the code exchange with the RFC 8707 `resource`, the account
//! stored bound to the server's origin for the probe's extension, and the
//! token injected by egress on the next attempt (the lane never sees it).
//! Step-up asks for the scopes already granted plus the ones the 403 named.

use std::time::Duration;

use warden_core::spec::{AuthRecipe, CredentialSpec};
use warden_egress::auth::AuthError;
use warden_egress::auth::challenge::BearerChallenge;
use warden_egress::auth::resource;
use warden_egress::secrets::{AccountAudience, AccountKey};
use warden_hosted::{Endpoint, HostedError, HostedServer, RemoteTool, ServerSpec};

use super::{AuthTarget, ConnectError, OAuthClientConfig, OAuthConnect};
use crate::accounts::DeclaredCredential;
use crate::location::Location;

/// The extension (and vendor) a probe's account belongs to.
pub const PROBE_EXTENSION: &str = "warden-probe";

/// The credential handle of a probe's token.
const HANDLE: &str = "token";

/// How a probe authorizes.
#[derive(Debug, Clone)]
pub struct ProbeAuth {
    /// A pre-registered client (operator configuration), if any.
    pub client: Option<OAuthClientConfig>,
    /// The operator's client ID metadata document URL (CIMD), if any.
    pub client_metadata_document: Option<String>,
    /// How long to wait for each authorization callback.
    pub callback_timeout: Duration,
    /// Authorizations one probe may run (initial + step-ups) before it
    /// reports the server's last refusal.
    pub max_authorizations: usize,
}

impl Default for ProbeAuth {
    fn default() -> Self {
        Self {
            client: None,
            client_metadata_document: None,
            callback_timeout: Duration::from_secs(120),
            max_authorizations: 3,
        }
    }
}

/// Why an authorized probe failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The server refused or failed (after the last authorization, the
    /// refusal that remained).
    #[error(transparent)]
    Hosted(#[from] HostedError),
    /// Discovering how to authorize failed.
    #[error("discovering how to authorize: {0}")]
    Discovery(#[from] AuthError),
    /// Authorizing failed.
    #[error("authorizing: {0}")]
    Connect(#[from] ConnectError),
}

/// What a probe found: the server's tools and the called tool's output.
pub type ProbeFound = (Vec<RemoteTool>, Option<serde_json::Value>);

/// A tool a probe calls after listing: its name, its arguments, and who
/// answers the server's elicitation and sampling requests for the call.
#[derive(Debug, Clone)]
pub struct ProbeCall {
    /// The server's name of the tool.
    pub name: String,
    /// Its arguments (a JSON object).
    pub arguments: serde_json::Value,
    /// Who answers the server's requests made for the call; without one
    /// they are refused (`-32601`), so the server can fall back.
    pub relay: Option<std::sync::Arc<dyn warden_core::lane::Relay>>,
}

impl ProbeCall {
    /// Call `name` with `arguments`; the server's requests are refused.
    pub fn new(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            arguments,
            relay: None,
        }
    }

    /// Let `relay` answer the server's requests made for the call.
    pub fn relaying(mut self, relay: std::sync::Arc<dyn warden_core::lane::Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Run it on `hosted`.
    pub(crate) async fn run(self, hosted: &HostedServer) -> Result<serde_json::Value, HostedError> {
        let reporting = warden_hosted::Reporting {
            relay: self.relay,
            ..warden_hosted::Reporting::default()
        };
        let output = hosted
            .call_reporting(&self.name, self.arguments, reporting)
            .await?;
        Ok(output.to_json())
    }
}

impl Location {
    /// Connect to `server`, list its tools (at most `max_tools`) and call
    /// `tool` when given, authorizing as the server asks (see the module
    /// docs). `show` is called with each started authorization, to open or
    /// print its URL. `loopback_http` accepts a plain-`http` loopback URL;
    /// this host's egress must allow it (and the authorization server's).
    pub async fn probe_mcp_authorized(
        &self,
        server: &str,
        max_tools: usize,
        tool: Option<ProbeCall>,
        loopback_http: bool,
        auth: &ProbeAuth,
        show: &(dyn Fn(&OAuthConnect) + Sync),
    ) -> Result<ProbeFound, ProbeError> {
        let endpoint = Endpoint::parse_with(server, loopback_http)?;
        let audience = endpoint.audience();
        let mut credential = CredentialSpec::bearer(HANDLE, PROBE_EXTENSION, &[], endpoint.host());
        credential.audience = audience.clone();
        // Not required: the first attempt goes without, to get the challenge.
        credential.required = false;
        let spec = ServerSpec {
            extension_id: PROBE_EXTENSION.into(),
            content: None,
            server: server.to_owned(),
            credentials: vec![credential],
            max_tools,
            loopback_http,
            settings: Default::default(),
        };
        let egress = &self.shared.egress;
        let mut granted: Vec<String> = Vec::new();
        let mut authorizations = 0;
        loop {
            let hosted = HostedServer::new(egress.clone(), &spec, self.shared.hosted)?;
            let result = probe_once(&hosted, tool.clone()).await;
            hosted.close().await;
            let challenge = match result {
                Ok(found) => return Ok(found),
                Err(HostedError::Unauthorized { challenge, .. })
                    if authorizations < auth.max_authorizations =>
                {
                    challenge
                }
                Err(HostedError::InsufficientScope { challenge, .. })
                    if authorizations < auth.max_authorizations =>
                {
                    Some(challenge)
                }
                Err(error) => return Err(error.into()),
            };
            authorizations += 1;
            let challenge = challenge.as_deref().and_then(BearerChallenge::parse);
            let found = resource::discover(egress, server, challenge.as_ref()).await?;
            let mut scopes = granted.clone();
            for scope in &found.scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
            let mut recipe = found.recipe()?;
            recipe.scopes = scopes.clone();
            let target = AuthTarget {
                extension: PROBE_EXTENSION.into(),
                vendor: PROBE_EXTENSION.into(),
                recipe: AuthRecipe::Oauth2Code(Box::new(recipe)),
                credentials: vec![(
                    HANDLE.into(),
                    DeclaredCredential {
                        extension: PROBE_EXTENSION.into(),
                        content: None,
                        audiences: vec![AccountAudience::of(&audience)],
                        scopes,
                    },
                )],
                family_scopes: Vec::new(),
                resource: Some(found.resource.clone()),
                step_up: Vec::new(),
                server: Some(found.server.clone()),
                client_metadata_document: auth.client_metadata_document.clone(),
            };
            let connect = self.begin_oauth(&target, auth.client.clone()).await?;
            show(&connect);
            let accounts = connect.finish(auth.callback_timeout).await?;
            let kept: Vec<&AccountKey> = accounts.iter().map(|a| &a.key).collect();
            granted = kept.first().map(|k| k.scopes.clone()).unwrap_or_default();
            self.forget_probe_accounts(&kept).await?;
        }
    }

    /// Delete the probe's earlier tokens, so the next attempt uses the one
    /// just granted.
    async fn forget_probe_accounts(&self, keep: &[&AccountKey]) -> Result<(), ConnectError> {
        let store = self.shared.egress.store();
        for key in store.list().await? {
            if key.vendor == PROBE_EXTENSION && key.handle == HANDLE && !keep.contains(&&key) {
                store.delete(&key).await?;
            }
        }
        Ok(())
    }
}

/// List, then call `tool` in the same session.
async fn probe_once(
    hosted: &HostedServer,
    tool: Option<ProbeCall>,
) -> Result<ProbeFound, HostedError> {
    let tools = hosted.catalog().await?.as_ref().clone();
    let output = match tool {
        Some(call) => Some(call.run(hosted).await?),
        None => None,
    };
    Ok((tools, output))
}
