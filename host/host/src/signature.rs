//! Signed packages: who made a package, checked against keys the operator
//! trusts.
//!
//! The format is [minisign](https://jedisct1.github.io/minisign/) (Ed25519
//! over a BLAKE2b-512 prehash, with a signed "trusted comment"): small keys
//! that fit a config line, no certificate infrastructure to run, and a CLI
//! in every distribution (Debian's `minisign`), so a signature is checked
//! outside Warden as easily as inside. Sigstore's keyless signatures need
//! a transparency log and an identity provider, which an offline
//! deployment does not have; its key-based mode adds nothing minisign lacks
//! for one file.
//!
//! What is signed is the package's digest list: one `<sha256>  <path>` line
//! per kept file in path order — exactly the `SHA256SUMS` `cargo xtask
//! bundle` writes and the installer keeps, and the bytes whose SHA-256 is
//! the package's content digest. The signature travels beside it as
//! `SHA256SUMS.minisig` (in a directory, an archive, or an installed copy),
//! outside the digest, so signing does not change what is signed. Outside
//! Warden:
//!
//! ```sh
//! minisign -Vm SHA256SUMS -p signer.pub   # reads SHA256SUMS.minisig
//! sha256sum -c SHA256SUMS                  # every file is what was signed
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io::Cursor;

use minisign::{PublicKey, SecretKey, SecretKeyBox, SignatureBox};

use crate::trust::EffectiveTrust;

/// The file a package's signature is kept in, beside `SHA256SUMS`.
pub const SIGNATURE_FILE: &str = "SHA256SUMS.minisig";

/// The most bytes a signature file may have (a minisign signature is about
/// 300; the rest is room for its comments).
pub(crate) const MAX_SIGNATURE_BYTES: u64 = 4096;

/// Why a key or a signature could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A public key that is not a minisign public key.
    #[error("signer `{signer}`: {key:?} is not a minisign public key ({reason})")]
    PublicKey {
        /// The signer it was given for.
        signer: String,
        /// The key text.
        key: String,
        /// The parser's reason.
        reason: String,
    },
    /// A secret key that could not be read or decrypted.
    #[error("the signing key cannot be used: {0}")]
    SecretKey(String),
    /// Signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
}

/// A key the operator trusts to sign packages (`[trust.signers.<name>]` in
/// warden.toml), and the most trust a package it signed runs with.
#[derive(Clone)]
pub struct TrustedSigner {
    /// The operator's name for the signer (`acme`).
    pub name: String,
    /// The most trust a package this key signed runs with (less when its
    /// manifest asks for less).
    pub trust: EffectiveTrust,
    key: PublicKey,
    key_id: String,
}

impl fmt::Debug for TrustedSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustedSigner")
            .field("name", &self.name)
            .field("trust", &self.trust)
            .field("key_id", &self.key_id)
            .finish()
    }
}

impl TrustedSigner {
    /// `name`'s public key `key`: the base64 line of a minisign `.pub` file
    /// (`RWQ…`), or the whole file.
    pub fn new(
        name: impl Into<String>,
        key: &str,
        trust: EffectiveTrust,
    ) -> Result<Self, SignatureError> {
        let name = name.into();
        let line = key
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .unwrap_or_default();
        let key = PublicKey::from_base64(line).map_err(|e| SignatureError::PublicKey {
            signer: name.clone(),
            key: line.to_owned(),
            reason: e.to_string(),
        })?;
        let key_id = key_id(key.keynum());
        Ok(TrustedSigner {
            name,
            trust,
            key,
            key_id,
        })
    }

    /// The key's id as minisign shows it (16 hex digits, upper case).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

/// What a package's signature says, checked against the trusted signers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SignatureStatus {
    /// The package carries no signature.
    Unsigned,
    /// A trusted signer's key signed exactly this content.
    Signed {
        /// The operator's name for the signer.
        signer: String,
        /// The key's id.
        key_id: String,
        /// The most trust the signer gives.
        trust: EffectiveTrust,
        /// The signed trusted comment (the signer's words).
        comment: String,
    },
    /// Signed by a key no trusted signer has (the signature is not checked
    /// further: nothing vouches for the key).
    UnknownKey {
        /// The key's id.
        key_id: String,
    },
    /// The signature does not verify: it is malformed, or it was made over
    /// other content (another digest).
    Invalid {
        /// Why.
        reason: String,
    },
}

