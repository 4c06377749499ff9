//! What reaches the terminal (issue 42, finding 2): text from outside — a
//! guest's failure message, a remote server's tools, a manifest's source
//! line, the data directory's files — never reaches stdout or stderr as
//! control characters, on any command's output path. And a closed stdout
//! (`warden list | head`) ends a command quietly.

use std::process::Stdio;

use serde_json::json;
use warden_tests::Run;
use warden_tests::fake_mcp::{FakeMcp, MCP_URL, Script, echo_tool};
use warden_tests::package::repo_root;

/// The attack: set the window title, clear the screen, write the clipboard
/// (OSC 52), colour through a C1 CSI, and reverse what follows (bidi).
const PAYLOAD: &str =
    "msg\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\u{9b}31m\u{202e}dlrow\u{2066}\r\x7f";

/// The first character of `text` a terminal would act on (the CLI's own
/// rule, `warden_core::text`; new lines and tabs are the output's own).
fn raw_control(text: &str) -> Option<char> {
    text.chars()
        .find(|&c| c != '\n' && c != '\t' && warden_core::text::is_terminal_control(c))
}

/// `run` printed no raw control character.
#[track_caller]
fn not_sent(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if let Some(c) = raw_control(text) {
            panic!("{what}: U+{:04X} reached {stream} raw:\n{run:?}", c as u32);
        }
    }
}

/// [`not_sent`], and the outside text was printed (shown): the path was
/// walked, not skipped.
#[track_caller]
fn shown_not_sent(what: &str, run: &Run) {
    not_sent(what, run);
    assert!(
        run.all().contains("PWNED"),
        "{what}: the payload was not shown: {run:?}"
    );
}

