//! `warden:tool/http`: counted, capped, deadline-bounded calls to
//! [`CallNetwork::send`]; once the caller cancels the call, nothing more
//! is sent (a request in flight is abandoned).
//!
//! [`CallNetwork::send`]: warden_core::net::CallNetwork::send

use std::time::Instant;

use warden_core::net::{GuestRequest, GuestResponse, HttpError};

use crate::state::{CallState, redact_bounded};

/// Bytes kept of a denial reason.
const MAX_REASON_BYTES: usize = 512;

/// Why a request was not answered, before it is put in a version's words.
pub(crate) enum Unsent {
    /// The network or the call's limits refused or failed it.
    Failed(HttpError),
    /// The request's timeout (or the call's deadline) passed.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
}

impl CallState {
    /// Send one guest request: counted against the call's cap, bounded by
    /// its deadline and by the request's own timeout, abandoned when the
    /// call is cancelled.
    pub(crate) async fn send_guest_request(
        &mut self,
        request: GuestRequest,
        credential: Option<String>,
    ) -> Result<GuestResponse, Unsent> {
        if self.cancelled() {
            return Err(Unsent::Cancelled);
        }
        self.http.requests = self.http.requests.saturating_add(1);
        if self.http.requests > self.limits.max_http_requests {
            self.http.limit_hit = true;
            return Err(Unsent::Failed(HttpError::LimitExceeded(format!(
                "this call may send at most {} HTTP requests",
                self.limits.max_http_requests
            ))));
        }
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Unsent::Timeout);
        }
        let timeout = request.timeout.map_or(remaining, |t| t.min(remaining));
        let request = GuestRequest {
            timeout: Some(timeout),
            ..request
        };
        self.http.bytes_sent = self.http.bytes_sent.saturating_add(request_bytes(&request));
        let network = self.network.clone();
        let cancel = self.cancel.clone();
        let sent = tokio::time::timeout(
            timeout,
            network.send(request, credential.as_deref(), timeout),
        );
        let sent = tokio::select! {
            sent = sent => sent,
            () = crate::state::cancelled(cancel.as_ref()) => return Err(Unsent::Cancelled),
        };
        let response = match sent {
            Err(_elapsed) => return Err(Unsent::Timeout),
            Ok(Err(error)) => return Err(Unsent::Failed(self.note_denial(error))),
            Ok(Ok(response)) => response,
        };
        self.http.bytes_received = self
            .http
            .bytes_received
            .saturating_add(response_bytes(&response));
        Ok(response)
    }

    /// `error`, with a denial's reason redacted, bounded and kept for the
    /// call's failure message.
    fn note_denial(&mut self, error: HttpError) -> HttpError {
        match error {
            HttpError::Denied(why) => {
                let (why, _) = redact_bounded(self.network.as_ref(), &why, MAX_REASON_BYTES);
                self.denied = Some(why.clone());
                HttpError::Denied(why)
            }
            other => other,
        }
    }
}

/// `http` of one contract version; `$cancelled` is its answer for a
/// cancelled call.
macro_rules! http_host {
    ($version:ident, $cancelled:expr) => {
        mod $version {
            use std::time::Duration;

            use warden_core::net::{GuestRequest, HttpError};
            use wasmtime::component::Resource;

            use super::Unsent;
            use crate::bindings::$version::warden::tool::http as wit;
            use crate::host::credential::Handle;
            use crate::state::CallState;

            impl wit::Host for CallState {
                async fn send(
                    &mut self,
                    request: wit::Request,
                    credential: Option<Resource<Handle>>,
                ) -> wasmtime::Result<Result<wit::Response, wit::HttpError>> {
                    let credential = match &credential {
                        Some(handle) => Some(self.table.get(handle)?.name.clone()),
                        None => None,
                    };
                    let request = GuestRequest {
                        method: request.method,
                        url: request.url,
                        headers: request
                            .headers
                            .into_iter()
                            .map(|h| (h.name, h.value))
                            .collect(),
                        body: request.body,
                        timeout: request
                            .timeout_ms
                            .map(|ms| Duration::from_millis(ms.into())),
                    };
                    let response = match self.send_guest_request(request, credential).await {
                        Ok(response) => response,
                        Err(Unsent::Timeout) => return Ok(Err(wit::HttpError::Timeout)),
                        Err(Unsent::Cancelled) => return Ok(Err($cancelled)),
                        Err(Unsent::Failed(error)) => return Ok(Err(wit_error(error))),
                    };
                    Ok(Ok(wit::Response {
                        status: response.status,
                        headers: response
                            .headers
                            .into_iter()
                            .map(|(name, value)| wit::Header { name, value })
                            .collect(),
                        body: response.body,
                    }))
                }
            }

            fn wit_error(error: HttpError) -> wit::HttpError {
                match error {
                    HttpError::Denied(why) => wit::HttpError::Denied(why),
                    HttpError::InvalidRequest(why) => wit::HttpError::InvalidRequest(why),
                    HttpError::Timeout => wit::HttpError::Timeout,
                    // The WIT's `too-large` is either body's.
                    HttpError::TooLarge | HttpError::RequestTooLarge => wit::HttpError::TooLarge,
                    HttpError::ConnectionFailed(why) => wit::HttpError::ConnectionFailed(why),
                    HttpError::LimitExceeded(why) => wit::HttpError::LimitExceeded(why),
                    other => wit::HttpError::ConnectionFailed(other.to_string()),
                }
            }
        }
    };
}

// A 0.1.0 call is stopped at once when cancelled (it cannot see it), so
// its guest never reads this answer.
http_host!(
    v0_1,
    wit::HttpError::ConnectionFailed("the call was cancelled".to_owned())
);
http_host!(v0_2, wit::HttpError::Cancelled);

pub(crate) fn request_bytes(request: &GuestRequest) -> u64 {
    let headers: usize = request.headers.iter().map(|(n, v)| n.len() + v.len()).sum();
    (request.url.len() + headers + request.body.as_ref().map_or(0, Vec::len)) as u64
}

pub(crate) fn response_bytes(response: &GuestResponse) -> u64 {
    let headers: usize = response
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len())
        .sum();
    (headers + response.body.len()) as u64
}
