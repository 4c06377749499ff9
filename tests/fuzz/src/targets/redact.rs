//! The redactor (`warden_egress::redact::Redactor`, public API only): for a
//! secret of 8 to 39 bytes and text around it, with the secret put in the
//! text plain, base64 (standard or URL-safe, padded or not) or
//! percent-encoded, no plain, base64 or percent-encoded form of the secret
//! survives redaction, and the leak pre-scan (`contains`) sees it.
//!
//! Input: byte 0 sets the secret's length, byte 1 the form inserted, byte 2
//! where in the text it goes; then the secret, then the text. A secret byte
//! 0 is read as 1: 0 is what each `[REDACTED]` is turned into before the
//! output is searched, so a form cannot seem to survive across a marker.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, percent_encode};
use warden_egress::redact::{REDACTED, Redactor};

pub fn run(data: &[u8]) {
    let [len, form, at, rest @ ..] = data else {
        return;
    };
    let len = 8 + usize::from(*len) % 32;
    if rest.len() < len {
        return;
    }
    let (secret, text) = rest.split_at(len);
    let secret: Vec<u8> = secret.iter().map(|&b| b.max(1)).collect();
    let forms = forms(&secret);
    let inserted = &forms[usize::from(*form) % forms.len()];
    let at = usize::from(*at) * text.len() / 256;
    let input = [&text[..at], inserted.as_slice(), &text[at..]].concat();

    let redactor = Redactor::new([secret.as_slice()]);
    assert!(redactor.contains(&input), "the pre-scan misses the secret");
    let output = redactor.redact_bytes(&input);
    let output = marked(&output);
    for form in &forms {
        assert!(
            !contains(&output, form),
            "{:?} survives in {:?}",
            String::from_utf8_lossy(form),
            String::from_utf8_lossy(&output)
        );
    }
}

/// The plain, base64 and percent-encoded forms of `secret`.
fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = vec![secret.to_vec()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        forms.push(engine.encode(secret).into_bytes());
    }
    forms.push(
        percent_encode(secret, NON_ALPHANUMERIC)
            .to_string()
            .into_bytes(),
    );
    forms
}

/// `bytes` with each `[REDACTED]` made one 0 byte.
fn marked(bytes: &[u8]) -> Vec<u8> {
    let marker = REDACTED.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(marker) {
            out.push(0);
            i += marker.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
