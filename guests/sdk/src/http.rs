//! HTTP through the host: builders, JSON helpers and status mapping.
//!
//! ```ignore
//! let token = warden_guest::credential::acquire("github_runtime_token")?;
//! let repo: serde_json::Value = warden_guest::http::Request::get("https://api.github.com/repos/o/r")
//!     .header("accept", "application/vnd.github+json")
//!     .credential(&token)
//!     .send()?
//!     .error_for_status()?
//!     .json()?;
//! ```

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::warden::tool::http as wit;
use crate::credential::Credential;
use crate::{Failure, FailureKind};

pub use wit::HttpError;

/// An outgoing request under construction.
#[derive(Debug)]
pub struct Request<'c> {
    inner: wit::Request,
    credential: Option<&'c Credential>,
}

impl<'c> Request<'c> {
    /// A request with `method` to `url`.
    pub fn new(method: &str, url: impl Into<String>) -> Self {
        Request {
            inner: wit::Request {
                method: method.to_owned(),
                url: url.into(),
                headers: Vec::new(),
                body: None,
                timeout_ms: None,
            },
            credential: None,
        }
    }

    /// `GET url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    /// `POST url`.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new("POST", url)
    }

    /// `PATCH url`.
    pub fn patch(url: impl Into<String>) -> Self {
        Self::new("PATCH", url)
    }

    /// `PUT url`.
    pub fn put(url: impl Into<String>) -> Self {
        Self::new("PUT", url)
    }

    /// `DELETE url`.
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new("DELETE", url)
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.inner.headers.push(wit::Header { name: name.to_owned(), value: value.to_owned() });
        self
    }

    /// Set a raw body.
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.inner.body = Some(body);
        self
    }

    /// Set a JSON body and `content-type: application/json`.
    pub fn json(self, body: &impl Serialize) -> Result<Self, Failure> {
        let bytes = serde_json::to_vec(body).map_err(|e| Failure::executor("unserializable_body", e.to_string()))?;
        Ok(self.header("content-type", "application/json").body(bytes))
    }

    /// Ask the host to inject `credential` (only honored for its audience).
    pub fn credential(mut self, credential: &'c Credential) -> Self {
        self.credential = Some(credential);
        self
    }

    /// Upper bound on this request's duration (the host caps it by the call's deadline).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner.timeout_ms = Some(u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX));
        self
    }

    /// Send the request through the host.
    pub fn send(self) -> Result<Response, Failure> {
        let handle = self.credential.map(|c| &c.handle);
        wit::send(&self.inner, handle).map(Response::from).map_err(Failure::from)
    }
}

/// A response, already redacted by the host.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header fields.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl From<wit::Response> for Response {
    fn from(r: wit::Response) -> Self {
        Response {
            status: r.status,
            headers: r.headers.into_iter().map(|h| (h.name, h.value)).collect(),
            body: r.body,
        }
    }
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The response if 2xx, else the [`status_failure`] for it. The provider's
    /// body is never copied into the failure.
    pub fn error_for_status(self) -> Result<Self, Failure> {
        if self.is_success() { Ok(self) } else { Err(status_failure(&self)) }
    }

    /// Parse the body as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Failure> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Failure::operation_failed("unexpected_response", format!("response is not the expected JSON: {e}")))
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, Failure> {
        std::str::from_utf8(&self.body)
            .map_err(|_| Failure::operation_failed("unexpected_response", "response body is not UTF-8"))
    }
}

/// Map a non-2xx response to a stable failure. Rate limits are recognized by
/// status 429 or by `x-ratelimit-remaining: 0` / `retry-after` on a 403.
pub fn status_failure(response: &Response) -> Failure {
    let status = response.status;
    let rate_limited = status == 429
        || (status == 403
            && (response.header("x-ratelimit-remaining") == Some("0") || response.header("retry-after").is_some()));
    let (kind, code) = match status {
        _ if rate_limited => (FailureKind::Client, "rate_limited"),
        401 => (FailureKind::AuthRequired, "unauthorized"),
        403 => (FailureKind::Client, "forbidden"),
        404 => (FailureKind::Client, "not_found"),
        409 => (FailureKind::Client, "conflict"),
        410 => (FailureKind::Client, "gone"),
        422 => (FailureKind::Client, "validation_failed"),
        400..=499 => (FailureKind::Client, "bad_request"),
        _ => (FailureKind::OperationFailed, "upstream_error"),
    };
    Failure::new(kind, code, format!("provider answered HTTP {status}"))
}

impl From<HttpError> for Failure {
    fn from(error: HttpError) -> Self {
        match error {
            HttpError::Denied(why) => Failure::new(FailureKind::NetworkDenied, "network_denied", why),
            HttpError::InvalidRequest(why) => Failure::executor("invalid_request", why),
            HttpError::Timeout => Failure::operation_failed("upstream_timeout", "the provider did not answer in time"),
            HttpError::TooLarge => Failure::new(FailureKind::OutputTooLarge, "body_too_large", "a request or response body exceeded the host limit"),
            HttpError::ConnectionFailed(why) => Failure::operation_failed("connection_failed", why),
            HttpError::LimitExceeded(why) => Failure::operation_failed("egress_limit", why),
            HttpError::Cancelled => Failure::operation_failed("cancelled", "the caller cancelled the call"),
        }
    }
}
