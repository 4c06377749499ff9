//! [`EgressHttp`]: rmcp's streamable-HTTP client backend, implemented over
//! Warden's egress. There is no other HTTP client in the lane.
//!
//! Every request is a fresh egress [`warden_egress::CallSession`] built from
//! the locked [`Endpoint`]: one network target (the endpoint's origin), the
//! `[[mcp.credentials]]` bound to that origin, injection by egress, address
//! checks, and every staged secret redacted from the response. The request
//! always goes to the endpoint URL (rmcp's `uri` is ignored), and a redirect
//! is refused, never followed.
//!
//! Egress reads whole bodies (so it can redact them): an SSE answer to a
//! POST is parsed once the server ends it. The standalone GET stream (where
//! servers send `notifications/tools/list_changed`) is read as it arrives,
//! on a connection of its own, each event bounded and redacted. Event
//! streams are opened no faster than [`Streams`] allows: a server that ends
//! its stream at once, asking for an immediate reconnection (`retry: 0`),
//! cannot make the host open connections in a loop.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use warden_core::net::{CallNetwork, GuestRequest};
use warden_core::spec::CredentialSpec;
use warden_egress::auth::challenge::BearerChallenge;
use warden_egress::redact::Redactor;
use warden_egress::secrets::Requester;
use warden_egress::{CallSession, Egress, EgressError, StreamingResponse};

use crate::endpoint::Endpoint;
use crate::error::HostedError;
use crate::tasks::TaskOnly;

mod streams;

use streams::{Streams, media_type_is, redacted_events};

/// Headers the lane's own client sets; egress lets them through its guest
/// header rules for this session only.
const MCP_HEADERS: &[&str] = &["mcp-session-id", "mcp-protocol-version", "last-event-id"];

/// A refusal the transport saw, kept so the lane can report it typed
/// (rmcp wraps transport errors in its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    Redirect(u16),
    Unauthorized(Option<String>, bool),
    InsufficientScope(Vec<String>, String),
    Egress(String),
    /// The server could not be reached (no answer to a connection, a name
    /// that does not resolve): down, not refused.
    Unavailable(String),
}

impl From<Refusal> for HostedError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Redirect(status) => HostedError::Redirect { status },
            Refusal::Unauthorized(challenge, credential_sent) => HostedError::Unauthorized {
                challenge,
                credential_sent,
            },
            Refusal::InsufficientScope(scopes, challenge) => {
                HostedError::InsufficientScope { scopes, challenge }
            }
            Refusal::Egress(text) => HostedError::Egress(text),
            Refusal::Unavailable(text) => HostedError::Unavailable(text),
        }
    }
}

#[derive(Debug)]
struct Inner {
    egress: Egress,
    endpoint: Endpoint,
    extension_id: String,
    /// The package content consent is pinned to (see `ServerSpec::content`).
    content: Option<String>,
    /// The capability label egress logs and counts under (`<ext>.mcp`).
    label: String,
    credentials: Vec<CredentialSpec>,
    max_response_bytes: u64,
    timeout: Duration,
    last_refusal: Mutex<Option<Refusal>>,
    streams: Arc<Mutex<Streams>>,
    /// Tools the server runs only as tasks, read from its listings.
    tasks: Arc<TaskOnly>,
    /// The caller whose accounts this connection sends (`None`: the
    /// deployment's), and the vendors whose deployment accounts it may use.
    owner: Option<String>,
    shared: Vec<String>,
}

/// rmcp's HTTP backend over Warden's egress, locked to one endpoint.
#[derive(Debug, Clone)]
pub struct EgressHttp {
    inner: Arc<Inner>,
}

