//! The canonical schemas, built from shared shapes.
//!
//! Every object is closed (`additionalProperties: false`); an output may carry
//! provider-specific detail only under `vendor`. References (to a
//! conversation, a message, a person, a thread, a page) are opaque non-empty
//! strings the provider issued.

use serde_json::{Map, Value, json};

const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// A non-empty opaque string.
fn opaque(description: &str) -> Value {
    let mut schema = json!({"type": "string", "minLength": 1});
    if !description.is_empty() {
        schema["description"] = json!(description);
    }
    schema
}

fn conversation() -> Value {
    opaque(
        "Conversation reference issued by this tool's provider (from a listing, open_dm, or an \
         earlier result). Never invented; never valid with another package.",
    )
}

fn message_ref(description: &str) -> Value {
    let mut schema = object(
        &["conversation", "message_id"],
        [("conversation", opaque("")), ("message_id", opaque(""))],
    );
    if !description.is_empty() {
        schema["description"] = json!(description);
    }
    schema
}

fn prior_message_ref() -> Value {
    message_ref("The exact message_ref a send or read on this package returned.")
}

fn person() -> Value {
    object(
        &["user_ref"],
        [
            ("user_ref", opaque("")),
            ("display_name", json!({"type": "string"})),
        ],
    )
}

fn kind() -> Value {
    json!({"type": "string", "enum": ["dm", "group_dm", "channel", "other"]})
}

fn limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most results to return."})
}

fn cursor() -> Value {
    opaque("The next_cursor of an earlier page, to continue from it.")
}

fn next_cursor() -> Value {
    opaque("Present when there is more: pass it as cursor to continue.")
}

fn emoji() -> Value {
    opaque("The provider's emoji token (a name or a character); the addendum says which.")
}

fn vendor() -> Value {
    json!({"type": "object"})
}

fn message() -> Value {
    object(
        &["message_ref", "author", "text", "is_self"],
        [
            ("message_ref", message_ref("")),
            ("author", person()),
            ("text", json!({"type": "string"})),
            (
                "timestamp",
                json!({"type": "string", "format": "date-time"}),
            ),
            (
                "is_self",
                json!({
                    "type": "boolean",
                    "description": "True when the connected account wrote it."
                }),
            ),
            (
                "thread",
                object(
                    &["thread"],
                    [
                        ("thread", opaque("")),
                        ("reply_count", json!({"type": "integer", "minimum": 0})),
                    ],
                ),
            ),
            ("edited", json!({"type": "boolean"})),
            ("vendor", vendor()),
        ],
    )
}

fn conversation_entry() -> Value {
    let mut counterpart = person();
    counterpart["description"] = json!("The other person of a dm.");
    object(
        &["conversation", "kind"],
        [
            ("conversation", conversation()),
            ("kind", kind()),
            ("display_name", json!({"type": "string"})),
            ("is_member", json!({"type": "boolean"})),
            ("counterpart", counterpart),
            ("vendor", vendor()),
        ],
    )
}

/// A closed object with `required` keys.
fn object<const N: usize>(required: &[&str], properties: [(&str, Value); N]) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect();
    let mut schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// A top-level schema: `object` with the draft and a title.
fn root<const N: usize>(title: &str, required: &[&str], properties: [(&str, Value); N]) -> Value {
    let mut schema = object(required, properties);
    schema["$schema"] = json!(DRAFT_07);
    schema["title"] = json!(title);
    schema
}

/// A page of `items` under `key`, with the continuation and vendor detail.
fn page(title: &str, key: &str, items: Value) -> Value {
    root(
        title,
        &[key],
        [
            (key, json!({"type": "array", "items": items})),
            ("next_cursor", next_cursor()),
            ("vendor", vendor()),
        ],
    )
}

pub(super) mod input {
    use super::*;

    pub(crate) fn send_message() -> Value {
        root(
            "send_message input",
            &["conversation", "text"],
            [
                ("conversation", conversation()),
                (
                    "text",
                    opaque("The message text (markdown; the provider renders it)."),
                ),
                (
                    "thread",
                    opaque("A thread anchor from an earlier message: post into that thread."),
                ),
                (
                    "reply_to",
                    message_ref("The message_ref of one message to reply to or quote."),
                ),
            ],
        )
    }

    pub(crate) fn edit_message() -> Value {
        root(
            "edit_message input",
            &["message_ref", "text"],
            [
                ("message_ref", prior_message_ref()),
                (
                    "text",
                    opaque("The new text; it replaces the whole message."),
                ),
            ],
        )
    }

    pub(crate) fn delete_message() -> Value {
        root(
            "delete_message input",
            &["message_ref"],
            [("message_ref", prior_message_ref())],
        )
    }

    pub(crate) fn add_reaction() -> Value {
        root(
            "add_reaction input",
            &["message_ref", "emoji"],
            [("message_ref", prior_message_ref()), ("emoji", emoji())],
        )
    }

    pub(crate) fn remove_reaction() -> Value {
        root(
            "remove_reaction input",
            &["message_ref"],
            [("message_ref", prior_message_ref()), ("emoji", emoji())],
        )
    }

    pub(crate) fn open_dm() -> Value {
        root(
            "open_dm input",
            &["user_ref"],
            [("user_ref", opaque("A person's user_ref from this package."))],
        )
    }

