//! `[mcp]`: a hosted MCP server with an HTTPS endpoint, a namespace equal to
//! the id, `max_tools ≥ 1`, effects, permission, gate matrix and
//! `[[mcp.credentials]]` (whose vendors need recipes like tools' do).

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
    let audience = server.as_ref().and_then(|s| match words::https_url(&s.v) {
        Ok(url) => Some(Audience {
            scheme: "https".into(),
            host: url.host_str().unwrap_or_default().to_ascii_lowercase(),
            port: url.port(),
        }),
        Err(why) => {
            sink.error(Code::McpEndpoint, &s.at, format!("MCP server {why}"));
            None
        }
    });
    let namespace = t.req_str(sink, "namespace");
    if let Some(ns) = &namespace
        && !cx.ext_id.is_empty()
        && ns.v != cx.ext_id
    {
        sink.error(
            Code::McpNamespace,
            &ns.at,
            format!(
                "namespace `{}` differs from the extension id `{}`",
                ns.v, cx.ext_id
            ),
        )
        .help(format!("set namespace = \"{}\"", cx.ext_id));
    }
    if !t.has("max_tools") {
        t.missing(sink, "max_tools");
    }
    let max_tools = t
        .u64(sink, "max_tools")
        .and_then(|m| match u32::try_from(m.v) {
            Ok(0) => {
                sink.error(Code::McpMaxTools, &m.at, "max_tools must be at least 1");
                None
            }
            Ok(n) => Some(n),
            Err(_) => {
                sink.error(Code::McpMaxTools, &m.at, "max_tools must fit in 32 bits");
                None
            }
        });
    let default_permission = t
        .str(sink, "default_permission")
        .and_then(|p| words::word::<Permission>(sink, &p))
        .unwrap_or(Permission::Ask);
    let effects = tool::effects(&t, cx, true);
    let origin_gate_matrix = gate::check_matrix(&t, cx);
    let derived = audience.clone().unwrap_or(Audience {
        scheme: "https".into(),
        host: String::new(),
        port: None,
    });
    let credentials = credential::check_mcp_credentials(&t, cx, &derived);
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
        max_tools: max_tools?,
        default_permission,
        effects: effects.v,
        origin_gate_matrix,
        credentials,
    })
}
