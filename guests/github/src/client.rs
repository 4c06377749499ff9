//! The one place that talks to the host: acquire the credential handle and
//! send the planned request through host egress. The guest never sees the
//! token; the host injects `authorization: Bearer ...` for `api.github.com`.

use std::time::Duration;

use warden_guest::http::{Request, Response};
use warden_guest::{Failure, credential};

use crate::errors::{provider_failure, sanitize_egress};
use crate::ops::Plan;

/// The credential handle every tool of the package declares.
pub(crate) const CREDENTIAL: &str = "github_runtime_token";
/// GitHub's REST API version this tool is written against.
pub(crate) const API_VERSION: &str = "2022-11-28";
/// GitHub requires a user agent on every request.
pub(crate) const USER_AGENT: &str = concat!("warden-github/", env!("CARGO_PKG_VERSION"));
/// Upper bound per request; the host caps it by the call's deadline.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Send `plan` and return the 2xx response, or a sanitized failure.
pub(crate) fn send(plan: &Plan) -> Result<Response, Failure> {
    let token = credential::acquire(CREDENTIAL)?;
    let mut request = Request::new(plan.method.as_str(), plan.url.as_str())
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", API_VERSION)
        .header("user-agent", USER_AGENT)
        .timeout(TIMEOUT)
        .credential(&token);
    if let Some(body) = &plan.body {
        request = request.json(body)?;
    }
    let response = request.send().map_err(sanitize_egress)?;
    if response.is_success() {
        Ok(response)
    } else {
        Err(provider_failure(&response))
    }
}
