//! The encoded forms of one secret the redactor searches for directly (the
//! escapes [`super::canon`] decodes need no form of their own).

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

/// Every form of `secret` the redactor looks for: raw; percent-encoded;
/// `application/x-www-form-urlencoded`; base64 (standard and URL-safe) at
/// each alignment; hex (the automaton folds case) with or without a
/// separator; UTF-16LE and UTF-16BE.
pub(super) fn forms(secret: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
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
        for big_endian in [false, true] {
            push(utf16(text, big_endian));
        }
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for form in base64_cores(engine, secret) {
            push(form);
        }
    }
    for separator in HEX_SEPARATORS {
        push(hex(secret, separator.as_bytes()));
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

/// `text` in UTF-16, little- or big-endian, without a byte-order mark.
fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
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
