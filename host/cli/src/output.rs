//! The one way text reaches the terminal. Every line the CLI prints — results,
//! warnings, errors with their cause chains, prompts, JSON, and the tracing
//! subscriber's events — goes through [`line`], [`part`] or [`Escaping`]. So
//! text that came from outside (a guest's failure message, a remote server's
//! tool names, a manifest's source line, a provider's account id) is shown
//! with its control characters escaped ([`render::escape_text`]), wherever
//! it is printed: a package cannot set the window title, clear the screen or
//! write the clipboard (OSC 52) of the person running `warden`.
//!
//! The macros `out!` (stdout) and `say!` (stderr) in `main.rs` are the
//! `out!`/`say!` of this crate; `print_stdout`/`print_stderr` are
//! denied there so that no print goes around them.
//!
//! A closed stdout (`warden list | head`) is not an error: the reader has
//! gone, so the rest of the output is dropped and the command finishes its
//! work (a `call` still writes its tape and audit line) and exits with its
//! own code, quietly. Restoring SIGPIPE's default action instead would kill
//! the process at its next write — possibly between a call and its tape —
//! and needs `unsafe` (denied in this workspace).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::render;

/// Where a line goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    /// stdout: results.
    Out,
    /// stderr: warnings, errors, prompts.
    Err,
}

/// Set once a write to stdout found the pipe closed.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Print `args` and a newline on `stream`, control characters escaped
/// (newlines and tabs kept).
pub(crate) fn line(stream: Stream, args: fmt::Arguments<'_>) {
    let mut text = render::escape_text(&fmt::format(args), true);
    text.push('\n');
    write(stream, &text);
}

/// [`line`] without the newline (a prompt).
pub(crate) fn part(stream: Stream, args: fmt::Arguments<'_>) {
    write(stream, &render::escape_text(&fmt::format(args), true));
}

/// Write already-escaped `text`. stderr's errors are ignored (a server whose
/// stderr was closed keeps serving); stdout's broken pipe drops the rest of
/// the output (see the module docs).
fn write(stream: Stream, text: &str) {
    match stream {
        Stream::Out => {
            if STDOUT_CLOSED.load(Ordering::Relaxed) {
                return;
            }
            let mut out = io::stdout().lock();
            let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            if let Err(error) = written
                && error.kind() == io::ErrorKind::BrokenPipe
            {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
            }
        }
        Stream::Err => {
            let _ = io::stderr().lock().write_all(text.as_bytes());
        }
    }
}

/// A writer for the tracing subscriber: each event's text reaches stderr
/// escaped like every other line (an event may quote a remote server's
/// message). The subscriber writes an event in one `write_all`, so a
/// character is never split between two writes.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Escaping;

impl Write for Escaping {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        write(Stream::Err, &render::escape_text(&text, true));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Escaping {
    type Writer = Escaping;

    fn make_writer(&'a self) -> Self::Writer {
        Escaping
    }
}

/// JSON text whose strings carry no character a terminal acts on: serde
/// escapes C0 controls, this escapes what it leaves (DEL, C1 controls such
/// as CSI U+009B, bidirectional overrides) as `\uXXXX` — the same JSON value.
pub(crate) fn json_text(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c != '\n' && warden_core::text::is_terminal_control(c) {
            // Every such character is in the Basic Multilingual Plane.
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_escapes_what_serde_leaves_and_keeps_the_value() {
        let value = serde_json::json!({
            "text": "a\u{1b}]52;c;Zm9v\u{7}b\u{9b}2J\u{202e}c\u{7f}",
        });
        let text = json_text(&serde_json::to_string_pretty(&value).unwrap());
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && warden_core::text::is_terminal_control(c)),
            "{text:?}"
        );
        assert!(
            text.contains("\\u009b") && text.contains("\\u202e"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
