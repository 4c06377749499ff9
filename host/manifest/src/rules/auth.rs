//! `[auth.<vendor>]` recipes (`oauth2_code`, `api_key`, `device_link`) and the
//! vendor <-> recipe cross-check.

use std::collections::BTreeMap;

use toml::de::DeValue;
use warden_core::spec::{
    AuthRecipe, ClientCredentials, OAuth2Recipe, RefreshSettings, RevokeSettings,
    TokenResponsePointers,
};

use super::{Ctx, credential, words};

mod api_key;
use crate::diag::Code;
use crate::reader::{Table, wrong_type};
use crate::span::{At, L};
use api_key::{api_key, device};

const METHOD_ONLY: &[&str] = &["method"];
const OAUTH: &[&str] = &[
    "method",
    "display_name",
    "authorization_endpoint",
    "token_endpoint",
    "scope_param",
    "scope_join",
    "pkce",
    "scopes",
    "extra_authorize_params",
    "client_credentials",
    "exchange_auth",
    "token_response",
    "identity",
    "refresh",
    "revoke",
    "instructions",
    "setup_url",
];
const API_KEY: &[&str] = &[
    "method",
    "display_name",
    "fields",
    "validation",
    "instructions",
    "setup_url",
];
const DEVICE_LINK: &[&str] = &[
    "method",
    "display_name",
    "default_mode_label",
    "alternate_mode_label",
    "instructions",
    "setup_url",
];
const TOKEN: &[&str] = &["access_token", "refresh_token", "expires_in", "scope"];
const TOKEN_SCOPE: &[&str] = &["path", "missing"];
const CLIENT: &[&str] = &["client_id_handle", "client_secret_handle"];
const REFRESH: &[&str] = &["rotates_refresh_token", "keepalive_idle_seconds"];
const REVOKE: &[&str] = &["endpoint", "token_param"];
pub(super) const API_KEY_FIELD: &[&str] = &["handle", "label", "secret"];
pub(super) const PROBE: &[&str] = &["method", "url", "success_status", "inject"];
const FREE: &[&str] = &[];
/// Authorization parameters the host sets itself (exact case), besides the
/// recipe's effective `scope_param`.
pub(crate) const RESERVED_AUTHORIZE_PARAMS: &[&str] = &[
    "state",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "client_id",
    "client_secret",
    "response_type",
    "code",
    "scope",
];

/// The `[auth.<vendor>]` tables: valid recipes, and every vendor declared
/// (also those whose recipe has errors, so they do not cascade).
#[derive(Debug, Default)]
pub(super) struct Recipes {
    pub(super) valid: BTreeMap<String, AuthRecipe>,
    declared: BTreeMap<String, At>,
}

