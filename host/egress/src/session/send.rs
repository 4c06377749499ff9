//! One guest request: policy, address checks, injection, transport and
//! host-run redirects, then redaction of what comes back.

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{Method, StatusCode, header::LOCATION};
use tokio::time::Instant;
use warden_core::net::{GuestRequest, GuestResponse};
use warden_core::spec::Injection;

use super::{CallSession, EgressError, inject};
use crate::client::{ClientError, Incoming};
use crate::policy::{Denial, ParsedRequest, Plan, endpoint_of, headers};
use crate::resolve::checked_addresses;

pub(super) async fn run(
    session: &CallSession,
    request: GuestRequest,
    credential: Option<&str>,
    remaining: Duration,
) -> Result<GuestResponse, EgressError> {
    let config = &session.egress.inner.config;
    let budget = request
        .timeout
        .map_or(config.total_timeout, |t| t.min(config.total_timeout))
        .min(remaining);
    let deadline = Instant::now() + budget;
    if request
        .body
        .as_ref()
        .is_some_and(|b| b.len() > config.max_request_body)
    {
        return Err(EgressError::RequestTooLarge);
    }
    let mut plan = first_plan(session, request, credential, deadline).await?;
    let mut hops = 0;
    loop {
        let incoming = match tokio::time::timeout_at(deadline, hop(session, &plan, deadline)).await
        {
            Ok(result) => result?,
            Err(_) => return Err(ClientError::Timeout.into()),
        };
        if incoming.status == StatusCode::UNAUTHORIZED
            && let Some(injection) = &plan.injection
        {
            session.note_refused(&injection.handle);
        }
        let next = match session.follow_redirects {
            true => redirect(&plan, &incoming)?,
            false => None,
        };
        let Some(next) = next else {
            let _gate = large_redaction(incoming.body.len(), deadline).await?;
            return Ok(to_guest(session, incoming));
        };
        hops += 1;
        if hops > config.max_redirects {
            return Err(Denial::TooManyRedirects.into());
        }
        // A 307 or 308 sends the body again, checked again.
        plan = next_plan(session, &plan, next, deadline).await?;
    }
}

/// A host-originated request (auth recipes): endpoint and address checks,
/// no guest leak pre-scan (the host's own token requests carry tokens), no
/// redirects.
pub(super) async fn host_request(
    session: &CallSession,
    request: ParsedRequest,
) -> Result<Incoming, EgressError> {
    let endpoint = endpoint_of(&request.url)?;
    session.policy.check_endpoint(&endpoint)?;
    let plan = Plan {
        endpoint,
        request,
        injection: None,
    };
    let deadline = Instant::now() + session.egress.inner.config.total_timeout;
    match tokio::time::timeout_at(deadline, hop(session, &plan, deadline)).await {
        Ok(result) => result,
        Err(_) => Err(ClientError::Timeout.into()),
    }
}

/// The checked plan of a request's first hop: a declared credential must
/// have an account, and the policy must allow the request
/// ([`checked_plan`]).
async fn first_plan(
    session: &CallSession,
    request: GuestRequest,
    credential: Option<&str>,
    deadline: Instant,
) -> Result<Plan, EgressError> {
    if let Some(handle) = credential
        && session
            .staged
            .get(handle)
            .is_some_and(|s| s.secret.is_none())
    {
        return Err(Denial::CredentialNotConfigured(handle.to_owned()).into());
    }
    let parsed = ParsedRequest::parse(
        &request.method,
        &request.url,
        &request.headers,
        request.body,
    )?;
    Ok(checked_plan(session, &parsed, credential, deadline).await?)
}

/// The policy's plan for a request (a first hop or a redirect): its cheap
/// checks first, then the leak pre-scan, which reads the body in every
/// canonical form, in a large-body turn. A request the policy refuses
/// never takes a turn (two guests sending large bodies to hosts they may
/// not reach held both, and other calls' large bodies waited).
async fn checked_plan(
    session: &CallSession,
    request: &ParsedRequest,
    credential: Option<&str>,
    deadline: Instant,
) -> Result<Plan, Checked> {
    let plan = session.policy.plan(request, credential)?;
    let len = plan.request.body.as_ref().map_or(0, Vec::len);
    let _gate = large_redaction(len, deadline).await?;
    crate::policy::prescan(&plan.request, &session.redactor)?;
    Ok(plan)
}

/// Why [`checked_plan`] gave no plan: the policy refused, or no turn came
/// before the deadline.
enum Checked {
    Refused(Denial),
    Late(ClientError),
}

