//! `[[tools.credentials]]`, `[[mcp.credentials]]`, audiences, injections and `network_targets`.

use std::collections::BTreeSet;

use warden_core::spec::{Audience, CredentialSpec, Injection, NetworkTarget};

use super::{Ctx, words};
use crate::diag::Code;
use crate::reader::Table;
use crate::span::L;

const CRED: &[&str] = &[
    "handle",
    "vendor",
    "scopes",
    "audience",
    "injection",
    "required",
];
/// `[[mcp.credentials]]` keys: no `audience` (derived from the server) and no `required`.
const MCP_CRED: &[&str] = &["handle", "vendor", "scopes", "injection"];
const AUDIENCE: &[&str] = &["scheme", "host", "port"];
const TARGET: &[&str] = &["scheme", "host_pattern", "port"];
const INJECTION_ANY: &[&str] = &[
    "type",
    "name",
    "prefix",
    "placeholder",
    "username",
    "pointer",
    "post_injection_body_limit_bytes",
];

/// Check the credentials of one tool.
pub(super) fn check_tool_credentials(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
) -> Vec<CredentialSpec> {
    check_list(t, cx, None)
}

/// Check `[[mcp.credentials]]`; their audience is `derived` from the server URL.
pub(super) fn check_mcp_credentials(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    derived: &Audience,
) -> Vec<CredentialSpec> {
    check_list(t, cx, Some(derived))
}

fn check_list(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    derived: Option<&Audience>,
) -> Vec<CredentialSpec> {
    let known = if derived.is_some() { MCP_CRED } else { CRED };
    let mut handles = BTreeSet::new();
    let mut out = Vec::new();
    for c in t.tables(&mut cx.sink, "credentials", known) {
        let Some(spec) = check_credential(&c, cx, derived) else {
            c.finish(&mut cx.sink);
            continue;
        };
        let at = c.get("handle").map_or(c.at.clone(), |(_, at)| at);
        if !handles.insert(spec.handle.clone()) {
            cx.sink.error(
                Code::DuplicateHandle,
                &at,
                format!("credential handle `{}` is declared twice", spec.handle),
            );
        }
        c.finish(&mut cx.sink);
        out.push(spec);
    }
    out
}

fn check_credential(
    c: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    derived: Option<&Audience>,
) -> Option<CredentialSpec> {
    let handle = name(c, cx, "handle");
    let vendor = name(c, cx, "vendor");
    let scopes = scopes(c, cx, "scopes");
    let audience = match derived {
        Some(derived) => Some(derived.clone()),
        None => {
            if !c.has("audience") {
                c.missing(&mut cx.sink, "audience");
            }
            c.table(&mut cx.sink, "audience", AUDIENCE)
                .and_then(|a| audience(&a, cx))
        }
    };
    if !c.has("injection") {
        c.missing(&mut cx.sink, "injection");
    }
    let injection = c.get("injection").and_then(|(v, at)| {
        let t = Table::of(v, at, INJECTION_ANY, &mut cx.sink)?;
        injection(&t, cx)
    });
    let required = match derived {
        // MCP credentials are always required.
        Some(_) => true,
        None => c.bool(&mut cx.sink, "required").is_none_or(|b| b.v),
    };
    if let Some(vendor) = &vendor {
        cx.vendors_referenced.insert(vendor.v.clone());
        cx.vendor_uses.push(vendor.clone());
    }
    Some(CredentialSpec {
        handle: handle?.v,
        vendor: vendor?.v,
        scopes: scopes.unwrap_or_default(),
        audience: audience?,
        injection: injection?,
        required,
    })
}

