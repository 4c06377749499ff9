//! The search behind [`super::Redactor`]: every form of every staged secret,
//! ASCII case folded, found anywhere in a text.
//!
//! A redactor is built for every call (and, in the hosted-MCP lane, every
//! request), while most texts it searches are small. So the search is built
//! for cheap construction: one SIMD substring searcher per form (building
//! them costs next to nothing) over a lowercased copy of the text. A text
//! larger than [`LARGE`] (an image's base64, a long page) is first scanned
//! for the *anchors* of the forms, their first [`ANCHOR`] bytes, with
//! aho-corasick's packed SIMD searchers (Teddy; up to [`PER_PACKED`]
//! anchors each), several gigabytes a second; only the windows around an
//! anchor found are searched for whole forms. Where that cannot work (a
//! form shorter than an anchor, a CPU without the instructions) and for a
//! window that is itself large, an Aho-Corasick automaton searches instead,
//! linear in the text whatever the number of forms, built once on first
//! need.
//! Both report every occurrence of every form, overlapping ones included —
//! of two forms, or of one form with itself — and overlaps are merged when
//! replaced, so they redact the same bytes. (A search that skipped an
//! occurrence overlapping an earlier one would leave its tail: a secret's
//! UTF-16LE form followed by its UTF-16BE form shifted by one byte shares
//! bytes with it, and a self-overlapping secret overlaps itself.)
//!
//! A range also covers its form's [`Margin`]: the characters of a base64 or
//! base32 encoding next to it that still hold bits of the secret.

use std::sync::{Arc, OnceLock};

use aho_corasick::packed;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use memchr::memmem::Finder;
use zeroize::Zeroizing;

use super::forms::{Form, Margin};

/// Texts from this size up are searched through their anchors.
const LARGE: usize = 64 << 10;

/// The bytes of a form that anchor it: its first ones.
const ANCHOR: usize = 4;

/// Anchors per packed searcher (Teddy's limit).
const PER_PACKED: usize = 64;

/// The piece of a large text lowercased at a time to find anchors in.
const FOLD_PIECE: usize = 32 << 10;

/// The searchers of one redactor's forms.
#[derive(Clone)]
pub(super) struct Search {
    inner: Arc<Inner>,
}

struct Inner {
    /// One searcher per lowercased form.
    finders: Vec<Finder<'static>>,
    /// The forms, for the automaton.
    forms: Vec<Zeroizing<Vec<u8>>>,
    /// The margin of each form.
    margins: Vec<Margin>,
    automaton: OnceLock<Option<AhoCorasick>>,
    anchors: OnceLock<Option<Anchors>>,
}

/// The packed searchers of the forms' anchors, and how far a form reaches
/// past the start of its anchor.
struct Anchors {
    searchers: Vec<packed::Searcher>,
    reach: usize,
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("forms", &self.inner.forms.len())
            .finish_non_exhaustive()
    }
}

impl Search {
    /// A search for `forms` (non-empty).
    pub(super) fn new(forms: Vec<Form>) -> Self {
        let mut forms: Vec<(Zeroizing<Vec<u8>>, Margin)> = forms
            .into_iter()
            .map(|f| (Zeroizing::new(f.bytes.to_ascii_lowercase()), f.margin))
            .collect();
        forms.sort_by(|a, b| a.0.as_slice().cmp(b.0.as_slice()));
        // The same bytes from two forms keep the wider margin.
        forms.dedup_by(|next, kept| {
            let same = next.0.as_slice() == kept.0.as_slice();
            if same {
                kept.1 = kept.1.max(next.1);
            }
            same
        });
        let finders = forms
            .iter()
            .map(|(f, _)| Finder::new(f.as_slice()).into_owned())
            .collect();
        let (forms, margins): (Vec<_>, Vec<_>) = forms.into_iter().unzip();
        Self {
            inner: Arc::new(Inner {
                finders,
                forms,
                margins,
                automaton: OnceLock::new(),
                anchors: OnceLock::new(),
            }),
        }
    }