impl EgressHttp {
    /// A backend for `endpoint`, sending `credentials` (already bound to the
    /// endpoint's origin) as `requester`.
    pub fn new(
        egress: Egress,
        endpoint: Endpoint,
        requester: Requester<'_>,
        credentials: Vec<CredentialSpec>,
        max_response_bytes: u64,
        timeout: Duration,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                egress,
                label: format!("{}.mcp", requester.extension),
                extension_id: requester.extension.to_owned(),
                content: requester.content.map(str::to_owned),
                credentials: endpoint.bind(&credentials),
                endpoint,
                max_response_bytes,
                timeout,
                last_refusal: Mutex::new(None),
                streams: Arc::default(),
                tasks: Arc::default(),
                owner: requester.owner.map(str::to_owned),
                shared: requester.shared.to_vec(),
            }),
        }
    }

    /// Whether the server runs tool `name` only as a task (see [`TaskOnly`]).
    /// The same backend sending `owner`'s accounts (and the deployment's of
    /// the `shared` vendors), on connections and streams of its own; what
    /// the listings said (tools run only as tasks) is shared.
    pub(crate) fn for_caller(&self, owner: &str, shared: &[String]) -> Self {
        let inner = &self.inner;
        Self {
            inner: Arc::new(Inner {
                egress: inner.egress.clone(),
                endpoint: inner.endpoint.clone(),
                extension_id: inner.extension_id.clone(),
                content: inner.content.clone(),
                label: inner.label.clone(),
                credentials: inner.credentials.clone(),
                max_response_bytes: inner.max_response_bytes,
                timeout: inner.timeout,
                last_refusal: Mutex::new(None),
                streams: Arc::default(),
                tasks: inner.tasks.clone(),
                owner: Some(owner.to_owned()),
                shared: shared.to_vec(),
            }),
        }
    }

    pub(crate) fn requires_task(&self, name: &str) -> bool {
        self.inner.tasks.requires(name)
    }

    /// The endpoint every request goes to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// Take the last refusal the transport saw.
    pub(crate) fn take_refusal(&self) -> Option<Refusal> {
        self.inner
            .last_refusal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn refuse(&self, refusal: Refusal) -> StreamableHttpError<HostedError> {
        *self
            .inner
            .last_refusal
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(refusal.clone());
        StreamableHttpError::Client(refusal.into())
    }

    /// A fresh egress session for one request, and the credential it
    /// injects (the first one an account serves; audience and injection
    /// are egress's to check).
    async fn session(
        &self,
    ) -> Result<(CallSession, Option<String>), StreamableHttpError<HostedError>> {
        let inner = &self.inner;
        let session = inner
            .egress
            .session(
                &inner.label,
                Requester::of(&inner.extension_id, inner.content.as_deref())
                    .acting_for(inner.owner.as_deref(), &inner.shared),
                &inner.credentials,
                &[inner.endpoint.target()],
                inner.max_response_bytes,
            )
            .await
            .map_err(|e| self.refuse(Refusal::Egress(e.to_string())))?
            .for_host_client(MCP_HEADERS);
        let credential = inner
            .credentials
            .iter()
            .map(|c| c.handle.clone())
            .find(|h| session.acquire(h).is_ok());
        Ok((session, credential))
    }

    /// The redactor of the secrets a request would carry now (the
    /// account's token): a call's binary content is searched with it once
    /// decoded.
    pub(crate) async fn redactor(&self) -> Result<Redactor, HostedError> {
        match self.session().await {
            Ok((session, _)) => Ok(session.redactor().clone()),
            Err(_) => Err(self.take_refusal().map_or_else(
                || HostedError::Egress("no egress session".into()),
                Into::into,
            )),
        }
    }

    /// Open one request to the endpoint through a fresh egress session:
    /// the response head, checked (a redirect, a 401 or a 403
    /// `insufficient_scope` is refused), its body still to read, and the
    /// session that redacts it.
    async fn open(
        &self,
        method: &str,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> Result<(CallSession, StreamingResponse), StreamableHttpError<HostedError>> {
        let inner = &self.inner;
        let (session, credential) = self.session().await?;
        let request = GuestRequest {
            method: method.to_owned(),
            url: inner.endpoint.url().to_owned(),
            headers,
            body,
            timeout: Some(inner.timeout),
        };
        let response = session
            .open_stream(request, credential.as_deref())
            .await
            .map_err(|e| self.refuse(refusal_of(&e, &session)))?;
        if (300..400).contains(&response.status) {
            return Err(self.refuse(Refusal::Redirect(response.status)));
        }
        let challenge = header(&response.headers, "www-authenticate")
            .map(|c| c.chars().take(MAX_CHALLENGE).collect::<String>());
        if response.status == 401 {
            return Err(self.refuse(Refusal::Unauthorized(challenge, credential.is_some())));
        }
        if response.status == 403
            && let Some(challenge) = challenge
            && let Some(scopes) = insufficient_scope(&challenge)
        {
            return Err(self.refuse(Refusal::InsufficientScope(scopes, challenge)));
        }
        Ok((session, response))
    }

    /// The whole body of `response`, at most the response limit, redacted
    /// (and at most `inner.timeout` from now).
    async fn read_all(
        &self,
        session: &CallSession,
        mut body: warden_egress::StreamBody,
    ) -> Result<Vec<u8>, StreamableHttpError<HostedError>> {
        let limit = usize::try_from(self.inner.max_response_bytes).unwrap_or(usize::MAX);
        let deadline = tokio::time::Instant::now() + self.inner.timeout;
        let mut bytes = Vec::new();
        loop {
            let chunk = match tokio::time::timeout_at(deadline, body.next_chunk()).await {
                Err(_) => {
                    let text = "the server's answer did not end in time".to_owned();
                    return Err(self.refuse(Refusal::Egress(text)));
                }
                Ok(None) => break,
                Ok(Some(chunk)) => chunk
                    .map_err(|e| self.refuse(Refusal::Unavailable(egress_text(&e, session))))?,
            };
            if bytes.len() + chunk.len() > limit {
                let text = format!("the server's answer is over {limit} bytes");
                return Err(self.refuse(Refusal::Egress(text)));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(match session.redactor().redact_bytes(&bytes) {
            Cow::Borrowed(_) => bytes,
            Cow::Owned(redacted) => redacted,
        })
    }
}

/// Longest `WWW-Authenticate` value kept.
const MAX_CHALLENGE: usize = 2048;

/// The scopes of a Bearer challenge whose error is `insufficient_scope`.
fn insufficient_scope(challenge: &str) -> Option<Vec<String>> {
    let parsed = BearerChallenge::parse(challenge)?;
    (parsed.error.as_deref() == Some("insufficient_scope")).then_some(parsed.scopes)
}

/// A policy refusal is `Egress` (`network_denied`); a server that cannot be
/// reached (connection refused or reset, a name that does not resolve) is
/// `Unavailable` (`server_unavailable`): down, and worth trying later.
fn refusal_of(error: &EgressError, session: &warden_egress::CallSession) -> Refusal {
    use warden_egress::ClientError;
    use warden_egress::resolve::AddressError;
    let text = egress_text(error, session);
    match error {
        EgressError::Address(AddressError::NonPublic { .. }) => Refusal::Egress(text),
        EgressError::Address(_) => Refusal::Unavailable(text),
        EgressError::Client(ClientError::Timeout | ClientError::TooLarge) => Refusal::Egress(text),
        EgressError::Client(_) => Refusal::Unavailable(text),
        _ => Refusal::Egress(text),
    }
}

fn egress_text(error: &EgressError, session: &warden_egress::CallSession) -> String {
    let text = session.redact(&error.to_string());
    text.chars().take(300).collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl StreamableHttpClient for EgressHttp {
    type Error = HostedError;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let body = serde_json::to_vec(&message)?;
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        let had_session = session_id.is_some();
        if let Some(id) = session_id {
            headers.push(("mcp-session-id".to_owned(), id.to_string()));
        }
        for (name, value) in custom_headers {
            let value = value.to_str().map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(
                    "a protocol header is not text",
                ))
            })?;
            headers.push((name.as_str().to_owned(), value.to_owned()));
        }
        let (session, response) = self.open("POST", headers, Some(body)).await?;
        let status = response.status;
        if matches!(status, 202 | 204) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == 404 && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session_id = header(&response.headers, "mcp-session-id").map(str::to_owned);
        let content_type = header(&response.headers, "content-type").map(str::to_owned);
        let content_type = content_type.as_deref();
        let awaits_no_response = !matches!(message, JsonRpcMessage::Request(_));
        if !(200..300).contains(&status) {
            // A JSON-RPC error in the body is the server's answer; any other
            // body is never echoed.
            if media_type_is(content_type, "application/json")
                && let Ok(body) = self.read_all(&session, response.body).await
                && let Ok(error @ JsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session_id));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}"),
            )));
        }
        if media_type_is(content_type, "text/event-stream") {
            // Read as it arrives: the server's progress and requests come
            // before the answer, which may be minutes later. The stream
            // ends at the lane's deadline whatever the server does.
            let limit = usize::try_from(self.inner.max_response_bytes).unwrap_or(usize::MAX);
            let deadline = tokio::time::Instant::now() + self.inner.timeout;
            let events = redacted_events(
                response.body,
                session,
                limit,
                Some(deadline),
                Some(self.inner.streams.clone()),
                Some(self.inner.tasks.clone()),
            );
            return Ok(StreamableHttpPostResponse::Sse(events, session_id));
        }
        if awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if media_type_is(content_type, "application/json") {
            let body = self.read_all(&session, response.body).await?;
            if let Ok(text) = std::str::from_utf8(&body) {
                self.inner.tasks.observe(text);
            }
            let parsed = serde_json::from_slice::<ServerJsonRpcMessage>(&body)?;
            return Ok(StreamableHttpPostResponse::Json(parsed, session_id));
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|c| c.chars().take(100).collect()),
        ))
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let headers = vec![("mcp-session-id".to_owned(), session_id.to_string())];
        // Ending the session is a courtesy; a refusal changes nothing here.
        if let Ok((session, response)) = self.open("DELETE", headers, None).await {
            let _ = self.read_all(&session, response.body).await;
        }
        Ok(())
    }

    /// The standalone event stream (where servers send what relates to no
    /// request, `notifications/tools/list_changed` above all): a GET through
    /// the same egress policy, lock and injection as every request, on a
    /// connection of its own. Each event is bounded (the lane's response
    /// limit) and its data redacted before rmcp sees it.
    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let mut headers = vec![("accept".to_owned(), "text/event-stream".to_owned())];
        if let Some(id) = session_id {
            headers.push(("mcp-session-id".to_owned(), id.to_string()));
        }
        let (resumes_answer, wait) = {
            let mut streams = self.inner.streams.lock().unwrap_or_else(|e| e.into_inner());
            let resumes_answer = streams.resumes_answer(last_event_id.as_deref());
            let pacing = if resumes_answer {
                &mut streams.resumed
            } else {
                &mut streams.standalone
            };
            (resumes_answer, pacing.reserve(Instant::now()))
        };
        if let Some(id) = last_event_id {
            headers.push(("last-event-id".to_owned(), id));
        }
        for (name, value) in custom_headers {
            if let Ok(value) = value.to_str() {
                headers.push((name.as_str().to_owned(), value.to_owned()));
            }
        }
        if !wait.is_zero() {
            tracing::debug!(?wait, server = %self.inner.endpoint.url(), "event stream reopened too often; waiting");
            tokio::time::sleep(wait).await;
        }
        let (session, credential) = self.session().await?;
        let request = GuestRequest {
            method: "GET".to_owned(),
            url: self.inner.endpoint.url().to_owned(),
            headers,
            body: None,
            timeout: None,
        };
        let response = session
            .open_stream(request, credential.as_deref())
            .await
            .map_err(|e| self.refuse(refusal_of(&e, &session)))?;
        match response.status {
            200..=299 => {}
            401 => {
                let challenge = response
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
                    .map(|(_, v)| v.chars().take(MAX_CHALLENGE).collect());
                let sent = credential.is_some();
                return Err(self.refuse(Refusal::Unauthorized(challenge, sent)));
            }
            405 => return Err(StreamableHttpError::ServerDoesNotSupportSse),
            status => {
                return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!("HTTP {status} to the event stream"),
                )));
            }
        }
        let content_type = response
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.as_str());
        if !media_type_is(content_type, "text/event-stream") {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|c| c.chars().take(100).collect()),
            ));
        }
        let limit = usize::try_from(self.inner.max_response_bytes).unwrap_or(usize::MAX);
        let answers = resumes_answer.then(|| self.inner.streams.clone());
        Ok(redacted_events(
            response.body,
            session,
            limit,
            None,
            answers,
            None,
        ))
    }
}
