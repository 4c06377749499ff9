//! `[auth.<vendor>]` recipes (`oauth2_code`, `api_key`) and the vendor <-> recipe cross-check.

use std::collections::BTreeMap;

use toml::de::DeValue;
use warden_core::spec::{
    ApiKeyRecipe, AuthRecipe, OAuth2Recipe, RefreshSettings, TokenResponsePointers, ValidationProbe,
};

use super::{Ctx, credential, words};
use crate::diag::Code;
use crate::reader::{Table, wrong_type};
use crate::span::{At, L};

const METHOD_ONLY: &[&str] = &["method"];
const OAUTH: &[&str] = &[
    "method",
    "display_name",
    "authorization_endpoint",
    "token_endpoint",
    "scopes",
    "scope_separator",
    "pkce",
    "authorize_params",
    "token_response",
    "refresh",
    "identity",
];
const API_KEY: &[&str] = &["method", "display_name", "label", "help_url", "validation"];
const TOKEN: &[&str] = &[
    "access_token",
    "refresh_token",
    "expires_in",
    "scope",
    "token_type",
];
const REFRESH: &[&str] = &["skew_seconds", "endpoint"];
const PROBE: &[&str] = &["method", "url", "injection", "expect_status"];
const FREE: &[&str] = &[];
/// Authorization parameters the host sets itself.
pub(crate) const RESERVED_AUTHORIZE_PARAMS: &[&str] = &[
    "state",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "code_verifier",
    "client_id",
    "client_secret",
    "response_type",
    "scope",
    "grant_type",
];

/// The `[auth.<vendor>]` tables: valid recipes, and every vendor declared
/// (also those whose recipe has errors, so they do not cascade).
#[derive(Debug, Default)]
pub(super) struct Recipes {
    pub(super) valid: BTreeMap<String, AuthRecipe>,
    declared: BTreeMap<String, At>,
    /// Where each API-key validation probe URL is written.
    probe_urls: BTreeMap<String, At>,
}

/// Check every `[auth.<vendor>]` table.
pub(super) fn check_recipes(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Recipes {
    let mut out = Recipes::default();
    let Some(auth) = root.table(&mut cx.sink, "auth", FREE) else {
        return out;
    };
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
            "oauth2_code" => {
                oauth2(&Table::new_like(&probe, OAUTH), cx).map(AuthRecipe::Oauth2Code)
            }
            "api_key" => {
                let t = Table::new_like(&probe, API_KEY);
                if let Some(url_at) = probe_url_at(&t) {
                    out.probe_urls.insert(vendor.to_owned(), url_at);
                }
                api_key(&t, cx).map(AuthRecipe::ApiKey)
            }
            other => {
                cx.sink
                    .error(
                        Code::UnknownValue,
                        &method.at,
                        format!("unknown auth method `{other}`"),
                    )
                    .help("use method = \"oauth2_code\" or \"api_key\"");
                None
            }
        };
        if let Some(recipe) = recipe {
            out.valid.insert(vendor.to_owned(), recipe);
        }
    }
    out
}

