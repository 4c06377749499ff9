use super::*;

fn github() -> CredentialSpec {
    CredentialSpec::bearer("gh", "github", &["repo"], "api.github.com")
}

fn target(scheme: &str, host: &str) -> NetworkTarget {
    NetworkTarget {
        scheme: scheme.into(),
        host_pattern: host.into(),
        port: None,
    }
}

fn policy(config: &EgressConfig) -> NetworkPolicy {
    NetworkPolicy::for_capability(
        "github.search",
        &[github()],
        &[
            target("https", "*.githubusercontent.com"),
            target("http", "plain.test"),
        ],
        config,
    )
}

fn get(url: &str) -> ParsedRequest {
    ParsedRequest::parse("GET", url, &[], None).unwrap()
}

fn deny(url: &str, credential: Option<&str>) -> Denial {
    policy(&EgressConfig::default())
        .authorize(&get(url), credential, &Redactor::default())
        .unwrap_err()
}

#[test]
fn credential_is_planned_only_for_its_audience() {
    let plan = policy(&EgressConfig::default())
        .authorize(
            &get("https://api.github.com/user"),
            Some("gh"),
            &Redactor::default(),
        )
        .unwrap();
    assert_eq!(plan.injection.unwrap().handle, "gh");
    assert_eq!(
        deny("https://raw.githubusercontent.com/x", Some("gh")),
        Denial::AudienceMismatch("gh".into())
    );
    assert_eq!(
        deny("https://api.github.com:8443/user", Some("gh")),
        Denial::HostNotAllowed {
            host: "api.github.com".into(),
            port: 8443
        }
    );
    assert_eq!(
        deny("https://api.github.com/", Some("other")),
        Denial::CredentialNotDeclared("other".into())
    );
}

#[test]
fn undeclared_hosts_schemes_and_userinfo_are_denied() {
    assert!(matches!(
        deny("https://evil.test/", None),
        Denial::HostNotAllowed { .. }
    ));
    assert!(matches!(
        deny("https://githubusercontent.com/", None),
        Denial::HostNotAllowed { .. }
    ));
    assert!(matches!(
        deny("http://api.github.com/", None),
        Denial::PlainHttp { .. }
    ));
    assert!(matches!(
        deny("http://plain.test/", None),
        Denial::PlainHttp { .. }
    ));
    assert_eq!(
        deny("ftp://api.github.com/", None),
        Denial::Scheme("ftp".into())
    );
    assert_eq!(
        deny("https://user:pw@api.github.com/", None),
        Denial::Userinfo
    );
    assert_eq!(deny("https://api.github.com/#frag", None), Denial::Fragment);
    assert_eq!(
        deny("https://API.GITHUB.COM./", None),
        Denial::HostNotAllowed {
            host: "api.github.com.".into(),
            port: 443
        }
    );
}

#[test]
fn plain_http_needs_both_a_declared_target_and_the_host() {
    let config = EgressConfig::default().allow_plain_http("plain.test", 80);
    let ok = policy(&config).authorize(&get("http://plain.test/x"), None, &Redactor::default());
    assert!(ok.is_ok());
    let config = EgressConfig::default().allow_plain_http("api.github.com", 80);
    let err = policy(&config)
        .authorize(
            &get("http://api.github.com/"),
            Some("gh"),
            &Redactor::default(),
        )
        .unwrap_err();
    // Not a declared http target, and a credential never goes over http.
    assert_eq!(
        err,
        Denial::HostNotAllowed {
            host: "api.github.com".into(),
            port: 80
        }
    );
}

/// A probe's credential for a loopback test server: audience `http`.
fn loopback_credential(host: &str, port: u16) -> CredentialSpec {
    let mut spec = CredentialSpec::bearer("token", "warden-probe", &[], host);
    spec.audience.scheme = "http".into();
    spec.audience.port = Some(port);
    spec
}

fn loopback_policy(config: &EgressConfig, host: &str, port: u16) -> NetworkPolicy {
    NetworkPolicy::for_capability(
        "warden-probe",
        &[loopback_credential(host, port)],
        &[],
        config,
    )
}

#[test]
fn a_credential_goes_over_plain_http_only_to_an_allowed_loopback_origin() {
    let send = |config: &EgressConfig, host: &str, url: &str| {
        loopback_policy(config, host, 8080).authorize(
            &get(url),
            Some("token"),
            &Redactor::default(),
        )
    };
    // The operator allowed loopback http (`mcp probe --loopback-http`).
    let loopback = EgressConfig::default().allow_loopback_http();
    let plan = send(&loopback, "localhost", "http://localhost:8080/mcp").unwrap();
    assert!(plan.injection.is_some());
    assert!(send(&loopback, "127.0.0.1", "http://127.0.0.1:8080/mcp").is_ok());
    // Another port than the audience's: not its audience.
    assert!(send(&loopback, "localhost", "http://localhost:9090/mcp").is_err());
    // Without the operator's choice: plain http is refused.
    assert!(
        send(
            &EgressConfig::default(),
            "localhost",
            "http://localhost:8080/mcp"
        )
        .is_err()
    );
    // Plain http allowed to a name that is not loopback: an http audience
    // there is no audience at all (and a credential never goes).
    let remote = EgressConfig::default().allow_plain_http("intranet.test", 8080);
    assert_eq!(
        send(&remote, "intranet.test", "http://intranet.test:8080/mcp").unwrap_err(),
        Denial::HostNotAllowed {
            host: "intranet.test".into(),
            port: 8080
        }
    );
    // An https audience never matches plain http, loopback or not.
    let https = NetworkPolicy::for_capability(
        "warden-probe",
        &[CredentialSpec::bearer(
            "token",
            "warden-probe",
            &[],
            "localhost",
        )],
        &[],
        &loopback,
    );
    assert!(
        https
            .authorize(
                &get("http://localhost:443/mcp"),
                Some("token"),
                &Redactor::default()
            )
            .is_err()
    );
}

