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
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};
use warden_core::net::{CallNetwork, GuestRequest};
use warden_core::spec::CredentialSpec;
use warden_egress::auth::challenge::BearerChallenge;
use warden_egress::redact::Redactor;
use warden_egress::secrets::Requester;
use warden_egress::{CallSession, Egress, EgressError, StreamingResponse};

use crate::endpoint::Endpoint;
use crate::error::HostedError;
use crate::tasks::TaskOnly;

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

/// A stream opened sooner than this after the one before counts as a
/// reopening of one that failed: the next waits longer.
const STEADY_STREAM: Duration = Duration::from_secs(10);
/// The first wait between two openings.
const FIRST_REOPEN_DELAY: Duration = Duration::from_secs(1);
/// The longest wait between two openings of the standalone stream.
const MAX_REOPEN_DELAY: Duration = Duration::from_secs(60);
/// Event ids of answers remembered, to tell a resumed answer's `GET`.
const ANSWER_IDS: usize = 64;
/// Longest event id remembered (a longer one is not known as an answer's).
const MAX_ANSWER_ID: usize = 256;

/// When a server's next event stream (`GET`) may be opened. rmcp reopens
/// a stream the server ended after the server's `retry:` (which may be 0),
/// with no growing backoff; this spacing is Warden's own, in two kinds:
///
/// - the standalone stream (where announcements come): at once, then one
///   opening a second after the last, twice as long after each opening
///   within [`STEADY_STREAM`] of the one before, up to [`MAX_REOPEN_DELAY`];
///   an opening after a longer while starts over;
/// - resumed answers (a `GET` with the `Last-Event-ID` of an event of a
///   `POST`'s answer, which rmcp sends when the answer's stream ended
///   before the answer): at most one a second, never longer, so a call
///   being answered is not held past its deadline by the other stream.
#[derive(Debug)]
struct Streams {
    standalone: Pacing,
    resumed: Pacing,
    /// Event ids lately seen in answers, oldest first.
    answer_ids: VecDeque<String>,
}

impl Default for Streams {
    fn default() -> Self {
        Self {
            standalone: Pacing::new(MAX_REOPEN_DELAY),
            resumed: Pacing::new(FIRST_REOPEN_DELAY),
            answer_ids: VecDeque::new(),
        }
    }
}

impl Streams {
    /// Remember `id` as an event id of an answer.
    fn answer_id(&mut self, id: &str) {
        if id.len() > MAX_ANSWER_ID || self.answer_ids.iter().any(|known| known == id) {
            return;
        }
        if self.answer_ids.len() == ANSWER_IDS {
            self.answer_ids.pop_front();
        }
        self.answer_ids.push_back(id.to_owned());
    }

    /// Whether a `GET` resuming after `last_event_id` resumes an answer.
    fn resumes_answer(&self, last_event_id: Option<&str>) -> bool {
        last_event_id.is_some_and(|id| self.answer_ids.iter().any(|known| known == id))
    }
}

/// The spacing of one kind of stream: see [`Streams`].
#[derive(Debug)]
struct Pacing {
    /// When the last stream was (or will be) opened.
    opened: Option<Instant>,
    /// The last wait imposed.
    delay: Duration,
    /// The longest wait.
    max_delay: Duration,
}

impl Pacing {
    fn new(max_delay: Duration) -> Self {
        Self {
            opened: None,
            delay: Duration::ZERO,
            max_delay,
        }
    }

    /// How long to wait before opening a stream asked for at `now`; the
    /// opening is booked at `now` plus that wait.
    fn reserve(&mut self, now: Instant) -> Duration {
        let wait = match self.opened {
            Some(opened) if now.saturating_duration_since(opened) < STEADY_STREAM => {
                self.delay = (self.delay * 2).clamp(FIRST_REOPEN_DELAY, self.max_delay);
                (opened + self.delay).saturating_duration_since(now)
            }
            _ => {
                self.delay = Duration::ZERO;
                Duration::ZERO
            }
        };
        self.opened = Some(now + wait);
        wait
    }
}

fn media_type_is(value: Option<&str>, expected: &str) -> bool {
    value.is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(expected))
    })
}

/// The chunks of an event stream's body, ended with an error when more
/// than `limit` bytes arrive without an event boundary.
fn bounded_events(
    body: warden_egress::StreamBody,
    limit: usize,
    deadline: Option<tokio::time::Instant>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    futures::stream::unfold(Some((body, Pending::default())), move |state| async move {
        let (mut body, mut pending) = state?;
        let next = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, body.next_chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    let error = std::io::Error::other("the event stream did not end in time");
                    return Some((Err(error), None));
                }
            },
            None => body.next_chunk().await,
        };
        match next? {
            Err(error) => Some((Err(std::io::Error::other(error.to_string())), None)),
            Ok(chunk) => {
                if pending.feed(&chunk) > limit {
                    let error = std::io::Error::other("an event of the stream is too large");
                    return Some((Err(error), None));
                }
                Some((Ok(chunk), Some((body, pending))))
            }
        }
    })
}

/// Bytes of an event stream received since the last event boundary (a
/// blank line: `\n\n`, `\r\r` or `\r\n\r\n`, also split across chunks).
#[derive(Debug, Default, Clone, Copy)]
struct Pending {
    bytes: usize,
    /// The last line-break bytes seen, newest last (0: none).
    tail: [u8; 3],
}

