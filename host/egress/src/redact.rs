//! Redaction of staged secrets: raw, percent-encoded, base64 (standard and
//! URL-safe, padded or not, at any alignment) and ASCII case-folded forms are
//! replaced by [`REDACTED`].
//!
//! ```
//! use warden_egress::redact::Redactor;
//! let redactor = Redactor::new([b"s3cr3t-t0ken".as_slice()]);
//! assert_eq!(redactor.redact_str("token=S3CR3T-T0KEN"), "token=[REDACTED]");
//! ```

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use zeroize::Zeroizing;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Derived forms shorter than this are not matched (they would redact noise);
/// the raw secret is always matched.
const MIN_DERIVED_LEN: usize = 6;

/// RFC 3986 unreserved characters are kept; everything else is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A path-segment style encoder (keeps sub-delims, as `url` does).
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'%');

/// Finds and replaces the staged secrets of one call.
///
/// The automaton is built once per call; matching is linear in the input.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    automaton: Option<AhoCorasick>,
}

impl Redactor {
    /// A redactor for `secrets` (empty secrets are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut patterns: Vec<Zeroizing<Vec<u8>>> = Vec::new();
        for secret in secrets {
            if !secret.is_empty() {
                patterns.extend(forms(secret));
            }
        }
        patterns.sort_by(|a, b| a.as_slice().cmp(b.as_slice()));
        patterns.dedup_by(|a, b| a.as_slice() == b.as_slice());
        if patterns.is_empty() {
            return Self::default();
        }
        let automaton = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            // Built once per call: a contiguous NFA builds in microseconds and
            // still scans in linear time (a DFA costs far more to build).
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(patterns.iter().map(|p| p.as_slice()))
            .ok();
        Self { automaton }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// Whether `haystack` contains any form of a staged secret.
    pub fn contains(&self, haystack: &[u8]) -> bool {
        self.automaton
            .as_ref()
            .is_some_and(|ac| ac.is_match(haystack))
    }

    /// `bytes` with every form of every staged secret replaced.
    pub fn redact_bytes<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        match &self.automaton {
            Some(ac) if ac.is_match(bytes) => {
                let mut out = Vec::with_capacity(bytes.len());
                ac.replace_all_with_bytes(bytes, &mut out, |_, _, dst| {
                    dst.extend_from_slice(REDACTED.as_bytes());
                    true
                });
                Cow::Owned(out)
            }
            _ => Cow::Borrowed(bytes),
        }
    }

    /// `text` with every form of every staged secret replaced.
    pub fn redact_str(&self, text: &str) -> String {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => text.to_owned(),
            Cow::Owned(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        }
    }
}

/// Every form of `secret` the redactor looks for.
fn forms(secret: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = vec![Zeroizing::new(secret.to_vec())];
    let mut push = |form: Vec<u8>| {
        if form.len() >= MIN_DERIVED_LEN {
            out.push(Zeroizing::new(form));
        }
    };
    if let Ok(text) = std::str::from_utf8(secret) {
        for set in [NON_ALPHANUMERIC, COMPONENT, PATH] {
            push(utf8_percent_encode(text, set).to_string().into_bytes());
        }
        push(
            url::form_urlencoded::byte_serialize(secret)
                .collect::<String>()
                .into_bytes(),
        );
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for form in base64_cores(engine, secret) {
            push(form);
        }
    }
    out
}

/// The base64 characters that depend only on `secret`, for each of the
/// three alignments it can have inside a longer encoded string.
fn base64_cores(engine: &impl base64::Engine, secret: &[u8]) -> Vec<Vec<u8>> {
    (0..3usize)
        .filter_map(|shift| {
            let mut input = Zeroizing::new(vec![0u8; shift]);
            input.extend_from_slice(secret);
            let encoded = Zeroizing::new(engine.encode(input.as_slice()));
            // Leading chars mixing the zero bytes, trailing chars mixing what follows.
            let skip = (shift * 8).div_ceil(6);
            let keep_bits = (shift + secret.len()) * 8;
            let end = keep_bits / 6;
            (end > skip).then(|| encoded.as_bytes()[skip..end].to_vec())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    const SECRET: &str = "ghp_Zx9/Secret+Value=42?";

    fn redactor() -> Redactor {
        Redactor::new([SECRET.as_bytes()])
    }

    #[test]
    fn raw_and_case_folded_forms_are_redacted() {
        let r = redactor();
        assert_eq!(r.redact_str(&format!("a {SECRET} b")), "a [REDACTED] b");
        let upper = SECRET.to_ascii_uppercase();
        assert_eq!(r.redact_str(&upper), REDACTED);
    }

    #[test]
    fn percent_encoded_forms_are_redacted() {
        let r = redactor();
        for set in [NON_ALPHANUMERIC, COMPONENT, PATH] {
            let encoded = utf8_percent_encode(SECRET, set).to_string();
            assert!(!r.redact_str(&encoded).contains("Secret"), "{encoded}");
            let lower = encoded.to_ascii_lowercase();
            assert!(r.contains(lower.as_bytes()));
        }
        let form: String = url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
        assert_eq!(r.redact_str(&form), REDACTED);
    }

    #[test]
    fn base64_forms_are_redacted_at_any_alignment() {
        let r = redactor();
        for prefix in ["", "x", "xy", "user:"] {
            let plain = format!("{prefix}{SECRET}");
            for encoded in [
                STANDARD.encode(&plain),
                URL_SAFE.encode(&plain),
                STANDARD_NO_PAD.encode(&plain),
                URL_SAFE_NO_PAD.encode(&plain),
            ] {
                let out = r.redact_str(&format!("Basic {encoded}"));
                assert!(out.contains(REDACTED), "{prefix:?} {encoded} -> {out}");
                // At most a couple of boundary characters of the encoding survive.
                assert!(out.len() <= "Basic ".len() + REDACTED.len() + 12, "{out}");
            }
        }
    }

    #[test]
    fn text_without_secrets_is_untouched() {
        let r = redactor();
        assert!(!r.contains(b"nothing to see"));
        assert_eq!(r.redact_str("nothing to see"), "nothing to see");
        assert!(Redactor::new([b"".as_slice()]).is_empty());
    }
}
