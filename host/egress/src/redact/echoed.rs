//! The attack behind each decodable form: the credential's own provider
//! echoes the token in that form (an echo endpoint, an error message, a
//! debug dump), and the guest would read it back. Each must come out
//! redacted, with no run of the encoded text left, and each must be caught
//! by the leak pre-scan too.

use super::forms::utf16;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};

use super::{REDACTED, Redactor};

const SECRET: &str = "ghp_Zx9/Secret+Value=42?";

fn redactor() -> Redactor {
    Redactor::new([SECRET.as_bytes()])
}

/// `text` redacted holds [`REDACTED`] and no 8-byte run of `echoed` (the
/// form as the provider sent it; what a prefix encodes alone is kept, so
/// callers keep prefixes under 8 encoded characters); the pre-scan finds it.
fn assert_gone(text: &[u8], echoed: &[u8]) {
    let r = redactor();
    let out = r.redact_bytes(text);
    let shown = String::from_utf8_lossy(&out);
    assert!(
        out.windows(REDACTED.len())
            .any(|w| w == REDACTED.as_bytes()),
        "{:?} -> {shown:?}",
        String::from_utf8_lossy(text)
    );
    for run in echoed.windows(8) {
        assert!(
            !out.windows(8).any(|w| w == run),
            "{:?} survives in {shown:?}",
            String::from_utf8_lossy(run)
        );
    }
    assert!(r.contains(text), "{:?}", String::from_utf8_lossy(text));
}

fn assert_echo_gone(echoed: &str) {
    assert_gone(format!("echo: {echoed} end").as_bytes(), echoed.as_bytes());
}

#[test]
fn base64_of_utf16_is_redacted() {
    for big_endian in [false, true] {
        for prefix in ["", "u", "us"] {
            let plain = utf16(&format!("{prefix}{SECRET}"), big_endian);
            // PowerShell's -EncodedCommand and .NET's Unicode base64.
            assert_echo_gone(&STANDARD.encode(&plain));
            assert_echo_gone(&URL_SAFE.encode(&plain));
        }
    }
}

#[test]
fn base64_of_base64_is_redacted() {
    for prefix in ["", "x", "xy"] {
        let inner = STANDARD.encode(format!("{prefix}{SECRET}"));
        for outer_prefix in ["", "k", "ke"] {
            assert_echo_gone(&STANDARD.encode(format!("{outer_prefix}{inner}")));
            assert_echo_gone(&URL_SAFE.encode(format!("{outer_prefix}{inner}")));
        }
        let inner = URL_SAFE.encode(format!("{prefix}{SECRET}"));
        assert_echo_gone(&STANDARD.encode(&inner));
    }
}

/// Today's `[REDACTED]o=`: the last character before the padding holds the
/// secret's last 2 or 4 bits.
#[test]
fn the_partial_base64_groups_are_redacted_too() {
    let r = redactor();
    for prefix in ["", "x", "xy"] {
        let encoded = STANDARD.encode(format!("{prefix}{SECRET}"));
        let out = r.redact_str(&format!("Basic {encoded}"));
        let padding = "=".repeat(encoded.len() - encoded.trim_end_matches('=').len());
        // At most the leading characters that encode the prefix alone.
        let kept = (prefix.len() * 8) / 6;
        let expected = format!("Basic {}{REDACTED}{padding}", &encoded[..kept]);
        assert_eq!(out, expected, "{prefix:?}");
        let unpadded = STANDARD_NO_PAD.encode(format!("{prefix}{SECRET}"));
        let out = r.redact_str(&format!("{unpadded}."));
        assert_eq!(out, format!("{}{REDACTED}.", &unpadded[..kept]));
    }
}

#[test]
fn decimal_byte_lists_are_redacted() {
    let bytes: Vec<String> = SECRET.bytes().map(|b| b.to_string()).collect();
    // JSON/JavaScript, Python/Rust/Java, Go, CSV-ish.
    for separator in [",", ", ", " ", ";"] {
        assert_echo_gone(&format!("[{}]", bytes.join(separator)));
    }
    // Pretty-printed JSON: one number a line.
    let pretty = serde_json::to_string_pretty(&SECRET.as_bytes()).unwrap();
    assert_echo_gone(&pretty);
    assert_echo_gone(&bytes.join("\n"));
}

#[test]
fn octal_escapes_are_redacted() {
    let three: String = SECRET.bytes().map(|b| format!("\\{b:03o}")).collect();
    let minimal: String = SECRET.bytes().map(|b| format!("\\{b:o}")).collect();
    let od: Vec<String> = SECRET.bytes().map(|b| format!("{b:03o}")).collect();
    for text in [three.clone(), minimal, od.join(" ")] {
        assert_echo_gone(&text);
    }
    // In a JSON string, each backslash escaped.
    assert_echo_gone(&serde_json::to_string(&three).unwrap());
}

