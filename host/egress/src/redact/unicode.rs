//! What the canonical views do to a non-ASCII character: drop it when it is
//! default-ignorable, otherwise take its NFKC form.
//!
//! Default-ignorable code points (Unicode's `Default_Ignorable_Code_Point`:
//! zero-width spaces and joiners, the soft hyphen, bidi controls, variation
//! selectors, tags, invisible fillers) are the characters a renderer shows as
//! nothing, so a token with them between its characters still reads as the
//! token — to a person and to a model. NFKC maps compatibility variants onto
//! the characters they stand for (fullwidth `ｇ`, mathematical `𝐠`, circled
//! `ⓖ`, ligatures), which read as those characters too. Both are applied per
//! character, so each byte of a view maps back to the one raw character it
//! came from (a secret is matched in its characters' NFKC forms; composing a
//! base character with a combining mark that follows it would only produce
//! characters no token alphabet holds).

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// `Default_Ignorable_Code_Point` (DerivedCoreProperties.txt, Unicode 15.1),
/// as inclusive ranges.
const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether `c` is a default-ignorable code point (shown as nothing).
pub(crate) fn is_default_ignorable(c: char) -> bool {
    let c = u32::from(c);
    DEFAULT_IGNORABLE
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Write what a view holds for `c` into `out` (cleared first): nothing for a
/// default-ignorable character, its NFKC form otherwise.
pub(super) fn canonical(c: char, out: &mut String) {
    out.clear();
    if is_default_ignorable(c) {
        return;
    }
    if c.is_ascii() || is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes {
        out.push(c);
    } else {
        out.extend(c.nfkc());
    }
}

/// The character UTF-8 encoded at the start of `s`, and its length; `None`
/// when `s` does not start with a whole multi-byte character.
pub(super) fn char_at(s: &[u8]) -> Option<(usize, char)> {
    let len = match s.first()? {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let c = std::str::from_utf8(s.get(..len)?).ok()?.chars().next()?;
    Some((len, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(c: char) -> String {
        let mut out = String::new();
        canonical(c, &mut out);
        out
    }

    #[test]
    fn invisible_characters_are_dropped_and_variants_folded() {
        for c in [
            '\u{200B}',
            '\u{00AD}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{202E}',
            '\u{E0067}',
        ] {
            assert_eq!(view(c), "", "{:X}", u32::from(c));
        }
        assert_eq!(view('ｇ'), "g");
        assert_eq!(view('Ｚ'), "Z");
        assert_eq!(view('𝐠'), "g");
        assert_eq!(view('ﬁ'), "fi");
        assert_eq!(view('é'), "é");
        assert_eq!(view('a'), "a");
        assert!(!is_default_ignorable('\u{2070}'));
        assert_eq!(char_at("ｇx".as_bytes()), Some((3, 'ｇ')));
        assert_eq!(char_at(b"\xef\xbd"), None);
    }
}
