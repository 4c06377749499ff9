//! Which request headers a guest may set.

/// Headers a guest may never set: the host owns them, or they carry credentials.
const FORBIDDEN: &[&str] = &[
    "host",
    "authorization",
    "proxy-authorization",
    "cookie",
    "cookie2",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
    "x-amz-security-token",
    "x-goog-api-key",
    "private-token",
    "x-vault-token",
    "x-csrf-token",
    "x-xsrf-token",
    // Hop-by-hop and framing headers the host controls.
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "content-length",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-real-ip",
    // The host reads bodies uncompressed and whole, so it can redact them.
    "accept-encoding",
    "range",
    "if-range",
];

/// Substrings that mark a header as credential-bearing.
const SENSITIVE_PARTS: &[&str] = &[
    "auth", "token", "secret", "api-key", "apikey", "password", "session", "cookie",
];

/// Whether a guest may set header `name` (lowercase). `extra` holds the
/// injection header names of the capability's credentials.
pub(crate) fn guest_may_set(name: &str, extra: &[&str]) -> bool {
    !(FORBIDDEN.contains(&name)
        || extra.contains(&name)
        || name.starts_with("proxy-")
        || name.starts_with(':')
        || SENSITIVE_PARTS.iter().any(|part| name.contains(part)))
}

/// Response headers removed before the guest sees a response.
const STRIPPED_RESPONSE: &[&str] = &[
    "set-cookie",
    "set-cookie2",
    "www-authenticate",
    "proxy-authenticate",
    "authentication-info",
    "proxy-authentication-info",
    "authorization",
    "proxy-authorization",
    "cookie",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "alt-svc",
];

/// Whether response header `name` (lowercase) reaches the guest.
pub(crate) fn guest_may_see(name: &str, extra: &[&str]) -> bool {
    !(STRIPPED_RESPONSE.contains(&name) || extra.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_forbidden() {
        for name in [
            "authorization",
            "host",
            "cookie",
            "x-api-key",
            "x-my-token",
            "x-github-auth",
            "proxy-foo",
        ] {
            assert!(!guest_may_set(name, &[]), "{name}");
        }
        assert!(!guest_may_set("x-custom-key", &["x-custom-key"]));
        for name in [
            "accept",
            "user-agent",
            "content-type",
            "x-github-api-version",
        ] {
            assert!(guest_may_set(name, &[]), "{name}");
        }
    }

    #[test]
    fn sensitive_response_headers_are_stripped() {
        assert!(!guest_may_see("set-cookie", &[]));
        assert!(!guest_may_see("www-authenticate", &[]));
        assert!(guest_may_see("content-type", &[]));
    }
}
