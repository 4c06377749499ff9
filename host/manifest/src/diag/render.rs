//! The rustc-style human rendering of [`Diagnostics`].

use std::fmt::Write;

use super::{Diagnostic, Diagnostics};

/// Render every diagnostic, then a one-line count.
pub(super) fn human(diags: &Diagnostics) -> String {
    let mut out = String::new();
    for d in diags {
        one(&mut out, d);
        out.push('\n');
    }
    let n = diags.len();
    let _ = write!(
        out,
        "error: manifest has {n} problem{}",
        if n == 1 { "" } else { "s" }
    );
    out
}

fn one(out: &mut String, d: &Diagnostic) {
    let gutter = " ".repeat(d.line.to_string().len());
    let _ = writeln!(out, "error[{}]: {}", d.code, d.message);
    let _ = writeln!(out, "{gutter}--> {}:{}:{}", d.file, d.line, d.column);
    let _ = writeln!(out, "{gutter} |");
    let _ = writeln!(out, "{} | {}", d.line, d.snippet.text);
    let pad: String = d
        .snippet
        .text
        .chars()
        .take(d.column - 1)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = writeln!(out, "{gutter} | {pad}{}", "^".repeat(d.snippet.width));
    let path = if d.path.is_empty() {
        "(top level)"
    } else {
        &d.path
    };
    let _ = writeln!(out, "{gutter} = at: {path}");
    if let Some(note) = &d.note {
        let _ = writeln!(out, "{gutter} = note: {note}");
    }
    let _ = writeln!(out, "{gutter} = help: {}", d.help);
}
