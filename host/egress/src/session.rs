//! [`Egress`], built once per host, and [`CallSession`], the per-call
//! [`CallNetwork`] the runtime calls.

mod by_url;
pub(crate) use by_url::{declared_for_url, matched};
mod inject;
mod send;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use secrecy::SecretString;
use warden_core::net::{
    AuthNeeded, BoxFuture, CallNetwork, CredentialError, CredentialMatch, GuestRequest,
    GuestResponse, HttpError,
};
use warden_core::spec::{CredentialSpec, NetworkTarget};

use crate::client::{ClientError, HttpClient};
use crate::config::EgressConfig;
use crate::policy::{Denial, NetworkPolicy, bounded};
use crate::redact::Redactor;
use crate::resolve::{AddressError, Resolver};
use crate::secrets::{AccountKey, AuthReason, Requester, SecretError, SecretStore};
use crate::staging::Staged;

/// Why an egress operation failed. [`CallNetwork::send`] maps it to the
/// WIT `http-error`; [`CallSession::send_checked`] returns it as is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EgressError {
    /// The network policy refused the request.
    #[error(transparent)]
    Denied(#[from] Denial),
    /// Resolution failed or answered an address egress refuses.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The transport failed (timeouts and too-large responses included).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The request body exceeds the host limit.
    #[error("request body too large")]
    RequestTooLarge,
    /// The call's request or byte allowance is used up.
    #[error("limit exceeded: {0}")]
    LimitExceeded(&'static str),
    /// The secret store failed.
    #[error(transparent)]
    Secret(#[from] SecretError),
}

impl EgressError {
    /// The WIT error, its text redacted and bounded.
    pub fn to_http_error(&self, redactor: &Redactor) -> HttpError {
        let text = || bounded(&redactor.redact_str(&self.to_string()), 512);
        match self {
            EgressError::Denied(d) if d.is_invalid_request() => HttpError::InvalidRequest(text()),
            EgressError::Denied(_) | EgressError::Address(AddressError::NonPublic { .. }) => {
                HttpError::Denied(text())
            }
            EgressError::Address(_) => HttpError::ConnectionFailed(text()),
            EgressError::Client(ClientError::Timeout) => HttpError::Timeout,
            EgressError::Client(ClientError::TooLarge) => HttpError::TooLarge,
            EgressError::RequestTooLarge => HttpError::RequestTooLarge,
            EgressError::Client(_) => HttpError::ConnectionFailed(text()),
            EgressError::LimitExceeded(_) => HttpError::LimitExceeded(text()),
            EgressError::Secret(_) => HttpError::Denied("credential store unavailable".into()),
        }
    }
}

#[derive(Debug)]
struct Inner {
    config: EgressConfig,
    store: Arc<dyn SecretStore>,
    resolver: Arc<dyn Resolver>,
    client: HttpClient,
    flights: crate::auth::grant::Flights,
    observer: Option<Arc<dyn crate::EgressObserver>>,
}

/// Host-wide egress: configuration, secret store, resolver and the
/// connection pool. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Egress {
    inner: Arc<Inner>,
}

impl Egress {
    /// Build egress for a host.
    pub fn new(
        config: EgressConfig,
        store: Arc<dyn SecretStore>,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Self, EgressError> {
        Self::observed(config, store, resolver, None)
    }

    /// Build egress for a host that tells `observer` (when there is one)
    /// of every request sent or refused.
    pub fn observed(
        config: EgressConfig,
        store: Arc<dyn SecretStore>,
        resolver: Arc<dyn Resolver>,
        observer: Option<Arc<dyn crate::EgressObserver>>,
    ) -> Result<Self, EgressError> {
        let client = HttpClient::new(&config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                store,
                resolver,
                client,
                flights: Default::default(),
                observer,
            }),
        })
    }

    /// Who hears of this host's requests, if anyone.
    pub(crate) fn observer(&self) -> Option<&Arc<dyn crate::EgressObserver>> {
        self.inner.observer.as_ref()
    }

    /// The host configuration.
    pub fn config(&self) -> &EgressConfig {
        &self.inner.config
    }

    /// Connections kept idle for reuse now (at most
    /// [`MAX_IDLE_CONNECTIONS`](crate::MAX_IDLE_CONNECTIONS)).
    pub fn idle_connections(&self) -> usize {
        self.inner.client.idle_connections()
    }

    /// The secret store.
    pub fn store(&self) -> &Arc<dyn SecretStore> {
        &self.inner.store
    }

    /// One refresh flight per account (see [`crate::auth::grant`]).
    pub(crate) fn flights(&self) -> &crate::auth::grant::Flights {
        &self.inner.flights
    }

    /// The network service of one call of `capability_id` (from
    /// `requester`: an extension id, with its package's content when the
    /// host knows it), staging the secrets its credentials name.
    pub async fn session<'r>(
        &self,
        capability_id: &str,
        requester: impl Into<Requester<'r>>,
        credentials: &[CredentialSpec],
        targets: &[NetworkTarget],
        max_egress_bytes: u64,
    ) -> Result<CallSession, EgressError> {
        let policy = self.policy(capability_id, credentials, targets);
        self.prepared_session(&policy, requester, max_egress_bytes)
            .await
    }

    /// The network policy of a capability, built once (when the host binds
    /// the capability) and shared by every call's session.
    pub fn policy(
        &self,
        capability_id: &str,
        credentials: &[CredentialSpec],
        targets: &[NetworkTarget],
    ) -> Arc<NetworkPolicy> {
        Arc::new(NetworkPolicy::for_capability(
            capability_id,
            credentials,
            targets,
            &self.inner.config,
        ))
    }

    /// [`Egress::session`] with the capability's prepared `policy`.
    pub async fn prepared_session<'r>(
        &self,
        policy: &Arc<NetworkPolicy>,
        requester: impl Into<Requester<'r>>,
        max_egress_bytes: u64,
    ) -> Result<CallSession, EgressError> {
        let requester = requester.into();
        let staged =
            Staged::stage(self.inner.store.as_ref(), requester, policy.credentials()).await?;
        Ok(self.session_from(
            Arc::clone(policy),
            requester.extension,
            max_egress_bytes,
            staged,
        ))
    }

    pub(crate) fn session_with(
        &self,
        capability_id: &str,
        extension_id: &str,
        credentials: &[CredentialSpec],
        targets: &[NetworkTarget],
        max_egress_bytes: u64,
        staged: Staged,
    ) -> CallSession {
        let policy = self.policy(capability_id, credentials, targets);
        self.session_from(policy, extension_id, max_egress_bytes, staged)
    }

    /// The session of a host-run client of its own protocol (the OCI
    /// registry client) toward `targets`: the client's protocol `headers`
    /// pass the guest header rules, a redirect comes back as the response
    /// (the client decides where to go next, in a new session), and the
    /// value it obtained itself for `credential` (a registry token or
    /// password), when it brings one, is injected toward that credential's
    /// audience only and redacted like any account's.
    pub fn host_client_session(
        &self,
        capability_id: &str,
        targets: &[NetworkTarget],
        credential: Option<(CredentialSpec, SecretString)>,
        max_egress_bytes: u64,
        headers: &[&str],
    ) -> CallSession {
        let specs: Vec<CredentialSpec> = credential.iter().map(|(s, _)| s.clone()).collect();
        let staged = Staged::with_values(credential.into_iter().collect());
        self.session_with(
            capability_id,
            "host",
            &specs,
            targets,
            max_egress_bytes,
            staged,
        )
        .for_host_client(headers)
    }

    fn session_from(
        &self,
        policy: Arc<NetworkPolicy>,
        extension_id: &str,
        max_egress_bytes: u64,
        staged: Staged,
    ) -> CallSession {
        CallSession {
            egress: self.clone(),
            redactor: staged.redactor(),
            policy,
            staged,
            extension_id: extension_id.to_owned(),
            max_egress_bytes,
            usage: Arc::default(),
            follow_redirects: true,
            host_client: false,
            refused: std::sync::Mutex::default(),
            observer: None,
        }
    }
}