impl From<Denial> for Checked {
    fn from(denial: Denial) -> Self {
        Checked::Refused(denial)
    }
}

impl From<ClientError> for Checked {
    fn from(error: ClientError) -> Self {
        Checked::Late(error)
    }
}

impl From<Checked> for EgressError {
    fn from(checked: Checked) -> Self {
        match checked {
            Checked::Refused(denial) => denial.into(),
            Checked::Late(error) => error.into(),
        }
    }
}

/// A host client's streaming request (the hosted-MCP lane's event stream):
/// the policy, address checks, limits and injection of [`run`], no
/// redirect followed, the head before the call's total timeout; the body
/// is the caller's to bound and redact as it arrives.
pub(super) async fn open(
    session: &CallSession,
    request: GuestRequest,
    credential: Option<&str>,
) -> Result<super::StreamingResponse, EgressError> {
    // The host client's own timeout, when it names one: its calls wait on
    // a remote tool (minutes, with progress), not on a guest's fetch.
    let head = request
        .timeout
        .unwrap_or(session.egress.inner.config.total_timeout);
    let deadline = Instant::now() + head;
    if request
        .body
        .as_ref()
        .is_some_and(|b| b.len() > session.egress.inner.config.max_request_body)
    {
        return Err(EgressError::RequestTooLarge);
    }
    let started = std::time::Instant::now();
    let plan = first_plan(session, request, credential, deadline).await?;
    let (outgoing, _) = prepare(session, &plan).await?;
    let streaming = session.egress.inner.client.open(outgoing, deadline).await?;
    if streaming.status == StatusCode::UNAUTHORIZED
        && let Some(injection) = &plan.injection
    {
        session.note_refused(&injection.handle);
    }
    let headers = visible_headers(session, &streaming.headers);
    let observers: Vec<_> = session.observers().cloned().collect();
    let meter = (!observers.is_empty()).then(|| {
        let target = session.policy.target_label(&plan.endpoint);
        let sent = plan.request.body.as_ref().map_or(0, Vec::len) as u64;
        for observer in &observers {
            observer.exchanged(&target, streaming.status.as_u16(), sent, started);
        }
        (observers, target)
    });
    Ok(super::StreamingResponse {
        status: streaming.status.as_u16(),
        headers,
        body: super::StreamBody {
            body: streaming.body,
            meter,
        },
    })
}

/// Resolve, check, inject and send one hop.
async fn hop(
    session: &CallSession,
    plan: &Plan,
    deadline: Instant,
) -> Result<Incoming, EgressError> {
    let inner = &session.egress.inner;
    let started = std::time::Instant::now();
    let (outgoing, (max_body, by_budget)) = prepare(session, plan).await?;
    let incoming = match inner.client.send(outgoing, deadline, max_body).await {
        Err(ClientError::TooLarge) if by_budget => {
            return Err(EgressError::LimitExceeded("egress bytes"));
        }
        other => other?,
    };
    session
        .usage
        .bytes_received
        .fetch_add(incoming.body.len() as u64, Ordering::Relaxed);
    let mut observers = session.observers().peekable();
    if observers.peek().is_some() {
        let target = session.policy.target_label(&plan.endpoint);
        let sent = plan.request.body.as_ref().map_or(0, Vec::len) as u64;
        for observer in observers {
            observer.exchanged(&target, incoming.status.as_u16(), sent, started);
            observer.received(&target, incoming.body.len() as u64);
        }
    }
    tracing::debug!(
        capability = session.capability_id(),
        status = incoming.status.as_u16(),
        "egress response"
    );
    Ok(incoming)
}