    pub(crate) fn list_conversations() -> Value {
        root(
            "list_conversations input",
            &[],
            [
                (
                    "kinds",
                    json!({"type": "array", "minItems": 1, "items": kind(),
                           "description": "Only these kinds (all when omitted)."}),
                ),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn get_conversation_info() -> Value {
        root(
            "get_conversation_info input",
            &["conversation"],
            [("conversation", conversation())],
        )
    }

    pub(crate) fn get_conversation_history() -> Value {
        root(
            "get_conversation_history input",
            &["conversation"],
            [
                ("conversation", conversation()),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn get_thread_replies() -> Value {
        root(
            "get_thread_replies input",
            &["conversation", "thread"],
            [
                ("conversation", conversation()),
                (
                    "thread",
                    opaque("The thread anchor of the thread's first message."),
                ),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn get_message() -> Value {
        root(
            "get_message input",
            &["message_ref"],
            [("message_ref", prior_message_ref())],
        )
    }

    pub(crate) fn search_messages() -> Value {
        root(
            "search_messages input",
            &["query"],
            [
                ("query", opaque("What to search for.")),
                (
                    "sort",
                    json!({"type": "string", "enum": ["relevance", "timestamp"],
                           "description": "relevance (default) or timestamp (newest first)."}),
                ),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn get_user_info() -> Value {
        root(
            "get_user_info input",
            &["user_ref"],
            [("user_ref", opaque("A person's user_ref from this package."))],
        )
    }

    pub(crate) fn resolve_user() -> Value {
        root(
            "resolve_user input",
            &["query"],
            [
                ("query", opaque("A name, handle or part of one.")),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn list_members() -> Value {
        root(
            "list_members input",
            &["conversation"],
            [
                ("conversation", conversation()),
                ("limit", limit()),
                ("cursor", cursor()),
            ],
        )
    }

    pub(crate) fn whoami() -> Value {
        root("whoami input", &[], [])
    }
}

pub(super) mod output {
    use super::*;

    pub(crate) fn send_message() -> Value {
        let mut schema = root(
            "send_message output",
            &[],
            [
                ("message_ref", message_ref("The sent message's reference.")),
                (
                    "sent_unverified",
                    json!({"const": true, "description": "The provider took the message but \
                           named no reference for it: it was sent (do not send it again), and \
                           it cannot be edited, deleted or reacted to."}),
                ),
                (
                    "thread",
                    opaque("The input's thread, when the message went into it."),
                ),
                (
                    "reply_to",
                    message_ref("The input's reply_to, when the message replied to it."),
                ),
                ("vendor", vendor()),
            ],
        );
        schema["oneOf"] = json!([{"required": ["message_ref"]}, {"required": ["sent_unverified"]}]);
        schema
    }

    pub(crate) fn edit_message() -> Value {
        root(
            "edit_message output",
            &["message_ref"],
            [("message_ref", message_ref("")), ("vendor", vendor())],
        )
    }

    pub(crate) fn delete_message() -> Value {
        root(
            "delete_message output",
            &["deleted", "message_ref"],
            [
                ("deleted", json!({"const": true})),
                ("message_ref", message_ref("")),
                ("vendor", vendor()),
            ],
        )
    }

    pub(crate) fn add_reaction() -> Value {
        root(
            "add_reaction output",
            &["message_ref", "emoji"],
            [
                ("message_ref", message_ref("")),
                ("emoji", opaque("")),
                ("vendor", vendor()),
            ],
        )
    }

    pub(crate) fn remove_reaction() -> Value {
        root(
            "remove_reaction output",
            &["message_ref"],
            [
                ("message_ref", message_ref("")),
                ("emoji", opaque("")),
                ("vendor", vendor()),
            ],
        )
    }

    pub(crate) fn open_dm() -> Value {
        root(
            "open_dm output",
            &["conversation"],
            [("conversation", conversation()), ("vendor", vendor())],
        )
    }

    pub(crate) fn list_conversations() -> Value {
        let mut entry = conversation_entry();
        // A dm names the other person.
        entry["allOf"] = json!([{
            "if": {"required": ["kind"], "properties": {"kind": {"const": "dm"}}},
            "then": {"required": ["counterpart"]}
        }]);
        page("list_conversations output", "conversations", entry)
    }

    pub(crate) fn get_conversation_info() -> Value {
        let mut schema = conversation_entry();
        schema["$schema"] = json!(DRAFT_07);
        schema["title"] = json!("get_conversation_info output");
        schema
    }

    pub(crate) fn get_conversation_history() -> Value {
        page("get_conversation_history output", "messages", message())
    }

    pub(crate) fn get_thread_replies() -> Value {
        page("get_thread_replies output", "messages", message())
    }

    pub(crate) fn get_message() -> Value {
        root(
            "get_message output",
            &["message"],
            [("message", message()), ("vendor", vendor())],
        )
    }

    pub(crate) fn search_messages() -> Value {
        let mut schema = page("search_messages output", "matches", message());
        schema["properties"]["total"] = json!({"type": "integer", "minimum": 0});
        schema
    }

    pub(crate) fn get_user_info() -> Value {
        let text = || json!({"type": "string"});
        root(
            "get_user_info output",
            &["user_ref"],
            [
                ("user_ref", opaque("")),
                ("display_name", text()),
                ("real_name", text()),
                ("status_text", text()),
                ("status_emoji", text()),
                ("timezone", text()),
                ("is_bot", json!({"type": "boolean"})),
                (
                    "presence",
                    json!({"type": "string", "enum": ["active", "away", "unknown"]}),
                ),
                ("vendor", vendor()),
            ],
        )
    }

    pub(crate) fn resolve_user() -> Value {
        page("resolve_user output", "matches", person())
    }

    pub(crate) fn list_members() -> Value {
        page("list_members output", "members", person())
    }

    pub(crate) fn whoami() -> Value {
        root(
            "whoami output",
            &["user_ref"],
            [
                ("user_ref", opaque("The connected account's user_ref.")),
                ("display_name", json!({"type": "string"})),
                ("vendor", vendor()),
            ],
        )
    }
}
