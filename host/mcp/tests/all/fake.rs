//! An in-memory backend: an echo tool, a tool that needs approval, a tool
//! that fails, a tool that returns content blocks.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::watch;
use warden_core::content::ContentBlock;
use warden_mcp::{
    ApprovalAnswer, Backend, BoxFuture, CallResult, CallSignals, Caller, ToolEntry, ToolHints,
};

/// The approval id the `write` tool asks for.
pub(crate) const APPROVAL_ID: &str = "appr-7";

#[derive(Debug)]
pub(crate) struct Fake {
    changes: watch::Sender<u64>,
    extra_tools: Mutex<Vec<String>>,
    /// Every `resolve` call, in order.
    pub(crate) resolved: Mutex<Vec<(String, ApprovalAnswer)>>,
    /// The authenticated caller of each call, in order.
    pub(crate) callers: Mutex<Vec<Option<String>>>,
}

impl Fake {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            changes: watch::channel(0).0,
            extra_tools: Mutex::new(Vec::new()),
            resolved: Mutex::new(Vec::new()),
            callers: Mutex::new(Vec::new()),
        })
    }

    /// Adds a tool and bumps the change counter.
    pub(crate) fn add_tool(&self, name: &str) {
        self.extra_tools.lock().unwrap().push(name.to_owned());
        self.changes.send_modify(|version| *version += 1);
    }

    pub(crate) fn resolved(&self) -> Vec<(String, ApprovalAnswer)> {
        self.resolved.lock().unwrap().clone()
    }
}

fn text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": false,
    })
}

impl Backend for Fake {
    fn tools(&self) -> Vec<ToolEntry> {
        let mut tools = vec![
            ToolEntry::new("echo", "Returns its input.", text_schema())
                .with_title("Echo")
                .with_output_schema(text_schema())
                .with_hints(ToolHints {
                    read_only: true,
                    idempotent: true,
                    ..ToolHints::default()
                }),
            ToolEntry::new("fail", "Always fails.", json!({"type": "object"})).with_hints(
                ToolHints {
                    read_only: true,
                    ..ToolHints::default()
                },
            ),
            ToolEntry::new("write", "Writes; needs approval.", text_schema())
                .with_output_schema(json!({"type": "object"}))
                .with_hints(ToolHints {
                    destructive: true,
                    open_world: true,
                    ..ToolHints::default()
                }),
            ToolEntry::new(
                "picture",
                "Returns an image and a link.",
                json!({"type": "object"}),
            )
            .with_hints(ToolHints {
                read_only: true,
                ..ToolHints::default()
            }),
        ];
        for name in self.extra_tools.lock().unwrap().iter() {
            tools.push(ToolEntry::new(
                name.clone(),
                "Added later.",
                json!({"type": "object"}),
            ));
        }
        tools
    }

    fn call(
        &self,
        name: String,
        arguments: Value,
        caller: Option<Caller>,
        _signals: CallSignals,
    ) -> BoxFuture<'static, CallResult> {
        self.callers.lock().unwrap().push(caller.map(|c| c.subject));
        let result = match name.as_str() {
            "echo" => CallResult::Output {
                text: arguments.to_string(),
                structured: arguments,
                content: Vec::new(),
            },
            "picture" => CallResult::Output {
                structured: Value::Null,
                text: "[image: image/png, 4 bytes]".into(),
                content: vec![
                    ContentBlock::text("a picture"),
                    ContentBlock::from_mcp(&json!({"type": "image", "mimeType": "image/png",
                        "data": "iVBORw==", "annotations": {"audience": ["user"]}}))
                    .unwrap(),
                    ContentBlock::from_mcp(&json!({"type": "resource_link",
                        "uri": "file:///p.png", "name": "p.png"}))
                    .unwrap(),
                ],
            },
            "fail" => CallResult::ToolError {
                code: "operation-failed".into(),
                message: "the tool failed on purpose".into(),
            },
            "write" => CallResult::NeedsApproval {
                approval_id: APPROVAL_ID.into(),
                summary: "write to the world".into(),
                how_to_approve: format!("run `warden approvals approve {APPROVAL_ID}`"),
            },
            other => CallResult::Protocol(format!("unknown tool `{other}`")),
        };
        Box::pin(async move { result })
    }

    fn resolve(
        &self,
        approval_id: String,
        answer: ApprovalAnswer,
        _caller: Option<Caller>,
        _signals: CallSignals,
    ) -> BoxFuture<'static, CallResult> {
        self.resolved
            .lock()
            .unwrap()
            .push((approval_id, answer.clone()));
        let result = match answer {
            ApprovalAnswer::ApproveOnce | ApprovalAnswer::ApproveAndGrant => CallResult::Output {
                structured: json!({"written": true}),
                text: "{\"written\":true}".into(),
                content: Vec::new(),
            },
            ApprovalAnswer::Deny => CallResult::ToolError {
                code: "denied".into(),
                message: "a person denied this call".into(),
            },
            ApprovalAnswer::DenyWithFeedback(feedback) => CallResult::ToolError {
                code: "denied".into(),
                message: feedback,
            },
        };
        Box::pin(async move { result })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
