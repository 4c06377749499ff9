//! The leak pre-scan: a guest request must not already carry a staged secret
//! or anything shaped like a well-known token.
//!
//! Staged secrets are found by [`Redactor::contains`]: the same forms (hex,
//! base64, percent, UTF-16, ...) and decoded views (JSON and HTML escapes,
//! nested percent-encoding, quoted-printable, joined lines) the redactor uses
//! on responses and outputs. It runs on every request of the call, whatever
//! its target.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::{Denial, LeakSite};
use crate::redact::Redactor;

/// A known token format: a prefix and the least number of token characters after it.
struct Format {
    prefix: &'static str,
    kind: &'static str,
    min_tail: usize,
    upper_alnum_only: bool,
}

const fn fmt(prefix: &'static str, kind: &'static str, min_tail: usize) -> Format {
    Format {
        prefix,
        kind,
        min_tail,
        upper_alnum_only: false,
    }
}

const FORMATS: &[Format] = &[
    fmt("ghp_", "GitHub token", 20),
    fmt("gho_", "GitHub token", 20),
    fmt("ghu_", "GitHub token", 20),
    fmt("ghs_", "GitHub token", 20),
    fmt("ghr_", "GitHub token", 20),
    fmt("github_pat_", "GitHub token", 20),
    fmt("glpat-", "GitLab token", 20),
    fmt("xoxb-", "Slack token", 10),
    fmt("xoxp-", "Slack token", 10),
    fmt("xoxa-", "Slack token", 10),
    fmt("xoxr-", "Slack token", 10),
    fmt("xoxs-", "Slack token", 10),
    fmt("xoxe-", "Slack token", 10),
    fmt("sk-", "secret API key", 20),
    fmt("sk_live_", "Stripe key", 16),
    fmt("rk_live_", "Stripe key", 16),
    fmt("AIza", "Google API key", 30),
    fmt("ya29.", "Google OAuth token", 20),
    Format {
        prefix: "AKIA",
        kind: "AWS access key",
        min_tail: 16,
        upper_alnum_only: true,
    },
    Format {
        prefix: "ASIA",
        kind: "AWS access key",
        min_tail: 16,
        upper_alnum_only: true,
    },
    fmt("eyJ", "JWT", 0),
];

static PREFIXES: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::new(FORMATS.iter().map(|f| f.prefix)).expect("static token prefixes")
});

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The kind of the first known token format in `haystack`, if any.
pub(crate) fn token_format(haystack: &[u8]) -> Option<&'static str> {
    for m in PREFIXES.find_overlapping_iter(haystack) {
        let format = &FORMATS[m.pattern().as_usize()];
        if m.start() > 0 && token_char(haystack[m.start() - 1]) {
            continue;
        }
        let tail = &haystack[m.end()..];
        let hit = if format.prefix == "eyJ" {
            jwt_shaped(tail)
        } else if format.upper_alnum_only {
            tail.len() >= format.min_tail
                && tail[..format.min_tail]
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        } else {
            tail.iter()
                .take_while(|b| token_char(**b) || **b == b'.')
                .count()
                >= format.min_tail
        };
        if hit {
            return Some(format.kind);
        }
    }
    None
}

/// `eyJ` + base64url{8,} `.` base64url{8,} `.` (the signature may be empty).
fn jwt_shaped(tail: &[u8]) -> bool {
    let b64 = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    let first = tail.iter().take_while(|b| b64(b)).count();
    if first < 8 || tail.get(first) != Some(&b'.') {
        return false;
    }
    let rest = &tail[first + 1..];
    let second = rest.iter().take_while(|b| b64(b)).count();
    second >= 8 && rest.get(second) == Some(&b'.')
}

/// Refuse `bytes` at `location` if it carries a staged secret or a known token.
pub(crate) fn scan(bytes: &[u8], location: LeakSite, staged: &Redactor) -> Result<(), Denial> {
    if staged.contains(bytes) {
        return Err(Denial::StagedSecret(location));
    }
    if let Some(kind) = token_format(bytes) {
        return Err(Denial::TokenFormat { kind, location });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_formats_are_recognised() {
        let cases = [
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                "GitHub token",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijkl",
                "GitHub token",
            ),
            ("xoxb-1234567890-abcdef", "Slack token"),
            ("key=sk-proj-abcdefghijklmnopqrstuvwx", "secret API key"),
            ("AKIAIOSFODNN7EXAMPLE", "AWS access key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJl",
                "JWT",
            ),
        ];
        for (text, kind) in cases {
            assert_eq!(token_format(text.as_bytes()), Some(kind), "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_not_a_token() {
        for text in [
            "task-runner-abcdefghijklmnopqrstuvwxyz",
            "ghp_short",
            "AKIAlowercase0000000",
            "eyJust some words",
            "{\"q\": \"repo:rust-lang/rust is:open\"}",
        ] {
            assert_eq!(token_format(text.as_bytes()), None, "{text}");
        }
    }
}
