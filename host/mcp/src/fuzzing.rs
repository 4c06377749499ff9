//! What the fuzz targets of `tests/fuzz` call: the stdio line framing and
//! parsing, the guards on a message (depth, top-level id, error answer),
//! the HTTP session choice, and the request authentication. Not an API: it
//! exists only with the `fuzzing` feature.

use hyper::HeaderMap;
use rmcp::{RoleServer, service::RxJsonRpcMessage};

use crate::guard::{self, Refusal};
use crate::{Caller, HttpAuth, JwtAuth};

/// Deepest nesting a message may have.
pub const MAX_DEPTH: usize = guard::MAX_DEPTH;

/// One stdio line without its `\n`, a `\r` before it and a byte order mark.
pub fn trimmed(line: &[u8]) -> &[u8] {
    crate::lines::trimmed(line)
}

/// A line (already trimmed) as the server reads it.
pub fn message(line: &[u8]) -> serde_json::Result<RxJsonRpcMessage<RoleServer>> {
    crate::parse::message(line)
}

/// Whether `bytes` nests arrays and objects deeper than `max`.
pub fn too_deep(bytes: &[u8], max: usize) -> bool {
    guard::too_deep(bytes, max)
}

/// The top-level `"id"` found by the guard's scan.
pub fn top_level_id(bytes: &[u8]) -> Option<serde_json::Value> {
    guard::top_level_id(bytes)
}

/// The error answers for a refused message, one per refusal (too large,
/// unparsable, not a request), when its id is found.
pub fn error_responses(bytes: &[u8]) -> [Option<Vec<u8>>; 3] {
    [Refusal::TooLarge, Refusal::Unparsable, Refusal::NotARequest]
        .map(|refusal| guard::error_response(bytes, refusal))
}

/// Whether a POST body asks for a stateful session.
pub fn initializes_with_elicitation(body: &[u8]) -> bool {
    crate::http::services::initializes_with_elicitation(body)
}

/// The caller of a request with `headers` at `now`, or the status refusing
/// it with its `WWW-Authenticate` challenge.
pub fn authenticate(
    auth: &HttpAuth,
    headers: &HeaderMap,
    now: i64,
) -> Result<Caller, (u16, String)> {
    auth.authenticate(headers, now)
        .map_err(|rejection| (rejection.status(), auth.challenge(rejection)))
}

/// The caller a JWT stands for at `now`, or the status refusing it.
pub fn verify_jwt(jwt: &JwtAuth, token: &[u8], now: i64) -> Result<Caller, u16> {
    jwt.verify(token, now)
        .map_err(|rejection| rejection.status())
}
