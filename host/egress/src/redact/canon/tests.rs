use super::*;

/// The text of every view of `raw`, each checked against the view
/// made with its map.
fn views(raw: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    any_text(
        raw,
        |_| true,
        |pass, text| {
            assert_eq!(mapped(raw, pass).text, text, "{pass:?} of {raw:?}");
            out.push(text.to_vec());
            false
        },
    );
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
    let view = mapped(b"a%2567b", Pass::Web(2));
    assert_eq!(view.text, b"agb");
    assert_eq!(view.raw_range(1, 2), (1, 6));
    assert_eq!(view.raw_range(0, 3), (0, 7));
    // A character left as it is maps to all of its bytes.
    let view = mapped("\u{e9}\r\nx".as_bytes(), Pass::Web(1));
    assert_eq!(view.text, "\u{e9}x".as_bytes());
    assert_eq!(view.raw_range(1, 2), (0, 2));
    assert_eq!(view.raw_range(2, 3), (4, 5));
}

#[test]
fn views_of_binary_data_match_their_maps() {
    // Every byte value, a PNG signature, escapes cut off at the end.
    let mut bytes: Vec<u8> = (0..=255).collect();
    bytes.extend_from_slice(b"\x89PNG\r\n\x1a\n\0\0%4");
    bytes.extend_from_slice("\u{200b}\u{ff47}&#103;=4".as_bytes());
    let mut state = 0x9e37_79b9_u32;
    for _ in 0..4096 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state.to_le_bytes()[0]);
    }
    for window in bytes.chunks(97).chain([bytes.as_slice()]) {
        views(window);
    }
    assert!(views(&bytes).len() >= 2, "web and quoted-printable views");
}

/// A view with the text of the first web view in which nothing was
/// found is not probed again; one in which something was is.
#[test]
fn a_repeated_clean_view_is_probed_once() {
    let raw = b"ab\r\ncd";
    let probed = std::cell::Cell::new(0);
    any_text(
        raw,
        |_| {
            probed.set(probed.get() + 1);
            false
        },
        |_, _| false,
    );
    assert_eq!(probed.get(), 1, "the web view only");
    // A quoted-printable escape makes a view of its own.
    probed.set(0);
    any_text(
        b"ab\r\n=41",
        |text| {
            probed.set(probed.get() + 1);
            text == b"abA"
        },
        |pass, _| pass == Pass::QuotedPrintable,
    );
    assert_eq!(probed.get(), 2);
    let mut visited = Vec::new();
    any_text(
        raw,
        |_| true,
        |pass, _| {
            visited.push(pass);
            false
        },
    );
    assert_eq!(visited, [Pass::Web(1), Pass::QuotedPrintable]);
}

#[test]
fn the_prechecks_skip_only_passes_that_change_nothing() {
    // Base64 with padding: nothing for either pass.
    assert!(!web_may_decode(b"{\"data\":\"iVBORw0KGgo=\"}"));
    assert!(!quoted_printable_may_decode(
        b"{\"data\":\"iVBORw0KGgo==\"}"
    ));
    assert!(views(b"{\"data\":\"iVBORw0KGgo==\"}").is_empty());
    assert!(quoted_printable_may_decode(b"x==y=41"));
    assert!(!quoted_printable_may_decode(b"abc=="));
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
        assert!(decode_text(qp, Mode::QuotedPrintable).is_some(), "{qp:?}");
    }
    for web in [
        &br"\u0067"[..],
        b"&#103;",
        b"%67",
        b"a\r\nb",
        "\u{ff47}".as_bytes(),
    ] {
        assert!(web_may_decode(web), "{web:?}");
        assert!(decode_text(web, Mode::Web).is_some(), "{web:?}");
    }
}

#[test]
fn find_sees_a_special_byte_anywhere_in_and_between_chunks() {
    for len in [0, 1, 31, 32, 33, 64, 100] {
        let mut text = vec![b'a'; len];
        assert_eq!(find(&text, web_special), None, "{len}");
        for at in 0..len {
            text[at] = b'%';
            assert_eq!(find(&text, web_special), Some(at), "{len} {at}");
            text[at] = 0xE2;
            assert_eq!(find(&text, unicode_special), Some(at), "{len} {at}");
            assert_eq!(find(&text, quoted_printable_special), None);
            text[at] = b'a';
        }
    }
}

/// The passes skip the bytes their `*_special` does not pick: each must
/// be one `unit` leaves as it is, whatever follows it.
#[test]
fn every_byte_a_pass_skips_is_one_it_leaves_alone() {
    for mode in [Mode::Web, Mode::QuotedPrintable, Mode::Unicode] {
        let special = match mode {
            Mode::Web => web_special,
            Mode::QuotedPrintable => quoted_printable_special,
            Mode::Unicode => unicode_special,
        };
        for b in (0..=255u8).filter(|b| !special(*b)) {
            for rest in [&b""[..], b"41", b"#103;", b"u0067", b"\r\n", b"\xa9"] {
                let mut unit_text = vec![b];
                unit_text.extend_from_slice(rest);
                let (len, decoded) = unit(&unit_text, mode);
                assert!(
                    len == 1 && matches!(decoded, Decoded::Byte(d) if d == b),
                    "{mode:?} changes {b:#04x} before {rest:?}"
                );
            }
        }
    }
}

#[test]
fn plain_text_has_no_view() {
    assert!(views(b"plain text, 100% sure").is_empty());
}