/// Every path the CLI prints outside text on, with [`PAYLOAD`] in it.
#[tokio::test(flavor = "multi_thread")]
async fn no_raw_control_character_reaches_the_terminal_on_any_path() {
    let evil = json!({
        "name": "evil",
        "description": PAYLOAD,
        "inputSchema": {"type": "object", "properties": {
            "x": {"type": "string", "description": PAYLOAD}
        }},
    });
    let fake = FakeMcp::start(Script {
        tools: vec![echo_tool(), evil],
        ..Script::default()
    })
    .await;
    let warden = crate::warden();
    fake.configure(&warden);
    let scratch = tempfile::tempdir().unwrap();

    // A remote server's tools: `mcp refresh`, `describe`, a call's output.
    let added = warden.run(&["mcp", "add", "fake", MCP_URL]);
    assert_eq!(added.code, 0, "{added:?}");
    let refreshed = warden.run(&["mcp", "refresh", "mcp-fake"]);
    assert_eq!(refreshed.code, 0, "{refreshed:?}");
    for json in [false, true] {
        let mut args = vec!["describe", "mcp-fake.evil"];
        if json {
            args.insert(0, "--json");
        }
        let described = warden.run(&args);
        assert_eq!(described.code, 0, "{described:?}");
        shown_not_sent("describe of a discovered tool", &described);
        if json {
            // The same value, its controls escaped the JSON way.
            assert_eq!(described.json()["description"], PAYLOAD);
        }
    }
    let text = json!({ "text": PAYLOAD }).to_string();
    let echoed = warden.run(&["call", "mcp-fake.echo", "--input", &text, "--approve-once"]);
    assert_eq!(echoed.code, 0, "{echoed:?}");
    shown_not_sent("a remote tool's output", &echoed);

    // The hosted refresh warning naming a remote tool.
    fake.script(|script| {
        script.tools.push(json!({
            "name": format!("bad{PAYLOAD}"),
            "inputSchema": {"type": "object"},
        }))
    });
    let warned = warden.run(&["call", "mcp-fake.echo", "--input", &text, "--approve-once"]);
    assert!(warned.stderr.contains("warning"), "{warned:?}");
    shown_not_sent("the hosted refresh warning", &warned);

    // A guest's failure message, for people and as JSON.
    let hostile = repo_root().join("tests/fixtures/packages/hostile");
    let installed = warden.run(&["install", hostile.to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let fail = json!({ "code": "boom", "message": PAYLOAD }).to_string();
    let failed = warden.run(&["call", "hostile.fail", "--input", &fail]);
    assert_eq!(failed.code, 1, "{failed:?}");
    shown_not_sent("call failure", &failed);
    let failed = warden.run(&["--json", "call", "hostile.fail", "--input", &fail]);
    shown_not_sent("call failure as JSON", &failed);
    assert!(
        failed.json()["message"]
            .as_str()
            .unwrap()
            .contains("\x1b]0;PWNED"),
        "{failed:?}"
    );

    // A pending approval's input.
    let pending = warden.run(&[
        "call",
        "echo.echo",
        "--origin",
        "automation",
        "--input",
        &text,
    ]);
    assert_eq!(pending.code, 2, "{pending:?}");
    for args in [&["approvals", "list"][..], &["--json", "approvals", "list"]] {
        shown_not_sent("approvals list", &warden.run(args));
    }

    // A manifest's source line on a TOML syntax error: `check` (what people
    // vet untrusted packages with) and `install` (its error chain).
    let broken = scratch.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("manifest.toml"),
        format!("schema_version = \"reborn.extension_manifest.v3\"\ndescription = \"{PAYLOAD}\n"),
    )
    .unwrap();
    let broken = broken.to_str().unwrap();
    for args in [&["check", broken][..], &["install", broken]] {
        let run = warden.run(args);
        assert_eq!(run.code, 1, "{run:?}");
        shown_not_sent(&args.join(" "), &run);
    }
    // Its JSON names the line and column, not the text.
    not_sent("check --json", &warden.run(&["--json", "check", broken]));

    // The audit log's lines, as they are in the file (a caller's subject
    // is outside text; so is whatever else wrote the file).
    let entry = json!({
        "time": 1, "location": "default", "session": format!("caller:{PAYLOAD}"),
        "origin": "product", "capability": "echo.echo", "fingerprint": "f",
        "outcome": "ok",
    });
    let mut audit = std::fs::read_to_string(warden.data_dir().join("audit.jsonl")).unwrap();
    audit.push_str(&format!("{entry}\ntorn {PAYLOAD}\n"));
    std::fs::write(warden.data_dir().join("audit.jsonl"), audit).unwrap();
    shown_not_sent("audit tail", &warden.run(&["audit", "tail"]));
    shown_not_sent(
        "audit tail as JSON",
        &warden.run(&["--json", "audit", "tail"]),
    );

    // A registered server the data directory holds under a hostile name:
    // `mcp list`, and the warning every command that opens the host gives.
    let odd = warden
        .data_dir()
        .join("mcp")
        .join(format!("mcp-odd{PAYLOAD}"));
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(
        odd.join("manifest.toml"),
        "[mcp]\nserver = \"https://odd.example/\\u001b]0;PWNED\\u0007\"\n",
    )
    .unwrap();
    for args in [
        &["mcp", "list"][..],
        &["--json", "mcp", "list"],
        &["list"],
        &["--json", "list"],
        &["auth", "status"],
        &["--json", "auth", "status"],
        &["describe", "echo.echo"],
    ] {
        shown_not_sent(&args.join(" "), &warden.run(args));
    }
}

/// `warden list | head` and `warden describe … | head` panicked on the
/// broken pipe. Every command ends quietly with its own exit code when its
/// reader has gone: here stdout's read end is closed before it writes.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let warden = crate::warden();
    for args in [
        &["list"][..],
        &["--json", "list"],
        &["describe", "echo.echo"],
        &["call", "echo.echo", "--input", r#"{"text": "hi"}"#],
    ] {
        let mut child = warden
            .command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
