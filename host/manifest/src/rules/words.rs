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

/// Why a capability id is refused, if it is: at least two `.`-separated
/// segments, each starting with `a-z0-9` and using only `a-z 0-9 _ -`.
pub(crate) fn capability_problem(id: &str) -> Option<&'static str> {
    if let Some(problem) = id_problem(id) {
        return Some(problem);
    }
    let segments: Vec<_> = id.split('.').collect();
    if segments.len() < 2 {
        Some("has fewer than two `.`-separated segments")
    } else if segments
        .iter()
        .any(|s| !s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric))
    {
        Some("has a segment that does not start with a letter or digit")
    } else {
        None
    }
}

/// Whether `name` is a name segment (extension id, vendor, handle): 1-128
/// bytes of `a-z 0-9 _ - .`, starting with `a-z0-9`, no `..`, not ending with `.`.
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && !name.contains("..")
        && !name.ends_with('.')
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        })
}

/// Whether `host` is a literal host of the format: 1-253 bytes of ASCII
/// alphanumerics, `.`, `-`, `_` (any case), no leading or trailing `.`, no `..`.
pub(crate) fn is_literal_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && !host.starts_with('.')
        && !host.ends_with('.')
        && !host.contains("..")
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// Whether `pattern` is a host pattern: `*`, or an optional `*.` then a literal host.
pub(crate) fn is_host_pattern(pattern: &str) -> bool {
    pattern == "*"
        || (pattern.len() <= 253 && is_literal_host(pattern.strip_prefix("*.").unwrap_or(pattern)))
}

/// Why `text` is refused for holding a control character, if it is (`\n`
/// and `\t` are text; `\r` only right before `\n` when `multiline`).
pub(crate) fn control_problem(text: &str, multiline: bool) -> Option<String> {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let allowed = match c {
            '\n' | '\t' => multiline,
            '\r' => multiline && chars.peek() == Some(&'\n'),
            c => {
                !c.is_control()
                    && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            }
        };
        if !allowed {
            return Some(format!("U+{:04X}", c as u32));
        }
    }
    None
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

/// Why `raw` is not an HTTPS endpoint of the format (literal `https://`, a
/// non-empty authority without `@` or `*`, no `#` or whitespace; queries,
/// ports, IP addresses and upper case are allowed), with the parsed URL otherwise.
pub fn https_url(raw: &str) -> Result<url::Url, String> {
    let Some(rest) = raw.strip_prefix("https://") else {
        return Err(format!("`{raw}` does not start with `https://`"));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.is_empty() {
        return Err(format!("`{raw}` has no host"));
    }
    if authority.contains('@') {
        return Err(format!("`{raw}` contains userinfo"));
    }
    if authority.contains('*') {
        return Err(format!("`{raw}` contains a wildcard host"));
    }
    if raw.contains('#') {
        return Err(format!("`{raw}` contains a fragment"));
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{raw}` contains whitespace"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("`{raw}` is not a URL ({e})"))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{raw}` has no host"));
    }
    Ok(url)
}

/// Why `pointer` is not a bounded JSON pointer (non-empty, starts with `/`,
/// at most 8 tokens, none empty or containing `*`, `~` only as `~0`/`~1`).
pub(crate) fn pointer_problem(pointer: &str) -> Option<&'static str> {
    let Some(rest) = pointer.strip_prefix('/') else {
        return Some("must start with `/`");
    };
    let tokens: Vec<_> = rest.split('/').collect();
    if tokens.len() > 8 {
        return Some("has more than 8 reference tokens");
    }
    if tokens.iter().any(|t| t.is_empty()) {
        return Some("has an empty reference token");
    }
    if pointer.contains('*') {
        return Some("contains `*`");
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Some("uses `~` other than `~0` or `~1`");
        }
    }
    None
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
        assert!(is_name("mem0.local.memory"));
        assert!(!is_name("a.") && !is_name("-a") && !is_name("a..b"));
    }

    #[test]
    fn hosts_and_urls() {
        assert!(is_literal_host("api.github.com"));
        assert!(is_literal_host("API.git_hub.com"));
        assert!(!is_literal_host("*.github.com"));
        assert!(!is_literal_host("api.github.com:443"));
        assert!(is_host_pattern("*") && is_host_pattern("*.example.com"));
        assert!(!is_host_pattern("a.*.com"));
        assert!(https_url("https://mcp.notion.com/mcp").is_ok());
        assert!(https_url("https://mcp.notion.com/?a=b").is_ok());
        assert!(https_url("https://127.0.0.1:8443/x").is_ok());
        assert!(https_url("http://mcp.notion.com/mcp").is_err());
        assert!(https_url("https://u:p@mcp.notion.com/").is_err());
        assert!(https_url("https://mcp.notion.com/#x").is_err());
        assert!(https_url("https://*.notion.com/").is_err());
        assert!(https_url("https:///x").is_err());
    }

    #[test]
    fn pointers_and_controls() {
        assert_eq!(pointer_problem("/access_token"), None);
        assert_eq!(pointer_problem("/a~1b/c~0"), None);
        for bad in [
            "",
            "access_token",
            "/a~2",
            "/a//b",
            "/*",
            "/1/2/3/4/5/6/7/8/9",
        ] {
            assert!(pointer_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(control_problem("a\nb\tc\r\n", true), None);
        assert!(control_problem("a\nb", false).is_some());
        assert!(control_problem("a\u{1b}[2J", true).is_some());
        assert!(control_problem("a\rb", true).is_some());
        assert!(control_problem("a\u{202e}b", true).is_some());
    }
}
