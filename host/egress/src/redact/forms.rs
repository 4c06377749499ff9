//! The encoded forms of one secret the redactor searches for directly (the
//! escapes [`super::canon`] decodes need no form of their own).
//!
//! A form is a fixed string computed once per secret (per redactor, so per
//! call), never per text searched. The set is principled: every encoding
//! that a service echoing what it was sent offers as a plain function of the
//! bytes, with no key and no state carried from the text around it —
//!
//! - the bytes as text: raw, percent-encoded (three sets),
//!   `application/x-www-form-urlencoded`, UTF-16LE/BE;
//! - the bytes as numbers: hex (plain, `:`/space/`-` separated), decimal
//!   lists (`103,104`, `103, 104`, `103 104`, `103;104`, and run together,
//!   which is what a list one number a line reads as once the views remove
//!   the line breaks), octal escapes (`\147`, minimal `\60`) and `od -b`
//!   style octal;
//! - the bytes in a binary-to-text encoding: base64 (standard and URL-safe)
//!   at each alignment, of the bytes, of their UTF-16LE/BE, and of their
//!   base64 (two levels); base32 (RFC 4648) at each alignment;
//! - the two keyless rearrangements of the text: reversed, and rot13.
//!
//! What a form cannot express (characters interleaved with invisible ones,
//! compatibility variants such as fullwidth letters) is read through the
//! canonical views instead. What neither can (compression, encryption, any
//! other function of the whole text) is out of reach by design: see the
//! docs/src/security.md, "Secrets: what may leave a call".

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, CONTROLS, NON_ALPHANUMERIC, utf8_percent_encode};
use zeroize::Zeroizing;

/// Derived forms shorter than this are not matched (they would redact noise);
/// the raw secret is always matched.
const MIN_DERIVED_LEN: usize = 6;

/// RFC 3986 unreserved characters are kept; everything else is encoded.
pub(super) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A path-segment style encoder (keeps sub-delims, as `url` does).
pub(super) const PATH: &AsciiSet = &CONTROLS
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

/// Separators between hex pairs (`67:68`, `67 68`, `67-68`), besides none.
const HEX_SEPARATORS: &[&str] = &["", ":", " ", "-"];

/// Separators between decimal bytes: JSON and JavaScript (`,`), Python,
/// Rust and Java (`, `), Go (` `), CSV-like (`;`), and none (a list one
/// number a line, once a view has removed the line breaks).
const DECIMAL_SEPARATORS: &[&str] = &[",", ", ", " ", ";", ""];

/// RFC 4648 base32.
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Characters of a binary-to-text encoding next to a match that may still
/// hold bits of the secret: the partial group at either end (the last
/// character of `…o=` holds the secret's last 2 or 4 bits). They are
/// redacted with the match when they are in the encoding's alphabet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(super) enum Margin {
    #[default]
    None,
    /// Up to this many base64 characters (either alphabet) on each side.
    Base64(u8),
    /// Up to this many base32 characters on each side.
    Base32(u8),
}

impl Margin {
    /// Whether `b` (ASCII case folded) may be a character of the margin.
    pub(super) fn allows(self, b: u8) -> bool {
        match self {
            Margin::None => false,
            Margin::Base64(_) => {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
            }
            Margin::Base32(_) => b.is_ascii_alphabetic() || (b'2'..=b'7').contains(&b),
        }
    }

    /// How many characters on each side.
    pub(super) fn width(self) -> usize {
        match self {
            Margin::None => 0,
            Margin::Base64(n) | Margin::Base32(n) => usize::from(n),
        }
    }
}

/// One form: its bytes and the margin redacted with it.
pub(super) struct Form {
    pub(super) bytes: Zeroizing<Vec<u8>>,
    pub(super) margin: Margin,
}

/// Every form of `secret` the redactor looks for (see the module's list).
pub(super) fn forms(secret: &[u8]) -> Vec<Form> {
    let mut out = vec![Form {
        bytes: Zeroizing::new(secret.to_vec()),
        margin: Margin::None,
    }];
    let mut push = |form: Vec<u8>, margin: Margin| {
        let bytes = Zeroizing::new(form);
        if bytes.len() >= MIN_DERIVED_LEN {
            out.push(Form { bytes, margin });
        }
    };
    let engines = [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD];
    if let Ok(text) = std::str::from_utf8(secret) {
        for set in [NON_ALPHANUMERIC, COMPONENT, PATH] {
            push(
                utf8_percent_encode(text, set).to_string().into_bytes(),
                Margin::None,
            );
        }
        push(
            url::form_urlencoded::byte_serialize(secret)
                .collect::<String>()
                .into_bytes(),
            Margin::None,
        );
        for big_endian in [false, true] {
            let wide = Zeroizing::new(utf16(text, big_endian));
            push(wide.to_vec(), Margin::None);
            for engine in engines {
                for form in base64_cores(engine, &wide) {
                    push(form.to_vec(), Margin::Base64(1));
                }
            }
        }
        push(
            text.chars().rev().collect::<String>().into_bytes(),
            Margin::None,
        );
        push(rot13(secret), Margin::None);
    }
    for engine in engines {
        for core in base64_cores(engine, secret) {
            // Two levels: the outer encoding of the inner one's core, whose
            // own partial characters end up within two outer characters.
            for outer in engines {
                for form in base64_cores(outer, &core) {
                    push(form.to_vec(), Margin::Base64(2));
                }
            }
            push(core.to_vec(), Margin::Base64(1));
        }
    }
    for form in base32_cores(secret) {
        push(form.to_vec(), Margin::Base32(1));
    }
    for separator in HEX_SEPARATORS {
        push(hex(secret, separator.as_bytes()), Margin::None);
    }
    for separator in DECIMAL_SEPARATORS {
        push(decimal(secret, separator.as_bytes()), Margin::None);
    }
    for form in octal(secret) {
        push(form, Margin::None);
    }
    out
}