/// The limits, address checks and injection of one hop: the request to
/// send, and the response body bound (and whether the call's byte budget
/// set it).
async fn prepare(
    session: &CallSession,
    plan: &Plan,
) -> Result<(crate::client::Outgoing, (usize, bool)), EgressError> {
    let inner = &session.egress.inner;
    let usage = &session.usage;
    if usage.requests.load(Ordering::Relaxed) >= inner.config.max_requests_per_call {
        return Err(EgressError::LimitExceeded("requests per call"));
    }
    let body_len = plan.request.body.as_ref().map_or(0, Vec::len) as u64;
    let used = usage.bytes();
    if used + body_len > session.max_egress_bytes {
        return Err(EgressError::LimitExceeded("egress bytes"));
    }
    let endpoint = &plan.endpoint;
    // Resolving counts toward the connect timeout, as the configuration
    // says: a name server that never answers holds the call no longer.
    let resolving = checked_addresses(
        inner.resolver.as_ref(),
        &endpoint.host,
        endpoint.port,
        &inner.config,
    );
    let connect_by = Instant::now() + inner.config.connect_timeout;
    let addrs = tokio::time::timeout_at(connect_by, resolving)
        .await
        .map_err(|_| ClientError::Timeout)??;
    let secret = plan
        .injection
        .as_ref()
        .and_then(|i| session.staged.get(&i.handle))
        .and_then(|s| s.secret.as_ref());
    let mut outgoing = inject::outgoing(plan, secret, addrs)?;
    outgoing.connect_by = Some(connect_by);
    usage.requests.fetch_add(1, Ordering::Relaxed);
    usage.bytes_sent.fetch_add(body_len, Ordering::Relaxed);
    let budget_left = session.max_egress_bytes.saturating_sub(used + body_len);
    let by_budget = budget_left < inner.config.max_response_body as u64;
    let max_body = if by_budget {
        budget_left as usize
    } else {
        inner.config.max_response_body
    };
    tracing::debug!(
        capability = session.capability_id(),
        host = %endpoint.host,
        port = endpoint.port,
        credential = plan.injection.is_some(),
        "egress request"
    );
    Ok((outgoing, (max_body, by_budget)))
}

/// The next request of a redirect, if `incoming` is one.
fn redirect(plan: &Plan, incoming: &Incoming) -> Result<Option<ParsedRequest>, EgressError> {
    let status = incoming.status;
    if !matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = incoming.headers.get(LOCATION) else {
        return Ok(None);
    };
    let refused = |d: Denial| EgressError::Denied(Denial::Redirect(Box::new(d)));
    let location = location.to_str().map_err(|_| refused(Denial::InvalidUrl))?;
    let url = plan
        .request
        .url
        .join(location)
        .map_err(|_| refused(Denial::InvalidUrl))?;
    let current = &plan.request;
    let to_get = status == StatusCode::SEE_OTHER && current.method != Method::HEAD
        || matches!(status.as_u16(), 301 | 302) && current.method == Method::POST;
    let mut next = ParsedRequest {
        method: current.method.clone(),
        url,
        headers: current.headers.clone(),
        body: current.body.clone(),
    };
    if to_get {
        next.method = Method::GET;
        next.body = None;
        next.headers
            .retain(|(name, _)| !name.as_str().starts_with("content-"));
    }
    Ok(Some(next))
}

/// Re-authorize a redirect hop. The credential follows only to its own
/// origin (and not for path-placeholder injection, whose URL the server chose).
async fn next_plan(
    session: &CallSession,
    plan: &Plan,
    next: ParsedRequest,
    deadline: Instant,
) -> Result<Plan, EgressError> {
    let refused = |d: Denial| EgressError::Denied(Denial::Redirect(Box::new(d)));
    let endpoint = endpoint_of(&next.url).map_err(refused)?;
    let credential = plan.injection.as_ref().filter(|i| {
        endpoint == plan.endpoint && !matches!(i.injection, Injection::PathPlaceholder { .. })
    });
    let handle = credential.map(|i| i.handle.as_str());
    match checked_plan(session, &next, handle, deadline).await {
        Ok(plan) => Ok(plan),
        Err(Checked::Refused(denial)) => Err(refused(denial)),
        Err(Checked::Late(error)) => Err(error.into()),
    }
}

/// The response headers the receiver may see, redacted. A header whose
/// *name* holds a staged secret (a server spelling back what it was sent)
/// is left out whole: a name with a part replaced means nothing.
fn visible_headers(session: &CallSession, all: &http::HeaderMap) -> Vec<(String, String)> {
    let extra = session.policy.injection_headers();
    let redactor = &session.redactor;
    all.iter()
        .filter(|(name, _)| {
            headers::guest_may_see(name.as_str(), &extra)
                || (session.host_client && name.as_str() == "www-authenticate")
        })
        .filter(|(name, _)| !redactor.contains(name.as_str().as_bytes()))
        .map(|(name, value)| {
            let value = redactor.redact_bytes(value.as_bytes());
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(&value).into_owned(),
            )
        })
        .collect()
}

/// Bodies past this size are checked or redacted a few at a time.
const LARGE_BODY: usize = 1 << 20;

