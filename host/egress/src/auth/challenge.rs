//! The `WWW-Authenticate: Bearer …` challenge of a protected resource
//! (RFC 6750 §3, RFC 9728 §5.1): where its metadata is, which scope it
//! wants, and why it refused (`insufficient_scope` asks for a step-up).

/// The parameters of a Bearer challenge Warden acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: the protected-resource metadata URL.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the resource asks for, split on spaces.
    pub scopes: Vec<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub error: Option<String>,
}

impl BearerChallenge {
    /// Parse the value of a `WWW-Authenticate` header; `None` when it holds
    /// no Bearer challenge. Quoted values may contain commas and escapes.
    pub fn parse(header: &str) -> Option<Self> {
        let start = find_scheme(header, "bearer")?;
        let mut rest = header[start + "bearer".len()..].trim_start();
        let mut challenge = BearerChallenge::default();
        while let Some((name, value, tail)) = param(rest) {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => {
                    challenge.scopes = value
                        .split(' ')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                }
                "error" => challenge.error = Some(value),
                _ => {}
            }
            rest = tail.trim_start().trim_start_matches(',').trim_start();
        }
        Some(challenge)
    }

    /// Whether the resource refused for a missing scope (step up).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Where the `scheme` token starts (case-insensitive, at a challenge boundary).
fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme).map(|i| i + from) {
        let before = lower[..i].trim_end();
        let after = lower[i + scheme.len()..].chars().next();
        let boundary = before.is_empty() || before.ends_with(',');
        if boundary && after.is_none_or(|c| c == ' ' || c == ',') {
            return Some(i);
        }
        from = i + scheme.len();
    }
    None
}

/// One `name=value` or `name="quoted"` parameter and what follows it.
fn param(text: &str) -> Option<(String, String, &str)> {
    let eq = text.find('=')?;
    let name = text[..eq].trim();
    if name.is_empty() || name.contains([' ', ',']) {
        return None;
    }
    let rest = &text[eq + 1..];
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                '"' => return Some((name.to_owned(), value, &quoted[i + 1..])),
                c => value.push(c),
            }
        }
        None
    } else {
        let end = rest.find(',').unwrap_or(rest.len());
        Some((name.to_owned(), rest[..end].trim().to_owned(), &rest[end..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_resource_metadata_scope_and_error() {
        let header = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#;
        let challenge = BearerChallenge::parse(header).unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.scopes, ["files:read", "files:write"]);
        assert!(challenge.insufficient_scope());
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_refuses_none() {
        let header = r#"Basic realm="x, y", Bearer resource_metadata=https://a.example/m"#;
        let challenge = BearerChallenge::parse(header).unwrap();
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/m")
        );
        assert!(challenge.scopes.is_empty());
        assert_eq!(BearerChallenge::parse(r#"Basic realm="bearer""#), None);
    }
}
