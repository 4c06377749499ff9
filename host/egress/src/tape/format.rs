//! The tape file: versioned JSON, readable and diffable.
//!
//! ```json
//! { "format": "warden.tape.v1", "capability": "github.get_repo",
//!   "exchanges": [ { "request": { "method": "GET", "url": "https://…",
//!       "headers": [["accept", "application/json"]],
//!       "credential": "github_runtime_token",
//!       "injected": "header authorization: Bearer {{secret:github_runtime_token}}" },
//!     "response": { "status": 200, "headers": [...], "body": "{…}" } } ] }
//! ```
//!
//! A body that is not UTF-8 is written as `body_base64`. A request that
//! failed has `"response": { "error": "timeout", "message": "…" }`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use warden_core::net::{GuestRequest, GuestResponse, HttpError};
use warden_core::spec::{CredentialSpec, Injection};

/// The format tag of this version.
pub const FORMAT: &str = "warden.tape.v1";

/// The largest tape [`Tape::from_json`] reads.
pub const MAX_TAPE_BYTES: usize = 64 << 20;

/// What one call sent and received through the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tape {
    /// [`FORMAT`].
    pub format: String,
    /// The capability the call ran.
    pub capability: String,
    /// Requests and what came back, in order.
    pub exchanges: Vec<Exchange>,
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// What the guest asked.
    pub request: TapedRequest,
    /// What the guest got.
    pub response: TapeResponse,
}

/// A guest's request; the credential by handle and placeholder only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapedRequest {
    /// Method as the guest wrote it.
    pub method: String,
    /// URL as the guest wrote it.
    pub url: String,
    /// The guest's header fields, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body when it is UTF-8 text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body when it is not UTF-8, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The credential handle the request asked the host to inject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// How the host injected it, with the secret as a placeholder (recorded
    /// for the reader; not compared on replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<String>,
}

/// What came back: a response, or why there was none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum TapeResponse {
    /// A response (any status).
    Response {
        /// Status code.
        status: u16,
        /// Header fields as the guest saw them.
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// The body when it is UTF-8 text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// The body when it is not UTF-8, base64.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body_base64: Option<String>,
    },
    /// The request failed.
    Failed {
        /// `denied`, `invalid_request`, `timeout`, `too_large`,
        /// `connection_failed` or `limit_exceeded`.
        error: String,
        /// The error's message.
        #[serde(default)]
        message: String,
    },
}

/// A tape that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapeError {
    /// Not JSON of this format.
    #[error("not a tape: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Another format or version.
    #[error("tape format `{found}` is not `{FORMAT}`")]
    Format {
        /// What the file says.
        found: String,
    },
    /// Larger than [`MAX_TAPE_BYTES`].
    #[error("tape is {0} bytes; the limit is {MAX_TAPE_BYTES}")]
    TooLarge(usize),
    /// A base64 body that does not decode.
    #[error("exchange #{index}: `body_base64` is not base64")]
    Base64 {
        /// 1-based exchange number.
        index: usize,
    },
}

impl Tape {
    /// A tape of `exchanges` for `capability`.
    pub fn new(capability: &str, exchanges: Vec<Exchange>) -> Self {
        Self {
            format: FORMAT.to_owned(),
            capability: capability.to_owned(),
            exchanges,
        }
    }

    /// Pretty JSON, with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a tape serializes");
        text.push('\n');
        text
    }

    /// Read a tape, checking its format and bodies.
    pub fn from_json(bytes: &[u8]) -> Result<Self, TapeError> {
        if bytes.len() > MAX_TAPE_BYTES {
            return Err(TapeError::TooLarge(bytes.len()));
        }
        let tape: Tape = serde_json::from_slice(bytes)?;
        if tape.format != FORMAT {
            return Err(TapeError::Format { found: tape.format });
        }
        for (i, exchange) in tape.exchanges.iter().enumerate() {
            let request = &exchange.request;
            let mut valid = decode(request.body.as_ref(), request.body_base64.as_ref()).is_some();
            if let TapeResponse::Response {
                body, body_base64, ..
            } = &exchange.response
            {
                valid &= decode(body.as_ref(), body_base64.as_ref()).is_some();
            }
            if !valid {
                return Err(TapeError::Base64 { index: i + 1 });
            }
        }
        Ok(tape)
    }
}

/// `(body, body_base64)` for `bytes`: text passed through `redact`, other
/// bytes as base64 (the session already redacted them in every form).
fn encode(
    bytes: Option<&[u8]>,
    redact: &dyn Fn(&str) -> String,
) -> (Option<String>, Option<String>) {
    match bytes.map(|b| (b, std::str::from_utf8(b))) {
        None => (None, None),
        Some((_, Ok(text))) => (Some(redact(text)), None),
        Some((bytes, Err(_))) => (None, Some(STANDARD.encode(bytes))),
    }
}

/// The bytes of a `(body, body_base64)` pair: `None` when the base64 does
/// not decode, `Some(None)` when there is no body.
fn decode(body: Option<&String>, base64: Option<&String>) -> Option<Option<Vec<u8>>> {
    match (body, base64) {
        (Some(text), _) => Some(Some(text.clone().into_bytes())),
        (None, Some(encoded)) => STANDARD.decode(encoded).ok().map(Some),
        (None, None) => Some(None),
    }
}

