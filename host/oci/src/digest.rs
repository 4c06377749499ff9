//! Content digests: `sha256:<64 lowercase hex>`, the only algorithm a Warden
//! registry client accepts (what every registry computes by default).

use sha2::{Digest as _, Sha256};

use crate::OciError;

/// A `sha256:` content digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Digest(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
    }

    /// Parse `sha256:<hex>`; another algorithm or a malformed value is
    /// refused, naming it.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |reason: &str| OciError::Digest {
            digest: crate::shown(text),
            reason: reason.to_owned(),
        };
        let Some((algorithm, hex)) = text.split_once(':') else {
            return Err(bad("is not `algorithm:hex`"));
        };
        if algorithm != "sha256" {
            return Err(bad("uses an algorithm other than sha256"));
        }
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad("is not 64 lowercase hex digits"));
        }
        Ok(Digest(text.to_owned()))
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The hex part.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// Whether `bytes` have this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Digest::of(bytes) == *self
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sha256_only_and_checks_content() {
        let digest = Digest::of(b"hello");
        assert_eq!(Digest::parse(digest.as_str()).unwrap(), digest);
        assert!(digest.matches(b"hello"));
        assert!(!digest.matches(b"hello!"));
        for bad in [
            "sha512:00",
            "sha256:ABCDEF",
            "sha256",
            &format!("sha256:{}", "g".repeat(64)),
            &format!("sha256:{}", "a".repeat(63)),
        ] {
            let error = Digest::parse(bad).unwrap_err().to_string();
            assert!(error.contains("digest"), "{bad}: {error}");
        }
    }
}
