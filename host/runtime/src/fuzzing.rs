//! What the fuzz targets of `tests/fuzz` call: the `near:agent`
//! `headers-json` handling of [`crate::compat::http`], in both directions.
//! Not an API: it exists only with the `fuzzing` feature.

use warden_core::net::GuestResponse;

/// A guest's `headers-json` as (name, value) pairs, or why it is refused.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    crate::compat::http::parse_headers(text)
}

/// Substrings of response header names the guest never sees.
pub const HIDDEN_RESPONSE_PARTS: &[&str] = crate::compat::http::HIDDEN_RESPONSE_PARTS;

/// The first query parameter of `url` named like a credential.
pub fn denied_query(url: &str) -> Option<String> {
    crate::compat::http::denied_query(url)
}

/// The `headers-json` a guest is given for a response with `headers`.
pub fn response_headers_json(headers: Vec<(String, String)>) -> String {
    crate::compat::http::to_response(GuestResponse {
        status: 200,
        headers,
        body: Vec::new(),
    })
    .headers_json
}