/// What the host tells a user to connect or allow: vendor, scopes, the
/// extension asking and why it cannot use an account now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuthRequired {
    /// Extension whose capability needs the credential.
    pub extension_id: String,
    /// Credential handle.
    pub handle: String,
    /// Vendor and scopes.
    pub needed: AuthNeeded,
    /// Why no account serves it (`missing`, `unbound`, `consent`, `audience`).
    pub reason: AuthReason,
}

impl std::fmt::Display for AuthRequired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scopes = if self.needed.scopes.is_empty() {
            String::new()
        } else {
            format!(" with scopes [{}]", self.needed.scopes.join(" "))
        };
        write!(
            f,
            "authorization required ({}): credential `{}`{scopes}: {}",
            self.reason,
            self.handle,
            self.reason.advice(&self.extension_id, &self.needed.vendor)
        )
    }
}

/// Live counters of one call, readable while and after it runs.
#[derive(Debug, Default)]
pub struct UsageCounters {
    requests: AtomicU32,
    denied: AtomicU32,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
}

/// A snapshot of [`UsageCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetworkUsage {
    /// Requests put on the wire (redirect hops included).
    pub requests: u32,
    /// Requests refused before anything was sent.
    pub denied: u32,
    /// Request body bytes sent.
    pub bytes_sent: u64,
    /// Response body bytes received.
    pub bytes_received: u64,
}