/// Lowercase hex of `secret`, pairs joined by `separator`.
fn hex(secret: &[u8], separator: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(secret.len() * (2 + separator.len()));
    for (i, b) in secret.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(separator);
        }
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
    out
}

/// The decimal values of `secret`'s bytes joined by `separator`.
fn decimal(secret: &[u8], separator: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(secret.len() * (3 + separator.len()));
    for (i, b) in secret.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(b.to_string().as_bytes());
    }
    out
}

/// `secret` as octal escapes, three digits (`\147\060`) and minimal
/// (`\147\60`), and as three-digit octal separated by spaces (`od -b`).
fn octal(secret: &[u8]) -> [Vec<u8>; 3] {
    let mut three = Vec::with_capacity(secret.len() * 4);
    let mut minimal = Vec::with_capacity(secret.len() * 4);
    let mut spaced = Vec::with_capacity(secret.len() * 4);
    for (i, b) in secret.iter().enumerate() {
        three.extend_from_slice(format!("\\{b:03o}").as_bytes());
        minimal.extend_from_slice(format!("\\{b:o}").as_bytes());
        if i > 0 {
            spaced.push(b' ');
        }
        spaced.extend_from_slice(format!("{b:03o}").as_bytes());
    }
    [three, minimal, spaced]
}

/// `secret` with ASCII letters rotated by 13.
fn rot13(secret: &[u8]) -> Vec<u8> {
    secret
        .iter()
        .map(|&b| match b {
            b'a'..=b'z' => (b - b'a' + 13) % 26 + b'a',
            b'A'..=b'Z' => (b - b'A' + 13) % 26 + b'A',
            _ => b,
        })
        .collect()
}

/// `text` in UTF-16, little- or big-endian, without a byte-order mark.
pub(super) fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    text.encode_utf16()
        .flat_map(|unit| {
            if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            }
        })
        .collect()
}

/// The base64 characters that depend only on `secret`, for each of the
/// three alignments it can have inside a longer encoded string.
fn base64_cores(engine: &impl base64::Engine, secret: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    (0..3usize)
        .filter_map(|shift| {
            let mut input = Zeroizing::new(vec![0u8; shift]);
            input.extend_from_slice(secret);
            let encoded = Zeroizing::new(engine.encode(input.as_slice()));
            // Leading chars mixing the zero bytes, trailing chars mixing what follows.
            let skip = (shift * 8).div_ceil(6);
            let end = (shift + secret.len()) * 8 / 6;
            (end > skip).then(|| Zeroizing::new(encoded.as_bytes()[skip..end].to_vec()))
        })
        .collect()
}

/// The base32 characters that depend only on `secret`, for each of the
/// five alignments it can have inside a longer encoded string.
fn base32_cores(secret: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    (0..5usize)
        .filter_map(|shift| {
            let mut input = Zeroizing::new(vec![0u8; shift]);
            input.extend_from_slice(secret);
            let encoded = base32(&input);
            let skip = (shift * 8).div_ceil(5);
            let end = (shift + secret.len()) * 8 / 5;
            (end > skip).then(|| Zeroizing::new(encoded[skip..end].to_vec()))
        })
        .collect()
}

/// RFC 4648 base32 of `bytes`, without padding.
fn base32(bytes: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(bytes.len().div_ceil(5) * 8));
    let mut buffer = 0u16;
    let mut bits = 0u32;
    for &b in bytes {
        buffer = (buffer << 8) | u16::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(BASE32[usize::from((buffer >> bits) & 0x1f)]);
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(BASE32[usize::from((buffer << (5 - bits)) & 0x1f)]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(plain.as_bytes()).as_slice(), encoded.as_bytes());
        }
    }

    #[test]
    fn numeric_forms_spell_each_byte() {
        assert_eq!(decimal(b"gh0", b", "), b"103, 104, 48");
        let [three, minimal, spaced] = octal(b"g0");
        assert_eq!(three, br"\147\060");
        assert_eq!(minimal, br"\147\60");
        assert_eq!(spaced, b"147 060");
        assert_eq!(rot13(b"Ghp_Zx9"), b"Tuc_Mk9");
    }
}