impl Pending {
    /// Count `chunk`; the bytes now pending.
    fn feed(&mut self, chunk: &[u8]) -> usize {
        let mut rest = chunk;
        loop {
            let line_break = memchr::memchr2(b'\n', b'\r', rest);
            let plain = line_break.unwrap_or(rest.len());
            if plain > 0 {
                self.bytes += plain;
                self.tail = [0; 3];
            }
            let Some(at) = line_break else {
                return self.bytes;
            };
            self.line_break(rest[at]);
            rest = &rest[at + 1..];
        }
    }

    /// Count a line-break byte.
    fn line_break(&mut self, byte: u8) {
        self.bytes += 1;
        let [_, b, c] = self.tail;
        let ends = match (b, c, byte) {
            (_, b'\n', b'\n') | (_, b'\r', b'\r') => true,
            (b'\n', b'\r', b'\n') => self.tail[0] == b'\r',
            _ => false,
        };
        if ends {
            self.bytes = 0;
            self.tail = [0; 3];
        } else {
            self.tail = [self.tail[1], c, byte];
        }
    }
}

/// The events of a streaming body as rmcp reads them, as they arrive:
/// each bounded to `limit` bytes, its text fields redacted by `session`,
/// the stream ended at `deadline` when given; the ids of events that
/// answer requests remembered in `answers`.
fn redacted_events(
    body: warden_egress::StreamBody,
    session: CallSession,
    limit: usize,
    deadline: Option<tokio::time::Instant>,
    answers: Option<Arc<Mutex<Streams>>>,
    tasks: Option<Arc<TaskOnly>>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let chunks = bounded_events(body, limit, deadline);
    SseStream::from_bytes_stream(chunks)
        .map(move |event| {
            let event = event.map(|mut sse| {
                // Every text field: `id` goes back to the server as
                // Last-Event-ID, `event` and `data` into the MCP client.
                for field in [&mut sse.data, &mut sse.id, &mut sse.event] {
                    *field = field
                        .take()
                        .map(|text| session.redactor().redact_string(text));
                }
                sse
            });
            if let Some(answers) = &answers {
                remember_answer_id(answers, &event);
            }
            if let (
                Some(tasks),
                Ok(Sse {
                    data: Some(data), ..
                }),
            ) = (&tasks, &event)
            {
                tasks.observe(data);
            }
            event
        })
        .boxed()
}

fn remember_answer_id(streams: &Mutex<Streams>, event: &Result<Sse, SseError>) {
    if let Ok(Sse { id: Some(id), .. }) = event {
        streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer_id(id);
    }
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{MAX_REOPEN_DELAY, Pending, STEADY_STREAM, Streams};

    #[test]
    fn streams_that_end_early_are_reopened_ever_later_and_a_steady_one_resets() {
        let mut pacing = Streams::default().standalone;
        let start = Instant::now();
        assert_eq!(pacing.reserve(start), Duration::ZERO);
        // Each stream ends as soon as it opens: 1 s, 2 s, 4 s, ... up to the cap.
        let mut now = start;
        let mut waits = Vec::new();
        for _ in 0..10 {
            let wait = pacing.reserve(now);
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        assert_eq!(pacing.delay, MAX_REOPEN_DELAY);
        // Two asked for at once: the second is booked after the first.
        let mut pacing = Streams::default().standalone;
        assert_eq!(pacing.reserve(start), Duration::ZERO);
        assert_eq!(pacing.reserve(start), Duration::from_secs(1));
        assert_eq!(pacing.reserve(start), Duration::from_secs(3));
        // A stream that lasted: the next opens at once, the spacing starts over.
        let later = start + Duration::from_secs(3) + STEADY_STREAM;
        assert_eq!(pacing.reserve(later), Duration::ZERO);
        assert_eq!(pacing.reserve(later), Duration::from_secs(1));
    }

    #[test]
    fn resumed_answers_are_spaced_a_second_apart_and_told_by_their_ids() {
        let mut streams = Streams::default();
        let start = Instant::now();
        let mut now = start;
        let mut waits = Vec::new();
        for _ in 0..5 {
            let wait = streams.resumed.reserve(now);
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(waits, [0, 1, 1, 1, 1]);
        // Only an id seen in an answer makes a resumption; ids are bounded.
        assert!(!streams.resumes_answer(Some("7")));
        assert!(!streams.resumes_answer(None));
        streams.answer_id("7");
        assert!(streams.resumes_answer(Some("7")));
        for i in 0..super::ANSWER_IDS {
            streams.answer_id(&format!("other-{i}"));
        }
        assert!(!streams.resumes_answer(Some("7")));
        streams.answer_id(&"x".repeat(super::MAX_ANSWER_ID + 1));
        assert!(!streams.resumes_answer(Some(&"x".repeat(super::MAX_ANSWER_ID + 1))));
    }

    #[test]
    fn event_boundaries_reset_the_count_in_every_form_and_across_chunks() {
        for boundary in ["\n\n", "\r\r", "\r\n\r\n"] {
            let mut pending = Pending::default();
            let text = format!("data: one{boundary}data: two");
            assert_eq!(
                pending.feed(text.as_bytes()),
                "data: two".len(),
                "{boundary:?}"
            );
            // Split in the middle of the boundary.
            let mut pending = Pending::default();
            let (first, second) = text.split_at("data: one".len() + 1);
            pending.feed(first.as_bytes());
            assert_eq!(
                pending.feed(second.as_bytes()),
                "data: two".len(),
                "{boundary:?}"
            );
        }
        // A single line break is no boundary: the count goes on.
        let mut pending = Pending::default();
        assert_eq!(pending.feed(b"data: a\ndata: b"), 15);
        assert_eq!(pending.feed(b"\r\ndata"), 21);
    }
}