/// RFC 4648 base32, written out bit by bit (not the redactor's encoder).
fn base32(bytes: &[u8], pad: bool) -> String {
    let bits: String = bytes.iter().map(|b| format!("{b:08b}")).collect();
    let mut out: String = bits
        .as_bytes()
        .chunks(5)
        .map(|chunk| {
            let five = format!("{:0<5}", std::str::from_utf8(chunk).unwrap());
            let n = usize::from_str_radix(&five, 2).unwrap();
            char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[n])
        })
        .collect();
    while pad && !out.len().is_multiple_of(8) {
        out.push('=');
    }
    out
}

#[test]
fn base32_is_redacted_at_any_alignment() {
    for prefix in ["", "a", "ab", "abc", "abcd"] {
        let plain = format!("{prefix}{SECRET}");
        for pad in [true, false] {
            let encoded = base32(plain.as_bytes(), pad);
            assert_echo_gone(&encoded);
            assert_echo_gone(&encoded.to_ascii_lowercase());
        }
    }
}

/// Invisible characters between every character, or only some, raw and
/// escaped (JSON, HTML): shown to a model as the token itself.
#[test]
fn zero_width_and_soft_hyphen_interleaving_is_redacted() {
    for invisible in [
        '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}',
    ] {
        // Between every two characters (one after the last carries nothing).
        let chars: Vec<String> = SECRET.chars().map(String::from).collect();
        let every = chars.join(&invisible.to_string());
        let some: String = SECRET
            .chars()
            .enumerate()
            .flat_map(|(i, c)| {
                if i % 5 == 2 {
                    vec![c, invisible, invisible]
                } else {
                    vec![c]
                }
            })
            .collect();
        for text in [every, some] {
            assert_echo_gone(&text);
            // JSON with `\u200b` escapes (`ensure_ascii`), and HTML entities.
            let escaped = text.replace(invisible, &format!("\\u{:04x}", u32::from(invisible)));
            let json = format!(r#"{{"description":"{escaped}"}}"#);
            assert_gone(json.as_bytes(), escaped.as_bytes());
            let entity = text.replace(invisible, &format!("&#{};", u32::from(invisible)));
            assert_echo_gone(&entity);
        }
    }
}

#[test]
fn fullwidth_and_other_compatibility_forms_are_redacted() {
    // Fullwidth (U+FF01..U+FF5E mirror ASCII 0x21..0x7E).
    let fullwidth: String = SECRET
        .chars()
        .map(|c| char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap())
        .collect();
    assert_echo_gone(&fullwidth);
    // Only some characters, and mathematical bold digits/letters.
    let mixed: String = SECRET
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap()
            } else {
                c
            }
        })
        .collect();
    assert_echo_gone(&mixed);
    let bold: String = SECRET
        .chars()
        .map(|c| match c {
            'a'..='z' => char::from_u32(0x1D41A + u32::from(c) - u32::from('a')).unwrap(),
            'A'..='Z' => char::from_u32(0x1D400 + u32::from(c) - u32::from('A')).unwrap(),
            '0'..='9' => char::from_u32(0x1D7CE + u32::from(c) - u32::from('0')).unwrap(),
            _ => c,
        })
        .collect();
    assert_echo_gone(&bold);
    // As JSON escapes.
    let escaped: String = fullwidth
        .chars()
        .map(|c| format!("\\u{:04x}", u32::from(c)))
        .collect();
    assert_echo_gone(&escaped);
}

#[test]
fn reversed_and_rot13_are_redacted() {
    let reversed: String = SECRET.chars().rev().collect();
    assert_echo_gone(&reversed);
    let rot13: String = SECRET
        .chars()
        .map(|c| match c {
            'a'..='z' => char::from((c as u8 - b'a' + 13) % 26 + b'a'),
            'A'..='Z' => char::from((c as u8 - b'A' + 13) % 26 + b'A'),
            _ => c,
        })
        .collect();
    assert_echo_gone(&rot13);
}

/// A `%` just before an interleaved secret that starts with two hex digits:
/// the web view reads `%ab` as one escape and loses the secret's start; the
/// Unicode-only view still reads it.
#[test]
fn an_escape_at_the_edge_does_not_hide_an_interleaved_secret() {
    let secret = "ab12Zx9SecretValue42";
    let r = Redactor::new([secret.as_bytes()]);
    let chars: Vec<String> = secret.chars().map(String::from).collect();
    let interleaved = chars.join("\u{200B}");
    let text = format!("100%{}", interleaved.replacen('\u{200B}', "", 2));
    let out = r.redact_str(&text);
    assert_eq!(out, format!("100%{REDACTED}"), "{text:?}");
}

/// Redacting a view's match replaces whole characters and escapes, so a JSON
/// document stays JSON.
#[test]
fn a_redacted_interleaved_secret_leaves_valid_json() {
    let r = redactor();
    let every: String = SECRET.chars().flat_map(|c| [c, '\u{200B}']).collect();
    let json =
        serde_json::json!({"tools": [{"name": "t", "description": format!("use {every} now")}]})
            .to_string();
    let out = r.redact_str(&json);
    let value: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
    let description = value["tools"][0]["description"].as_str().unwrap();
    assert!(description.starts_with("use [REDACTED]"), "{description:?}");
    assert!(!description.contains("Secret"), "{description:?}");
}
