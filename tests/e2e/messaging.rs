//! The standard messaging operations through the binary: a package whose
//! tools bind them (`tests/fixtures/packages/chat`, built for the
//! `near:agent` world like the ecosystem's Slack tool) ships no schemas; the
//! host publishes its canonical ones, checks every input before the call and
//! every output after it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn chat() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/packages/chat")
}

fn installed() -> warden_tests::Warden {
    let warden = crate::warden();
    let install = warden.run(&["install", chat().to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:?}");
    warden
}

fn call(warden: &warden_tests::Warden, op: &str, input: Value) -> (i32, Value) {
    let tool = format!("chat.{op}");
    let run = warden.run(&["--json", "call", &tool, "--input", &input.to_string()]);
    (run.code, run.json())
}

#[test]
fn every_standard_op_runs_and_answers_within_its_contract() {
    let warden = installed();
    let sent = json!({"conversation": "C-general", "message_id": "1"});
    let calls = [
        (
            "send_message",
            json!({"conversation": "C-general", "text": "hello", "thread": "1"}),
        ),
        (
            "edit_message",
            json!({"message_ref": sent, "text": "hello again"}),
        ),
        ("delete_message", json!({"message_ref": sent})),
        (
            "add_reaction",
            json!({"message_ref": sent, "emoji": "tada"}),
        ),
        ("remove_reaction", json!({"message_ref": sent})),
        ("open_dm", json!({"user_ref": "U-ana"})),
        (
            "list_conversations",
            json!({"kinds": ["channel"], "limit": 10}),
        ),
        ("get_conversation_info", json!({"conversation": "D-ana"})),
        (
            "get_conversation_history",
            json!({"conversation": "C-general"}),
        ),
        (
            "get_thread_replies",
            json!({"conversation": "C-general", "thread": "2"}),
        ),
        ("get_message", json!({"message_ref": sent})),
        (
            "search_messages",
            json!({"query": "lunch", "sort": "timestamp"}),
        ),
        ("get_user_info", json!({"user_ref": "U-ana"})),
        ("resolve_user", json!({"query": "an"})),
        (
            "list_members",
            json!({"conversation": "C-general", "cursor": "c"}),
        ),
        ("whoami", json!({})),
    ];
    assert_eq!(calls.len(), warden_manifest::standard::MESSAGING_OPS.len());
    let mut outputs = serde_json::Map::new();
    for (op, input) in calls {
        let (code, out) = call(&warden, op, input);
        assert_eq!(code, 0, "{op}: {out}");
        assert_eq!(out["status"], "ok", "{op}: {out}");
        outputs.insert(op.to_owned(), out["output"].clone());
    }
    assert_eq!(outputs["send_message"]["message_ref"]["message_id"], "m-5");
    assert_eq!(outputs["send_message"]["thread"], "1");
    assert_eq!(outputs["delete_message"]["deleted"], true);
    assert_eq!(outputs["open_dm"]["conversation"], "D-U-ana");
    assert_eq!(
        outputs["list_conversations"]["conversations"][0]["kind"],
        "channel"
    );
    assert_eq!(
        outputs["get_conversation_info"]["counterpart"]["user_ref"],
        "U-ana"
    );
    assert_eq!(outputs["get_conversation_history"]["next_cursor"], "page-2");
    assert_eq!(outputs["search_messages"]["total"], 1);
    assert_eq!(outputs["resolve_user"]["matches"][0]["user_ref"], "U-ana");
    assert_eq!(
        outputs["whoami"],
        json!({"user_ref": "U-me", "display_name": "Me"})
    );
}

#[test]
fn the_host_refuses_inputs_and_outputs_outside_the_contract() {
    let warden = installed();
    // Inputs are checked before the component runs.
    for (op, input, pointer) in [
        (
            "get_conversation_history",
            json!({"conversation": "C", "limit": 5000}),
            "/limit",
        ),
        ("whoami", json!({"action": "whoami"}), "action"),
        ("send_message", json!({"conversation": "C"}), "text"),
        (
            "list_conversations",
            json!({"kinds": ["forum"]}),
            "/kinds/0",
        ),
    ] {
        let (code, out) = call(&warden, op, input);
        assert_eq!(code, 1, "{op}: {out}");
        assert_eq!(out["code"], "invalid_input", "{op}: {out}");
        let message = out["message"].as_str().unwrap();
        assert!(message.contains(pointer), "{op}: {out}");
    }
    // Outputs are checked after it: an answer outside the contract is a
    // failure that says where, never a result.
    for (op, input, pointer) in [
        (
            "send_message",
            json!({"conversation": "C", "text": "break the contract"}),
            "/message_ref",
        ),
        ("get_user_info", json!({"user_ref": "U-ghost"}), "/presence"),
    ] {
        let (code, out) = call(&warden, op, input);
        assert_eq!(code, 1, "{op}: {out}");
        assert_eq!(out["code"], "invalid_output", "{op}: {out}");
        let message = out["message"].as_str().unwrap();
        assert!(message.contains(pointer), "{op}: {out}");
        assert!(!message.contains("haunting"), "value-free: {out}");
        assert!(out.get("output").is_none(), "{out}");
    }
    // The v2 output of send_message: a send the provider could not name.
    let (code, out) = call(
        &warden,
        "send_message",
        json!({"conversation": "C", "text": "unverified"}),
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["output"], json!({"sent_unverified": true}));
}

#[test]
fn describe_shows_the_hosts_contract_and_the_packages_addendum() {
    let warden = installed();
    let run = warden.run(&["--json", "describe", "chat.add_reaction"]);
    assert_eq!(run.code, 0, "{run:?}");
    let described = run.json();
    let op = warden_manifest::standard::messaging_op("add_reaction").unwrap();
    let description = described["description"].as_str().unwrap();
    assert!(description.starts_with(op.description), "{described}");
    assert!(description.ends_with("\n\nEmoji are short names without colons (`tada`)."));
    assert_eq!(described["input_schema"], op.input_schema());
    assert_eq!(described["output_schema"], op.output_schema());
    assert_eq!(
        described["standard_op"]["input_schema_ref"],
        "standard:messaging/add_reaction.input.v1"
    );
    let send = warden.run(&["describe", "chat.send_message"]);
    assert!(
        send.stdout.contains(
            "standard op send_message (schemas standard:messaging/send_message.input.v1, \
             standard:messaging/send_message.output.v2)"
        ),
        "{send:?}"
    );
    // The addendum is a paragraph of its own, not an escaped newline.
    let paragraph = "\n              Messages are plain text";
    assert!(send.stdout.contains(paragraph), "{send:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_sees_the_canonical_schemas() {
    let warden = installed();
    let (client, tool) = crate::hosted::serve_and_find(&warden, "chat_whoami").await;
    let op = warden_manifest::standard::messaging_op("whoami").unwrap();
    assert_eq!(
        Value::Object((*tool.input_schema).clone()),
        op.input_schema()
    );
    let output = tool.output_schema.expect("an output schema");
    assert_eq!(Value::Object((*output).clone()), op.output_schema());
    // The host's description, then the package's prompt doc.
    let description = tool.description.as_deref().unwrap();
    assert!(description.starts_with(op.description), "{description}");
    assert!(
        description.ends_with("always used as `U-me`."),
        "{description}"
    );
    // A model's call (origin loop_run) is gated until a person grants it.
    let whoami = rmcp::model::CallToolRequestParams::new("chat_whoami");
    crate::hosted::grant_by_calling(&client, &warden, whoami.clone()).await;
    let result = client.call_tool(whoami).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(
        result.structured_content,
        Some(json!({"user_ref": "U-me", "display_name": "Me"}))
    );
    client.cancel().await.unwrap();
}

/// A copy of the chat fixture whose manifest `edit` changes (its
/// `SHA256SUMS`, which would no longer match, left out).
pub(crate) fn chat_variant(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["wasm", "prompts/chat"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(chat().join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path().join(sub).join(entry.file_name())).unwrap();
        }
    }
    let manifest = std::fs::read_to_string(chat().join("manifest.toml")).unwrap();
    std::fs::write(dir.path().join("manifest.toml"), edit(manifest)).unwrap();
    dir
}

const CHANNEL: &str = "\n[channel]\nid = \"messages\"\ndisplay_name = \"Chat\"\n\
                       conversation_model = \"continuous\"\n";

#[test]
fn a_package_with_a_channel_installs_its_tools_once_the_operator_says_so() {
    let warden = crate::warden();
    let package = chat_variant(|m| m + CHANNEL);
    let path = package.path().to_str().unwrap();
    let refused = warden.run(&["install", path]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("package `chat` needs what this host does not run:\n  - a [channel] surface")
            && refused
                .stderr
                .contains("list \"chat\" in `[packages] tools_without_channel`"),
        "{refused:?}"
    );
    let checked = warden.run(&["check", path]);
    assert_eq!(checked.code, 1, "check says what install says: {checked:?}");
    assert!(
        checked.stderr.contains("a [channel] surface"),
        "{checked:?}"
    );

    warden.configure("[packages]\ntools_without_channel = [\"chat\"]\n");
    let checked = warden.run(&["check", path]);
    assert_eq!(checked.code, 0, "{checked:?}");
    let installed = warden.run(&["install", path]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let (code, out) = call(&warden, "whoami", json!({}));
    assert_eq!(
        (code, &out["output"]["user_ref"]),
        (0, &json!("U-me")),
        "{out}"
    );
}

#[test]
fn check_names_every_reason_install_would_refuse_at_once() {
    let warden = crate::warden();
    // A source-tier error (trust only a bundled package may request) and a
    // surface this host does not run: both reported by one check.
    let package = chat_variant(|m| {
        m.replace(
            "trust = \"third_party\"",
            "trust = \"first_party_requested\"",
        ) + CHANNEL
    });
    let checked = warden.run(&["check", package.path().to_str().unwrap()]);
    assert_eq!(checked.code, 1, "{checked:?}");
    assert!(checked.stderr.contains("error[source_tier]"), "{checked:?}");
    assert!(
        checked.stderr.contains("a [channel] surface"),
        "{checked:?}"
    );
    let json = warden.run(&["--json", "check", package.path().to_str().unwrap()]);
    let report = &json.json()[0];
    assert_eq!(report["valid"], false, "{report}");
    assert!(
        report["unsupported"]
            .as_str()
            .is_some_and(|u| u.contains("[channel]")),
        "{report}"
    );
}

#[test]
fn a_call_from_a_forbidden_origin_says_which_origins_the_tool_allows() {
    let warden = crate::warden();
    // Like the ecosystem's packages: product forbidden, loop_run gated.
    let package = chat_variant(|m| m.replace("product = \"consent_sufficient\", ", ""));
    let installed = warden.run(&["install", package.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let (code, out) = call(&warden, "whoami", json!({}));
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["code"], "not_permitted", "{out}");
    assert_eq!(
        out["hint"],
        "`chat.whoami` may not be called from origin `product`; it allows loop_run \
         (gated_unless_granted): pass `--origin loop-run`"
    );
    let text = warden.run(&["call", "chat.whoami", "--input", "{}"]);
    assert!(
        text.stderr
            .contains("hint: `chat.whoami` may not be called"),
        "{text:?}"
    );
    // The hint's command works: the model's origin asks a person first.
    let run = warden.run(&[
        "--json",
        "call",
        "chat.whoami",
        "--input",
        "{}",
        "--origin",
        "loop-run",
        "--approve-once",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
}
