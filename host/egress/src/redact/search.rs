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

use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use memchr::memmem::Finder;
use zeroize::Zeroizing;

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
    /// A search for `forms` (non-empty, deduplicated).
    pub(super) fn new(forms: Vec<Zeroizing<Vec<u8>>>) -> Self {
        let mut forms: Vec<Zeroizing<Vec<u8>>> = forms
            .into_iter()
            .map(|f| Zeroizing::new(f.to_ascii_lowercase()))
            .collect();
        forms.sort_by(|a, b| a.as_slice().cmp(b.as_slice()));
        forms.dedup_by(|a, b| a.as_slice() == b.as_slice());
        let finders = forms
            .iter()
            .map(|f| Finder::new(f.as_slice()).into_owned())
            .collect();
        Self {
            inner: Arc::new(Inner {
                finders,
                forms,
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
                add(&mut ranges, (m.start(), m.end()));
            }
            return ranges;
        }
        let folded = Zeroizing::new(text.to_ascii_lowercase());
        for finder in &self.inner.finders {
            let len = finder.needle().len();
            // `find_iter` skips occurrences overlapping the last one found:
            // search again from the byte after each start instead.
            let mut from = 0;
            while let Some(at) = finder.find(&folded[from..]) {
                let start = from + at;
                add(&mut ranges, (start, start + len));
                from = start + 1;
            }
        }
        ranges
    }
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
        let search = Search::new(vec![
            Zeroizing::new(b"Secret-Token".to_vec()),
            Zeroizing::new(b"token-x".to_vec()),
        ]);
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
        let search = Search::new(vec![Zeroizing::new(b"abcab".to_vec())]);
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
        let search = Search::new(vec![Zeroizing::new(b"aaaa".to_vec())]);
        for len in [LARGE - 1, 4 * LARGE] {
            let text = vec![b'a'; len];
            assert_eq!(search.ranges(&text), [(0, len)], "{len} bytes");
        }
    }
}