impl SignatureStatus {
    /// The signer's trust when a trusted signer signed this content.
    pub fn trust(&self) -> Option<EffectiveTrust> {
        match self {
            SignatureStatus::Signed { trust, .. } => Some(*trust),
            _ => None,
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            SignatureStatus::Unsigned => "unsigned".to_owned(),
            SignatureStatus::Signed {
                signer,
                key_id,
                trust,
                ..
            } => format!("signed by `{signer}` (key {key_id}; trusted up to {trust})"),
            SignatureStatus::UnknownKey { key_id } => {
                format!("signed by key {key_id}, which no trusted signer has")
            }
            SignatureStatus::Invalid { reason } => {
                format!("the signature does not verify: {reason}")
            }
        }
    }
}

/// The digest list of `files`: `<sha256>  <path>\n` per file in path order,
/// `SHA256SUMS` and its signature left out. Its SHA-256 is the content
/// digest; it is what a signature signs.
pub fn digest_list(files: &BTreeMap<String, Vec<u8>>) -> String {
    use sha2::{Digest as _, Sha256};
    files
        .iter()
        .filter(|(path, _)| !is_beside_content(path))
        .map(|(path, bytes)| format!("{}  {path}\n", hex::encode(Sha256::digest(bytes))))
        .collect()
}

/// Whether `path` is a file kept beside the content, not part of it.
pub(crate) fn is_beside_content(path: &str) -> bool {
    path == crate::source::SUMS_FILE || path == SIGNATURE_FILE
}

/// Check the signature kept in `files` (if any) against `signers`.
pub fn check(files: &BTreeMap<String, Vec<u8>>, signers: &[TrustedSigner]) -> SignatureStatus {
    let Some(bytes) = files.get(SIGNATURE_FILE) else {
        return SignatureStatus::Unsigned;
    };
    let invalid = |reason: String| SignatureStatus::Invalid { reason };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return invalid(format!("{SIGNATURE_FILE} is not text"));
    };
    let signature = match SignatureBox::from_string(text) {
        Ok(signature) => signature,
        Err(error) => return invalid(format!("{SIGNATURE_FILE}: {error}")),
    };
    let id = key_id(signature.keynum());
    let Some(signer) = signers.iter().find(|s| s.key_id == id) else {
        return SignatureStatus::UnknownKey { key_id: id };
    };
    let list = digest_list(files);
    let verified = minisign::verify(
        &signer.key,
        &signature,
        Cursor::new(list.as_bytes()),
        true,
        false,
        false,
    );
    if let Err(error) = verified {
        return invalid(format!(
            "key {id} of `{}` did not sign this content ({error})",
            signer.name
        ));
    }
    SignatureStatus::Signed {
        signer: signer.name.clone(),
        key_id: id,
        trust: signer.trust,
        comment: signature.trusted_comment().unwrap_or_default(),
    }
}

/// Sign the content of `files` with the minisign secret key `key_file` (its
/// text; `password` for an encrypted one, `None` for one made without):
/// the text of `SHA256SUMS.minisig`. The trusted comment names the package
/// and its digest.
pub fn sign(
    files: &BTreeMap<String, Vec<u8>>,
    package: &str,
    key_file: &str,
    password: Option<String>,
) -> Result<String, SignatureError> {
    let secret = secret_key(key_file, password)?;
    let list = digest_list(files);
    let digest = {
        use sha2::{Digest as _, Sha256};
        hex::encode(Sha256::digest(list.as_bytes()))
    };
    let comment = format!("warden package {package} digest {digest}");
    let signature = minisign::sign(
        None,
        &secret,
        Cursor::new(list.as_bytes()),
        Some(&comment),
        Some("signature of a Warden package's SHA256SUMS"),
    )
    .map_err(|e| SignatureError::Sign(e.to_string()))?;
    Ok(signature.into_string())
}

