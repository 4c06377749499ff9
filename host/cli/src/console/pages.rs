//! The console's pages: server-rendered HTML in which every value from a
//! package, a tool input, a grant or the audit log is escaped.

use warden_egress::secrets::Account;
use warden_host::{AuditEntry, InstalledPackage};
use warden_registry::{ApprovalRequest, Grant};

/// The stylesheet.
pub(super) const CSS: &str = include_str!("console.css");
/// The script (polls for pending approvals).
pub(super) const JS: &str = include_str!("console.js");

/// `text` safe in HTML text and attribute values (the MCP server's escaper).
pub(super) use warden_mcp::escape_html as escape;

fn layout(title: &str, body_attrs: &str, content: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Warden</title><link rel=\"stylesheet\" href=\"/console/console.css\">\
         <script src=\"/console/console.js\" defer></script></head>\
         <body{body_attrs}><header><strong>Warden</strong>\
         <a href=\"/console\">Approvals</a><a href=\"/console/accounts\">Accounts</a>\
         <a href=\"/console/packages\">Packages</a>\
         <a href=\"/console/audit\">Activity</a></header><main>{content}</main></body></html>",
        escape(title)
    )
}

/// A page with one message.
pub(super) fn message(text: &str) -> String {
    layout(
        "Warden",
        "",
        &format!("<section><p>{}</p></section>", escape(text)),
    )
}

fn when(millis: i64) -> String {
    format!(
        "{} s ago",
        (warden_registry::now_millis() - millis).max(0) / 1000
    )
}

/// The last hour at a glance.
#[derive(Debug, Default)]
pub(super) struct Figures {
    /// Calls that ran.
    pub(super) ran: usize,
    /// Calls that failed (refused, limits, tool errors).
    pub(super) failed: usize,
    /// Calls that asked for approval.
    pub(super) asked: usize,
}

/// Pending approvals with their actions, and live grants with revoke.
pub(super) fn approvals(
    pending: &[ApprovalRequest],
    grants: &[Grant],
    figures: &Figures,
    csrf: &str,
) -> String {
    let csrf = escape(csrf);
    let mut html = format!(
        "<p class=\"meta\">Last hour: ran {}, failed {}, asked for approval {}; waiting now {}.</p>\
         <h1>Pending approvals ({})</h1>",
        figures.ran,
        figures.failed,
        figures.asked,
        pending.len(),
        pending.len()
    );
    if pending.is_empty() {
        html.push_str("<section><p>Nothing is waiting for a decision.</p></section>");
    }
    for request in pending {
        let id = escape(&request.id.0);
        let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
        let package = request
            .package
            .as_ref()
            .map(|p| format!(" · package {}", escape(&p.extension_id)))
            .unwrap_or_default();
        html.push_str(&format!(
            "<section><h2>{tool}</h2>\
             <p class=\"meta\">{id} · asked by {origin}{package} · {rule} · {age}</p>\
             <pre>{input}</pre>\
             <form method=\"post\" action=\"/console/approvals/{id}\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button class=\"approve\" name=\"action\" value=\"approve\">Approve once</button>\
             <button name=\"action\" value=\"grant\">Approve and grant</button></form>\
             <form method=\"post\" action=\"/console/approvals/{id}\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"text\" name=\"feedback\" placeholder=\"Feedback for the model (optional)\">\
             <button class=\"deny\" name=\"action\" value=\"deny\">Deny</button></form></section>",
            tool = escape(&request.capability_id),
            origin = escape(request.origin.as_str()),
            rule = escape(&request.rule.to_string()),
            age = when(request.created_at),
            input = escape(&input),
        ));
    }
    html.push_str(&format!("<h1>Grants ({})</h1>", grants.len()));
    if grants.is_empty() {
        html.push_str("<section><p>No live grants.</p></section>");
    }
    for grant in grants {
        let id = escape(&grant.id.0);
        let expires = grant
            .expires_at
            .map_or_else(|| "until revoked".to_owned(), |t| format!("until {t} ms"));
        html.push_str(&format!(
            "<section><h2>{tool}</h2><p class=\"meta\">{id} · from {origin} · {session} · {expires}</p>\
             <form method=\"post\" action=\"/console/grants/{id}/revoke\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button class=\"deny\">Revoke</button></form></section>",
            tool = escape(&grant.capability_id),
            origin = escape(grant.origin.as_str()),
            session = escape(grant.session.as_deref().unwrap_or("any session")),
            expires = escape(&expires),
        ));
    }
    layout(
        "Approvals",
        &format!(" data-pending=\"{}\"", pending.len()),
        &html,
    )
}

/// A credential an installed package declares.
#[derive(Debug)]
pub(super) struct Declared {
    pub(super) extension: String,
    pub(super) vendor: String,
    pub(super) handle: String,
    /// Where its value may be sent.
    pub(super) audience: String,
}

