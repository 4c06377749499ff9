use serde_json::{Value, json};
use warden_core::schema::{Formats, SchemaCheck};

use super::*;

fn check(schema: &Value) -> SchemaCheck {
    SchemaCheck::compile(schema, Formats::Assert).expect("compiles")
}

fn accepts(schema: &Value, value: Value) -> bool {
    check(schema).check(&value).is_ok()
}

#[test]
fn every_op_has_schemas_that_compile_and_refs_that_resolve_to_them() {
    assert_eq!(MESSAGING_OPS.len(), 16);
    for op in MESSAGING_OPS {
        let (input, output) = (op.input_schema(), op.output_schema());
        check(&input);
        check(&output);
        assert_eq!(input["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(resolve_ref(&op.input_ref()), Some(input), "{}", op.name);
        assert_eq!(resolve_ref(&op.output_ref()), Some(output), "{}", op.name);
        assert!(!RESERVED_MESSAGING_OPS.contains(&op.name));
    }
}

#[test]
fn refs_the_registry_never_published_do_not_resolve() {
    for bad in [
        "standard:messaging/send_message.output.v1",
        "standard:messaging/whoami.output.v2",
        "standard:messaging/whoami.input.v2",
        "standard:messaging/pin_message.input.v1",
        "standard:messaging/whoami.inputs.v1",
        "standard:memory/whoami.input.v1",
        "schemas/whoami.input.v1",
    ] {
        assert_eq!(resolve_ref(bad), None, "{bad}");
    }
    assert_eq!(
        messaging_op("send_message").unwrap().output_ref(),
        "standard:messaging/send_message.output.v2"
    );
}

#[test]
fn a_send_names_its_message_or_says_it_is_unverified_never_both() {
    let out = messaging_op("send_message").unwrap().output_schema();
    let sent = json!({"conversation": "C1", "message_id": "1.2"});
    assert!(accepts(&out, json!({"message_ref": sent})));
    assert!(accepts(&out, json!({"sent_unverified": true})));
    assert!(!accepts(
        &out,
        json!({"message_ref": sent, "sent_unverified": true})
    ));
    assert!(!accepts(&out, json!({})));
    assert!(!accepts(&out, json!({"sent_unverified": false})));
    assert!(!accepts(
        &out,
        json!({"message_ref": {"conversation": "C1"}})
    ));
    assert!(!accepts(&out, json!({"message_ref": sent, "token": "x"})));
}

#[test]
fn a_dm_in_a_listing_names_the_other_person() {
    let out = messaging_op("list_conversations").unwrap().output_schema();
    let dm = json!({"conversation": "D1", "kind": "dm"});
    assert!(!accepts(&out, json!({"conversations": [dm]})));
    let dm = json!({"conversation": "D1", "kind": "dm", "counterpart": {"user_ref": "U2"}});
    assert!(accepts(
        &out,
        json!({"conversations": [dm], "next_cursor": "n"})
    ));
    let channel = json!({"conversation": "C1", "kind": "channel"});
    assert!(accepts(&out, json!({"conversations": [channel]})));
    let odd = json!({"conversation": "C1", "kind": "forum"});
    assert!(!accepts(&out, json!({"conversations": [odd]})));
}

#[test]
fn messages_carry_a_real_timestamp_and_only_vendor_detail_besides() {
    let out = messaging_op("get_message").unwrap().output_schema();
    let message = |extra: Value| {
        let mut m = json!({
            "message_ref": {"conversation": "C1", "message_id": "1"},
            "author": {"user_ref": "U1"},
            "text": "hi",
            "is_self": false,
        });
        m.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "message": m })
    };
    assert!(accepts(
        &out,
        message(json!({"timestamp": "2026-12-07T10:00:00Z"}))
    ));
    assert!(!accepts(&out, message(json!({"timestamp": "yesterday"}))));
    assert!(accepts(&out, message(json!({"vendor": {"ts": "1"}}))));
    assert!(!accepts(&out, message(json!({"ts": "1"}))));
}

#[test]
fn inputs_are_closed_and_bounded() {
    let whoami = messaging_op("whoami").unwrap().input_schema();
    assert!(accepts(&whoami, json!({})));
    assert!(!accepts(&whoami, json!({"action": "whoami"})));
    let history = messaging_op("get_conversation_history")
        .unwrap()
        .input_schema();
    assert!(accepts(
        &history,
        json!({"conversation": "C1", "limit": 1000})
    ));
    assert!(!accepts(
        &history,
        json!({"conversation": "C1", "limit": 1001})
    ));
    assert!(!accepts(&history, json!({"conversation": ""})));
    let remove = messaging_op("remove_reaction").unwrap().input_schema();
    assert!(accepts(
        &remove,
        json!({"message_ref": {"conversation": "C", "message_id": "1"}})
    ));
}

#[test]
fn the_addendum_follows_the_hosts_description() {
    let op = messaging_op("add_reaction").unwrap();
    assert_eq!(op.describe("  "), op.description);
    let described = op.describe("Emoji are short names without colons.");
    assert!(described.starts_with(op.description));
    assert!(described.ends_with("\n\nEmoji are short names without colons."));
}
