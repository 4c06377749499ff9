//! `warden:tool/http`: counted, capped, deadline-bounded calls to [`CallNetwork::send`].
//!
//! [`CallNetwork::send`]: warden_core::net::CallNetwork::send

use std::time::{Duration, Instant};

use warden_core::net::{GuestRequest, GuestResponse, HttpError};
use wasmtime::component::Resource;

use crate::bindings::warden::tool::http as wit;
use crate::host::credential::Handle;
use crate::state::{CallState, redact_bounded};

/// Bytes kept of a denial reason.
const MAX_REASON_BYTES: usize = 512;

impl wit::Host for CallState {
    async fn send(
        &mut self,
        request: wit::Request,
        credential: Option<Resource<Handle>>,
    ) -> wasmtime::Result<Result<wit::Response, wit::HttpError>> {
        self.http.requests = self.http.requests.saturating_add(1);
        if self.http.requests > self.limits.max_http_requests {
            self.http.limit_hit = true;
            return Ok(Err(wit::HttpError::LimitExceeded(format!(
                "this call may send at most {} HTTP requests",
                self.limits.max_http_requests
            ))));
        }
        let credential = match &credential {
            Some(handle) => Some(self.table.get(handle)?.name.clone()),
            None => None,
        };
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Ok(Err(wit::HttpError::Timeout));
        }
        let timeout = request.timeout_ms.map_or(remaining, |ms| {
            Duration::from_millis(ms.into()).min(remaining)
        });
        let request = GuestRequest {
            method: request.method,
            url: request.url,
            headers: request
                .headers
                .into_iter()
                .map(|h| (h.name, h.value))
                .collect(),
            body: request.body,
            timeout: Some(timeout),
        };
        self.http.bytes_sent = self.http.bytes_sent.saturating_add(request_bytes(&request));
        let network = self.network.clone();
        let sent = tokio::time::timeout(
            timeout,
            network.send(request, credential.as_deref(), timeout),
        )
        .await;
        let response = match sent {
            Err(_elapsed) => return Ok(Err(wit::HttpError::Timeout)),
            Ok(Err(error)) => return Ok(Err(self.wit_error(error))),
            Ok(Ok(response)) => response,
        };
        self.http.bytes_received = self
            .http
            .bytes_received
            .saturating_add(response_bytes(&response));
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

impl CallState {
    fn wit_error(&mut self, error: HttpError) -> wit::HttpError {
        match error {
            HttpError::Denied(why) => {
                let (why, _) = redact_bounded(self.network.as_ref(), &why, MAX_REASON_BYTES);
                self.denied = Some(why.clone());
                wit::HttpError::Denied(why)
            }
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
