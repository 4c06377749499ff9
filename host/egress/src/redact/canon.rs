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
//! percent-encoded percent encoding) need one web pass per level: [`any_text`]
//! runs at most [`MAX_ROUNDS`].
//!
//! Each pass is linear in its input and copies runs of bytes it leaves
//! alone in one go. A view is first made as text alone, which is all a
//! search needs; only a view in which something was found is made again
//! with its map, which keeps, for every byte of the view, the raw range of
//! the escape that produced it, so a match in the view is redacted as whole
//! escapes in the raw text.

mod escapes;

use super::unicode;
use escapes::{Decoded, unit};

/// Passes over nested encodings (percent of percent of JSON escapes...).
pub(super) const MAX_ROUNDS: usize = 3;

/// Whether a web pass may change something at `b` ([`unit`]); all other
/// bytes are copied as they are. (`|`, not `||`: the comparisons of a chunk
/// of bytes run side by side, see [`find`].)
fn web_special(b: u8) -> bool {
    (b >= 0x80) | (b == b'\\') | (b == b'&') | (b == b'%') | (b == b'\r') | (b == b'\n')
}

/// [`web_special`] for a quoted-printable pass.
fn quoted_printable_special(b: u8) -> bool {
    (b == b'=') | (b == b'\r') | (b == b'\n')
}

/// [`web_special`] for a Unicode pass.
fn unicode_special(b: u8) -> bool {
    b >= 0x80
}

/// The position of the first byte of `input` that `special` picks. Tested a
/// chunk at a time without stopping early, folded into a byte, which the
/// compiler turns into vector comparisons: most texts have none or few such
/// bytes.
fn find(input: &[u8], special: impl Fn(u8) -> bool) -> Option<usize> {
    const CHUNK: usize = 64;
    let mut chunks = input.chunks_exact(CHUNK);
    let mut offset = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(0u8, |any, &b| any | u8::from(special(b))) != 0 {
            return chunk.iter().position(|&b| special(b)).map(|at| offset + at);
        }
        offset += CHUNK;
    }
    let rest = chunks.remainder().iter().position(|&b| special(b));
    rest.map(|at| offset + at)
}

/// Whether a web pass could change `input`: only at a line break, `\\`,
/// `&`, `%` or a non-ASCII byte ([`unit`]); `=` is literal there.
fn web_may_decode(input: &[u8]) -> bool {
    find(input, web_special).is_some()
}

/// Whether a quoted-printable pass could change `input`: only at a line
/// break or an `=` that starts an escape or a soft break ([`unit`]). Base64
/// padding (`==` before a quote) is neither, so a long base64 text is not
/// decoded for nothing.
fn quoted_printable_may_decode(input: &[u8]) -> bool {
    quoted_printable_scan(input, true)
}

/// Whether `input` holds a quoted-printable escape or soft break (what a
/// quoted-printable pass decodes besides removing line breaks).
fn quoted_printable_escapes(input: &[u8]) -> bool {
    quoted_printable_scan(input, false)
}

fn quoted_printable_scan(input: &[u8], line_breaks: bool) -> bool {
    let mut at = 0;
    while let Some(skip) = memchr::memchr3(b'=', b'\r', b'\n', &input[at..]) {
        let i = at + skip;
        let decodes = match input[i] {
            b'\r' | b'\n' => line_breaks,
            _ => match input.get(i + 1) {
                Some(b'\r' | b'\n' | b'\\') => true,
                Some(&c) => {
                    c.is_ascii_hexdigit() && input.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
                }
                None => false,
            },
        };
        if decodes {
            return true;
        }
        at = i + 1;
    }
    false
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

/// One canonical view of a raw text: which passes made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// That many web passes, each over the view the one before made.
    Web(usize),
    /// The Unicode pass over the raw text.
    Unicode,
    /// The quoted-printable pass over the raw text.
    QuotedPrintable,
}