/// The secret key of a minisign key file: one made without a password
/// (`minisign -G -W`, which records no checksum) as it is, any other
/// unsealed with `password`.
fn secret_key(key_file: &str, password: Option<String>) -> Result<SecretKey, SignatureError> {
    let unusable = |e: minisign::PError| SignatureError::SecretKey(e.to_string());
    let boxed = SecretKeyBox::from_string(key_file).map_err(unusable)?;
    let line = key_file
        .lines()
        .nth(1)
        .ok_or_else(|| SignatureError::SecretKey("the key file has no key line".into()))?;
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line.trim())
        .map_err(|_| SignatureError::SecretKey("the key line is not base64".into()))?;
    // sig_alg (2 bytes), then kdf_alg: none is two zero bytes.
    if bytes.get(2..4) == Some(&[0, 0]) {
        return SecretKey::from_bytes(&bytes).map_err(unusable);
    }
    SecretKey::from_box(boxed, Some(password.unwrap_or_default())).map_err(unusable)
}

/// A minisign key id as minisign prints it: the 8 key-number bytes as a
/// little-endian integer, 16 upper-case hex digits.
fn key_id(keynum: &[u8]) -> String {
    let mut bytes = [0u8; 8];
    let n = keynum.len().min(8);
    bytes[..n].copy_from_slice(&keynum[..n]);
    format!("{:016X}", u64::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package() -> BTreeMap<String, Vec<u8>> {
        BTreeMap::from([
            ("manifest.toml".to_owned(), b"id = \"x\"\n".to_vec()),
            ("wasm/x.wasm".to_owned(), b"\0asm".to_vec()),
        ])
    }

    /// A public key and its secret key file, encrypted with `pw`.
    fn keypair() -> (String, String) {
        let pair = minisign::KeyPair::generate_encrypted_keypair(Some("pw".into())).unwrap();
        let public = pair.pk.to_base64();
        let secret = pair.sk.to_box(None).unwrap().into_string();
        (public, secret)
    }

    #[test]
    fn a_signature_verifies_for_its_content_only_and_its_key_only() {
        let (public, secret) = keypair();
        let signer = TrustedSigner::new("acme", &public, EffectiveTrust::FirstParty).unwrap();
        let mut files = package();
        assert_eq!(
            check(&files, std::slice::from_ref(&signer)),
            SignatureStatus::Unsigned
        );
        assert!(matches!(
            sign(&files, "x", &secret, Some("wrong".into())),
            Err(SignatureError::SecretKey(_))
        ));
        let signature = sign(&files, "x", &secret, Some("pw".into())).unwrap();
        files.insert(SIGNATURE_FILE.to_owned(), signature.into_bytes());
        let status = check(&files, std::slice::from_ref(&signer));
        let SignatureStatus::Signed {
            signer: name,
            comment,
            trust,
            ..
        } = &status
        else {
            panic!("{status:?}")
        };
        assert_eq!(
            (name.as_str(), *trust),
            ("acme", EffectiveTrust::FirstParty)
        );
        assert!(comment.starts_with("warden package x digest "), "{comment}");
        // The digest list leaves the signature (and SHA256SUMS) out.
        assert_eq!(digest_list(&files), digest_list(&package()));

        let mut other = files.clone();
        other.insert("wasm/x.wasm".to_owned(), b"\0asm\x01".to_vec());
        assert!(matches!(
            check(&other, std::slice::from_ref(&signer)),
            SignatureStatus::Invalid { .. }
        ));
        let (stranger, _) = keypair();
        let stranger = TrustedSigner::new("other", &stranger, EffectiveTrust::System).unwrap();
        assert!(matches!(
            check(&files, &[stranger]),
            SignatureStatus::UnknownKey { key_id } if key_id == signer.key_id()
        ));
        let mut garbled = files.clone();
        garbled.insert(
            SIGNATURE_FILE.to_owned(),
            b"untrusted comment: x\nnot base64\n".to_vec(),
        );
        assert!(matches!(
            check(&garbled, &[signer]),
            SignatureStatus::Invalid { .. }
        ));
    }

    #[test]
    fn a_key_that_is_not_a_minisign_key_is_refused_naming_the_signer() {
        let error = TrustedSigner::new("acme", "RWQnot-a-key", EffectiveTrust::FirstParty)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("signer `acme`: \"RWQnot-a-key\""),
            "{error}"
        );
    }
}
