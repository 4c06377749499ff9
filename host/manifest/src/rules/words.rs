//! Small checks on words, ids, hosts and URLs shared by the rules.

use std::str::FromStr;

use crate::diag::{Code, Sink};
use crate::span::L;

/// Why an extension id or a capability name is refused, if it is.
pub(crate) fn id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("is empty")
    } else if id.len() > 128 {
        Some("is longer than 128 characters")
    } else if id.contains('/') || id.contains('\\') {
        Some("contains a slash")
    } else if id.bytes().any(|b| b.is_ascii_uppercase()) {
        Some("contains uppercase letters")
    } else if id.contains("..") {
        Some("contains `..`")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.'))
    {
        Some("contains characters other than lowercase ASCII letters, digits, `_`, `-` and `.`")
    } else if !id.as_bytes()[0].is_ascii_alphanumeric() || id.ends_with('.') {
        Some("must start with a letter or digit and not end with `.`")
    } else {
        None
    }
}

/// Whether `name` is a handle, vendor or namespace name (`[a-z0-9_-]+`, starting alphanumeric).
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

/// Whether `host` is a literal lowercase DNS name (no wildcard, port, path or userinfo).
pub(crate) fn is_literal_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// Parse a closed-vocabulary word, recording an error when it is unknown.
pub(crate) fn word<T: FromStr<Err = warden_core::UnknownWord>>(
    sink: &mut Sink<'_>,
    value: &L<String>,
) -> Option<T> {
    match value.v.parse() {
        Ok(w) => Some(w),
        Err(e) => {
            let e: warden_core::UnknownWord = e;
            sink.error(
                Code::UnknownValue,
                &value.at,
                format!("unknown {} `{}`", e.kind, e.word),
            )
            .help(format!("use one of: {}", e.expected.trim_end()));
            None
        }
    }
}

/// Why `raw` is not an acceptable HTTPS endpoint (no userinfo or fragment;
/// `allow_query` for authorization endpoints), with the parsed URL otherwise.
pub(crate) fn https_url(raw: &str, allow_query: bool) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("`{raw}` is not a URL ({e})"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "`{raw}` uses `{}`; only https is accepted",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("`{raw}` contains userinfo"));
    }
    if url.fragment().is_some() {
        return Err(format!("`{raw}` contains a fragment"));
    }
    if !allow_query && url.query().is_some() {
        return Err(format!("`{raw}` contains a query string"));
    }
    match url.host() {
        Some(url::Host::Domain(d)) if is_literal_host(d) => Ok(url),
        Some(url::Host::Domain(_)) | None => Err(format!("`{raw}` has no literal host")),
        Some(_) => Err(format!("`{raw}` uses an IP address; use a host name")),
    }
}

/// Whether `text` is a version `MAJOR.MINOR.PATCH` with optional `-pre` / `+build`.
pub(crate) fn is_semver(text: &str) -> bool {
    let core = text.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<_> = core.split('.').collect();
    let rest_ok = text[core.len()..]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && rest_ok
}

/// Whether `pointer` is an RFC 6901 JSON pointer (`""` or `/a/b`, `~` only as `~0`/`~1`).
pub(crate) fn is_json_pointer(pointer: &str) -> bool {
    if pointer.is_empty() {
        return true;
    }
    if !pointer.starts_with('/') {
        return false;
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(id_problem("example"), None);
        assert_eq!(id_problem("google-drive.v2_x"), None);
        assert!(id_problem("Example").is_some());
        assert!(id_problem("a/b").is_some());
        assert!(id_problem("a..b").is_some());
        assert!(id_problem(".a").is_some());
        assert!(id_problem("a b").is_some());
    }

    #[test]
    fn hosts_and_urls() {
        assert!(is_literal_host("api.github.com"));
        assert!(!is_literal_host("*.github.com"));
        assert!(!is_literal_host("API.github.com"));
        assert!(!is_literal_host("api.github.com:443"));
        assert!(https_url("https://mcp.notion.com/mcp", false).is_ok());
        assert!(https_url("http://mcp.notion.com/mcp", false).is_err());
        assert!(https_url("https://u:p@mcp.notion.com/", false).is_err());
        assert!(https_url("https://mcp.notion.com/?a=b", false).is_err());
        assert!(https_url("https://mcp.notion.com/?a=b", true).is_ok());
        assert!(https_url("https://mcp.notion.com/#x", true).is_err());
        assert!(https_url("https://127.0.0.1/", true).is_err());
    }

    #[test]
    fn versions_and_pointers() {
        assert!(is_semver("0.1.0"));
        assert!(is_semver("1.2.3-beta.1+b5"));
        assert!(!is_semver("1.2"));
        assert!(!is_semver("v1.2.3"));
        assert!(is_json_pointer("/access_token"));
        assert!(is_json_pointer("/a~1b/c~0"));
        assert!(!is_json_pointer("access_token"));
        assert!(!is_json_pointer("/a~2"));
    }
}
