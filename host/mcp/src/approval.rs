//! Asking a person to approve a call through MCP elicitation.

use std::{sync::LazyLock, time::Duration};

use rmcp::{
    RoleServer,
    model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema},
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{backend::ApprovalAnswer, result::PendingApproval};

/// How long a person has to answer before the call falls back to the
/// out-of-band answer (the approval stays pending).
const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// The elicitation form field holding the decision.
pub(crate) const DECISION: &str = "decision";
/// The elicitation form field holding optional feedback.
pub(crate) const FEEDBACK: &str = "feedback";
/// Decision value: approve this call once.
pub(crate) const APPROVE_ONCE: &str = "approve_once";
/// Decision value: approve and always allow.
pub(crate) const APPROVE_ALWAYS: &str = "approve_always";
/// Decision value: deny.
pub(crate) const DENY: &str = "deny";

static FORM: LazyLock<ElicitationSchema> = LazyLock::new(|| {
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {
            DECISION: {
                "type": "string",
                "title": "Decision",
                "oneOf": [
                    {"const": APPROVE_ONCE, "title": "Approve once"},
                    {"const": APPROVE_ALWAYS, "title": "Approve and always allow"},
                    {"const": DENY, "title": "Deny"},
                ],
            },
            FEEDBACK: {
                "type": "string",
                "title": "Feedback",
                "description": "Optional: why you deny, or guidance for the agent.",
            },
        },
        "required": [DECISION],
    }) else {
        unreachable!("the literal is an object")
    };
    ElicitationSchema::from_json_schema(schema)
        .expect("the approval form is a valid elicitation schema")
});

/// Whether the client on this request declared form elicitation.
pub(crate) fn client_can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        // An empty elicitation capability means form mode (backward compatible).
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// Asks the person; `None` when the client could not be asked (transport
/// failure, timeout, protocol refusal), so the approval stays pending.
pub(crate) async fn ask(
    context: &RequestContext<RoleServer>,
    pending: &PendingApproval,
) -> Option<ApprovalAnswer> {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "Approve this tool call?\n{}\n(approval id: {})",
            pending.summary, pending.id
        ),
        requested_schema: FORM.clone(),
    };
    match context
        .peer
        .create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT))
        .await
    {
        Ok(result) => Some(decide(result)),
        Err(error) => {
            tracing::debug!(approval = %pending.id, %error, "elicitation failed; approval stays pending");
            None
        }
    }
}

/// Maps the person's reply to an answer. Anything but an explicit approval
/// is a denial (declined, cancelled, missing or unknown decision).
pub(crate) fn decide(result: ElicitResult) -> ApprovalAnswer {
    if result.action != ElicitationAction::Accept {
        return ApprovalAnswer::Deny;
    }
    let content = result.content.unwrap_or(Value::Null);
    let feedback = content
        .get(FEEDBACK)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty());
    match content.get(DECISION).and_then(Value::as_str) {
        Some(APPROVE_ONCE) => ApprovalAnswer::ApproveOnce,
        Some(APPROVE_ALWAYS) => ApprovalAnswer::ApproveAndGrant,
        _ => match feedback {
            Some(text) => ApprovalAnswer::DenyWithFeedback(text.to_owned()),
            None => ApprovalAnswer::Deny,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn the_form_parses_as_an_elicitation_schema() {
        let schema = serde_json::to_value(&*FORM).expect("serialize");
        assert_eq!(schema["required"], json!([DECISION]));
        assert_eq!(
            schema["properties"][DECISION]["oneOf"][1]["const"],
            APPROVE_ALWAYS
        );
    }

    #[test]
    fn only_an_explicit_approval_approves() {
        assert_eq!(
            decide(accept(json!({DECISION: APPROVE_ONCE}))),
            ApprovalAnswer::ApproveOnce
        );
        assert_eq!(
            decide(accept(json!({DECISION: APPROVE_ALWAYS}))),
            ApprovalAnswer::ApproveAndGrant
        );
        assert_eq!(
            decide(accept(json!({DECISION: "yes please"}))),
            ApprovalAnswer::Deny
        );
        assert_eq!(decide(accept(json!({}))), ApprovalAnswer::Deny);
        assert_eq!(
            decide(accept(json!({DECISION: DENY, FEEDBACK: " use the fork "}))),
            ApprovalAnswer::DenyWithFeedback("use the fork".into())
        );
        assert_eq!(
            decide(ElicitResult::new(ElicitationAction::Decline)),
            ApprovalAnswer::Deny
        );
        assert_eq!(
            decide(ElicitResult::new(ElicitationAction::Cancel)),
            ApprovalAnswer::Deny
        );
    }
}