/// The scopes at `key`: no blank entries, no leading or trailing whitespace, no duplicates.
pub(super) fn scopes(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> Option<Vec<String>> {
    let list = t.str_array(&mut cx.sink, key)?;
    let mut seen = BTreeSet::new();
    for scope in &list.v {
        let problem = if scope.v.trim().is_empty() {
            Some("is blank")
        } else if scope.v.trim() != scope.v {
            Some("has leading or trailing whitespace")
        } else if !seen.insert(scope.v.as_str()) {
            Some("is listed twice")
        } else {
            None
        };
        if let Some(problem) = problem {
            cx.sink
                .error(
                    Code::Scope,
                    &scope.at,
                    format!("scope `{}` {problem}", scope.v),
                )
                .help("write each scope once, one per array element");
        }
    }
    Some(list.v.into_iter().map(|s| s.v).collect())
}

/// A required name-segment field (handle, vendor).
pub(super) fn name(
    c: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    key: &str,
) -> Option<crate::span::L<String>> {
    let v = c.req_str(&mut cx.sink, key)?;
    if !words::is_name(&v.v) {
        cx.sink.error(
            Code::InvalidName,
            &v.at,
            format!("{key} `{}` is not a valid name", v.v),
        );
    }
    Some(v)
}

fn audience(a: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<Audience> {
    let sink = &mut cx.sink;
    let scheme = a.req_str(sink, "scheme");
    let host = a.req_str(sink, "host");
    let port = port(a, cx);
    let sink = &mut cx.sink;
    if let Some(s) = &scheme
        && s.v != "https"
    {
        sink.error(
            Code::Audience,
            &s.at,
            format!(
                "credential audience scheme is `{}`; only https is accepted",
                s.v
            ),
        );
    }
    if let Some(h) = &host
        && !words::is_literal_host(&h.v)
    {
        let why = if h.v.contains('*') {
            "wildcards are not allowed in an audience"
        } else {
            "it must be a literal host name without port, path or userinfo"
        };
        sink.error(
            Code::Audience,
            &h.at,
            format!("credential audience host `{}` is not accepted: {why}", h.v),
        );
    }
    a.finish(sink);
    Some(Audience {
        scheme: scheme?.v,
        // Hosts compare case-insensitively; egress matches lowercase names.
        host: host?.v.to_ascii_lowercase(),
        port,
    })
}

fn port(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<u16> {
    let p = t.u64(&mut cx.sink, "port")?;
    match u16::try_from(p.v) {
        Ok(n) => Some(n),
        Err(_) => {
            cx.sink
                .error(Code::Limit, &p.at, format!("port {} is out of range", p.v))
                .help("use a port between 0 and 65535");
            None
        }
    }
}

/// Whether `name` is an RFC 7230 token.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Check an injection table (its unknown keys are ignored). `strict` applies
/// the per-type rules (tool and MCP credentials; not API-key probes).
pub(super) fn injection(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<Injection> {
    injection_checked(t, cx, true)
}

/// As [`injection`], with the per-type rules only when `strict`.
pub(super) fn injection_checked(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    strict: bool,
) -> Option<Injection> {
    let sink = &mut cx.sink;
    let kind = t.req_str(sink, "type")?;
    let bad = |sink: &mut crate::diag::Sink<'_>, v: &L<String>, ok: bool, what: &str| {
        if strict && !ok {
            sink.error(
                Code::Injection,
                &v.at,
                format!("{what} `{}` is not accepted", v.v),
            );
        }
    };
    let no_controls = |s: &str| !s.chars().any(char::is_control);
    match kind.v.as_str() {
        "header" => {
            let name = t.req_str(sink, "name");
            let prefix = t.str(sink, "prefix");
            if let Some(n) = &name {
                bad(sink, n, is_token(&n.v), "header name (an RFC 7230 token)");
            }
            if let Some(p) = &prefix {
                bad(
                    sink,
                    p,
                    no_controls(&p.v),
                    "header prefix (no control characters)",
                );
            }
            name.map(|n| Injection::Header {
                name: n.v,
                prefix: prefix.map(|p| p.v),
            })
        }
        "query_param" => {
            let name = t.req_str(sink, "name");
            if let Some(n) = &name {
                let ok = !n.v.trim().is_empty() && no_controls(&n.v);
                bad(
                    sink,
                    n,
                    ok,
                    "query parameter name (non-blank, no control characters)",
                );
            }
            name.map(|n| Injection::Query { name: n.v })
        }
        "path_placeholder" => {
            let p = t.req_str(sink, "placeholder");
            if let Some(p) = &p {
                let ok = !p.v.is_empty()
                    && p.v != "."
                    && p.v != ".."
                    && p.v
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
                bad(
                    sink,
                    p,
                    ok,
                    "placeholder (`[A-Za-z0-9-._~]+`, not `.` or `..`)",
                );
            }
            p.map(|p| Injection::PathPlaceholder { placeholder: p.v })
        }
        "basic" => {
            let u = t.req_str(sink, "username");
            if let Some(u) = &u {
                let ok = !u.v.trim().is_empty() && no_controls(&u.v) && !u.v.contains(':');
                bad(
                    sink,
                    u,
                    ok,
                    "basic username (non-blank, no `:` or control characters)",
                );
            }
            u.map(|u| Injection::Basic { username: u.v })
        }
        "body_json_pointer" => {
            let p = t.req_str(sink, "pointer");
            let limit = t.u64(sink, "post_injection_body_limit_bytes").map(|l| l.v);
            if let Some(p) = &p {
                let ok = p.v.starts_with('/') && no_controls(&p.v);
                bad(
                    sink,
                    p,
                    ok,
                    "body pointer (starts with `/`, no control characters)",
                );
            }
            p.map(|p| Injection::BodyJsonPointer {
                pointer: p.v,
                post_injection_body_limit_bytes: limit,
            })
        }
        "vapid_authorization" => Some(Injection::VapidAuthorization),
        other => {
            sink.error(
                Code::Injection,
                &kind.at,
                format!("unknown injection type `{other}`"),
            )
            .help("use type = \"header\", \"query_param\", \"path_placeholder\", \"basic\", \"body_json_pointer\" or \"vapid_authorization\"");
            None
        }
    }
}

/// Check `network_targets` of one tool (unknown keys ignored; duplicates refused).
pub(super) fn check_network_targets(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Vec<NetworkTarget> {
    let mut out: Vec<NetworkTarget> = Vec::new();
    for n in t.tables(&mut cx.sink, "network_targets", TARGET) {
        let sink = &mut cx.sink;
        let scheme = n.str(sink, "scheme");
        let host = n.req_str(sink, "host_pattern");
        let port = port(&n, cx);
        let sink = &mut cx.sink;
        if let Some(s) = &scheme
            && s.v != "https"
            && s.v != "http"
        {
            sink.error(
                Code::NetworkTarget,
                &s.at,
                format!(
                    "network target scheme `{}` is not accepted; use https or http",
                    s.v
                ),
            );
        }
        if let Some(h) = &host
            && !words::is_host_pattern(&h.v)
        {
            sink.error(
                Code::NetworkTarget,
                &h.at,
                format!(
                    "host_pattern `{}` is not `*`, a literal host or `*.<host>`",
                    h.v
                ),
            );
        }
        if let Some(host) = host {
            let target = NetworkTarget {
                scheme: scheme.map_or_else(|| "https".to_owned(), |s| s.v),
                host_pattern: host.v.to_ascii_lowercase(),
                port,
            };
            if out.contains(&target) {
                sink.error(
                    Code::NetworkTarget,
                    &n.at,
                    format!("network target `{}` is listed twice", host.v),
                );
            } else {
                out.push(target);
            }
        }
    }
    out
}