    fn automaton(&self) -> Option<&AhoCorasick> {
        self.inner
            .automaton
            .get_or_init(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    // Standard: the only kind that reports overlapping matches.
                    .match_kind(MatchKind::Standard)
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .build(self.inner.forms.iter().map(|p| p.as_slice()))
                    .ok()
            })
            .as_ref()
    }

    /// The anchors' searchers; `None` when a form is shorter than an
    /// anchor or the CPU has no packed searcher.
    fn anchors(&self) -> Option<&Anchors> {
        self.inner
            .anchors
            .get_or_init(|| {
                let forms = &self.inner.forms;
                if forms.iter().any(|f| f.len() < ANCHOR) {
                    return None;
                }
                let mut anchors: Vec<&[u8]> = forms.iter().map(|f| &f[..ANCHOR]).collect();
                anchors.sort_unstable();
                anchors.dedup();
                let searchers = anchors
                    .chunks(PER_PACKED)
                    .map(|chunk| {
                        let mut builder = packed::Config::new()
                            .match_kind(packed::MatchKind::LeftmostFirst)
                            .builder();
                        builder.extend(chunk);
                        builder.build()
                    })
                    .collect::<Option<Vec<_>>>()?;
                let reach = forms.iter().map(|f| f.len()).max().unwrap_or(0);
                Some(Anchors { searchers, reach })
            })
            .as_ref()
    }

    /// The parts of a large `text` a form may occur in, in order and
    /// disjoint; `None` when the whole text is to be searched.
    ///
    /// A packed searcher reports leftmost-first matches without overlaps, so
    /// an anchor it does not report starts inside one it reports (the search
    /// resumes at the end of each). A form whose anchor starts at `a` lies
    /// in `[a, a + reach)`; with `a` in `[p, p + ANCHOR)` for a reported
    /// anchor at `p`, it lies in `[p, p + ANCHOR - 1 + reach)`.
    fn windows(&self, text: &[u8]) -> Option<Vec<(usize, usize)>> {
        let anchors = self.anchors()?;
        let mut windows = Vec::new();
        // Lowercased a piece at a time (it stays in cache), each piece with
        // the first bytes of the next so that an anchor across the border is
        // seen; one starting in those bytes is left to the next piece, which
        // starts afresh there.
        let mut folded = Zeroizing::new(Vec::with_capacity(FOLD_PIECE + ANCHOR));
        for from in (0..text.len()).step_by(FOLD_PIECE) {
            let to = (from + FOLD_PIECE + ANCHOR - 1).min(text.len());
            folded.clear();
            folded.extend(text[from..to].iter().map(u8::to_ascii_lowercase));
            for searcher in &anchors.searchers {
                for found in searcher.find_iter(folded.as_slice()) {
                    let start = from + found.start();
                    if start >= from + FOLD_PIECE {
                        break;
                    }
                    let end = (start + ANCHOR - 1 + anchors.reach).min(text.len());
                    windows.push((start, end));
                }
            }
        }
        windows.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(windows.len());
        for (start, end) in windows {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Some(merged)
    }

    /// Call `found` with every occurrence of every form in `text` (start,
    /// end, form), in order of their ends for each part searched; stops
    /// when `found` returns `true`, and returns whether it did.
    fn each(&self, text: &[u8], mut found: impl FnMut(usize, usize, usize) -> bool) -> bool {
        if text.len() < LARGE {
            return self.each_small(text, 0, &mut found);
        }
        let windows = self.windows(text);
        let whole = [(0, text.len())];
        for &(start, end) in windows.as_deref().unwrap_or(&whole) {
            let part = &text[start..end];
            let stop = match self.automaton().filter(|_| part.len() >= LARGE) {
                Some(ac) => ac
                    .find_overlapping_iter(part)
                    .any(|m| found(start + m.start(), start + m.end(), m.pattern().as_usize())),
                None => self.each_small(part, start, &mut found),
            };
            if stop {
                return true;
            }
        }
        false
    }

    /// [`Search::each`] with the substring searchers, over `text` found at
    /// `offset` of the text searched.
    fn each_small(
        &self,
        text: &[u8],
        offset: usize,
        found: &mut impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        let folded = Zeroizing::new(text.to_ascii_lowercase());
        for (form, finder) in self.inner.finders.iter().enumerate() {
            let len = finder.needle().len();
            // `find_iter` skips occurrences overlapping the last one found:
            // search again from the byte after each start instead.
            let mut from = 0;
            while let Some(at) = finder.find(&folded[from..]) {
                let start = from + at;
                if found(offset + start, offset + start + len, form) {
                    return true;
                }
                from = start + 1;
            }
        }
        false
    }

    /// Whether any form occurs in `text`.
    pub(super) fn is_match(&self, text: &[u8]) -> bool {
        self.each(text, |_, _, _| true)
    }

    /// Byte ranges covering every occurrence of every form in `text`.
    /// Occurrences that overlap the one found just before are merged into
    /// its range as they are found, so a repetitive text cannot make this
    /// hold a range per byte.
    pub(super) fn ranges(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        self.each(text, |start, end, form| {
            let margin = self.inner.margins[form];
            add(&mut ranges, widen(text, (start, end), margin));
            false
        });
        ranges
    }
}