/// Call `visit` with the text of each canonical view of `raw` in which
/// `probe` finds something, and the pass that made it; stops as soon as
/// `visit` returns `true`, and returns whether it did.
///
/// The views: up to [`MAX_ROUNDS`] web views, each decoding the previous one
/// and stopping as soon as a pass changes nothing, then the Unicode and the
/// quoted-printable views of `raw` if they differ from it. A view with the
/// same text as the first web view is not probed again when that one found
/// nothing (line breaks are all most binary data holds, and every pass
/// removes them), nor made when that is known beforehand. At most three texts are alive at a time. Texts over 4 GiB
/// are not decoded (no host limit lets one through).
pub(super) fn any_text(
    raw: &[u8],
    probe: impl Fn(&[u8]) -> bool,
    mut visit: impl FnMut(Pass, &[u8]) -> bool,
) -> bool {
    if u32::try_from(raw.len()).is_err() {
        return false;
    }
    // The first web view, whether `probe` found anything in it and what it
    // changed; the latest web view after it.
    let mut first: Option<(Vec<u8>, bool, Change)> = None;
    let mut previous: Option<Vec<u8>> = None;
    for round in 1..=MAX_ROUNDS {
        let input = match (&previous, &first) {
            (Some(text), _) | (None, Some((text, _, _))) => text.as_slice(),
            (None, None) => raw,
        };
        if !web_may_decode(input) {
            break;
        }
        let Some((next, change)) = decode_text(input, Mode::Web) else {
            break;
        };
        let found = probe(&next);
        if found && visit(Pass::Web(round), &next) {
            return true;
        }
        match first {
            None => first = Some((next, found, change)),
            Some(_) => previous = Some(next),
        }
    }
    drop(previous);
    // The first web view removed line breaks alone and held nothing: so
    // does a view of the raw text that removes them and decodes nothing.
    let clean_without_breaks = matches!(first, Some((_, false, Change::LineBreaks)));
    let mut other = |pass: Pass, mode: Mode| {
        let Some((text, _)) = decode_text(raw, mode) else {
            return false;
        };
        let known_clean = first
            .as_ref()
            .is_some_and(|(seen, found, _)| !found && *seen == text);
        !known_clean && probe(&text) && visit(pass, &text)
    };
    let quoted_printable = if clean_without_breaks {
        quoted_printable_escapes(raw)
    } else {
        quoted_printable_may_decode(raw)
    };
    (!raw.is_ascii() && other(Pass::Unicode, Mode::Unicode))
        || (quoted_printable && other(Pass::QuotedPrintable, Mode::QuotedPrintable))
}

/// The view `pass` makes of `raw`, with its map back to `raw` (the text
/// [`any_text`] gave with `pass`).
pub(super) fn mapped(raw: &[u8], pass: Pass) -> View {
    let once = |input: &[u8], previous: Option<&View>, mode: Mode| {
        let mut sink = Mapped::new(input.len(), previous);
        decode(input, mode, &mut sink);
        sink.view
    };
    match pass {
        Pass::Unicode => once(raw, None, Mode::Unicode),
        Pass::QuotedPrintable => once(raw, None, Mode::QuotedPrintable),
        Pass::Web(rounds) => {
            let mut view = once(raw, None, Mode::Web);
            for _ in 1..rounds {
                view = once(&view.text, Some(&view), Mode::Web);
            }
            view
        }
    }
}

/// One pass over `input`, as text alone, and what it changed; `None` when
/// nothing was decoded.
fn decode_text(input: &[u8], mode: Mode) -> Option<(Vec<u8>, Change)> {
    let mut text = Vec::new();
    let change = decode(input, mode, &mut text);
    (change > Change::Nothing).then_some((text, change))
}

/// Where a pass writes its view.
trait Sink {
    /// Whether an unchanged multi-byte unit (a character already in
    /// canonical form) is written as one, each of its bytes mapped to all of
    /// it, rather than copied with the bytes around it.
    const WHOLE_UNITS: bool;
    /// Write `input[from..to]`, unchanged.
    fn copy(&mut self, input: &[u8], from: usize, to: usize);
    /// Write `bytes`, what `input[from..to]` decodes to.
    fn push(&mut self, bytes: &[u8], from: usize, to: usize);
}

