//! Redaction of staged secrets, in the forms a guest could decode.
//!
//! Two searches run with one [`search`] (built once per call, ASCII case
//! folded; see there for how it stays cheap to build):
//! - over the raw text, for the secret's *forms* (`redact/forms.rs`, computed
//!   once per secret when the redactor is built): raw, percent-encoded,
//!   UTF-16LE/BE, reversed, rot13; hex, decimal lists and octal escapes of
//!   its bytes; base64 at any alignment of the bytes, of their UTF-16 and of
//!   their base64; base32 at any alignment;
//! - over up to five *canonical views* (`redact/canon.rs`) of the text, in which
//!   JSON escapes (`\u0067`, `\/`), HTML numeric entities, percent escapes,
//!   quoted-printable and line breaks are decoded or removed, invisible
//!   characters dropped and compatibility variants NFKC-folded
//!   (`redact/unicode.rs`), so partly escaped, doubly percent-encoded,
//!   line-wrapped (MIME, PEM), zero-width-interleaved and fullwidth forms read
//!   as one of the forms above. A match in a view is replaced as whole raw
//!   escapes and characters.
//!
//! Every match is replaced by [`REDACTED`], with the partial base64 or
//! base32 characters at its edges that still hold bits of the secret. The
//! leak pre-scan of outgoing requests ([`Redactor::contains`]) uses the same
//! two searches. What is out of reach by design (compression, encryption,
//! any function of the whole text) is listed in docs/src/security.md, "Secrets: what
//! may leave a call".
//!
//! ```
//! use warden_egress::redact::Redactor;
//! let redactor = Redactor::new([b"s3cr3t-t0ken".as_slice()]);
//! assert_eq!(redactor.redact_str("token=S3CR3T-T0KEN"), "token=[REDACTED]");
//! assert_eq!(redactor.redact_str(r#"{"t":"s3cr\u0033t-t0ken"}"#), r#"{"t":"[REDACTED]"}"#);
//! ```

mod canon;
mod forms;
mod fragments;
mod search;
mod unicode;

use std::borrow::Cow;

pub use fragments::{Fragments, SHARED_RUN};
pub(crate) use unicode::is_default_ignorable;

use search::Search;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Finds and replaces the staged secrets of one call.
///
/// Built once per call (cheaply: see [`search`]).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    search: Option<Search>,
}

impl Redactor {
    /// A redactor for `secrets` (empty secrets are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut patterns = Vec::new();
        for secret in secrets {
            if !secret.is_empty() {
                patterns.extend(forms::forms(secret));
            }
        }
        if patterns.is_empty() {
            return Self::default();
        }
        Self {
            search: Some(Search::new(patterns)),
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.search.is_none()
    }

    /// Whether `haystack` contains any form of a staged secret, raw or in a
    /// canonical view.
    pub fn contains(&self, haystack: &[u8]) -> bool {
        let Some(search) = &self.search else {
            return false;
        };
        search.is_match(haystack)
            || canon::any_text(haystack, |text| search.is_match(text), |_, _| true)
    }

