//! The canonical view of a text: escapes decoded and line breaks removed, with
//! a map from each byte of the view back to the raw bytes it came from.
//!
//! A web pass decodes JSON escapes (`\uXXXX`, surrogate pairs, `\/`, `\"`,
//! ...) and `\xHH`, HTML numeric entities (`&#103;`, `&#x67;`, the `;`
//! optional), the five XML named ones and HTML5's names for punctuation
//! (`&lowbar;`, `&sol;`, ...), and percent escapes (`%67`); a
//! separate quoted-printable pass decodes `=67` and removes soft breaks (`=`
//! and a line break), because a secret may itself hold `=` before two hex
//! digits (`Value=42`), which the web views must keep; it also takes a soft
//! break spelled as JSON escapes (`=\r\n`, `=\n`: a MIME body in a JSON
//! string). Both passes remove CR and LF, and the spaces and tabs that
//! indent the next line, so that line-wrapped base64 (MIME, PEM, an
//! indented YAML or XML block) reads as one run. The web pass also puts
//! every non-ASCII character, raw or escaped, in its canonical form
//! (`redact/unicode.rs`: invisible characters dropped, NFKC), so a secret
//! interleaved with zero-width spaces or soft hyphens, or spelled in
//! fullwidth letters, reads as the secret; a third, Unicode-only pass does
//! that alone, so an escape the web pass would read across the edge of such
//! a secret (`%` before it, the secret starting with two hex digits) cannot
//! hide it. Every
//! escape is decoded wherever it appears, so text in which only some
//! characters are escaped reads as the plain text. Nested encodings (a
//! percent-encoded percent encoding) need one web pass per level: [`any_view`]
//! runs at most [`MAX_ROUNDS`].
//!
//! Each pass is linear in its input; the map keeps, for every byte of the
//! view, the raw range of the escape that produced it, so a match in the
//! view is redacted as whole escapes in the raw text.

use super::unicode;

/// Passes over nested encodings (percent of percent of JSON escapes...).
pub(super) const MAX_ROUNDS: usize = 3;

/// Whether `raw` has anything a pass would change (the fast path for most text).
pub(super) fn may_be_encoded(raw: &[u8]) -> bool {
    raw.iter()
        .any(|b| matches!(b, b'\\' | b'&' | b'%' | b'=' | b'\r' | b'\n') || !b.is_ascii())
}

/// Whether a web pass could change `input`: only at a line break, `\\`,
/// `&`, `%` or a non-ASCII byte ([`unit`]); `=` is literal there.
fn web_may_decode(input: &[u8]) -> bool {
    input
        .iter()
        .any(|b| matches!(b, b'\\' | b'&' | b'%' | b'\r' | b'\n') || !b.is_ascii())
}

/// Whether a quoted-printable pass could change `input`: only at a line
/// break or an `=` that starts an escape or a soft break ([`unit`]). Base64
/// padding (`==` before a quote) is neither, so a long base64 text is not
/// decoded for nothing.
fn quoted_printable_may_decode(input: &[u8]) -> bool {
    input.iter().enumerate().any(|(i, b)| match b {
        b'\r' | b'\n' => true,
        b'=' => match input.get(i + 1) {
            Some(b'\r' | b'\n' | b'\\') => true,
            Some(&c) => {
                c.is_ascii_hexdigit() && input.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            }
            None => false,
        },
        _ => false,
    })
}

/// A decoded text and, per byte, the raw range it came from.
#[derive(Debug)]
pub(super) struct View {
    pub(super) text: Vec<u8>,
    /// Raw start of the escape behind each byte of `text`.
    start: Vec<u32>,
    /// Raw end of the escape behind each byte of `text`.
    end: Vec<u32>,
}

impl View {
    /// The raw range behind `text[from..to]` (`from < to`).
    pub(super) fn raw_range(&self, from: usize, to: usize) -> (usize, usize) {
        (self.start[from] as usize, self.end[to - 1] as usize)
    }
}

/// Which escapes a pass decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// JSON, HTML and percent escapes; `=` is literal.
    Web,
    /// Quoted-printable only.
    QuotedPrintable,
    /// Non-ASCII characters in canonical form only.
    Unicode,
}

/// Call `visit` with up to [`MAX_ROUNDS`] web views of `raw`, each decoding
/// the previous one and stopping as soon as a pass changes nothing, then with
/// the Unicode and the quoted-printable views of `raw` if they differ; stops
/// early when `visit`
/// returns `true`, and returns whether it did. At most two views are alive
/// at a time (each maps straight to `raw`). Texts over 4 GiB are not decoded
/// (no host limit lets one through).
pub(super) fn any_view(raw: &[u8], mut visit: impl FnMut(&View) -> bool) -> bool {
    if u32::try_from(raw.len()).is_err() {
        return false;
    }
    let mut previous: Option<View> = None;
    for _ in 0..MAX_ROUNDS {
        let input = previous.as_ref().map_or(raw, |v| v.text.as_slice());
        if !web_may_decode(input) {
            break;
        }
        let Some(next) = decode(input, previous.as_ref(), Mode::Web) else {
            break;
        };
        if visit(&next) {
            return true;
        }
        previous = Some(next);
    }
    drop(previous);
    if !raw.is_ascii() && decode(raw, None, Mode::Unicode).is_some_and(|view| visit(&view)) {
        return true;
    }
    quoted_printable_may_decode(raw)
        && decode(raw, None, Mode::QuotedPrintable).is_some_and(|qp| visit(&qp))
}

