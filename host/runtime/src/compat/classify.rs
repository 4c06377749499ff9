//! `near:agent/tool.guest-failure` → [`RuntimeError`], the kinds of
//! Warden's own world.
//!
//! | `error-kind` | Warden |
//! |---|---|
//! | `auth-required` | [`RuntimeError::AuthRequired`] with the vendor and scopes of the credential the call's requests matched |
//! | `network-denied` | [`RuntimeError::NetworkDenied`] with the host's own reason when egress refused a request |
//! | `input`, `output-too-large`, `client`, `operation-failed`, `executor` | [`RuntimeError::GuestFailure`] of that [`FailureKind`] |
//!
//! `code` keeps `[A-Za-z0-9_.-]` (at most 64 bytes; the ecosystem's codes
//! are `github_api_error_status_401`, `messaging.rate_limited`, …), is
//! `unspecified` when nothing is left and `redacted_code` when the code as sent
//! holds a staged secret (searched before it is filtered and cut); `message` is redacted and bounded.

use super::bindings::exports::near::agent::tool::{ErrorKind, GuestFailure};
use crate::error::RuntimeError;
use crate::outcome::FailureKind;
use crate::state::{CallState, code_without_secrets, redact_bounded};

/// Bytes kept of a guest failure message.
const MAX_FAILURE_MESSAGE_BYTES: usize = 1024;
/// Bytes kept of a guest failure code.
const MAX_CODE_BYTES: usize = 64;

/// Turn a guest failure into a typed error.
pub(crate) fn failure(failure: GuestFailure, state: &CallState) -> RuntimeError {
    if state.http.limit_hit {
        return RuntimeError::RequestLimit {
            limit: state.limits.max_http_requests,
        };
    }
    let message = failure
        .message
        .map(|m| redact_bounded(state.network.as_ref(), &m, MAX_FAILURE_MESSAGE_BYTES).0)
        .filter(|m| !m.trim().is_empty());
    let kind = match failure.kind {
        ErrorKind::AuthRequired => {
            let needed = state.auth_needed.clone();
            return RuntimeError::AuthRequired {
                vendor: needed.as_ref().map(|n| n.vendor.clone()),
                scopes: needed.map(|n| n.scopes).unwrap_or_default(),
                extension: extension(&state.capability_id).to_owned(),
            };
        }
        ErrorKind::NetworkDenied => {
            let reason = state
                .denied
                .clone()
                .or(message)
                .unwrap_or_else(|| "the host refused a network request of the tool".to_owned());
            return RuntimeError::NetworkDenied { reason };
        }
        ErrorKind::Input => FailureKind::Input,
        ErrorKind::OutputTooLarge => FailureKind::OutputTooLarge,
        ErrorKind::Executor => FailureKind::Executor,
        ErrorKind::Client => FailureKind::Client,
        ErrorKind::OperationFailed => FailureKind::OperationFailed,
    };
    RuntimeError::GuestFailure {
        kind,
        code: code_without_secrets(
            state.network.as_ref(),
            failure.code.as_deref().unwrap_or_default(),
            sanitize_code(failure.code.as_deref()),
        ),
        message,
    }
}

/// The extension part of `<extension>.<name>`.
fn extension(capability_id: &str) -> &str {
    capability_id
        .split_once('.')
        .map_or(capability_id, |(extension, _)| extension)
}

/// `[A-Za-z0-9_.-]` of `code`, at most [`MAX_CODE_BYTES`]; `unspecified` if empty.
fn sanitize_code(code: Option<&str>) -> String {
    let kept: String = code
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .take(MAX_CODE_BYTES)
        .collect();
    if kept.is_empty() {
        "unspecified".to_owned()
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_keep_the_ecosystem_alphabet() {
        assert_eq!(
            sanitize_code(Some("messaging.rate_limited")),
            "messaging.rate_limited"
        );
        assert_eq!(sanitize_code(Some("AuthRequired")), "AuthRequired");
        assert_eq!(sanitize_code(Some("a b\n{c}")), "abc");
        assert_eq!(sanitize_code(Some(&"x".repeat(100))).len(), 64);
        assert_eq!(sanitize_code(None), "unspecified");
    }
}