    /// `bytes` with every form of every staged secret replaced.
    pub fn redact_bytes<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        let Some(search) = &self.search else {
            return Cow::Borrowed(bytes);
        };
        let mut ranges = search.ranges(bytes);
        canon::any_text(
            bytes,
            |text| search.is_match(text),
            |pass, _| {
                // Found: the view again, with its map, to place each match.
                let view = canon::mapped(bytes, pass);
                ranges.extend(
                    search
                        .ranges(&view.text)
                        .into_iter()
                        .map(|(start, end)| view.raw_range(start, end)),
                );
                false
            },
        );
        if ranges.is_empty() {
            return Cow::Borrowed(bytes);
        }
        Cow::Owned(replace(bytes, ranges))
    }

    /// [`Redactor::redact_str`] of an owned text: returned as it is (no
    /// copy) when it holds no secret.
    pub fn redact_string(&self, text: String) -> String {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => text,
            Cow::Owned(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
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

/// `bytes` with each of `ranges` (merged where they overlap) replaced by [`REDACTED`].
fn replace(bytes: &[u8], mut ranges: Vec<(usize, usize)>) -> Vec<u8> {
    ranges.sort_unstable();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (start, end) in ranges {
        if end <= at {
            continue;
        }
        if start >= at {
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
        }
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::forms::{COMPONENT, PATH};
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

    const SECRET: &str = "ghp_Zx9/Secret+Value=42?";

    fn redactor() -> Redactor {
        Redactor::new([SECRET.as_bytes()])
    }

    #[test]
    fn raw_and_case_folded_forms_are_redacted() {
        let r = redactor();
        assert_eq!(r.redact_str(&format!("a {SECRET} b")), "a [REDACTED] b");
        assert_eq!(r.redact_string(format!("a {SECRET} b")), "a [REDACTED] b");
        assert_eq!(r.redact_string("plain".into()), "plain");
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

    /// `text` redacted carries no trace of the secret and says so.
    fn assert_redacted(r: &Redactor, text: &str) {
        let out = r.redact_str(text);
        assert!(out.contains(REDACTED), "{text:?} -> {out:?}");
        assert!(
            !out.contains("Secret") && !out.contains("ecre"),
            "{text:?} -> {out:?}"
        );
        assert!(r.contains(text.as_bytes()), "{text:?}");
    }

    fn hex(sep: &str, upper: bool) -> String {
        let pairs: Vec<String> = SECRET
            .bytes()
            .map(|b| {
                if upper {
                    format!("{b:02X}")
                } else {
                    format!("{b:02x}")
                }
            })
            .collect();
        pairs.join(sep)
    }

    #[test]
    fn hex_forms_are_redacted() {
        let r = redactor();
        for sep in ["", ":", " ", "-"] {
            for upper in [false, true] {
                assert_redacted(&r, &format!("id={} end", hex(sep, upper)));
            }
        }
        // Wrapped over lines, as hex dumps are.
        let dump = hex("", false);
        let (a, b) = dump.split_at(20);
        assert_redacted(&r, &format!("{a}\n{b}"));
    }

    #[test]
    fn json_escapes_are_redacted_whole_or_partial() {
        let r = redactor();
        let all: String = SECRET
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let upper: String = SECRET
            .chars()
            .map(|c| format!("\\u{:04X}", c as u32))
            .collect();
        let some: String = SECRET
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 3 == 0 {
                    format!("\\u{:04x}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        let slash = SECRET.replace('/', "\\/");
        for escaped in [all, upper, some, slash] {
            let json = format!(r#"{{"a":"x {escaped} y","b":1}}"#);
            let out = r.redact_str(&json);
            assert_eq!(out, r#"{"a":"x [REDACTED] y","b":1}"#, "{json}");
            serde_json::from_str::<serde_json::Value>(&out).expect("still JSON");
        }
    }

    #[test]
    fn html_entities_are_redacted_decimal_hex_and_partial() {
        let r = redactor();
        let decimal: String = SECRET.chars().map(|c| format!("&#{};", c as u32)).collect();
        let hex: String = SECRET
            .chars()
            .map(|c| format!("&#x{:x};", c as u32))
            .collect();
        let upper: String = SECRET
            .chars()
            .map(|c| format!("&#X{:X};", c as u32))
            .collect();
        let partial: String = SECRET
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    format!("&#{};", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        // HTML5 names for the punctuation (`htmlentities(…, ENT_HTML5)`).
        let named = SECRET
            .replace('_', "&lowbar;")
            .replace('/', "&sol;")
            .replace('+', "&plus;")
            .replace('=', "&equals;")
            .replace('?', "&quest;");
        for text in [decimal, hex, upper, partial, named] {
            assert_redacted(&r, &format!("<p>{text}</p>"));
        }
    }

    #[test]
    fn full_and_double_percent_encodings_are_redacted() {
        let r = redactor();
        let full: String = SECRET.bytes().map(|b| format!("%{b:02X}")).collect();
        let double: String = SECRET.bytes().map(|b| format!("%25{b:02x}")).collect();
        let double_mixed = utf8_percent_encode(
            &utf8_percent_encode(SECRET, NON_ALPHANUMERIC).to_string(),
            NON_ALPHANUMERIC,
        )
        .to_string();
        for text in [full, double, double_mixed] {
            assert_redacted(&r, &format!("q={text}&x=1"));
        }
    }

    #[test]
    fn line_wrapped_base64_is_redacted() {
        let r = redactor();
        let plain = format!("{}{SECRET}{}", "x".repeat(50), "y".repeat(50));
        let encoded = STANDARD.encode(&plain);
        for (width, eol) in [(76, "\r\n"), (64, "\n"), (4, "\n")] {
            let wrapped: Vec<&str> = encoded
                .as_bytes()
                .chunks(width)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect();
            let pem = format!(
                "-----BEGIN X-----{eol}{}{eol}-----END X-----",
                wrapped.join(eol)
            );
            assert_redacted(&r, &pem);
            // The same text inside a JSON string (`\n` escapes).
            let json = serde_json::to_string(&wrapped.join("\n")).unwrap();
            assert_redacted(&r, &json);
            // Indented, as in a YAML block or an XML element, raw and in JSON.
            for indent in ["    ", "\t"] {
                let block = format!(
                    "key: |{eol}{indent}{}",
                    wrapped.join(&format!("{eol}{indent}"))
                );
                assert_redacted(&r, &block);
                assert_redacted(&r, &serde_json::to_string(&block).unwrap());
            }
        }
    }

    #[test]
    fn quoted_printable_is_redacted() {
        let r = redactor();
        let all: String = SECRET.bytes().map(|b| format!("={b:02X}")).collect();
        let soft = format!("{}=\r\n{}", &SECRET[..8], &SECRET[8..]).replace('=', "=3D");
        let soft = soft.replacen("=3D\r\n", "=\r\n", 1);
        for text in [all, soft.clone()] {
            assert_redacted(&r, &text);
        }
        // The soft break as JSON escapes, as a MIME body in a JSON string.
        let json = serde_json::to_string(&soft).unwrap();
        assert!(json.contains("=\\r\\n"), "{json}");
        assert_eq!(r.redact_str(&json), "\"[REDACTED]\"");
    }

    #[test]
    fn utf16_is_redacted_in_both_byte_orders() {
        let r = redactor();
        for big_endian in [false, true] {
            let mut bytes = b"\xff\xfe".to_vec();
            for unit in SECRET.encode_utf16() {
                let pair = if big_endian {
                    unit.to_be_bytes()
                } else {
                    unit.to_le_bytes()
                };
                bytes.extend_from_slice(&pair);
            }
            let out = r.redact_bytes(&bytes);
            assert_eq!(&out[..], b"\xff\xfe[REDACTED]", "big endian: {big_endian}");
        }
        // UTF-16 spelled as JSON escapes.
        let json: String = SECRET
            .chars()
            .map(|c| format!("\\u00{:02x}\\u0000", c as u32))
            .collect();
        assert_redacted(&r, &json);
    }

    /// A secret's UTF-16LE form followed by its UTF-16BE form without the
    /// first byte: the two overlap by a byte. In a large text (searched by
    /// the automaton) the second was skipped and its tail — the whole
    /// secret, one byte in two — passed through.
    #[test]
    fn overlapping_forms_in_a_large_text_are_all_redacted() {
        let r = redactor();
        let mut bytes = vec![b'.'; 70 << 10];
        let le: Vec<u8> = SECRET.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = SECRET.encode_utf16().flat_map(u16::to_be_bytes).collect();
        bytes.extend_from_slice(&le);
        bytes.extend_from_slice(&be[1..]);
        let out = r.redact_bytes(&bytes);
        let tail = &out[70 << 10..];
        assert_eq!(tail, b"[REDACTED]", "{}", String::from_utf8_lossy(tail));
    }

    /// A large answer (the base64 of an image, searched through the forms'
    /// anchors and windows) hides no form of the secret: anywhere, at the
    /// border of two pieces lowercased apart, at its very end, or in the
    /// decoded bytes beside a PNG signature's line break.
    #[test]
    fn a_large_answer_hides_no_form_of_the_secret() {
        let r = redactor();
        let utf16: String = SECRET
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .map(char::from)
            .collect();
        let escaped: String = SECRET
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let forms = [
            SECRET.to_ascii_uppercase(),
            STANDARD.encode(SECRET),
            STANDARD.encode(format!("x{SECRET}")),
            URL_SAFE_NO_PAD.encode(format!("xy{SECRET}")),
            utf8_percent_encode(SECRET, NON_ALPHANUMERIC).to_string(),
            utf16,
            escaped,
            hex(":", true),
        ];
        for form in &forms {
            for at in [100, (32 << 10) - 2, (32 << 10) + 1, 70 << 10] {
                let mut text = "A".repeat(72 << 10);
                text.insert_str(at, form);
                let out = r.redact_str(&text);
                assert!(
                    !out.contains("Secret") && !out.contains("ecre"),
                    "{form} at {at}"
                );
                assert_eq!(out.matches(REDACTED).count(), 1, "{form} at {at}");
                assert!(r.contains(text.as_bytes()), "{form} at {at}");
            }
            let mut text = "A".repeat(72 << 10);
            text.push_str(form);
            assert!(r.contains(text.as_bytes()), "{form} at the end");
        }
        // Decoded bytes: a PNG signature, then the secret split by a line
        // break (a view joins it), in a megabyte of zeros.
        let mut image = b"\x89PNG\r\n\x1a\n".to_vec();
        image.resize(1 << 20, 0);
        let (head, tail) = SECRET.split_at(9);
        let at = 600 << 10;
        image.splice(at..at, format!("{head}\r\n{tail}").into_bytes());
        assert!(r.contains(&image));
        image.splice(
            at..at + SECRET.len() + 2,
            std::iter::repeat_n(0, SECRET.len() + 2),
        );
        assert!(!r.contains(&image));
    }

    #[test]
    fn escapes_around_a_secret_stay_intact() {
        let r = redactor();
        let text = r#"{"a":"line\nnext \u00e9 100% &amp; =3D"}"#;
        assert_eq!(r.redact_str(text), text);
        assert!(!r.contains(text.as_bytes()));
    }
}

#[cfg(test)]
mod echoed;
#[cfg(test)]
mod property;