/// The text alone.
impl Sink for Vec<u8> {
    const WHOLE_UNITS: bool = false;

    fn copy(&mut self, input: &[u8], from: usize, to: usize) {
        if self.capacity() == 0 {
            self.reserve_exact(input.len());
        }
        self.extend_from_slice(&input[from..to]);
    }

    fn push(&mut self, bytes: &[u8], _from: usize, _to: usize) {
        self.extend_from_slice(bytes);
    }
}

/// The text and its map to the raw text: `previous` is the view `input` is
/// the text of, or `None` when `input` is the raw text.
struct Mapped<'p> {
    view: View,
    previous: Option<&'p View>,
}

impl<'p> Mapped<'p> {
    fn new(len: usize, previous: Option<&'p View>) -> Self {
        Self {
            view: View {
                text: Vec::with_capacity(len),
                start: Vec::with_capacity(len),
                end: Vec::with_capacity(len),
            },
            previous,
        }
    }
}

impl Sink for Mapped<'_> {
    const WHOLE_UNITS: bool = true;

    fn copy(&mut self, input: &[u8], from: usize, to: usize) {
        let view = &mut self.view;
        view.text.extend_from_slice(&input[from..to]);
        match self.previous {
            Some(p) => {
                view.start.extend_from_slice(&p.start[from..to]);
                view.end.extend_from_slice(&p.end[from..to]);
            }
            // Texts are under 4 GiB (`any_text`).
            None => {
                view.start.extend(from as u32..to as u32);
                view.end.extend(from as u32 + 1..=to as u32);
            }
        }
    }

    fn push(&mut self, bytes: &[u8], from: usize, to: usize) {
        let (start, end) = match self.previous {
            Some(p) => (p.start[from], p.end[to - 1]),
            None => (from as u32, to as u32),
        };
        let view = &mut self.view;
        for &b in bytes {
            view.text.push(b);
            view.start.push(start);
            view.end.push(end);
        }
    }
}

/// What a pass changed, least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Change {
    Nothing,
    /// Line breaks (and the indents after them) removed, nothing else.
    LineBreaks,
    /// Escapes decoded or characters put in canonical form.
    More,
}

/// One pass over `input` into `sink`; what it changed (when nothing, `sink`
/// may hold only part of the text).
fn decode<S: Sink>(input: &[u8], mode: Mode, sink: &mut S) -> Change {
    match mode {
        Mode::Web => decode_at(input, mode, sink, web_special),
        Mode::QuotedPrintable => decode_at(input, mode, sink, quoted_printable_special),
        Mode::Unicode => decode_at(input, mode, sink, unicode_special),
    }
}

/// [`decode`], where `special` picks the bytes `mode` may change.
fn decode_at<S: Sink>(
    input: &[u8],
    mode: Mode,
    sink: &mut S,
    special: impl Fn(u8) -> bool,
) -> Change {
    let mut change = Change::Nothing;
    // The start of the bytes left as they are and not yet written.
    let mut pending = 0;
    let mut i = 0;
    let mut utf8 = [0u8; 4];
    let mut canonical = String::new();
    while let Some(skip) = find(&input[i..], &special) {
        i += skip;
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
        let same = bytes == &input[i..i + len];
        if !same || (S::WHOLE_UNITS && len > 1) {
            sink.copy(input, pending, i);
            sink.push(bytes, i, i + len);
            pending = i + len;
            if !same {
                let this = match input[i] {
                    b'\r' | b'\n' => Change::LineBreaks,
                    _ => Change::More,
                };
                change = change.max(this);
            }
        }
        i += len;
    }
    if change > Change::Nothing {
        sink.copy(input, pending, input.len());
    }
    change
}

#[cfg(test)]
mod tests;
