//! Stable, sanitized failures. Nothing the provider or the host egress layer
//! wrote reaches the model: only a kind, a code from a fixed set, and a
//! message written here.
//!
//! | provider answer                          | kind            | code                 |
//! |------------------------------------------|-----------------|----------------------|
//! | 401                                      | auth-required   | `unauthorized`       |
//! | 403 naming OAuth scopes the token lacks  | auth-required   | `insufficient_scope` |
//! | 403/429 rate limit                       | client          | `rate_limited`       |
//! | 403 otherwise                            | client          | `forbidden`          |
//! | 404                                      | client          | `not_found`          |
//! | 409 / 410                                | client          | `conflict` / `gone`  |
//! | 422                                      | client          | `validation_failed`  |
//! | other 4xx                                | client          | `bad_request`        |
//! | 5xx                                      | operation-failed| `upstream_error`     |

use warden_guest::http::{Response, status_failure};
use warden_guest::{Failure, FailureKind};

/// The failure for a non-2xx GitHub answer. The body is never read.
pub(crate) fn provider_failure(response: &Response) -> Failure {
    if response.status == 403 && lacks_scope(response) {
        return Failure::auth_required(
            "insufficient_scope",
            "the connected GitHub account's token lacks a scope this tool needs; reconnect it with the scopes the tool declares",
        );
    }
    let mut failure = status_failure(response);
    let message = match failure.code.as_str() {
        "unauthorized" => {
            "GitHub refused the credential (missing, expired or revoked); reconnect the GitHub account"
        }
        "rate_limited" => {
            "GitHub rate limit reached; wait before retrying and avoid repeating the same call"
        }
        "forbidden" => "GitHub refused access to this resource for the connected account",
        "not_found" => {
            "not found: check owner, repo, number, path and ref (private resources also answer not found without access)"
        }
        "conflict" => "GitHub reported a conflict with the current state of the resource",
        "gone" => "the resource is gone (for example, issues are disabled on this repository)",
        "validation_failed" => {
            "GitHub rejected the request fields (for example an unknown label, assignee or milestone)"
        }
        "bad_request" => "GitHub rejected the request",
        _ => "GitHub failed to process the request; retry later",
    };
    failure.message = Some(format!("{message} (HTTP {})", response.status));
    failure
}

/// GitHub names the scopes an endpoint accepts in `x-accepted-oauth-scopes`
/// and the token's scopes in `x-oauth-scopes`; a 403 where none of the first
/// is among the second is a scope problem the user fixes by reconnecting.
fn lacks_scope(response: &Response) -> bool {
    let split = |v: &str| {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (Some(accepted), Some(granted)) = (
        response.header("x-accepted-oauth-scopes"),
        response.header("x-oauth-scopes"),
    ) else {
        return false;
    };
    let accepted = split(accepted);
    let granted = split(granted);
    !accepted.is_empty() && !accepted.iter().any(|scope| granted.contains(scope))
}

/// Replace whatever the egress layer said with a fixed message for its code:
/// host policy text, addresses and TLS details stay in the host's log.
pub(crate) fn sanitize_egress(failure: Failure) -> Failure {
    let message = match failure.code.as_str() {
        "network_denied" => "the host's network policy refused the request to GitHub",
        "upstream_timeout" => "GitHub did not answer in time; retry later",
        "body_too_large" => {
            "the GitHub response exceeded the host's size limit; narrow the request (smaller per_page)"
        }
        "connection_failed" => "could not connect to GitHub",
        "egress_limit" => "this call used up its allowance of network requests",
        "invalid_request" => "the tool built a request the host refused",
        _ => "the request to GitHub failed",
    };
    let kind = match failure.kind {
        FailureKind::NetworkDenied => FailureKind::NetworkDenied,
        FailureKind::OutputTooLarge => FailureKind::OutputTooLarge,
        FailureKind::Executor => FailureKind::Executor,
        _ => FailureKind::OperationFailed,
    };
    Failure::new(kind, failure.code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_guest::http::HttpError;

    fn response(status: u16, headers: &[(&str, &str)]) -> Response {
        Response {
            status,
            headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
            body: br#"{"message":"Bad credentials for token ghp_SECRET at 10.0.0.7","documentation_url":"x"}"#.to_vec(),
        }
    }

    fn assert_clean(failure: &Failure) {
        let message = failure.message.as_deref().unwrap_or_default();
        for leak in [
            "ghp_SECRET",
            "10.0.0.7",
            "Bad credentials",
            "documentation_url",
        ] {
            assert!(!message.contains(leak), "{message}");
        }
    }

    #[test]
    fn statuses_map_to_stable_codes_without_the_body() {
        type Case = (
            u16,
            &'static [(&'static str, &'static str)],
            FailureKind,
            &'static str,
        );
        let cases: &[Case] = &[
            (401, &[], FailureKind::AuthRequired, "unauthorized"),
            (404, &[], FailureKind::Client, "not_found"),
            (422, &[], FailureKind::Client, "validation_failed"),
            (429, &[], FailureKind::Client, "rate_limited"),
            (
                403,
                &[("x-ratelimit-remaining", "0")],
                FailureKind::Client,
                "rate_limited",
            ),
            (
                403,
                &[("retry-after", "60")],
                FailureKind::Client,
                "rate_limited",
            ),
            (403, &[], FailureKind::Client, "forbidden"),
            (
                403,
                &[
                    ("x-accepted-oauth-scopes", "repo"),
                    ("x-oauth-scopes", "read:org"),
                ],
                FailureKind::AuthRequired,
                "insufficient_scope",
            ),
            (
                403,
                &[
                    ("x-accepted-oauth-scopes", "repo, public_repo"),
                    ("x-oauth-scopes", "public_repo"),
                ],
                FailureKind::Client,
                "forbidden",
            ),
            (410, &[], FailureKind::Client, "gone"),
            (400, &[], FailureKind::Client, "bad_request"),
            (502, &[], FailureKind::OperationFailed, "upstream_error"),
        ];
        for (status, headers, kind, code) in cases {
            let failure = provider_failure(&response(*status, headers));
            assert_eq!(
                (failure.kind, failure.code.as_str()),
                (*kind, *code),
                "HTTP {status}"
            );
            assert_clean(&failure);
        }
    }

    #[test]
    fn sanitizes_host_egress_errors_without_leaking_details() {
        let errors = [
            HttpError::Denied(
                "host 10.0.0.7 resolves to a private address; token ghp_SECRET".into(),
            ),
            HttpError::ConnectionFailed("tls: Bad credentials 10.0.0.7".into()),
            HttpError::InvalidRequest("header ghp_SECRET".into()),
            HttpError::LimitExceeded("10.0.0.7".into()),
            HttpError::Timeout,
            HttpError::TooLarge,
        ];
        let expected = [
            (FailureKind::NetworkDenied, "network_denied"),
            (FailureKind::OperationFailed, "connection_failed"),
            (FailureKind::Executor, "invalid_request"),
            (FailureKind::OperationFailed, "egress_limit"),
            (FailureKind::OperationFailed, "upstream_timeout"),
            (FailureKind::OutputTooLarge, "body_too_large"),
        ];
        for (error, (kind, code)) in errors.into_iter().zip(expected) {
            let failure = sanitize_egress(Failure::from(error));
            assert_eq!((failure.kind, failure.code.as_str()), (kind, code));
            assert_clean(&failure);
        }
    }
}