/// Every tool credential vendor needs a recipe (or a host-supplied one); every recipe needs a user.
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
    for (vendor, recipe) in &recipes.valid {
        let AuthRecipe::ApiKey(ApiKeyRecipe {
            validation: Some(probe),
            ..
        }) = recipe
        else {
            continue;
        };
        let Ok(url) = url::Url::parse(&probe.url) else {
            continue;
        };
        let audiences: Vec<_> = cx
            .handles
            .values()
            .filter(|(c, _)| &c.vendor == vendor)
            .map(|(c, _)| &c.audience)
            .collect();
        let hit = audiences.iter().any(|a| {
            Some(a.host.as_str()) == url.host_str()
                && a.effective_port() == url.port_or_known_default().unwrap_or(0)
        });
        if !hit
            && !audiences.is_empty()
            && let Some(at) = recipes.probe_urls.get(vendor)
        {
            cx.sink.error(
                Code::Audience,
                at,
                format!("the validation probe of `{vendor}` goes to `{}`, which no `{vendor}` credential has as audience", url.host_str().unwrap_or("")),
            )
            .help("send the probe to a host a credential of this vendor may reach, so the key goes nowhere else");
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

/// Where `validation.url` is written, without recording anything.
fn probe_url_at(t: &Table<'_, '_>) -> Option<At> {
    let (v, at) = t.get("validation")?;
    let probe = Table::new(v.get_ref().as_table()?, at, PROBE);
    probe.get("url").map(|(_, at)| at)
}

fn endpoint(
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
    match words::https_url(&v.v, true) {
        Ok(url) => {
            for (param, _) in url.query_pairs() {
                reserved(cx, &param, &v.at);
            }
        }
        Err(why) => {
            cx.sink
                .error(Code::AuthEndpoint, &v.at, format!("`{key}`: {why}"));
        }
    }
    Some(v)
}

fn reserved(cx: &mut Ctx<'_, '_>, param: &str, at: &At) {
    if RESERVED_AUTHORIZE_PARAMS.contains(&param.to_ascii_lowercase().as_str()) {
        cx.sink.error(
            Code::ReservedAuthorizeParam,
            at,
            format!("authorization parameter `{param}` is reserved for the host"),
        );
    }
}

fn strings(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(map) = t.table(&mut cx.sink, key, FREE) else {
        return out;
    };
    for (k, v, at) in map.entries() {
        match v.get_ref() {
            DeValue::String(s) => {
                out.insert(k.to_owned(), s.to_string());
            }
            other => wrong_type(&mut cx.sink, &at, "a string", other),
        }
    }
    out
}

fn oauth2(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<OAuth2Recipe> {
    let authorization_endpoint = endpoint(t, cx, "authorization_endpoint", true);
    let token_endpoint = endpoint(t, cx, "token_endpoint", true);
    let sink = &mut cx.sink;
    let display_name = t.str(sink, "display_name").map(|v| v.v);
    let scopes = t
        .str_array(sink, "scopes")
        .map(|s| s.v.into_iter().map(|s| s.v).collect());
    let scope_separator = t.str(sink, "scope_separator").map(|v| v.v);
    let pkce = t.bool(sink, "pkce").map(|v| v.v);
    let authorize_params = strings(t, cx, "authorize_params");
    if let Some((_, at)) = t.get("authorize_params") {
        for param in authorize_params.keys() {
            reserved(cx, param, &at);
        }
    }
    let identity = strings(t, cx, "identity");
    if !t.has("token_response") {
        t.missing(&mut cx.sink, "token_response");
    }
    let token_response = t.table(&mut cx.sink, "token_response", TOKEN).map(|tr| {
        let ptr = |cx: &mut Ctx<'_, '_>, key: &str, required: bool| {
            let v = if required {
                tr.req_str(&mut cx.sink, key)
            } else {
                tr.str(&mut cx.sink, key)
            }?;
            if !words::is_json_pointer(&v.v) {
                cx.sink.error(
                    Code::JsonPointer,
                    &v.at,
                    format!("`{}` is not a JSON pointer", v.v),
                );
            }
            Some(v.v)
        };
        let access_token = ptr(cx, "access_token", true);
        let pointers = TokenResponsePointers {
            access_token: access_token.unwrap_or_default(),
            refresh_token: ptr(cx, "refresh_token", false),
            expires_in: ptr(cx, "expires_in", false),
            scope: ptr(cx, "scope", false),
            token_type: ptr(cx, "token_type", false),
        };
        tr.finish(&mut cx.sink);
        pointers
    });
    let refresh = t.table(&mut cx.sink, "refresh", REFRESH).map(|r| {
        let skew_seconds = r.u64(&mut cx.sink, "skew_seconds").map(|v| v.v);
        let endpoint = endpoint(&r, cx, "endpoint", false).map(|v| v.v);
        r.finish(&mut cx.sink);
        RefreshSettings {
            skew_seconds,
            endpoint,
        }
    });
    t.finish(&mut cx.sink);
    Some(OAuth2Recipe {
        display_name,
        authorization_endpoint: authorization_endpoint?.v,
        token_endpoint: token_endpoint?.v,
        scopes: scopes.unwrap_or_default(),
        scope_separator,
        pkce,
        authorize_params,
        token_response: token_response?,
        refresh,
        identity,
    })
}

fn api_key(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<ApiKeyRecipe> {
    let sink = &mut cx.sink;
    let display_name = t.str(sink, "display_name").map(|v| v.v);
    let label = t.str(sink, "label").map(|v| v.v);
    let help_url = endpoint(t, cx, "help_url", false).map(|v| v.v);
    let validation = t
        .table(&mut cx.sink, "validation", PROBE)
        .and_then(|p| probe(&p, cx));
    t.finish(&mut cx.sink);
    Some(ApiKeyRecipe {
        display_name,
        label,
        help_url,
        validation,
    })
}

fn probe(p: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<ValidationProbe> {
    let method = p.str(&mut cx.sink, "method");
    if let Some(m) = &method
        && !["GET", "POST", "HEAD"].contains(&m.v.as_str())
    {
        cx.sink
            .error(
                Code::UnknownValue,
                &m.at,
                format!("unknown probe method `{}`", m.v),
            )
            .help("use \"GET\", \"POST\" or \"HEAD\"");
    }
    let url = endpoint(p, cx, "url", true);
    if !p.has("injection") {
        p.missing(&mut cx.sink, "injection");
    }
    let injection = p
        .get("injection")
        .and_then(|(v, at)| {
            Table::of(
                v,
                at,
                &["type", "name", "prefix", "placeholder"],
                &mut cx.sink,
            )
        })
        .and_then(|t| credential::injection(&t, cx));
    let mut expect_status = Vec::new();
    if let Some((v, at)) = p.get("expect_status")
        && let Some(items) = crate::reader::array(v, &at, &mut cx.sink)
    {
        for (i, item) in items.iter().enumerate() {
            let item_at = at.index(i, item.span());
            match item
                .get_ref()
                .as_integer()
                .and_then(|n| n.as_str().parse::<u16>().ok())
            {
                Some(code) if (100..=599).contains(&code) => expect_status.push(code),
                _ => {
                    cx.sink
                        .error(
                            Code::Limit,
                            &item_at,
                            "expect_status entries are HTTP status codes",
                        )
                        .help("use integers between 100 and 599");
                }
            }
        }
    }
    p.finish(&mut cx.sink);
    Some(ValidationProbe {
        method: method.map(|m| m.v),
        url: url?.v,
        injection: injection?,
        expect_status,
    })
}
