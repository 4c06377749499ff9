//! Text from outside (a guest, a remote server, a manifest) as a terminal
//! would take it.

/// Whether a terminal acts on `c` rather than showing it: a C0 or C1
/// control (ESC, BEL, CR, CSI U+009B, ...), DEL, or a character that
/// changes the order or the lines of what it shows (bidirectional marks,
/// overrides and isolates; the line and paragraph separators).
pub fn is_terminal_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}