/// Check every `[auth.<vendor>]` table.
pub(super) fn check_recipes(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Recipes {
    let mut out = Recipes::default();
    let Some(auth) = root.table(&mut cx.sink, "auth", FREE) else {
        return out;
    };
    let mut device_link: Option<At> = None;
    for (vendor, value, at) in auth.entries() {
        out.declared.insert(vendor.to_owned(), at.clone());
        if !words::is_name(vendor) {
            cx.sink.error(
                Code::InvalidName,
                &at,
                format!("vendor `{vendor}` is not a valid name"),
            );
        }
        let Some(probe) = Table::of(value, at.clone(), METHOD_ONLY, &mut cx.sink) else {
            continue;
        };
        let Some(method) = probe.req_str(&mut cx.sink, "method") else {
            continue;
        };
        let recipe = match method.v.as_str() {
            "oauth2_code" => oauth2(&Table::new_like(&probe, OAUTH), cx)
                .map(|r| AuthRecipe::Oauth2Code(Box::new(r))),
            "api_key" => api_key(&Table::new_like(&probe, API_KEY), cx).map(AuthRecipe::ApiKey),
            "device_link" => {
                if let Some(first) = &device_link {
                    cx.sink
                        .error(
                            Code::AuthRecipe,
                            &method.at,
                            "a manifest may declare at most one device_link recipe",
                        )
                        .note(format!("the first is `{}`", first.path));
                }
                device_link.get_or_insert(at.clone());
                device(&Table::new_like(&probe, DEVICE_LINK), cx).map(AuthRecipe::DeviceLink)
            }
            other => {
                cx.sink
                    .error(
                        Code::UnknownValue,
                        &method.at,
                        format!("unknown auth method `{other}`"),
                    )
                    .help("use method = \"oauth2_code\", \"api_key\" or \"device_link\"");
                None
            }
        };
        if let Some(recipe) = recipe {
            out.valid.insert(vendor.to_owned(), recipe);
        }
    }
    out
}

/// Every credential vendor (tool or MCP) needs a recipe (or a host-supplied
/// one); every recipe needs a credential that uses it.
pub(super) fn cross_check(recipes: &Recipes, cx: &mut Ctx<'_, '_>) {
    for vendor in std::mem::take(&mut cx.vendor_uses) {
        if !recipes.declared.contains_key(&vendor.v)
            && !cx.opts.host_auth_vendors.contains(&vendor.v)
        {
            cx.sink.error(
                Code::MissingAuthRecipe,
                &vendor.at,
                format!(
                    "credential vendor `{}` has no [auth.{}] recipe",
                    vendor.v, vendor.v
                ),
            );
        }
    }
    for (vendor, at) in &recipes.declared {
        if !cx.vendors_referenced.contains(vendor) {
            cx.sink.error(
                Code::UnusedAuthRecipe,
                at,
                format!("[auth.{vendor}] is not referenced by any credential"),
            );
        }
    }
}

pub(super) fn endpoint(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    key: &str,
    required: bool,
) -> Option<L<String>> {
    let v = if required {
        t.req_str(&mut cx.sink, key)
    } else {
        t.str(&mut cx.sink, key)
    }?;
    if let Err(why) = words::https_url(&v.v) {
        cx.sink
            .error(Code::AuthEndpoint, &v.at, format!("`{key}`: {why}"));
    }
    Some(v)
}

/// An optional string that must not be blank when present.
pub(super) fn opt_non_blank(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> Option<String> {
    let v = t.str(&mut cx.sink, key)?;
    if v.v.trim().is_empty() {
        cx.sink
            .error(Code::EmptyValue, &v.at, format!("`{key}` is blank"));
    }
    Some(v.v)
}

/// A closed word of a recipe field.
fn choice(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str, words: &[&str]) -> Option<String> {
    let v = t.str(&mut cx.sink, key)?;
    if !words.contains(&v.v.as_str()) {
        cx.sink
            .error(
                Code::UnknownValue,
                &v.at,
                format!("unknown {key} `{}`", v.v),
            )
            .help(format!("use one of: {}", words.join(", ")));
    }
    Some(v.v)
}

fn pointer(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str, required: bool) -> Option<String> {
    let v = if required {
        t.req_str(&mut cx.sink, key)
    } else {
        t.str(&mut cx.sink, key)
    }?;
    check_pointer(cx, &v);
    Some(v.v)
}

fn check_pointer(cx: &mut Ctx<'_, '_>, v: &L<String>) {
    if let Some(problem) = words::pointer_problem(&v.v) {
        cx.sink.error(
            Code::JsonPointer,
            &v.at,
            format!("`{}` is not a JSON pointer: it {problem}", v.v),
        );
    }
}

fn oauth2(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<OAuth2Recipe> {
    let display_name = super::non_blank(t, cx, "display_name");
    let authorization_endpoint = endpoint(t, cx, "authorization_endpoint", true);
    let token_endpoint = endpoint(t, cx, "token_endpoint", true);
    let scope_param = opt_non_blank(t, cx, "scope_param");
    let scope_join = choice(t, cx, "scope_join", &["space", "comma"]);
    let pkce = choice(t, cx, "pkce", &["s256", "none"]);
    if !t.has("scopes") {
        t.missing(&mut cx.sink, "scopes");
    }
    let scopes = credential::scopes(t, cx, "scopes");
    let authorize_params = extra_params(t, cx, scope_param.as_deref().unwrap_or("scope"));
    let client_credentials = t
        .table(&mut cx.sink, "client_credentials", CLIENT)
        .and_then(|c| {
            let id = credential::name(&c, cx, "client_id_handle");
            let secret = c.str(&mut cx.sink, "client_secret_handle");
            if let Some(s) = &secret
                && !words::is_name(&s.v)
            {
                cx.sink.error(
                    Code::InvalidName,
                    &s.at,
                    format!("client_secret_handle `{}` is not a valid name", s.v),
                );
            }
            c.finish(&mut cx.sink);
            Some(ClientCredentials {
                client_id_handle: id?.v,
                client_secret_handle: secret.map(|s| s.v),
            })
        });
    let exchange_auth = choice(t, cx, "exchange_auth", &["post_body", "basic"]);
    if !t.has("token_response") {
        t.missing(&mut cx.sink, "token_response");
    }
    let token_response = t
        .table(&mut cx.sink, "token_response", TOKEN)
        .map(|tr| token_response(&tr, cx));
    let (identity, identity_endpoint) = identity(t, cx);
    let refresh = t.table(&mut cx.sink, "refresh", REFRESH).map(|r| {
        let rotates = r
            .bool(&mut cx.sink, "rotates_refresh_token")
            .is_some_and(|b| b.v);
        let keepalive = r.u64(&mut cx.sink, "keepalive_idle_seconds").map(|k| {
            if !(3600..=31_536_000).contains(&k.v) {
                cx.sink
                    .error(
                        Code::Limit,
                        &k.at,
                        format!("keepalive_idle_seconds {} is out of range", k.v),
                    )
                    .help("use 3600 (an hour) to 31536000 (a year)");
            }
            u32::try_from(k.v).unwrap_or(u32::MAX)
        });
        r.finish(&mut cx.sink);
        RefreshSettings {
            rotates_refresh_token: rotates,
            keepalive_idle_seconds: keepalive,
            ..RefreshSettings::default()
        }
    });
    let revoke = t.table(&mut cx.sink, "revoke", REVOKE).and_then(|r| {
        let endpoint = endpoint(&r, cx, "endpoint", true);
        let token_param = opt_non_blank(&r, cx, "token_param");
        r.finish(&mut cx.sink);
        Some(RevokeSettings {
            endpoint: endpoint?.v,
            token_param,
        })
    });
    let instructions = t.str(&mut cx.sink, "instructions").map(|v| v.v);
    let setup_url = endpoint(t, cx, "setup_url", false).map(|v| v.v);
    t.finish(&mut cx.sink);
    Some(OAuth2Recipe {
        display_name: Some(display_name),
        authorization_endpoint: authorization_endpoint?.v,
        token_endpoint: token_endpoint?.v,
        scopes: scopes.unwrap_or_default(),
        scope_param,
        scope_separator: scope_join.map(|j| if j == "comma" { "," } else { " " }.to_owned()),
        pkce: pkce.map(|p| p == "s256"),
        authorize_params,
        client_credentials,
        exchange_auth,
        token_response: token_response?,
        refresh,
        identity,
        identity_endpoint,
        revoke,
        instructions,
        setup_url,
    })
}

/// `extra_authorize_params`: string values, no host-owned key (exact case).
fn extra_params(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    scope_param: &str,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(map) = t.table(&mut cx.sink, "extra_authorize_params", FREE) else {
        return out;
    };
    for (k, v, at) in map.entries() {
        if RESERVED_AUTHORIZE_PARAMS.contains(&k) || k == scope_param {
            cx.sink.error(
                Code::ReservedAuthorizeParam,
                &at,
                format!("authorization parameter `{k}` is reserved for the host"),
            );
        }
        match v.get_ref() {
            DeValue::String(s) => {
                out.insert(k.to_owned(), s.to_string());
            }
            other => wrong_type(&mut cx.sink, &at, "a string", other),
        }
    }
    out
}

fn token_response(tr: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> TokenResponsePointers {
    let access_token = pointer(tr, cx, "access_token", true).unwrap_or_default();
    let refresh_token = pointer(tr, cx, "refresh_token", false);
    let expires_in = pointer(tr, cx, "expires_in", false);
    let mut scope = None;
    let mut fallback = false;
    if let Some(s) = tr.table(&mut cx.sink, "scope", TOKEN_SCOPE) {
        scope = pointer(&s, cx, "path", true);
        fallback = choice(&s, cx, "missing", &["reject", "fallback_to_requested"])
            .is_some_and(|m| m == "fallback_to_requested");
        s.finish(&mut cx.sink);
    }
    tr.finish(&mut cx.sink);
    TokenResponsePointers {
        access_token,
        refresh_token,
        expires_in,
        scope,
        scope_fallback_to_requested: fallback,
        token_type: None,
    }
}

/// `[auth.<v>.identity]`: `account_id` (required), `endpoint = { url }`, and
/// any other key as a named claim pointer.
fn identity(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> (BTreeMap<String, String>, Option<String>) {
    let mut claims = BTreeMap::new();
    let mut url = None;
    let Some(id) = t.table(&mut cx.sink, "identity", FREE) else {
        return (claims, url);
    };
    if !id.has("account_id") {
        id.missing(&mut cx.sink, "account_id");
    }
    for (key, value, at) in id.entries() {
        if key == "endpoint" {
            if let Some(e) = Table::of(value, at, &["url"], &mut cx.sink) {
                url = endpoint(&e, cx, "url", true).map(|u| u.v);
                e.finish(&mut cx.sink);
            }
            continue;
        }
        match value.get_ref() {
            DeValue::String(s) => {
                let v = L {
                    v: s.to_string(),
                    at,
                };
                check_pointer(cx, &v);
                claims.insert(key.to_owned(), v.v);
            }
            other => wrong_type(&mut cx.sink, &at, "a JSON pointer string", other),
        }
    }
    (claims, url)
}
