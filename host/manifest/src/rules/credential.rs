//! `[[tools.credentials]]`, `[[mcp.credentials]]`, audiences, injections and `network_targets`.

use std::collections::BTreeSet;

use warden_core::spec::{Audience, CredentialSpec, Injection, NetworkTarget};

use super::{Ctx, words};
use crate::diag::Code;
use crate::reader::Table;

const CRED: &[&str] = &[
    "handle",
    "vendor",
    "scopes",
    "audience",
    "injection",
    "required",
];
const AUDIENCE: &[&str] = &["scheme", "host", "port"];
const TARGET: &[&str] = &["scheme", "host_pattern", "port"];
const INJECTION_ANY: &[&str] = &["type", "name", "prefix", "placeholder"];
/// Headers the transport owns; a credential may not be injected there.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
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
    let mut handles = BTreeSet::new();
    let mut out = Vec::new();
    for c in t.tables(&mut cx.sink, "credentials", CRED) {
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
        } else if let Some((first, first_at)) = cx.handles.get(&spec.handle) {
            if (&first.vendor, &first.audience, &first.injection)
                != (&spec.vendor, &spec.audience, &spec.injection)
            {
                cx.sink.error(
                    Code::HandleConflict,
                    &at,
                    format!("credential handle `{}` is declared with a different vendor, audience or injection", spec.handle),
                )
                .note(format!("first declared at `{}`", first_at.path));
            }
        } else {
            cx.handles.insert(spec.handle.clone(), (spec.clone(), at));
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
    let sink = &mut cx.sink;
    let scopes = c.str_array(sink, "scopes").map(|s| {
        for scope in &s.v {
            if scope.v.is_empty() || scope.v.chars().any(char::is_whitespace) {
                sink.error(
                    Code::EmptyValue,
                    &scope.at,
                    format!("scope `{}` is empty or contains whitespace", scope.v),
                )
                .help("write one scope per array element");
            }
        }
        s.v.into_iter().map(|s| s.v).collect()
    });
    let required = c.bool(&mut cx.sink, "required").is_none_or(|b| b.v);
    let audience = match derived {
        Some(derived) => {
            if let Some((_, at)) = c.get("audience") {
                cx.sink
                    .error(
                        Code::UnknownField,
                        &at,
                        "an MCP credential has no `audience`",
                    )
                    .help("remove it; the audience is derived from the [mcp] server URL");
            }
            Some(derived.clone())
        }
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
    if let Some(vendor) = &vendor {
        cx.vendors_referenced.insert(vendor.v.clone());
        if derived.is_none() {
            cx.vendor_uses.push(vendor.clone());
        }
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

fn name(c: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> Option<crate::span::L<String>> {
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
            "wildcards are rejected in v3"
        } else {
            "it must be a literal lowercase host name without port, path or userinfo"
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
        host: host?.v,
        port,
    })
}

fn port(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<u16> {
    let p = t.u64(&mut cx.sink, "port")?;
    match u16::try_from(p.v) {
        Ok(n) if n > 0 => Some(n),
        _ => {
            cx.sink
                .error(Code::Limit, &p.at, format!("port {} is out of range", p.v))
                .help("use a port between 1 and 65535");
            None
        }
    }
}

/// Check an injection table (also used by API-key validation probes).
pub(super) fn injection(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<Injection> {
    let sink = &mut cx.sink;
    let kind = t.req_str(sink, "type")?;
    let (known, result): (&'static [&'static str], _) = match kind.v.as_str() {
        "header" => {
            let name = t.req_str(sink, "name");
            let prefix = t.str(sink, "prefix");
            if let Some(n) = &name {
                let token = !n.v.is_empty()
                    && n.v.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_".contains(&b)
                    });
                if !token {
                    sink.error(
                        Code::Injection,
                        &n.at,
                        format!("header name `{}` must be a lowercase HTTP token", n.v),
                    );
                } else if RESERVED_HEADERS.contains(&n.v.as_str()) {
                    sink.error(
                        Code::Injection,
                        &n.at,
                        format!("header `{}` is owned by the transport", n.v),
                    );
                }
            }
            if let Some(p) = &prefix
                && p.v.chars().any(char::is_control)
            {
                sink.error(
                    Code::Injection,
                    &p.at,
                    "the header prefix contains control characters",
                );
            }
            let r = name.map(|n| Injection::Header {
                name: n.v,
                prefix: prefix.map(|p| p.v),
            });
            (&["type", "name", "prefix"][..], r)
        }
        "query" => {
            let name = t.req_str(sink, "name");
            if let Some(n) = &name
                && (n.v.is_empty()
                    || !n
                        .v
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)))
            {
                sink.error(
                    Code::Injection,
                    &n.at,
                    format!(
                        "query parameter `{}` must be unreserved URL characters",
                        n.v
                    ),
                );
            }
            (
                &["type", "name"][..],
                name.map(|n| Injection::Query { name: n.v }),
            )
        }
        "path_placeholder" => {
            let p = t.req_str(sink, "placeholder");
            if let Some(p) = &p
                && (p.v.is_empty() || !p.v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            {
                sink.error(
                    Code::Injection,
                    &p.at,
                    format!(
                        "placeholder `{}` must be letters, digits and `_` (no braces)",
                        p.v
                    ),
                );
            }
            (
                &["type", "placeholder"][..],
                p.map(|p| Injection::PathPlaceholder { placeholder: p.v }),
            )
        }
        other => {
            sink.error(
                Code::Injection,
                &kind.at,
                format!("unknown injection type `{other}`"),
            )
            .help("use type = \"header\", \"query\" or \"path_placeholder\"");
            return None;
        }
    };
    Table::new_like(t, known).finish(sink);
    result
}

/// Check `network_targets` of one tool.
pub(super) fn check_network_targets(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Vec<NetworkTarget> {
    let mut out = Vec::new();
    for n in t.tables(&mut cx.sink, "network_targets", TARGET) {
        let sink = &mut cx.sink;
        let scheme = n.req_str(sink, "scheme");
        let host = n.req_str(sink, "host_pattern");
        let port = port(&n, cx);
        let sink = &mut cx.sink;
        if let Some(s) = &scheme {
            let ok = s.v == "https" || (s.v == "http" && cx.opts.allow_http_network_targets);
            if !ok {
                sink.error(
                    Code::NetworkTarget,
                    &s.at,
                    format!("network target scheme `{}` is not accepted; use https", s.v),
                );
            }
        }
        if let Some(h) = &host
            && !host_pattern_ok(&h.v)
        {
            sink.error(
                Code::NetworkTarget,
                &h.at,
                format!(
                    "host_pattern `{}` is not a literal host or `*.<domain>`",
                    h.v
                ),
            );
        }
        n.finish(sink);
        if let (Some(scheme), Some(host)) = (scheme, host) {
            out.push(NetworkTarget {
                scheme: scheme.v,
                host_pattern: host.v,
                port,
            });
        }
    }
    out
}

fn host_pattern_ok(pattern: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => words::is_literal_host(suffix) && suffix.contains('.'),
        None => words::is_literal_host(pattern),
    }
}