impl TapedRequest {
    /// `request` as taped, passed through `redact`; `spec` (the credential's
    /// declaration) gives the injection placeholder.
    pub(crate) fn of(
        request: &GuestRequest,
        credential: Option<&str>,
        spec: Option<&CredentialSpec>,
        redact: &dyn Fn(&str) -> String,
    ) -> Self {
        let (body, body_base64) = encode(request.body.as_deref(), redact);
        Self {
            method: request.method.clone(),
            url: redact(&request.url),
            headers: request
                .headers
                .iter()
                .map(|(n, v)| (n.clone(), redact(v)))
                .collect(),
            body,
            body_base64,
            credential: credential.map(str::to_owned),
            injected: spec.map(placeholder),
        }
    }

    /// The differences from `actual`, line by line, or `None` when they match.
    pub(crate) fn diff(&self, actual: &TapedRequest) -> Option<String> {
        let mut lines = Vec::new();
        let mut field = |name: &str, taped: String, asked: String| {
            if taped != asked {
                lines.push(format!(
                    "  {name}:\n    - tape:  {taped}\n    + guest: {asked}"
                ));
            }
        };
        field("method", self.method.clone(), actual.method.clone());
        field("url", self.url.clone(), actual.url.clone());
        field(
            "headers",
            format!("{:?}", self.headers),
            format!("{:?}", actual.headers),
        );
        field(
            "body",
            describe_body(self.body.as_ref(), self.body_base64.as_ref()),
            describe_body(actual.body.as_ref(), actual.body_base64.as_ref()),
        );
        field(
            "credential",
            format!("{:?}", self.credential),
            format!("{:?}", actual.credential),
        );
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// One readable line per field.
    pub(crate) fn describe(&self) -> String {
        let mut text = format!("  {} {}", self.method, self.url);
        for (name, value) in &self.headers {
            text.push_str(&format!("\n  {name}: {value}"));
        }
        if self.body.is_some() || self.body_base64.is_some() {
            let body = describe_body(self.body.as_ref(), self.body_base64.as_ref());
            text.push_str(&format!("\n  body: {body}"));
        }
        text
    }
}

impl TapeResponse {
    /// What the guest got, as taped, passed through `redact`.
    pub(crate) fn of(
        result: &Result<GuestResponse, HttpError>,
        redact: &dyn Fn(&str) -> String,
    ) -> Self {
        match result {
            Ok(response) => {
                let (body, body_base64) = encode(Some(&response.body), redact);
                TapeResponse::Response {
                    status: response.status,
                    headers: response
                        .headers
                        .iter()
                        .map(|(n, v)| (n.clone(), redact(v)))
                        .collect(),
                    body,
                    body_base64,
                }
            }
            Err(error) => {
                let (kind, message) = match error {
                    HttpError::Denied(m) => ("denied", m.clone()),
                    HttpError::InvalidRequest(m) => ("invalid_request", m.clone()),
                    HttpError::Timeout => ("timeout", String::new()),
                    HttpError::TooLarge => ("too_large", String::new()),
                    HttpError::RequestTooLarge => ("request_too_large", String::new()),
                    HttpError::ConnectionFailed(m) => ("connection_failed", m.clone()),
                    HttpError::LimitExceeded(m) => ("limit_exceeded", m.clone()),
                    other => ("connection_failed", other.to_string()),
                };
                TapeResponse::Failed {
                    error: kind.to_owned(),
                    message: redact(&message),
                }
            }
        }
    }

    /// The answer to give the guest.
    pub(crate) fn to_result(&self) -> Result<GuestResponse, HttpError> {
        match self {
            TapeResponse::Response {
                status,
                headers,
                body,
                body_base64,
            } => Ok(GuestResponse {
                status: *status,
                headers: headers.clone(),
                // Checked by `Tape::from_json`; a tape built in memory is ours.
                body: decode(body.as_ref(), body_base64.as_ref())
                    .flatten()
                    .unwrap_or_default(),
            }),
            TapeResponse::Failed { error, message } => Err(match error.as_str() {
                "denied" => HttpError::Denied(message.clone()),
                "invalid_request" => HttpError::InvalidRequest(message.clone()),
                "timeout" => HttpError::Timeout,
                "too_large" => HttpError::TooLarge,
                "request_too_large" => HttpError::RequestTooLarge,
                "limit_exceeded" => HttpError::LimitExceeded(message.clone()),
                _ => HttpError::ConnectionFailed(message.clone()),
            }),
        }
    }
}

fn describe_body(body: Option<&String>, base64: Option<&String>) -> String {
    const SHOWN: usize = 200;
    match (body, base64) {
        (Some(text), _) if text.len() <= SHOWN => format!("{text:?}"),
        (Some(text), _) => {
            let cut = (0..=SHOWN)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            format!("{:?}… ({} bytes)", &text[..cut], text.len())
        }
        (None, Some(encoded)) => format!("base64 {encoded:?}"),
        (None, None) => "(none)".to_owned(),
    }
}

/// How `spec` is injected, the secret written as `{{secret:<handle>}}`.
fn placeholder(spec: &CredentialSpec) -> String {
    let secret = format!("{{{{secret:{}}}}}", spec.handle);
    match &spec.injection {
        Injection::Header { name, prefix } => {
            format!("header {name}: {}{secret}", prefix.as_deref().unwrap_or(""))
        }
        Injection::Query { name } => format!("query {name}={secret}"),
        Injection::PathPlaceholder { placeholder } => format!("path {{{placeholder}}} = {secret}"),
        Injection::Basic { username } => format!("basic {username}:{secret}"),
        other => format!("{other:?} with {secret}"),
    }
}
