//! The search behind [`super::Redactor`]: every form of every staged secret,
//! ASCII case folded, found anywhere in a text.
//!
//! A redactor is built for every call (and, in the hosted-MCP lane, every
//! request), while most texts it searches are small. So the search is built
//! for cheap construction: one SIMD substring searcher per form (building
//! them costs next to nothing) over a lowercased copy of the text. A text
//! larger than [`LARGE`] is searched with an Aho-Corasick automaton instead,
//! linear in the text whatever the number of forms, built once on first need.
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

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use memchr::memmem::Finder;
use zeroize::Zeroizing;

use super::forms::{Form, Margin};

/// Texts from this size up are searched with the automaton.
const LARGE: usize = 64 << 10;

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

    /// Whether any form occurs in `text`.
    pub(super) fn is_match(&self, text: &[u8]) -> bool {
        if text.len() >= LARGE
            && let Some(ac) = self.automaton()
        {
            return ac.is_match(text);
        }
        let folded = Zeroizing::new(text.to_ascii_lowercase());
        self.inner
            .finders
            .iter()
            .any(|f| f.find(folded.as_slice()).is_some())
    }

    /// Byte ranges covering every occurrence of every form in `text`.
    /// Occurrences that overlap the one found just before are merged into
    /// its range as they are found, so a repetitive text cannot make this
    /// hold a range per byte.
    pub(super) fn ranges(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        if text.len() >= LARGE
            && let Some(ac) = self.automaton()
        {
            for m in ac.find_overlapping_iter(text) {
                let margin = self.inner.margins[m.pattern().as_usize()];
                add(&mut ranges, widen(text, (m.start(), m.end()), margin));
            }
            return ranges;
        }
        let folded = Zeroizing::new(text.to_ascii_lowercase());
        for (finder, &margin) in self.inner.finders.iter().zip(&self.inner.margins) {
            let len = finder.needle().len();
            // `find_iter` skips occurrences overlapping the last one found:
            // search again from the byte after each start instead.
            let mut from = 0;
            while let Some(at) = finder.find(&folded[from..]) {
                let start = from + at;
                add(&mut ranges, widen(&folded, (start, start + len), margin));
                from = start + 1;
            }
        }
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
