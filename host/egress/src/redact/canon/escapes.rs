//! One escape at a time: what the unit at the start of a text decodes to
//! in each pass (JSON and `\\xHH` escapes, HTML and XML entities, percent
//! and quoted-printable escapes, line breaks and the indent after them).

use super::Mode;
use crate::redact::unicode;

pub(super) enum Decoded {
    Byte(u8),
    Char(char),
    /// A line break or soft break: removed from the view.
    Nothing,
}

/// The escape at the start of `s` (never empty): its length and what it decodes to.
pub(super) fn unit(s: &[u8], mode: Mode) -> (usize, Decoded) {
    let literal = (1, Decoded::Byte(s[0]));
    if mode == Mode::Unicode {
        return unicode::char_at(s).map_or(literal, |(len, c)| (len, Decoded::Char(c)));
    }
    match (s[0], mode) {
        (b'\r' | b'\n', _) => (1 + indent(&s[1..]), Decoded::Nothing),
        (b'\\', Mode::Web) => json(s).unwrap_or(literal),
        (b'&', Mode::Web) => entity(s).unwrap_or(literal),
        (b'%', Mode::Web) => hex2(s.get(1..3)).map_or(literal, |b| (3, Decoded::Byte(b))),
        (0x80..=0xFF, Mode::Web) => {
            unicode::char_at(s).map_or(literal, |(len, c)| (len, Decoded::Char(c)))
        }
        (b'=', Mode::QuotedPrintable) => match s.get(1..3) {
            Some(b"\r\n") => (3, Decoded::Nothing),
            _ if s.get(1) == Some(&b'\n') => (2, Decoded::Nothing),
            // The soft break spelled as JSON escapes: a MIME body in a
            // JSON string.
            _ if s.get(1..5) == Some(br"\r\n") => (5, Decoded::Nothing),
            Some(br"\n") => (3, Decoded::Nothing),
            pair => hex2(pair).map_or(literal, |b| (3, Decoded::Byte(b))),
        },
        _ => literal,
    }
}

/// The spaces and tabs that indent a line (removed with the line break
/// before them: base64 wrapped in an indented YAML block or XML element).
pub(super) fn indent(s: &[u8]) -> usize {
    s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count()
}

/// [`indent`] after an escaped line break, where a tab may be escaped too.
pub(super) fn escaped_indent(s: &[u8]) -> usize {
    let mut n = 0;
    loop {
        if matches!(s.get(n), Some(b' ' | b'\t')) {
            n += 1;
        } else if s.get(n..n + 2) == Some(br"\t") {
            n += 2;
        } else {
            return n;
        }
    }
}

pub(super) fn hex_digit(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

pub(super) fn hex2(pair: Option<&[u8]>) -> Option<u8> {
    let pair = pair?;
    Some((hex_digit(pair[0])? * 16 + hex_digit(pair[1])?) as u8)
}

pub(super) fn hex4(s: Option<&[u8]>) -> Option<u32> {
    s?.iter()
        .try_fold(0u32, |acc, b| Some(acc * 16 + hex_digit(*b)?))
}

/// A JSON (or C-style `\xHH`) escape.
pub(super) fn json(s: &[u8]) -> Option<(usize, Decoded)> {
    let c = match *s.get(1)? {
        b'u' => {
            let unit = hex4(s.get(2..6))?;
            if (0xD800..0xDC00).contains(&unit)
                && s.get(6..8) == Some(b"\\u")
                && let Some(low) = hex4(s.get(8..12)).filter(|l| (0xDC00..0xE000).contains(l))
            {
                let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                return Some((12, Decoded::Char(char::from_u32(c)?)));
            }
            return Some((6, Decoded::Char(char::from_u32(unit)?)));
        }
        b'x' => return Some((4, Decoded::Byte(hex2(s.get(2..4))?))),
        b'n' | b'r' => return Some((2 + escaped_indent(&s[2..]), Decoded::Nothing)),
        b't' => b'\t',
        b'/' | b'\\' | b'"' | b'\'' => s[1],
        _ => return None,
    };
    Some((2, Decoded::Byte(c)))
}

/// The five XML entities, matched in any case (as browsers read them).
pub(super) const XML_ENTITIES: [(&[u8], char); 5] = [
    (b"&amp;", '&'),
    (b"&lt;", '<'),
    (b"&gt;", '>'),
    (b"&quot;", '"'),
    (b"&apos;", '\''),
];

/// HTML5's names for the punctuation of token alphabets (base64, base64url,
/// JWT, URLs), which an encoder such as PHP's
/// `htmlentities(…, ENT_HTML5)` spells by name; case-sensitive, as HTML5
/// names are. Letters and digits have no such names.
pub(super) const HTML5_PUNCTUATION: [(&[u8], char); 24] = [
    (b"&lowbar;", '_'),
    (b"&UnderBar;", '_'),
    (b"&period;", '.'),
    (b"&sol;", '/'),
    (b"&plus;", '+'),
    (b"&equals;", '='),
    (b"&colon;", ':'),
    (b"&hyphen;", '-'),
    (b"&dash;", '-'),
    (b"&num;", '#'),
    (b"&percnt;", '%'),
    (b"&excl;", '!'),
    (b"&quest;", '?'),
    (b"&comma;", ','),
    (b"&semi;", ';'),
    (b"&ast;", '*'),
    (b"&commat;", '@'),
    (b"&dollar;", '$'),
    (b"&tilde;", '~'),
    (b"&bsol;", '\\'),
    (b"&verbar;", '|'),
    (b"&lpar;", '('),
    (b"&rpar;", ')'),
    (b"&Hat;", '^'),
];

/// An HTML numeric entity (decimal or hex, `;` optional), a named XML one,
/// or an HTML5 name of a token alphabet's punctuation.
pub(super) fn entity(s: &[u8]) -> Option<(usize, Decoded)> {
    for (name, c) in XML_ENTITIES {
        if s.len() >= name.len() && s[..name.len()].eq_ignore_ascii_case(name) {
            return Some((name.len(), Decoded::Char(c)));
        }
    }
    for (name, c) in HTML5_PUNCTUATION {
        if s.starts_with(name) {
            return Some((name.len(), Decoded::Char(c)));
        }
    }
    if s.get(1) != Some(&b'#') {
        return None;
    }
    let (radix, first) = match s.get(2) {
        Some(b'x' | b'X') => (16, 3),
        _ => (10, 2),
    };
    // Leading zeros, however many (a browser reads `&#00000103;` as `g`),
    // then at most 7 digits: enough for any code point, and bounded work.
    let zeros = s[first..].iter().take_while(|b| **b == b'0').count();
    let start = first + zeros;
    let digits = s[start..]
        .iter()
        .take(7)
        .take_while(|b| (**b as char).is_digit(radix))
        .count();
    if zeros + digits == 0 {
        return None;
    }
    let value = match digits {
        0 => 0,
        _ => {
            u32::from_str_radix(std::str::from_utf8(&s[start..start + digits]).ok()?, radix).ok()?
        }
    };
    let c = char::from_u32(value)?;
    let mut len = start + digits;
    if s.get(len) == Some(&b';') {
        len += 1;
    }
    Some((len, Decoded::Char(c)))
}