impl UsageCounters {
    /// The current values.
    pub fn snapshot(&self) -> NetworkUsage {
        NetworkUsage {
            requests: self.requests.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
        }
    }

    fn bytes(&self) -> u64 {
        self.bytes_sent.load(Ordering::Relaxed) + self.bytes_received.load(Ordering::Relaxed)
    }
}

/// The network and credential service of one call. Dropping it drops (and
/// zeroizes) the staged secrets.
#[derive(Debug)]
pub struct CallSession {
    egress: Egress,
    policy: Arc<NetworkPolicy>,
    staged: Staged,
    redactor: Redactor,
    extension_id: String,
    max_egress_bytes: u64,
    usage: Arc<UsageCounters>,
    follow_redirects: bool,
    /// A host-run client's session: the server's auth challenge
    /// (`www-authenticate`) reaches it (guests never see it).
    host_client: bool,
    /// The handle of a staged credential the provider answered 401 to.
    refused: std::sync::Mutex<Option<String>>,
    /// Who hears of this call's requests besides the host's observer.
    observer: Option<Arc<dyn crate::EgressObserver>>,
}

impl CallSession {
    /// The auth-required outcome for a staged credential the provider
    /// refused with 401 during this call (the token expired or was revoked).
    pub fn refused_credential(&self) -> Option<AuthRequired> {
        let handle = self
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let staged = self.staged.get(&handle)?;
        Some(AuthRequired {
            extension_id: self.extension_id.clone(),
            handle,
            needed: AuthNeeded {
                vendor: staged.spec.vendor.clone(),
                scopes: staged.spec.scopes.clone(),
            },
            reason: AuthReason::Expired,
        })
    }

    fn note_refused(&self, handle: &str) {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle.to_owned());
    }

    /// Tell `observer` of this call's requests too (besides the host's).
    pub fn observed_by(mut self, observer: Arc<dyn crate::EgressObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Everyone who hears of this call's requests.
    pub(crate) fn observers(&self) -> impl Iterator<Item = &Arc<dyn crate::EgressObserver>> {
        self.egress
            .observer()
            .into_iter()
            .chain(self.observer.as_ref())
    }

    /// Make this the session of a host-run client locked to one endpoint
    /// (the hosted-MCP lane): the host's own protocol headers `names` pass
    /// the guest header rules (injection headers never do), and a redirect
    /// comes back as the response, never followed. The response's
    /// `www-authenticate` challenge is kept (the client discovers how to
    /// authorize from it); other sensitive headers are stripped as always.
    pub fn for_host_client(mut self, names: &[&str]) -> Self {
        Arc::make_mut(&mut self.policy).allow_host_headers(names);
        self.follow_redirects = false;
        self.host_client = true;
        self
    }

    /// The capability of this call.
    pub fn capability_id(&self) -> &str {
        self.policy.capability_id()
    }

    /// The extension of this call (for auth-required outcomes).
    pub fn extension_id(&self) -> &str {
        &self.extension_id
    }

    /// The counters so far.
    pub fn usage(&self) -> NetworkUsage {
        self.usage.snapshot()
    }

    /// A handle on the counters that outlives the session.
    pub fn usage_handle(&self) -> Arc<UsageCounters> {
        Arc::clone(&self.usage)
    }

    /// The redactor of this call's staged secrets.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The auth-required outcome for `handle`, if it is declared but no
    /// account may serve it.
    pub fn auth_required(&self, handle: &str) -> Option<AuthRequired> {
        let staged = self.staged.get(handle)?;
        staged.secret.is_none().then(|| AuthRequired {
            extension_id: self.extension_id.clone(),
            handle: handle.to_owned(),
            needed: AuthNeeded {
                vendor: staged.spec.vendor.clone(),
                scopes: staged.spec.scopes.clone(),
            },
            reason: staged.refusal.unwrap_or(AuthReason::Missing),
        })
    }

    /// Each staged credential's spec with the account that serves it and
    /// that account's grant, as the one read of the store brought them
    /// (for [`crate::auth::grant::due_for_refresh`]).
    pub(crate) fn staged_accounts(
        &self,
    ) -> impl Iterator<Item = (&CredentialSpec, &AccountKey, Option<&SecretString>)> {
        self.staged.iter().filter_map(|s| {
            let account = s.account.as_ref()?;
            Some((&s.spec, account, s.grant.as_ref()))
        })
    }

    /// Every required credential no account may serve (the host refuses the
    /// call with these before the guest starts).
    pub fn missing_required(&self) -> Vec<AuthRequired> {
        self.staged
            .iter()
            .filter(|s| s.spec.required)
            .filter_map(|s| self.auth_required(&s.spec.handle))
            .collect()
    }

    /// A host-originated request through the same policy, address checks and transport.
    pub(crate) async fn host_request(
        &self,
        request: crate::policy::ParsedRequest,
    ) -> Result<crate::client::Incoming, EgressError> {
        send::host_request(self, request).await
    }

    /// Open a streaming request for a host-run client (the hosted-MCP
    /// lane's event stream and its calls; see [`CallSession::for_host_client`]):
    /// the same policy, leak pre-scan, address checks and injection as a
    /// send, no redirect followed, the response head within the request's
    /// own `timeout` (else the total timeout). The body is
    /// **not** redacted: the caller bounds it and redacts each unit it
    /// reads with [`CallSession::redact`]. Refused for a guest's session.
    pub async fn open_stream(
        &self,
        request: GuestRequest,
        credential: Option<&str>,
    ) -> Result<StreamingResponse, EgressError> {
        if !self.host_client {
            return Err(
                crate::client::ClientError::Protocol("streaming is for host clients only").into(),
            );
        }
        send::open(self, request, credential).await
    }

    /// Like [`CallNetwork::send`], with the typed error.
    pub async fn send_checked(
        &self,
        request: GuestRequest,
        credential: Option<&str>,
        remaining: Duration,
    ) -> Result<GuestResponse, EgressError> {
        let result = send::run(self, request, credential, remaining).await;
        if let Err(e) = &result {
            let refused_by = match e {
                EgressError::Denied(denial) => Some(denial.kind()),
                EgressError::Address(AddressError::NonPublic { .. }) => Some("non_public_address"),
                _ => None,
            };
            if let Some(rule) = refused_by {
                self.usage.denied.fetch_add(1, Ordering::Relaxed);
                for observer in self.observers() {
                    observer.denied(rule);
                }
            }
            tracing::info!(
                capability = self.capability_id(),
                error = %bounded(&self.redactor.redact_str(&e.to_string()), 512),
                "egress request failed"
            );
        }
        result
    }
}