/// `range` widened over up to `margin`'s width of its characters on each side.
fn widen(text: &[u8], (start, end): (usize, usize), margin: Margin) -> (usize, usize) {
    let width = margin.width();
    let before = text[..start]
        .iter()
        .rev()
        .take(width)
        .take_while(|b| margin.allows(**b))
        .count();
    let after = text[end..]
        .iter()
        .take(width)
        .take_while(|b| margin.allows(**b))
        .count();
    (start - before, end + after)
}

/// Push `range`, or widen the last range when the two overlap.
fn add(ranges: &mut Vec<(usize, usize)>, (start, end): (usize, usize)) {
    match ranges.last_mut() {
        Some(last) if start <= last.1 && end >= last.0 => {
            *last = (last.0.min(start), last.1.max(end));
        }
        _ => ranges.push((start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(bytes: &[u8]) -> Form {
        Form {
            bytes: Zeroizing::new(bytes.to_vec()),
            margin: Margin::None,
        }
    }

    /// The bytes `ranges` cover, as sorted disjoint ranges.
    fn covered(mut ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
        ranges.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (start, end) in ranges {
            match out.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => out.push((start, end)),
            }
        }
        out
    }

    #[test]
    fn small_and_large_texts_find_the_same_forms_case_folded() {
        let search = Search::new(vec![plain(b"Secret-Token"), plain(b"token-x")]);
        let text = b"a SECRET-TOKEN-X b secret-token";
        // `token-x` overlaps `secret-token`: both are covered.
        let small = covered(search.ranges(text));
        assert_eq!(small, [(2, 16), (19, 31)]);
        assert!(search.is_match(text));
        assert!(!search.is_match(b"nothing here"));
        // The same text padded past the threshold goes through the automaton.
        let mut large = vec![b'.'; LARGE];
        large.extend_from_slice(text);
        let found = covered(search.ranges(&large));
        let shifted: Vec<_> = small.iter().map(|(s, e)| (s + LARGE, e + LARGE)).collect();
        assert_eq!(found, shifted, "the overlapping `token-x` too");
        assert!(search.is_match(&large));
    }

    #[test]
    fn a_form_overlapping_itself_is_found_at_every_start() {
        let search = Search::new(vec![plain(b"abcab")]);
        // `abcab` at 0 and at 3: the second shares `ab` with the first and
        // would leave `cab` if skipped.
        let text = b"abcabcab";
        assert_eq!(covered(search.ranges(text)), [(0, 8)]);
        let mut large = vec![b'.'; LARGE];
        large.extend_from_slice(text);
        assert_eq!(covered(search.ranges(&large)), [(LARGE, LARGE + 8)]);
    }

    #[test]
    fn a_repetitive_text_is_one_range_not_one_per_byte() {
        let search = Search::new(vec![plain(b"aaaa")]);
        for len in [LARGE - 1, 4 * LARGE] {
            let text = vec![b'a'; len];
            assert_eq!(search.ranges(&text), [(0, len)], "{len} bytes");
        }
    }

    /// What the automaton alone finds in `text`, covered.
    fn by_automaton(search: &Search, text: &[u8]) -> Vec<(usize, usize)> {
        let ac = search.automaton().expect("automaton");
        let mut ranges = Vec::new();
        for m in ac.find_overlapping_iter(text) {
            let margin = search.inner.margins[m.pattern().as_usize()];
            add(&mut ranges, widen(text, (m.start(), m.end()), margin));
        }
        covered(ranges)
    }

    /// Anchors that overlap: the packed searcher reports `abcd` and not
    /// the `bcde` inside it, whose form is still found in the window.
    #[test]
    fn a_form_whose_anchor_is_not_reported_is_found_in_the_window() {
        let search = Search::new(vec![plain(b"abcdzzzz"), plain(b"bcdeyyyy")]);
        assert!(search.anchors().is_some(), "packed searchers on this CPU");
        let mut text = vec![b'.'; LARGE];
        text.extend_from_slice(b"xABCDEYYYYx");
        assert_eq!(covered(search.ranges(&text)), [(LARGE + 2, LARGE + 10)]);
        assert!(search.is_match(&text));
        assert!(!search.is_match(&text[..LARGE + 8]));
        // Across the border of two pieces lowercased apart.
        for at in FOLD_PIECE - 4..FOLD_PIECE + 2 {
            let mut text = vec![b'.'; LARGE];
            text[at..at + 8].copy_from_slice(b"BCDEYYYY");
            assert_eq!(covered(search.ranges(&text)), [(at, at + 8)], "{at}");
        }
    }

    /// Random texts over a small alphabet, dense with anchors, forms and
    /// their overlaps, more forms than one packed searcher takes: the
    /// anchored search finds what the automaton finds over the whole text.
    #[test]
    fn the_anchored_search_finds_what_the_automaton_finds() {
        let mut state = 0x2545_f491_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        let alphabet = b"abcAB=";
        let mut forms = Vec::new();
        for i in 0..(PER_PACKED + 20) {
            let len = ANCHOR + 2 + i % 9;
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[next() as usize % alphabet.len()])
                .collect();
            let margin = if i % 3 == 0 {
                Margin::Base64(1)
            } else {
                Margin::None
            };
            forms.push(Form {
                bytes: Zeroizing::new(bytes),
                margin,
            });
        }
        let search = Search::new(forms);
        assert!(search.inner.forms.len() > PER_PACKED);
        for round in 0..4 {
            let len = LARGE + round * 7919;
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[next() as usize % alphabet.len()])
                .collect();
            // Sparse too: runs of the text between bytes no form holds, so
            // the anchors found make windows of their own.
            let mut sparse = vec![b'.'; len];
            let mut at = 0;
            while at < len {
                let run = (next() as usize % 24).min(len - at);
                sparse[at..at + run].copy_from_slice(&text[at..at + run]);
                at += run + 16 + next() as usize % 48;
            }
            assert!(search.windows(&sparse).expect("anchors").len() > 100);
            for text in [text, sparse] {
                let expected = by_automaton(&search, &text);
                assert!(expected.len() > 10, "forms occur");
                assert_eq!(covered(search.ranges(&text)), expected);
            }
        }
    }

    #[test]
    fn a_margin_covers_its_alphabet_only_and_at_most_its_width() {
        let search = Search::new(vec![Form {
            bytes: Zeroizing::new(b"CORE".to_vec()),
            margin: Margin::Base64(1),
        }]);
        // One base64 character each side; `=` and a space are not base64.
        assert_eq!(search.ranges(b"xxCOREo="), [(1, 7)]);
        assert_eq!(search.ranges(b" CORE="), [(1, 5)]);
        let mut large = vec![b' '; LARGE];
        large.extend_from_slice(b"aCOREbc");
        assert_eq!(search.ranges(&large), [(LARGE, LARGE + 6)]);
    }
}
