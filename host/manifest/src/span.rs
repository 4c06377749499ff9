//! Source locations: byte spans, TOML paths and a line index to turn one into the other.

use std::ops::Range;

/// Where a value sits in the manifest: its TOML path and byte span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct At {
    /// TOML path, e.g. `tools[3].credentials[0].audience.host` (empty for the root).
    pub(crate) path: String,
    /// Byte range in the manifest text.
    pub(crate) span: Range<usize>,
}

impl At {
    /// The root of the document.
    pub(crate) fn root() -> Self {
        At {
            path: String::new(),
            span: 0..0,
        }
    }

    /// The location of `key` below this one.
    pub(crate) fn key(&self, key: &str, span: Range<usize>) -> Self {
        let key = quote_key(key);
        let path = if self.path.is_empty() {
            key
        } else {
            format!("{}.{key}", self.path)
        };
        At { path, span }
    }

    /// The location of element `index` of the array at this location.
    pub(crate) fn index(&self, index: usize, span: Range<usize>) -> Self {
        At {
            path: format!("{}[{index}]", self.path),
            span,
        }
    }
}

/// A value with its location.
#[derive(Debug, Clone)]
pub(crate) struct L<T> {
    pub(crate) v: T,
    pub(crate) at: At,
}

/// Quote a key when it is not a bare TOML key.
fn quote_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// Maps byte offsets to 1-based line and column (columns count characters).
#[derive(Debug, Clone)]
pub(crate) struct LineIndex<'s> {
    text: &'s str,
    starts: Vec<usize>,
}

impl<'s> LineIndex<'s> {
    pub(crate) fn new(text: &'s str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// 1-based (line, column) of byte `offset`.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// The text of 1-based `line`, without its line break.
    pub(crate) fn line_text(&self, line: usize) -> &'s str {
        let start = self
            .starts
            .get(line - 1)
            .copied()
            .unwrap_or(self.text.len());
        let end = self.starts.get(line).copied().unwrap_or(self.text.len());
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_keys_and_indices() {
        let at = At::root()
            .key("tools", 0..1)
            .index(3, 0..1)
            .key("credentials", 0..1);
        assert_eq!(
            at.index(0, 0..1).key("host", 0..1).path,
            "tools[3].credentials[0].host"
        );
        assert_eq!(
            At::root().key("auth", 0..1).key("a.b", 0..1).path,
            "auth.\"a.b\""
        );
    }

    #[test]
    fn line_index_counts_from_one() {
        let index = LineIndex::new("a = 1\nbé = 2\n");
        assert_eq!(index.line_col(0), (1, 1));
        assert_eq!(index.line_col(6), (2, 1));
        assert_eq!(index.line_col(10), (2, 4));
        assert_eq!(index.line_text(2), "bé = 2");
    }
}