#[test]
fn methods_and_sensitive_headers_are_refused() {
    let err = ParsedRequest::parse("TRACE", "https://api.github.com/", &[], None).unwrap_err();
    assert_eq!(err, Denial::Method("TRACE".into()));
    for name in [
        "Authorization",
        "host",
        "Cookie",
        "X-API-Key",
        "x-auth-token",
    ] {
        let headers = [(name.to_owned(), "x".to_owned())];
        let request =
            ParsedRequest::parse("GET", "https://api.github.com/", &headers, None).unwrap();
        let err = policy(&EgressConfig::default())
            .authorize(&request, None, &Redactor::default())
            .unwrap_err();
        assert_eq!(err, Denial::ForbiddenHeader(name.to_ascii_lowercase()));
    }
}

#[test]
fn prescan_refuses_staged_secrets_and_token_formats() {
    let staged = Redactor::new([b"hunter2-secret-value".as_slice()]);
    let p = policy(&EgressConfig::default());
    let url = "https://api.github.com/search?q=hunter2%2Dsecret%2Dvalue";
    let err = p.authorize(&get(url), None, &staged).unwrap_err();
    assert_eq!(err, Denial::StagedSecret(LeakSite::Url));
    let body = ParsedRequest::parse(
        "POST",
        "https://api.github.com/",
        &[],
        Some(b"x=HUNTER2-SECRET-VALUE".to_vec()),
    )
    .unwrap();
    assert_eq!(
        p.authorize(&body, Some("gh"), &staged).unwrap_err(),
        Denial::StagedSecret(LeakSite::Body)
    );
    let url = "https://api.github.com/?t=ghp_0123456789abcdefghij0123456789";
    assert!(matches!(
        p.authorize(&get(url), None, &staged).unwrap_err(),
        Denial::TokenFormat {
            kind: "GitHub token",
            ..
        }
    ));
    let headers = [("x-note".to_owned(), "AKIAIOSFODNN7EXAMPLE".to_owned())];
    let request = ParsedRequest::parse("GET", "https://api.github.com/", &headers, None).unwrap();
    let err = p.authorize(&request, None, &staged).unwrap_err();
    assert_eq!(
        err,
        Denial::TokenFormat {
            kind: "AWS access key",
            location: LeakSite::Header("x-note".into())
        }
    );
}

/// A `*` target (the format allows it) admits any public host without a
/// credential, and never widens what the host allows: plain HTTP still needs
/// the host's permission, and credentials still go only to their audience.
#[test]
fn a_wildcard_target_does_not_widen_the_host_rules() {
    let config = EgressConfig::default();
    let any = NetworkPolicy::for_capability(
        "x.y",
        &[github()],
        &[target("https", "*"), target("http", "*")],
        &config,
    );
    any.authorize(&get("https://example.org/x"), None, &Redactor::default())
        .expect("any https host");
    assert!(matches!(
        any.authorize(&get("http://example.org/x"), None, &Redactor::default())
            .unwrap_err(),
        Denial::PlainHttp { .. }
    ));
    assert_eq!(
        any.authorize(
            &get("https://example.org/x"),
            Some("gh"),
            &Redactor::default()
        )
        .unwrap_err(),
        Denial::AudienceMismatch("gh".into())
    );
}

// A metric label is what the manifest declared, never a name a guest chose
// under a wildcard (it could carry the call's input out, one series each).
#[test]
fn a_request_is_counted_under_the_target_it_matched() {
    let policy = policy(&EgressConfig::default());
    let label = |url: &str| policy.target_label(&endpoint_of(&get(url).url).unwrap());
    assert_eq!(label("https://api.github.com/user"), "api.github.com");
    assert_eq!(
        label("https://secret-input.githubusercontent.com/x"),
        "*.githubusercontent.com"
    );
    assert_eq!(label("http://plain.test/"), "plain.test");
    assert_eq!(label("https://elsewhere.test/"), "other");
}

#[test]
fn a_refused_redirect_is_named_by_the_rule_that_refused_its_hop() {
    let denial = Denial::Redirect(Box::new(Denial::HostNotAllowed {
        host: "evil.test".into(),
        port: 443,
    }));
    assert_eq!(denial.kind(), "host_not_allowed");
    assert_eq!(Denial::TooManyRedirects.kind(), "too_many_redirects");
}