impl CallNetwork for CallSession {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        match self.staged.get(handle) {
            None => Err(CredentialError::NotDeclared(bounded(handle, 64))),
            Some(staged) if staged.secret.is_none() => {
                Err(CredentialError::NotConfigured(AuthNeeded {
                    vendor: staged.spec.vendor.clone(),
                    scopes: staged.spec.scopes.clone(),
                }))
            }
            Some(_) => Ok(()),
        }
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async move {
            self.send_checked(request, credential, remaining)
                .await
                .map_err(|e| e.to_http_error(&self.redactor))
        })
    }

    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        by_url::credential_for_url(self, url)
    }

    fn redact(&self, text: &str) -> String {
        self.redactor.redact_str(text)
    }

    fn holds_secret(&self, bytes: &[u8]) -> bool {
        self.redactor.contains(bytes)
    }
}

/// A response whose body arrives as it is sent ([`CallSession::open_stream`]).
#[derive(Debug)]
pub struct StreamingResponse {
    /// HTTP status.
    pub status: u16,
    /// The headers the receiver may see, redacted.
    pub headers: Vec<(String, String)>,
    /// The body, unredacted.
    pub body: StreamBody,
}

/// The body of a [`StreamingResponse`].
#[derive(Debug)]
pub struct StreamBody {
    pub(crate) body: crate::client::StreamedBody,
    /// Who hears of the bytes as they arrive, and the target they came from.
    pub(crate) meter: Option<(Vec<Arc<dyn crate::EgressObserver>>, String)>,
}

impl StreamBody {
    /// The next chunk of data; `None` at the end.
    pub async fn next_chunk(&mut self) -> Option<Result<bytes::Bytes, EgressError>> {
        let chunk = self.next_data().await;
        if let (Some(Ok(data)), Some((observers, target))) = (&chunk, &self.meter) {
            for observer in observers {
                observer.received(target, data.len() as u64);
            }
        }
        chunk
    }

    async fn next_data(&mut self) -> Option<Result<bytes::Bytes, EgressError>> {
        loop {
            match self.body.frame().await? {
                Err(_) => {
                    return Some(Err(crate::client::ClientError::Protocol(
                        "response body failed",
                    )
                    .into()));
                }
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data));
                    }
                }
            }
        }
    }
}