/// Connected accounts (never a value) with disconnect, and a form per
/// declared credential to store a value (an API key or token).
pub(super) fn accounts(accounts: &[Account], declared: &[Declared], csrf: &str) -> String {
    let csrf = escape(csrf);
    let mut html = format!("<h1>Accounts ({})</h1>", accounts.len());
    if accounts.is_empty() {
        html.push_str(
            "<section><p>No account is connected: <code>warden auth connect &lt;package&gt;</code>.</p></section>",
        );
    }
    for account in accounts {
        let key = serde_json::to_string(&account.key).unwrap_or_default();
        let audiences: Vec<String> = account
            .binding
            .audiences
            .iter()
            .map(ToString::to_string)
            .collect();
        let owner = account
            .key
            .owner
            .as_deref()
            .map(|o| format!(" · of {}", escape(o)))
            .unwrap_or_default();
        html.push_str(&format!(
            "<section><h2>{vendor}</h2>\
             <p class=\"meta\">handle {handle} · scopes {scopes}{owner}</p>\
             <p>Sent only to {audiences}; used by {extensions}.</p>\
             <form method=\"post\" action=\"/console/accounts/disconnect\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"key\" value=\"{key}\">\
             <button class=\"deny\">Disconnect</button></form></section>",
            vendor = escape(&account.key.vendor),
            handle = escape(&account.key.handle),
            scopes = escape(&if account.key.scopes.is_empty() {
                "none".to_owned()
            } else {
                account.key.scopes.join(" ")
            }),
            audiences = escape(&audiences.join(", ")),
            extensions = escape(&account.binding.extensions.join(", ")),
            key = escape(&key),
        ));
    }
    if !declared.is_empty() {
        html.push_str("<h1>Store a key or token</h1>");
    }
    for credential in declared {
        html.push_str(&format!(
            "<section><h2>{vendor} · {handle}</h2>\
             <p class=\"meta\">for package {extension}; sent only to {audience}</p>\
             <form method=\"post\" action=\"/console/accounts/set\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"extension\" value=\"{extension}\">\
             <input type=\"hidden\" name=\"vendor\" value=\"{vendor}\">\
             <input type=\"hidden\" name=\"handle\" value=\"{handle}\">\
             <input type=\"password\" name=\"value\" autocomplete=\"off\" placeholder=\"value\">\
             <button class=\"approve\">Store</button></form></section>",
            vendor = escape(&credential.vendor),
            handle = escape(&credential.handle),
            extension = escape(&credential.extension),
            audience = escape(&credential.audience),
        ));
    }
    layout("Accounts", "", &html)
}

/// Installed packages and their tools.
pub(super) fn packages(installed: &[InstalledPackage]) -> String {
    let mut html = format!("<h1>Packages ({})</h1>", installed.len());
    for package in installed {
        let manifest = &package.package;
        let origin = package
            .origin
            .as_ref()
            .map(|o| format!(" · from {}", escape(&o.reference)))
            .unwrap_or_default();
        html.push_str(&format!(
            "<section><h2>{id} {version}</h2>\
             <p class=\"meta\">{provenance} · trust {trust} (requested {requested}) · {signature}{origin}</p>\
             <table><tr><th>Tool</th><th>Effects</th><th>Reaches</th></tr>",
            id = escape(&manifest.id),
            version = escape(&manifest.version),
            provenance = package.provenance.as_str(),
            trust = package.trust.as_str(),
            requested = manifest.requested_trust.as_str(),
            signature = escape(&package.signature.describe()),
        ));
        for capability in &manifest.capabilities {
            let effects: Vec<String> = capability
                .effects
                .iter()
                .filter_map(|e| serde_json::to_value(e).ok())
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            let reach: Vec<String> = capability
                .network_targets
                .iter()
                .map(|t| t.describe())
                .collect();
            html.push_str(&format!(
                "<tr><td>{}<br><span class=\"meta\">{}</span></td><td>{}</td><td>{}</td></tr>",
                escape(&capability.id),
                escape(&capability.description),
                escape(&effects.join(", ")),
                escape(&reach.join(", ")),
            ));
        }
        html.push_str("</table></section>");
    }
    layout("Packages", "", &html)
}

/// The recent audit lines, newest first.
pub(super) fn audit(lines: &[AuditEntry]) -> String {
    let mut html = String::from(
        "<h1>Recent activity</h1><section><table>\
        <tr><th>When</th><th>Tool</th><th>Origin</th><th>Outcome</th></tr>",
    );
    for entry in lines.iter().rev() {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            when(entry.time),
            escape(&entry.capability),
            escape(&entry.origin),
            escape(&entry.outcome),
        ));
    }
    html.push_str("</table></section>");
    layout("Activity", "", &html)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }
}
