//! GitHub API URLs built from validated parts. Every path segment and query
//! value is percent-encoded here, so no input can add a segment, a query
//! parameter or a fragment.

/// The one host this tool talks to (the credential's audience).
pub(crate) const API_BASE: &str = "https://api.github.com";

/// Percent-encode everything except RFC 3986 unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`). `/` is encoded too, so one call is one segment.
pub(crate) fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// A URL under [`API_BASE`] assembled from segments and query pairs.
#[derive(Debug, Default)]
pub(crate) struct ApiUrl {
    path: String,
    query: Vec<(&'static str, String)>,
}

impl ApiUrl {
    /// An empty path (`https://api.github.com`).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A fixed path segment (`repos`, `issues`); encoded like any other.
    pub(crate) fn segment(mut self, segment: &str) -> Self {
        self.path.push('/');
        self.path.push_str(&encode(segment));
        self
    }

    /// A validated `/`-separated file path, each segment encoded on its own.
    pub(crate) fn file_path(mut self, path: &str) -> Self {
        for segment in path.split('/') {
            self = self.segment(segment);
        }
        self
    }

    /// `/repos/{owner}/{repo}`.
    pub(crate) fn repo(owner: &str, repo: &str) -> Self {
        Self::new().segment("repos").segment(owner).segment(repo)
    }

    /// Append `name=value` (value encoded).
    pub(crate) fn query(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.query.push((name, value.into()));
        self
    }

    /// Append `name=value` when `value` is given.
    pub(crate) fn query_opt(self, name: &'static str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(value) => self.query(name, value),
            None => self,
        }
    }

    /// The absolute URL.
    pub(crate) fn build(&self) -> String {
        let mut url = String::from(API_BASE);
        url.push_str(&self.path);
        for (i, (name, value)) in self.query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(name);
            url.push('=');
            url.push_str(&encode(value));
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_keeps_unreserved_and_escapes_the_rest() {
        assert_eq!(encode("AZaz09-._~"), "AZaz09-._~");
        assert_eq!(encode("a b/c?d#e&f=g%"), "a%20b%2Fc%3Fd%23e%26f%3Dg%25");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn file_paths_are_encoded_per_segment() {
        let url = ApiUrl::repo("o", "r")
            .segment("contents")
            .file_path("docs/a b/c#1.md")
            .query("ref", "feature/x");
        assert_eq!(
            url.build(),
            "https://api.github.com/repos/o/r/contents/docs/a%20b/c%231.md?ref=feature%2Fx"
        );
    }

    #[test]
    fn query_values_cannot_inject_parameters() {
        let url = ApiUrl::new()
            .segment("search")
            .segment("issues")
            .query("q", "is:issue a&per_page=1000#x")
            .query("page", "2");
        assert_eq!(
            url.build(),
            "https://api.github.com/search/issues?q=is%3Aissue%20a%26per_page%3D1000%23x&page=2"
        );
        assert_eq!(
            ApiUrl::new().query_opt("a", None::<String>).build(),
            "https://api.github.com"
        );
    }
}
