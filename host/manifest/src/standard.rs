//! The standard messaging operations: the host's compiled-in contracts.
//!
//! A tool that binds `standard_op = "<op>"` ships no schemas: the format
//! makes the host the authority for what each operation means. For every
//! one of the 16 bindable operations this module holds the canonical input
//! schema (`standard:messaging/<op>.input.v1`), the op's current output
//! schema (`standard:messaging/<op>.output.v<n>`; `send_message` is at v2,
//! which adds the `sent_unverified` branch) and the model-facing description
//! the package's own `description` is appended to. The 13 reserved names are
//! listed so that binding one is refused by name.
//!
//! The contracts are the ecosystem's (the field names, requirements and
//! closed enums a messaging component's output must meet); the wording of
//! the descriptions is Warden's. Schemas are JSON Schema draft-07, built
//! from a handful of shared shapes (a message reference, a person, a
//! message, a page) so that two operations can never disagree about one.
//!
//! Loading a package fills a bound tool's `input_schema`, `output_schema` and
//! description from here ([`crate::Capability`]); from then on a
//! standard-op tool is published, checked and called like any other: its
//! input is validated before the call and its output after it.

mod descriptions;
mod schemas;

use serde_json::Value;

/// Where the synthesized schema refs live.
pub const MESSAGING_REF_PREFIX: &str = "standard:messaging/";

/// One bindable standard messaging operation.
#[derive(Debug)]
pub struct StandardOp {
    /// The op's name, as `standard_op` spells it.
    pub name: &'static str,
    /// Whether the op changes state at the provider (`external_write` required).
    pub writes: bool,
    /// The version of the op's current output schema.
    pub output_version: u8,
    /// The host's model-facing description.
    pub description: &'static str,
    input: fn() -> Value,
    output: fn() -> Value,
}

impl StandardOp {
    /// The canonical input schema.
    pub fn input_schema(&self) -> Value {
        (self.input)()
    }

    /// The op's current output schema.
    pub fn output_schema(&self) -> Value {
        (self.output)()
    }

    /// `standard:messaging/<op>.input.v1`.
    pub fn input_ref(&self) -> String {
        format!("{MESSAGING_REF_PREFIX}{}.input.v1", self.name)
    }

    /// `standard:messaging/<op>.output.v<n>`, the current version.
    pub fn output_ref(&self) -> String {
        format!(
            "{MESSAGING_REF_PREFIX}{}.output.v{}",
            self.name, self.output_version
        )
    }

    /// The description a bound tool publishes: the host's text, then the
    /// package's addendum when it has one.
    pub fn describe(&self, addendum: &str) -> String {
        let addendum = addendum.trim();
        if addendum.is_empty() {
            self.description.to_owned()
        } else {
            format!("{}\n\n{addendum}", self.description)
        }
    }
}

/// The bindable op named `name`.
pub fn messaging_op(name: &str) -> Option<&'static StandardOp> {
    MESSAGING_OPS.iter().find(|op| op.name == name)
}

/// The schema a synthesized `standard:messaging/<op>.<input|output>.v<n>`
/// ref names, or `None` for any other ref (a version the op never had, a
/// reserved op, another namespace).
pub fn resolve_ref(schema_ref: &str) -> Option<Value> {
    let rest = schema_ref.strip_prefix(MESSAGING_REF_PREFIX)?;
    let (rest, version) = rest.rsplit_once('.')?;
    let (name, half) = rest.rsplit_once('.')?;
    let op = messaging_op(name)?;
    match (half, version) {
        ("input", "v1") => Some(op.input_schema()),
        ("output", v) if *v == *format!("v{}", op.output_version) => Some(op.output_schema()),
        _ => None,
    }
}

/// Names the format reserves: valid words, refused as bindings until the
/// format gives them a contract.
pub const RESERVED_MESSAGING_OPS: &[&str] = &[
    "forward_message",
    "schedule_message",
    "list_reactions",
    "pin_message",
    "unpin_message",
    "list_pins",
    "create_group",
    "join_conversation",
    "leave_conversation",
    "invite_member",
    "remove_member",
    "set_topic",
    "archive_conversation",
];

macro_rules! ops {
    ($($name:ident: writes $writes:literal, output version $version:literal;)+) => {
        /// The 16 bindable operations, writes first.
        pub const MESSAGING_OPS: &[StandardOp] = &[$(
            StandardOp {
                name: stringify!($name),
                writes: $writes,
                output_version: $version,
                description: descriptions::$name,
                input: schemas::input::$name,
                output: schemas::output::$name,
            },
        )+];
    };
}

ops! {
    send_message: writes true, output version 2;
    edit_message: writes true, output version 1;
    delete_message: writes true, output version 1;
    add_reaction: writes true, output version 1;
    remove_reaction: writes true, output version 1;
    open_dm: writes true, output version 1;
    list_conversations: writes false, output version 1;
    get_conversation_info: writes false, output version 1;
    get_conversation_history: writes false, output version 1;
    get_thread_replies: writes false, output version 1;
    get_message: writes false, output version 1;
    search_messages: writes false, output version 1;
    get_user_info: writes false, output version 1;
    resolve_user: writes false, output version 1;
    list_members: writes false, output version 1;
    whoami: writes false, output version 1;
}

#[cfg(test)]
mod tests;
