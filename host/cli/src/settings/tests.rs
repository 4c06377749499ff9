use super::*;

fn settings(text: &str) -> Settings {
    toml::from_str(text).expect("valid warden.toml")
}

#[test]
fn the_store_retention_is_days_and_never_zero() {
    let days = settings("[store]\nretention_days = 7\n")
        .store_retention()
        .unwrap();
    assert_eq!(days, std::time::Duration::from_secs(7 * 86_400));
    let default = settings("").store_retention().unwrap();
    assert_eq!(default, warden_host::DEFAULT_STORE_RETENTION);
    let zero = settings("[store]\nretention_days = 0\n")
        .store_retention()
        .unwrap_err();
    assert!(zero.to_string().contains("retention_days"), "{zero}");
}

#[test]
fn tools_without_channel_names_package_ids() {
    let ids = settings("[packages]\ntools_without_channel = [\"slack\", \"mem0.local\"]\n")
        .tools_without_channel()
        .unwrap();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), ["mem0.local", "slack"]);
    assert!(settings("").tools_without_channel().unwrap().is_empty());
    for bad in ["Slack", "", "a..b", "../x", ".x"] {
        let text = format!("[packages]\ntools_without_channel = [{bad:?}]\n");
        let error = settings(&text).tools_without_channel().unwrap_err();
        assert!(
            error.to_string().contains("not a package id"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn a_hosted_call_timeout_is_read_and_zero_is_refused() {
    let limits = settings("[mcp]\ncall_timeout_secs = 90\n")
        .hosted()
        .unwrap();
    assert_eq!(limits.call_timeout, std::time::Duration::from_secs(90));
    let default = settings("").hosted().unwrap();
    assert_eq!(default.call_timeout, std::time::Duration::from_secs(60));
    let error = settings("[mcp]\ncall_timeout_secs = 0\n")
        .hosted()
        .unwrap_err();
    assert!(error.to_string().contains("call_timeout_secs"), "{error}");
}

#[test]
fn server_timeouts_are_bounded_by_the_operators_maximum() {
    let s = settings(
        "[mcp]\nmax_call_timeout_secs = 900\n[mcp.servers.mcp-slow]\ncall_timeout_secs = 800\n",
    );
    assert_eq!(
        s.hosted().unwrap().max_call_timeout,
        std::time::Duration::from_secs(900)
    );
    let registered = std::collections::BTreeMap::from([
        ("mcp-slow".to_owned(), 100),
        ("mcp-other".to_owned(), 120),
    ]);
    let servers = s.hosted_servers(registered).unwrap();
    let secs = |id: &str| servers[id].call_timeout.unwrap().as_secs();
    assert_eq!((secs("mcp-slow"), secs("mcp-other")), (800, 120));
    assert!(!servers["mcp-slow"].no_relay);
    let quiet = settings("[mcp.servers.mcp-q]\nrelay = false\n")
        .hosted_servers(Default::default())
        .unwrap();
    assert!(quiet["mcp-q"].no_relay && quiet["mcp-q"].call_timeout.is_none());
    let over = settings("[mcp.servers.mcp-x]\ncall_timeout_secs = 601\n")
        .hosted_servers(Default::default())
        .unwrap_err();
    assert!(
        format!("{over:#}").contains("over the operator's maximum of 600 s"),
        "{over:#}"
    );
    let global = settings("[mcp]\ncall_timeout_secs = 700\n")
        .hosted()
        .unwrap_err();
    assert!(
        format!("{global:#}").contains("call_timeout_secs"),
        "{global:#}"
    );
}

#[test]
fn a_client_metadata_url_must_be_https() {
    let ok = settings("[oauth]\nclient_metadata_url = \"https://warden.example/client.json\"\n");
    let clients = ok.oauth_clients().unwrap();
    assert_eq!(
        clients.client_metadata_url(),
        Some("https://warden.example/client.json")
    );
    for bad in [
        "http://warden.example/client.json",
        "https:///client.json",
        "warden.example/client.json",
        "https://warden.example/a b.json",
        "https://user@warden.example/client.json",
        "https://warden.example/client.json#frag",
    ] {
        let error = settings(&format!("[oauth]\nclient_metadata_url = {bad:?}\n"))
            .oauth_clients()
            .unwrap_err();
        assert!(
            error.to_string().contains("must be an https URL"),
            "{bad}: {error}"
        );
    }
    assert_eq!(
        settings("").oauth_clients().unwrap().client_metadata_url(),
        None
    );
}

#[test]
fn a_configured_client_reads_its_secret_from_the_environment_it_names() {
    const TOKEN: &str = "https://github.com/login/oauth/access_token";
    let configured = settings(&format!(
        "[auth.github]\nclient_id = \"cid\"\nclient_secret_env = \"WARDEN_TEST_UNSET_SECRET_VAR\"\n\
         token_endpoint = \"{TOKEN}\"\n"
    ));
    let clients = configured.oauth_clients().unwrap();
    assert!(clients.client("other", TOKEN).unwrap().is_none());
    let error = clients.client("github", TOKEN).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("$WARDEN_TEST_UNSET_SECRET_VAR is not set"),
        "{error}"
    );
}

/// A vendor's client goes to no recipe until it names the token endpoint
/// it is for (any package may name the vendor); the error names the one
/// to add.
#[test]
fn a_configured_client_names_its_token_endpoint() {
    let unpinned = settings("[auth.github]\nclient_id = \"cid\"\n");
    let error = unpinned
        .oauth_clients()
        .unwrap()
        .client("github", "https://github.com/login/oauth/access_token")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("add token_endpoint = \"https://github.com/login/oauth/access_token\""),
        "{error}"
    );
    let pinned =
        settings("[auth.github]\nclient_id = \"cid\"\ntoken_endpoint = \"https://github.com/t\"\n");
    let client = pinned
        .oauth_clients()
        .unwrap()
        .client("github", "https://evil.example/t")
        .unwrap()
        .unwrap();
    // The host refuses it for a recipe naming another endpoint.
    assert_eq!(
        client.token_endpoint.as_deref(),
        Some("https://github.com/t")
    );
}

#[test]
fn a_trust_pin_names_a_package_a_digest_and_a_trust() {
    let digest = "ab".repeat(32);
    let pins = settings(&format!(
        "[trust.chat]\ndigest = \"{}\"\ntrust = \"first_party\"\n",
        digest.to_uppercase()
    ))
    .trust_pins()
    .unwrap();
    assert_eq!(pins["chat"].digest, digest, "kept lowercase");
    assert_eq!(pins["chat"].trust, warden_host::EffectiveTrust::FirstParty);
    for (bad, why) in [
        (
            "[trust.chat]\ndigest = \"abc\"\ntrust = \"first_party\"\n",
            "not a content digest",
        ),
        (
            &format!("[trust.chat]\ndigest = \"{digest}\"\ntrust = \"root\"\n"),
            "not one of third_party, first_party, system",
        ),
        (
            &format!("[trust.\"Bad Id\"]\ndigest = \"{digest}\"\ntrust = \"system\"\n"),
            "not a package id",
        ),
    ] {
        let error = settings(bad).trust_pins().unwrap_err().to_string();
        assert!(error.contains(why), "{error}");
    }
}

#[test]
fn shared_accounts_name_credential_vendors() {
    let shared = settings("[accounts]\nshared = [\"github\", \"search.v2\"]\n");
    assert_eq!(shared.shared_accounts().unwrap(), ["github", "search.v2"]);
    let error = settings("[accounts]\nshared = [\"Git Hub\"]\n")
        .shared_accounts()
        .unwrap_err();
    assert!(
        error.to_string().contains("not a credential vendor"),
        "{error}"
    );
}
