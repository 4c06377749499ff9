//! `[mcp]`: a hosted MCP server with an HTTPS endpoint, a namespace, `max_tools ≥ 1`,
//! effects, permission, gate matrix and `[[mcp.credentials]]`.

use warden_core::spec::Audience;
use warden_core::{Effect, Permission};

use super::{Ctx, credential, gate, tool, words};
use crate::diag::Code;
use crate::model::McpServer;
use crate::reader::{Table, Val};
use crate::span::At;

const MCP: &[&str] = &[
    "origin_gate_matrix",
    "server",
    "namespace",
    "max_tools",
    "default_permission",
    "effects",
    "credentials",
];

/// Check the `[mcp]` table.
pub(super) fn check_mcp(v: &Val<'_>, at: At, cx: &mut Ctx<'_, '_>) -> Option<McpServer> {
    let t = Table::of(v, at, MCP, &mut cx.sink)?;
    let sink = &mut cx.sink;
    let server = t.req_str(sink, "server");
    let audience = server
        .as_ref()
        .and_then(|s| match words::https_url(&s.v, false) {
            Ok(url) => Some(Audience {
                scheme: "https".into(),
                host: url.host_str().unwrap_or_default().to_owned(),
                port: url.port(),
            }),
            Err(why) => {
                sink.error(Code::McpEndpoint, &s.at, format!("MCP server {why}"));
                None
            }
        });
    let namespace = t.req_str(sink, "namespace");
    if let Some(ns) = &namespace
        && !words::is_name(&ns.v)
    {
        sink.error(
            Code::InvalidName,
            &ns.at,
            format!("namespace `{}` is not a valid name", ns.v),
        );
    }
    if !t.has("max_tools") {
        t.missing(sink, "max_tools");
    }
    let max_tools = t.u64(sink, "max_tools");
    if let Some(m) = &max_tools
        && m.v == 0
    {
        sink.error(Code::McpMaxTools, &m.at, "max_tools must be at least 1");
    }
    let permission = t.str(sink, "default_permission");
    let default_permission = permission
        .as_ref()
        .and_then(|p| words::word::<Permission>(sink, p))
        .unwrap_or(Permission::Ask);
    let effects = tool::effects(&t, cx);
    if let Some(write) = effects.v.iter().find(|e| e.is_write())
        && default_permission != Permission::Ask
    {
        let at = permission.map_or(effects.at.clone(), |p| p.at);
        cx.sink.error(Code::WriteRequiresAsk, &at, format!("[mcp] has the write effect `{write}` but default_permission = \"{default_permission}\""));
    }
    let key = namespace.as_ref().map_or(String::new(), |n| n.v.clone());
    let origin_gate_matrix = gate::check_matrix(&t, cx, &key);
    let derived = audience.clone().unwrap_or(Audience {
        scheme: "https".into(),
        host: String::new(),
        port: None,
    });
    let credentials = credential::check_mcp_credentials(&t, cx, &derived);
    if !effects.v.contains(&Effect::Network) && t.has("effects") {
        cx.sink.error(
            Code::RequiresNetwork,
            &effects.at,
            "a hosted MCP server needs the `network` effect",
        );
    }
    if let Some((_, at)) = t.get("credentials").filter(|_| !credentials.is_empty())
        && !effects.v.contains(&Effect::UseSecret)
    {
        cx.sink.error(
            Code::CredentialRequiresUseSecret,
            &at,
            "[mcp] declares credentials but its effects lack `use_secret`",
        );
    }
    t.finish(&mut cx.sink);
    Some(McpServer {
        server: server?.v,
        audience: audience?,
        namespace: namespace?.v,
        max_tools: max_tools?.v,
        default_permission,
        effects: effects.v,
        origin_gate_matrix,
        credentials,
    })
}