/// Large bodies checked or redacted at once, host-wide: looking at a body
/// in its canonical forms (percent-decoded, unescaped, …) takes up to about
/// twenty times its size while it lasts (two decoded views, each with its
/// map back to the raw bytes), outside any call's memory budget; 128 calls
/// each redacting a 16 MiB answer would have held over 40 GiB.
static LARGE_REDACTIONS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// A turn to check or redact a body of `len` bytes, waited for until
/// `deadline`: none needed for a small one.
async fn large_redaction(
    len: usize,
    deadline: Instant,
) -> Result<Option<tokio::sync::SemaphorePermit<'static>>, ClientError> {
    if len <= LARGE_BODY {
        return Ok(None);
    }
    match tokio::time::timeout_at(deadline, LARGE_REDACTIONS.acquire()).await {
        // Never closed.
        Ok(permit) => Ok(permit.ok()),
        Err(_) => Err(ClientError::Timeout),
    }
}

/// Strip sensitive headers and redact every staged secret.
fn to_guest(session: &CallSession, incoming: Incoming) -> GuestResponse {
    let redactor = &session.redactor;
    let headers = visible_headers(session, &incoming.headers);
    let redacted = match redactor.redact_bytes(&incoming.body) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(redacted) => Some(redacted),
    };
    let body = match redacted {
        // Nothing found: the body as it came, not a copy.
        None => incoming.body,
        Some(redacted) => {
            for observer in session.observers() {
                observer.redacted();
            }
            redacted
        }
    };
    GuestResponse {
        status: incoming.status.as_u16(),
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{TestCa, TestResponse, TestServer};

    /// The tests that take the host-wide turns take turns themselves.
    static TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    #[tokio::test]
    async fn large_bodies_take_turns_and_small_ones_never_wait() {
        let _alone = TURNS.lock().await;
        let later = || Instant::now() + Duration::from_secs(5);
        let first = large_redaction(LARGE_BODY + 1, later()).await.unwrap();
        let second = large_redaction(16 << 20, later()).await.unwrap();
        assert!(first.is_some() && second.is_some());
        let soon = Instant::now() + Duration::from_millis(50);
        assert!(
            matches!(
                large_redaction(2 << 20, soon).await,
                Err(ClientError::Timeout)
            ),
            "a third waits its turn, until its deadline"
        );
        let small = large_redaction(LARGE_BODY, Instant::now()).await.unwrap();
        assert!(small.is_none(), "a small body never waits");
        drop(first);
        assert!(large_redaction(2 << 20, later()).await.unwrap().is_some());
    }

    /// A large body to a host the policy refuses is refused at once, even
    /// while every large-body turn is taken, as a first request and as a
    /// redirect's (a 307 sends the body again): it took a turn first (to be
    /// leak-scanned), so two guests sending to hosts they may not reach
    /// held both turns and made every other large body wait.
    #[tokio::test]
    async fn a_refused_request_takes_no_turn() {
        let _alone = TURNS.lock().await;
        let ca = TestCa::new();
        // The allowed host redirects there, having taken both turns (as two
        // other calls' scans would hold them).
        let server = TestServer::start(&ca, &["allowed.example.com"], |_| {
            if let Ok(turns) = LARGE_REDACTIONS.try_acquire_many(2) {
                turns.forget();
            }
            TestResponse::redirect(307, "https://not-allowed.example.com/upload")
        })
        .await
        .unwrap();
        let egress = crate::Egress::new(
            crate::testing::config(&ca, &[("allowed.example.com", 443)]),
            std::sync::Arc::new(crate::secrets::MemoryStore::new()),
            std::sync::Arc::new(server.resolver(&["allowed.example.com"])),
        )
        .unwrap();
        let allowed = warden_core::spec::NetworkTarget {
            scheme: "https".into(),
            host_pattern: "allowed.example.com".into(),
            port: None,
        };
        let session = egress
            .session("x.send", "x", &[], &[allowed], 64 << 20)
            .await
            .unwrap();
        let upload = |url: &str| GuestRequest {
            method: "POST".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Some(vec![b'x'; 2 << 20]),
            timeout: None,
        };
        let redirected = run(
            &session,
            upload("https://allowed.example.com/upload"),
            None,
            Duration::from_secs(5),
        )
        .await;
        let refused = run(
            &session,
            upload("https://not-allowed.example.com/upload"),
            None,
            Duration::from_millis(300),
        )
        .await;
        LARGE_REDACTIONS.add_permits(2);
        assert!(
            matches!(&redirected, Err(EgressError::Denied(Denial::Redirect(_)))),
            "{redirected:?}"
        );
        assert!(
            matches!(refused, Err(EgressError::Denied(_))),
            "{refused:?}"
        );
    }
}
