//! Diagnostics: every problem of a manifest, with file, TOML path, line, column and help.

mod code;
mod render;

pub use code::Code;

use crate::span::{At, LineIndex};

/// One problem found in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// Stable rule code.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// The manifest file, as the loader names it.
    pub file: String,
    /// TOML path of the offending value (`tools[3].credentials[0].audience.host`); empty for the root.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What to do about it.
    pub help: String,
    /// Extra context (for example the schema compiler's message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The source line and caret width, for the human rendering.
    #[serde(skip)]
    pub(crate) snippet: Snippet,
}

/// The source line a diagnostic points into.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snippet {
    pub(crate) text: String,
    pub(crate) width: usize,
}

/// All problems of one manifest; the error of a failed load.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[error("{}", self.render())]
pub struct Diagnostics {
    /// The problems, ordered by position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Number of problems.
    pub fn len(&self) -> usize {
        self.diagnostics.len()
    }

    /// Whether there is no problem.
    pub fn is_empty(&self) -> bool {
        self.diagnostics.is_empty()
    }

    /// Iterate over the problems.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.diagnostics.iter()
    }

    /// The codes of all problems, in order.
    pub fn codes(&self) -> Vec<Code> {
        self.diagnostics.iter().map(|d| d.code).collect()
    }

    /// The rustc-style rendering for people.
    pub fn render(&self) -> String {
        render::human(self)
    }

    /// The machine rendering: `{"diagnostics": [{code, message, file, path, line, column, help, note?}]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("diagnostics serialize")
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.diagnostics.iter()
    }
}

/// Collects diagnostics while a manifest is checked.
#[derive(Debug)]
pub(crate) struct Sink<'s> {
    file: String,
    index: LineIndex<'s>,
    out: Vec<Diagnostic>,
}

impl<'s> Sink<'s> {
    pub(crate) fn new(file: &str, text: &'s str) -> Self {
        Sink {
            file: file.to_owned(),
            index: LineIndex::new(text),
            out: Vec::new(),
        }
    }

    /// Record a problem at `at` with the code's default help; returns it for adjustments.
    pub(crate) fn error(
        &mut self,
        code: Code,
        at: &At,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let (line, column) = self.index.line_col(at.span.start);
        let text = self.index.line_text(line).to_owned();
        let (end_line, end_col) = self.index.line_col(at.span.end);
        let width = if end_line == line && end_col > column {
            end_col - column
        } else if end_line == line {
            1
        } else {
            text.chars().count().saturating_sub(column - 1).max(1)
        };
        self.out.push(Diagnostic {
            code,
            message: message.into(),
            file: self.file.clone(),
            path: at.path.clone(),
            line,
            column,
            help: code.help().to_owned(),
            note: None,
            snippet: Snippet { text, width },
        });
        self.out.last_mut().expect("just pushed")
    }

    /// Whether any problem was recorded.
    pub(crate) fn has_errors(&self) -> bool {
        !self.out.is_empty()
    }

    /// The problems, sorted by position then code, without exact duplicates.
    pub(crate) fn finish(mut self) -> Diagnostics {
        self.out.sort_by(|a, b| {
            (a.line, a.column, a.code, &a.path, &a.message)
                .cmp(&(b.line, b.column, b.code, &b.path, &b.message))
        });
        self.out.dedup();
        Diagnostics {
            diagnostics: self.out,
        }
    }
}

impl Diagnostic {
    /// Replace the help line.
    pub(crate) fn help(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = help.into();
        self
    }

    /// Attach a note.
    pub(crate) fn note(&mut self, note: impl Into<String>) -> &mut Self {
        self.note = Some(note.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str, span: std::ops::Range<usize>) -> At {
        At {
            path: path.into(),
            span,
        }
    }

    #[test]
    fn errors_are_sorted_with_line_column_and_caret() {
        let text = "id = \"X\"\n[runtime]\nkind = \"jvm\"\n";
        let mut sink = Sink::new("m.toml", text);
        sink.error(
            Code::UnknownValue,
            &at("runtime.kind", 26..31),
            "unknown runtime kind `jvm`",
        );
        sink.error(
            Code::InvalidId,
            &at("id", 5..8),
            "extension id `X` contains uppercase letters",
        );
        let diags = sink.finish();
        assert_eq!(diags.codes(), [Code::InvalidId, Code::UnknownValue]);
        let kind = &diags.diagnostics[1];
        assert_eq!((kind.line, kind.column), (3, 8));
        let human = diags.render();
        assert!(
            human.contains("error[unknown_value]: unknown runtime kind `jvm`"),
            "{human}"
        );
        assert!(human.contains(" --> m.toml:3:8"), "{human}");
        assert!(
            human.contains("3 | kind = \"jvm\"\n  |        ^^^^^\n"),
            "{human}"
        );
        assert!(human.ends_with("error: manifest has 2 problems"), "{human}");
    }

    #[test]
    fn json_carries_every_field_but_the_snippet() {
        let mut sink = Sink::new("m.toml", "x = 1\n");
        sink.error(Code::UnknownField, &at("x", 0..1), "unknown field `x`")
            .note("expected one of: id");
        let json: serde_json::Value = serde_json::from_str(&sink.finish().to_json()).expect("json");
        let d = &json["diagnostics"][0];
        assert_eq!(d["code"], "unknown_field");
        assert_eq!(d["path"], "x");
        assert_eq!(
            (d["line"].as_u64(), d["column"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(d["note"], "expected one of: id");
        assert_eq!(d["help"], Code::UnknownField.help());
        assert!(d.get("snippet").is_none());
    }
}
