//! The host's model-facing description of each operation. A bound tool's
//! own `description` follows it as an addendum (the provider's dialect:
//! emoji names, markup, limits).
//!
//! Named after the ops so the table in `standard.rs` can refer to them by
//! the op's own name.
#![allow(non_upper_case_globals)]

/// The rule every description ends with.
macro_rules! ref_rule {
    () => {
        "Every reference (conversation, message_ref, user_ref, thread, cursor) comes from this \
         package's own results: never invent one, never reuse one from another package."
    };
}

macro_rules! described {
    ($($name:ident = $text:literal;)+) => {
        $(pub(super) const $name: &str = concat!($text, " ", ref_rule!());)+
    };
}

described! {
    send_message = "Send a message to a conversation as the connected account. `thread` posts \
        into a thread; `reply_to` replies to (or quotes) one message — a provider with a single \
        mechanism maps both onto it. Returns the sent message's `message_ref` (for edit, delete \
        and reactions), or `sent_unverified: true` when the provider took the message without \
        naming it: it was sent, do not send it again. Use it when messaging someone is the task \
        itself, not to deliver your own answer to the user.";
    edit_message = "Replace the text of an earlier message as the connected account (usually \
        only your own messages, often only for a while after sending). Returns its \
        `message_ref`.";
    delete_message = "Delete an earlier message as the connected account (usually only your \
        own). Returns `deleted: true` and the `message_ref`; a delete that did not happen is an \
        error, never `deleted: false`.";
    add_reaction = "Add an emoji reaction to a message as the connected account. Returns the \
        `message_ref` and `emoji` once the reaction is there.";
    remove_reaction = "Remove a reaction the connected account added to a message. Leave out \
        `emoji` only where the addendum says the provider can remove your reactions without \
        naming one. Returns the `message_ref` (and the `emoji` when known).";
    open_dm = "Open the direct-message conversation with a person, or find the one already \
        open. Returns its `conversation`, for send_message and the other conversation \
        operations: this is how \"message Ana\" becomes a conversation when you hold none yet.";
    list_conversations = "List the conversations the connected account can see. `kinds` keeps \
        only `dm`, `group_dm`, `channel` or `other`; `limit` and `cursor` page, `next_cursor` \
        continues. Returns each one's `conversation`, kind, display name, membership and, for a \
        dm, the other person.";
    get_conversation_info = "Describe one conversation: its kind (`dm`, `group_dm`, `channel`, \
        `other`), display name, whether the connected account is a member and, for a dm, the \
        other person's `user_ref`.";
    get_conversation_history = "Read a conversation's recent messages, newest first, without \
        thread replies: a message whose `thread.reply_count` is above zero has a thread, read it \
        with get_thread_replies. `limit` and `cursor` page, `next_cursor` continues. To find a \
        message by its content anywhere, use search_messages. `is_self` marks the messages the \
        connected account wrote.";
    get_thread_replies = "Read the replies of a thread, oldest first. `limit` and `cursor` page, \
        `next_cursor` continues. `is_self` marks the replies the connected account wrote.";
    get_message = "Read one message by its `message_ref`: author, text, time, thread and \
        whether the connected account wrote it (`is_self`), without reading its whole \
        conversation.";
    search_messages = "Find messages by their content in every conversation. `sort` is \
        `relevance` (the provider's ranking, which may lag the newest messages) or `timestamp` \
        (newest first, for the latest ones). When you already hold the conversation, read its \
        history instead. `limit` and `cursor` page, `next_cursor` continues; `total` is the \
        provider's count when it gives one. `is_self` marks the connected account's messages \
        (that account may be a bot, not the person asking).";
    get_user_info = "Look up a person: display and real name, status, time zone, whether the \
        account is a bot, presence. The same `user_ref` works with open_dm and every other \
        operation that takes a person.";
    resolve_user = "Find people by name, handle or part of one. `limit` and `cursor` page, \
        `next_cursor` continues. Returns each match's `user_ref` and display name.";
    list_members = "List the members of a conversation as `user_ref` and display name. `limit` \
        and `cursor` page, `next_cursor` continues.";
    whoami = "Say which account this package acts as: the one every send and edit is made by \
        (possibly a bot, not the person asking). Takes no input. Returns its `user_ref` and \
        display name, which is what `is_self` compares with.";
}