/// One pass over `input` (which is `previous.text`, or the raw text when
/// `previous` is `None`); `None` when nothing was decoded.
fn decode(input: &[u8], previous: Option<&View>, mode: Mode) -> Option<View> {
    let mut view = View {
        text: Vec::with_capacity(input.len()),
        start: Vec::with_capacity(input.len()),
        end: Vec::with_capacity(input.len()),
    };
    let raw = |from: usize, to: usize| -> (u32, u32) {
        match previous {
            Some(p) => (p.start[from], p.end[to - 1]),
            None => (from as u32, to as u32),
        }
    };
    let mut changed = false;
    let mut i = 0;
    let mut utf8 = [0u8; 4];
    let mut canonical = String::new();
    while i < input.len() {
        let (len, decoded) = unit(&input[i..], mode);
        let bytes: &[u8] = match decoded {
            Decoded::Byte(b) => {
                utf8[0] = b;
                &utf8[..1]
            }
            Decoded::Char(c) if mode == Mode::QuotedPrintable => {
                c.encode_utf8(&mut utf8).as_bytes()
            }
            Decoded::Char(c) => {
                unicode::canonical(c, &mut canonical);
                canonical.as_bytes()
            }
            Decoded::Nothing => &[],
        };
        changed |= bytes != &input[i..i + len];
        let (s, e) = raw(i, i + len);
        for &b in bytes {
            view.text.push(b);
            view.start.push(s);
            view.end.push(e);
        }
        i += len;
    }
    changed.then_some(view)
}

enum Decoded {
    Byte(u8),
    Char(char),
    /// A line break or soft break: removed from the view.
    Nothing,
}

/// The escape at the start of `s` (never empty): its length and what it decodes to.
fn unit(s: &[u8], mode: Mode) -> (usize, Decoded) {
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
fn indent(s: &[u8]) -> usize {
    s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count()
}

/// [`indent`] after an escaped line break, where a tab may be escaped too.
fn escaped_indent(s: &[u8]) -> usize {
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

fn hex_digit(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

fn hex2(pair: Option<&[u8]>) -> Option<u8> {
    let pair = pair?;
    Some((hex_digit(pair[0])? * 16 + hex_digit(pair[1])?) as u8)
}

fn hex4(s: Option<&[u8]>) -> Option<u32> {
    s?.iter()
        .try_fold(0u32, |acc, b| Some(acc * 16 + hex_digit(*b)?))
}

/// A JSON (or C-style `\xHH`) escape.
fn json(s: &[u8]) -> Option<(usize, Decoded)> {
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
const XML_ENTITIES: [(&[u8], char); 5] = [
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
const HTML5_PUNCTUATION: [(&[u8], char); 24] = [
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
fn entity(s: &[u8]) -> Option<(usize, Decoded)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every view of `raw`.
    fn views(raw: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        any_view(raw, |v| {
            out.push(v.text.clone());
            false
        });
        out
    }

    fn last(raw: &str) -> String {
        let views = views(raw.as_bytes());
        String::from_utf8_lossy(views.last().expect("decoded")).into_owned()
    }

    #[test]
    fn each_escape_decodes() {
        assert_eq!(last(r"\u0067h\u0070\/x"), "ghp/x");
        assert_eq!(last(r"\ud83d\ude00"), "\u{1F600}");
        assert_eq!(last("&#103;&#X68;&#x70&amp;"), "ghp&");
        assert_eq!(last("&#00000000103;&#x0000000068;"), "gh");
        assert_eq!(last("%67%2568"), "gh");
        assert_eq!(last("=67=\r\nh=\n"), "gh");
        assert_eq!(views(b"a=67%62")[0], b"a=67b");
        assert_eq!(last("ab\r\ncd\nef"), "abcdef");
        assert_eq!(last(r"\x67\n"), "g");
    }

    #[test]
    fn the_map_points_at_whole_raw_escapes() {
        let mut seen = Vec::new();
        any_view(b"a%2567b", |view| {
            seen.push((
                view.text.clone(),
                view.raw_range(1, 2),
                view.raw_range(0, 3),
            ));
            false
        });
        let (text, one, all) = seen.last().unwrap();
        assert_eq!(text, b"agb");
        assert_eq!(*one, (1, 6));
        assert_eq!(*all, (0, 7));
    }

    #[test]
    fn the_prechecks_skip_only_passes_that_change_nothing() {
        // Base64 with padding: nothing for either pass.
        assert!(!web_may_decode(b"{\"data\":\"iVBORw0KGgo=\"}"));
        assert!(!quoted_printable_may_decode(
            b"{\"data\":\"iVBORw0KGgo==\"}"
        ));
        assert!(views(b"{\"data\":\"iVBORw0KGgo==\"}").is_empty());
        // Everything a pass decodes passes its precheck.
        for qp in [
            &b"a=41b"[..],
            b"a=\r\nb",
            b"a=\nb",
            br"a=\r\nb",
            br"a=\nb",
            b"a\nb",
        ] {
            assert!(quoted_printable_may_decode(qp), "{qp:?}");
            assert!(decode(qp, None, Mode::QuotedPrintable).is_some(), "{qp:?}");
        }
        for web in [
            &br"\u0067"[..],
            b"&#103;",
            b"%67",
            b"a\r\nb",
            "\u{ff47}".as_bytes(),
        ] {
            assert!(web_may_decode(web), "{web:?}");
            assert!(decode(web, None, Mode::Web).is_some(), "{web:?}");
        }
    }

    #[test]
    fn plain_text_has_no_view() {
        assert!(views(b"plain text, 100% sure").is_empty());
        assert!(!may_be_encoded(b"plain"));
    }
}
