//! Turning a backend's [`CallResult`] into an MCP `tools/call` answer.

use rmcp::{
    ErrorData,
    model::{CallToolResult, ContentBlock, JsonObject, MetaObject},
};
use serde_json::Value;

use crate::backend::CallResult;

/// `_meta` key carrying a tool error's stable code.
pub const META_ERROR_CODE: &str = "warden/errorCode";
/// `_meta` key carrying the structured fields of an `auth_required` error.
pub const META_AUTH: &str = "warden/auth";
/// `_meta` key carrying the id of a pending approval.
pub const META_APPROVAL_ID: &str = "warden/approvalId";
/// The error code of a call that waits for approval.
pub const APPROVAL_REQUIRED: &str = warden_core::ErrorCode::ApprovalRequired.as_str();

/// A call result that is not an approval request.
pub(crate) enum Answer {
    /// Ready to send.
    Done(Result<CallToolResult, ErrorData>),
    /// The backend wants approval first.
    Approval(PendingApproval),
}

/// A pending approval, as the backend described it.
#[derive(Debug)]
pub(crate) struct PendingApproval {
    pub(crate) id: String,
    pub(crate) summary: String,
    pub(crate) how_to_approve: String,
}

/// Converts `result`; `structured` says whether the tool has an output schema.
pub(crate) fn answer(result: CallResult, structured: bool) -> Answer {
    Answer::Done(match result {
        CallResult::Output {
            structured: value,
            text,
            content,
        } => {
            let blocks = if content.is_empty() {
                vec![ContentBlock::text(text)]
            } else {
                content.iter().map(block).collect()
            };
            let mut result = CallToolResult::success(blocks);
            if structured {
                result.structured_content = Some(value);
            }
            Ok(result)
        }
        CallResult::ToolError { code, message } => Ok(tool_error(code, message)),
        CallResult::AuthRequired { message, details } => Ok(auth_required(message, details)),
        CallResult::NeedsApproval {
            approval_id,
            summary,
            how_to_approve,
        } => {
            return Answer::Approval(PendingApproval {
                id: approval_id,
                summary,
                how_to_approve,
            });
        }
        CallResult::Protocol(message) => Err(ErrorData::invalid_params(message, None)),
    })
}

/// One block of the content model as rmcp's type. The model writes only
/// what MCP defines, so this cannot fail short of a defect; if it did, the
/// block's description goes out as text rather than nothing.
fn block(content: &warden_core::content::ContentBlock) -> ContentBlock {
    serde_json::from_value(content.to_mcp()).unwrap_or_else(|error| {
        tracing::error!(%error, "a content block did not convert to MCP");
        ContentBlock::text(warden_core::content::describe(std::slice::from_ref(
            content,
        )))
    })
}

/// A result with `isError: true`, its code in the text and in `_meta`.
fn tool_error(code: String, message: String) -> CallToolResult {
    let text = format!("[{code}] {message}");
    let mut meta = JsonObject::new();
    meta.insert(META_ERROR_CODE.to_owned(), Value::String(code));
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.meta = Some(MetaObject(meta));
    result
}

/// An `auth_required` tool error: `isError: true`, the fields in
/// `structuredContent` and under `_meta["warden/auth"]`, and the command to
/// run in the text for clients that show only text.
fn auth_required(message: String, details: Value) -> CallToolResult {
    let connect = details["connect"].as_str().unwrap_or_default().to_owned();
    let mut result = tool_error("auth_required".into(), format!("{message}\nrun: {connect}"));
    if let Some(meta) = result.meta.as_mut() {
        meta.0.insert(META_AUTH.to_owned(), details.clone());
    }
    result.structured_content = Some(details);
    result
}

/// The answer for a client that cannot be asked: a tool error that tells the
/// model the approval id and how a person approves it.
pub(crate) fn approval_pending(pending: &PendingApproval) -> CallToolResult {
    let text = format!(
        "[{APPROVAL_REQUIRED}] This call needs a person's approval: {}\napproval id: {}\n{}",
        pending.summary, pending.id, pending.how_to_approve
    );
    let mut meta = JsonObject::new();
    meta.insert(
        META_ERROR_CODE.to_owned(),
        Value::String(APPROVAL_REQUIRED.to_owned()),
    );
    meta.insert(
        META_APPROVAL_ID.to_owned(),
        Value::String(pending.id.clone()),
    );
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.meta = Some(MetaObject(meta));
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn structured_content_only_with_an_output_schema() {
        let output = || CallResult::Output {
            structured: json!({"a": 1}),
            text: "{\"a\":1}".into(),
            content: Vec::new(),
        };
        let Answer::Done(Ok(with)) = answer(output(), true) else {
            panic!("expected a result");
        };
        assert_eq!(with.structured_content, Some(json!({"a": 1})));
        let Answer::Done(Ok(without)) = answer(output(), false) else {
            panic!("expected a result");
        };
        assert_eq!(without.structured_content, None);
        assert_eq!(without.is_error, Some(false));
    }

    #[test]
    fn auth_required_carries_its_fields_in_structured_content_and_meta() {
        let details = json!({"code": "auth_required", "reason": "expired", "vendor": "github",
            "scopes": ["repo"], "extension": "github", "connect": "warden auth connect github"});
        let result = CallResult::AuthRequired {
            message: "authorization required".into(),
            details: details.clone(),
        };
        let Answer::Done(Ok(result)) = answer(result, false) else {
            panic!("expected a result");
        };
        assert_eq!(result.is_error, Some(true));
        assert_eq!(result.structured_content, Some(details.clone()));
        let meta = result.meta.unwrap();
        assert_eq!(meta.0[META_AUTH], details);
        assert_eq!(meta.0[META_ERROR_CODE], "auth_required");
    }

    #[test]
    fn protocol_errors_are_invalid_params() {
        let Answer::Done(Err(error)) = answer(CallResult::Protocol("unknown tool".into()), false)
        else {
            panic!("expected an error");
        };
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}
