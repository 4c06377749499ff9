//! Property: no supported form of a random secret survives redaction of a
//! random text around it. The forms are spelled here independently of the
//! redactor (the base64 crate, the standard library, bit strings).

use super::forms::utf16;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
use proptest::prelude::*;

use super::{REDACTED, Redactor};

/// How a provider spells the secret back.
#[derive(Debug, Clone)]
enum Echo {
    Raw,
    Upper,
    Percent,
    JsonEscaped,
    /// Base64 of `pad` filler characters then the secret.
    Base64 {
        pad: usize,
        url: bool,
        padded: bool,
    },
    Base64Utf16 {
        pad: usize,
        big_endian: bool,
    },
    Base64Base64 {
        pad: usize,
    },
    Base32 {
        pad: usize,
    },
    Hex {
        separator: &'static str,
    },
    Decimal {
        separator: &'static str,
    },
    Octal {
        minimal: bool,
    },
    Utf16 {
        big_endian: bool,
    },
    /// Invisible characters after the characters `mask` marks.
    Interleaved {
        invisible: char,
        mask: Vec<bool>,
    },
    Fullwidth,
    Reversed,
    Rot13,
}

fn echo() -> impl Strategy<Value = Echo> {
    prop_oneof![
        Just(Echo::Raw),
        Just(Echo::Upper),
        Just(Echo::Percent),
        Just(Echo::JsonEscaped),
        (0..3usize, any::<bool>(), any::<bool>()).prop_map(|(pad, url, padded)| Echo::Base64 {
            pad,
            url,
            padded
        }),
        (0..3usize, any::<bool>())
            .prop_map(|(pad, big_endian)| Echo::Base64Utf16 { pad, big_endian }),
        (0..3usize).prop_map(|pad| Echo::Base64Base64 { pad }),
        (0..5usize).prop_map(|pad| Echo::Base32 { pad }),
        prop::sample::select(vec!["", ":", " ", "-"]).prop_map(|separator| Echo::Hex { separator }),
        prop::sample::select(vec![",", ", ", " ", ";"])
            .prop_map(|separator| Echo::Decimal { separator }),
        any::<bool>().prop_map(|minimal| Echo::Octal { minimal }),
        any::<bool>().prop_map(|big_endian| Echo::Utf16 { big_endian }),
        (
            prop::sample::select(vec![
                '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}'
            ]),
            prop::collection::vec(any::<bool>(), 48),
        )
            .prop_map(|(invisible, mask)| Echo::Interleaved { invisible, mask }),
        Just(Echo::Fullwidth),
        Just(Echo::Reversed),
        Just(Echo::Rot13),
    ]
}

fn base32(bytes: &[u8]) -> String {
    let bits: String = bytes.iter().map(|b| format!("{b:08b}")).collect();
    bits.as_bytes()
        .chunks(5)
        .map(|chunk| {
            let five = format!("{:0<5}", std::str::from_utf8(chunk).unwrap());
            let n = usize::from_str_radix(&five, 2).unwrap();
            char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[n])
        })
        .collect()
}

fn join(secret: &str, each: impl Fn(u8) -> String, separator: &str) -> String {
    secret.bytes().map(each).collect::<Vec<_>>().join(separator)
}

/// `secret` as `echo` spells it.
fn spell(secret: &str, echo: &Echo) -> Vec<u8> {
    let padded = |pad: usize| format!("{}{secret}", "x".repeat(pad));
    let text = match echo {
        Echo::Raw => secret.to_owned(),
        Echo::Upper => secret.to_ascii_uppercase(),
        Echo::Percent => join(secret, |b| format!("%{b:02X}"), ""),
        Echo::JsonEscaped => join(secret, |b| format!("\\u{b:04x}"), ""),
        Echo::Base64 {
            pad,
            url,
            padded: with_padding,
        } => {
            let plain = padded(*pad);
            match (url, with_padding) {
                (true, _) => URL_SAFE.encode(plain),
                (false, true) => STANDARD.encode(plain),
                (false, false) => STANDARD_NO_PAD.encode(plain),
            }
        }
        Echo::Base64Utf16 { pad, big_endian } => STANDARD.encode(utf16(&padded(*pad), *big_endian)),
        Echo::Base64Base64 { pad } => STANDARD.encode(STANDARD.encode(padded(*pad))),
        Echo::Base32 { pad } => base32(padded(*pad).as_bytes()),
        Echo::Hex { separator } => join(secret, |b| format!("{b:02x}"), separator),
        Echo::Decimal { separator } => format!("[{}]", join(secret, |b| b.to_string(), separator)),
        Echo::Octal { minimal: true } => join(secret, |b| format!("\\{b:o}"), ""),
        Echo::Octal { minimal: false } => join(secret, |b| format!("\\{b:03o}"), ""),
        Echo::Utf16 { big_endian } => return utf16(secret, *big_endian),
        Echo::Interleaved { invisible, mask } => secret
            .chars()
            .zip(mask.iter().cycle())
            .flat_map(|(c, after)| if *after { vec![c, *invisible] } else { vec![c] })
            .collect(),
        Echo::Fullwidth => secret
            .chars()
            .map(|c| char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap())
            .collect(),
        Echo::Reversed => secret.chars().rev().collect(),
        Echo::Rot13 => secret
            .chars()
            .map(|c| match c {
                'a'..='z' => char::from((c as u8 - b'a' + 13) % 26 + b'a'),
                'A'..='Z' => char::from((c as u8 - b'A' + 13) % 26 + b'A'),
                _ => c,
            })
            .collect(),
    };
    text.into_bytes()
}

proptest! {
    #[test]
    fn no_form_of_a_secret_survives_redaction(
        secret in "[A-Za-z0-9_./+=~-]{12,48}",
        echo in echo(),
        before in "\\PC{0,40}",
        after in "\\PC{0,40}",
    ) {
        let redactor = Redactor::new([secret.as_bytes()]);
        let spelled = spell(&secret, &echo);
        let mut text = format!("{before} ").into_bytes();
        text.extend_from_slice(&spelled);
        text.extend_from_slice(format!(" {after}").as_bytes());

        prop_assert!(redactor.contains(&text), "the pre-scan misses {echo:?}");
        let out = redactor.redact_bytes(&text);
        prop_assert!(
            out.windows(REDACTED.len()).any(|w| w == REDACTED.as_bytes()),
            "{echo:?} not redacted"
        );
        // No 8-byte run of what the provider sent is left (a filler prefix
        // encodes to at most 5 characters of its own).
        for run in spelled.windows(8) {
            prop_assert!(
                !out.windows(8).any(|w| w == run),
                "{echo:?}: {:?} survives in {:?}",
                String::from_utf8_lossy(run),
                String::from_utf8_lossy(&out)
            );
        }
    }
}
