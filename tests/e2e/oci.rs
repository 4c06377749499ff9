//! Packages through a real OCI registry (Debian's `docker-registry`, the CNCF
//! Distribution registry, on loopback with TLS from a test CA): `warden
//! publish` pushes, `skopeo` (an independent client) inspects and copies
//! what Warden pushed, `warden install oci://…` installs what skopeo copied,
//! `warden upgrade` follows a moved tag showing what changes, and a
//! registry behind the distribution token flow takes a login for pushes
//! and gives anonymous pulls.

use serde_json::Value;
use warden_tests::oci_registry::{Login, REGISTRY_HOST, TestRegistry};
use warden_tests::package::{echo_variant, repo_root};

fn echo_dir() -> String {
    repo_root().join("packages/echo").display().to_string()
}

fn cert_dir_args(registry: &TestRegistry) -> String {
    registry.cert_dir().display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn published_packages_travel_through_a_real_registry_and_skopeo_reads_them() {
    let registry = TestRegistry::start().await;
    let publisher = crate::warden();
    registry.configure(&publisher);
    let reference = registry.reference("acme/echo:1.0");
    let published = publisher.run(&["--json", "publish", &echo_dir(), &reference]);
    assert_eq!(published.code, 0, "{published:?}\n{}", registry.log());
    let published = published.json();
    let digest = published["digest"].as_str().unwrap().to_owned();

    // skopeo reads the manifest Warden pushed: a Wasm OCI artifact.
    let certs = cert_dir_args(&registry);
    let raw = registry.skopeo(&[
        "inspect",
        "--raw",
        "--cert-dir",
        &certs,
        &registry.docker_reference("acme/echo:1.0"),
    ]);
    let manifest: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(
        manifest["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "wasm/echo.wasm"
    );
    assert_eq!(
        manifest["layers"][1]["mediaType"],
        "application/vnd.warden.package.v1.tar+gzip"
    );
    // The digest Warden printed is the manifest's.
    assert_eq!(
        warden_host::oci::Digest::of(raw.as_bytes()).as_str(),
        digest
    );

    // skopeo copies it to another repository, digests preserved.
    registry.skopeo(&[
        "copy",
        "--preserve-digests",
        "--src-cert-dir",
        &certs,
        "--dest-cert-dir",
        &certs,
        &registry.docker_reference("acme/echo:1.0"),
        &registry.docker_reference("mirror/echo:copied"),
    ]);

    // Another host installs what skopeo copied, and runs it.
    let host = crate::warden();
    registry.configure(&host);
    let copied = registry.reference("mirror/echo:copied");
    let installed = host.run(&["--json", "install", "--replace", &copied]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let installed = installed.json();
    assert_eq!(installed["origin"]["reference"], copied.as_str());
    assert_eq!(installed["origin"]["digest"], digest.as_str());
    assert_eq!(installed["trust"], "third_party");
    let call = host.run(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "from a registry"}"#,
    ]);
    assert_eq!(call.code, 0, "{call:?}");
    assert!(call.stdout.contains("from a registry"), "{call:?}");
    // `describe` shows where it came from (kept across processes).
    let described = host.run(&["--json", "describe", "echo.echo"]);
    assert_eq!(
        described.json()["package"]["origin"]["digest"],
        digest.as_str()
    );

    // The tag moves to a version that reaches a new host: `upgrade` shows
    // it and installs only when told to.
    let scratch = tempfile::tempdir().unwrap();
    let newer = echo_variant(
        scratch.path(),
        &[
            ("version = \"0.1.0\"", "version = \"0.2.0\""),
            (
                "effects = []",
                "effects = [\"network\"]\nnetwork_targets = [{ scheme = \"https\", host_pattern = \"api.example.com\" }]",
            ),
        ],
    );
    let moved = publisher.run(&[
        "--json",
        "publish",
        newer.to_str().unwrap(),
        &registry.reference("mirror/echo:copied"),
    ]);
    assert_eq!(moved.code, 0, "{moved:?}");
    let new_digest = moved.json()["digest"].as_str().unwrap().to_owned();
    assert_ne!(new_digest, digest);

    let refused = host.run(&["upgrade"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("api.example.com"), "{refused:?}");
    assert!(refused.stderr.contains("--yes"), "{refused:?}");
    let kept = host.run(&["--json", "describe", "echo.echo"]);
    assert_eq!(kept.json()["package"]["origin"]["digest"], digest.as_str());

    let upgraded = host.run(&["--json", "upgrade", "--yes"]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    let now = host.run(&["--json", "describe", "echo.echo"]);
    let now = now.json();
    assert_eq!(now["package"]["version"], "0.2.0");
    assert_eq!(now["package"]["origin"]["digest"], new_digest.as_str());
    let again = host.run(&["upgrade"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("current"), "{again:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_registry_takes_a_login_for_pushes_and_gives_anonymous_pulls() {
    let login = Login {
        username: "publisher".into(),
        password: "correct horse battery staple".into(),
    };
    let registry = TestRegistry::with_token_auth(login.clone()).await;
    let publisher = crate::warden();
    registry.configure(&publisher);
    let reference = registry.reference("acme/echo:1.0");

    // Without a login the anonymous token may pull only.
    let refused = publisher.run(&["publish", &echo_dir(), &reference]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains(&format!("{REGISTRY_HOST} refused access"))
            && refused.stderr.contains("docker login"),
        "{refused:?}"
    );

    // A wrong password: the token service says so.
    publisher.docker_login(REGISTRY_HOST, &login.username, "wrong");
    let wrong = publisher.run(&["publish", &echo_dir(), &reference]);
    assert_eq!(wrong.code, 1, "{wrong:?}");
    assert!(
        wrong.stderr.contains("token service") && wrong.stderr.contains("401"),
        "{wrong:?}"
    );
    assert!(
        !wrong.stderr.contains("wrong"),
        "no password in messages: {wrong:?}"
    );

    publisher.docker_login(REGISTRY_HOST, &login.username, &login.password);
    let published = publisher.run(&["--json", "publish", &echo_dir(), &reference]);
    assert_eq!(published.code, 0, "{published:?}\n{}", registry.log());
    let digest = published.json()["digest"].as_str().unwrap().to_owned();
    // The login went to the token service only, as HTTP Basic.
    let service = registry.token_service().unwrap();
    assert!(
        service.requests().iter().any(|r| r
            .header("authorization")
            .is_some_and(|a| a.starts_with("Basic "))),
        "the token service saw the login"
    );

    // A login kept in the secret store (`warden registry login`) serves
    // another host with no Docker config; `logout` forgets it.
    let kept = crate::warden();
    registry.configure(&kept);
    let stored = kept.run_with_stdin(
        &[
            "registry",
            "login",
            REGISTRY_HOST,
            "--username",
            &login.username,
        ],
        &format!("{}\n", login.password),
    );
    assert_eq!(stored.code, 0, "{stored:?}");
    let again = registry.reference("acme/echo:from-store");
    let pushed = kept.run(&["publish", &echo_dir(), &again]);
    assert_eq!(pushed.code, 0, "{pushed:?}");
    let listed = kept.run(&["secret", "list"]);
    assert!(!listed.stdout.contains(&login.password), "{listed:?}");
    let out = kept.run(&["registry", "logout", REGISTRY_HOST]);
    assert_eq!(out.code, 0, "{out:?}");
    let refused = kept.run(&["publish", &echo_dir(), &again]);
    assert_eq!(refused.code, 1, "{refused:?}");

    // Another host, with no login, pulls by digest.
    let host = crate::warden();
    registry.configure(&host);
    let pinned = format!("{reference}@{digest}");
    let installed = host.run(&["--json", "install", "--replace", &pinned]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let installed = installed.json();
    assert_eq!(installed["origin"]["digest"], digest.as_str());
    // A pin the user wrote stays a pin: `upgrade` has nothing to move to,
    // even when the tag moves.
    assert_eq!(installed["origin"]["reference"], pinned.as_str());
    let moved = publisher.run(&["publish", &echo_dir(), &registry.reference("acme/echo:1.0")]);
    assert_eq!(moved.code, 0, "{moved:?}");
    let upgrade = host.run(&["upgrade"]);
    assert!(upgrade.stdout.contains("current"), "{upgrade:?}");
    let verify = host.run(&["--json", "verify", &pinned]);
    assert_eq!(
        verify.json()["signature"]["status"],
        "unsigned",
        "{verify:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_package_keeps_its_signature_through_the_registry() {
    use crate::signing::{bundled_echo, minisign};
    let registry = TestRegistry::start().await;
    let scratch = tempfile::tempdir().unwrap();
    let keys = scratch.path();
    minisign(keys, &["-G", "-W", "-p", "acme.pub", "-s", "acme.key"]);
    let public = std::fs::read_to_string(keys.join("acme.pub")).unwrap();
    let public = public.lines().last().unwrap().to_owned();
    let package = keys.join("echo");
    bundled_echo(&package);
    let publisher = crate::warden();
    registry.configure(&publisher);
    let key = keys.join("acme.key");
    let signed = publisher.run(&[
        "sign",
        package.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(signed.code, 0, "{signed:?}");
    let reference = registry.reference("acme/echo:signed");
    let published = publisher.run(&["publish", package.to_str().unwrap(), &reference]);
    assert_eq!(published.code, 0, "{published:?}");

    // A host that trusts the key, and requires signatures.
    let host = crate::warden();
    registry.configure(&host);
    host.configure_more(&format!(
        "\n[trust]\nrequire_signature = true\n\n[trust.signers.acme]\nkey = \"{public}\"\ntrust = \"first_party\"\n"
    ));
    let verified = host.run(&["--json", "verify", &reference]);
    assert_eq!(verified.code, 0, "{verified:?}");
    assert_eq!(verified.json()["signature"]["signer"], "acme");
    let installed = host.run(&["--json", "install", "--replace", &reference]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let installed = installed.json();
    assert_eq!(installed["signature"]["status"], "signed");
    assert_eq!(installed["trust"], "first_party");

    // An unsigned package from the same registry is refused, nothing kept.
    let unsigned = registry.reference("acme/other:1.0");
    let other = echo_variant(
        &keys.join("other"),
        &[
            (r#"id = "echo""#, r#"id = "other""#),
            (r#"id = "echo.echo""#, r#"id = "other.echo""#),
        ],
    );
    let published = publisher.run(&["publish", other.to_str().unwrap(), &unsigned]);
    assert_eq!(published.code, 0, "{published:?}");
    let refused = host.run(&["install", &unsigned]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("not signed by a trusted signer"),
        "{refused:?}"
    );
    assert!(!host.data_dir().join("packages/other").exists());
}

/// A blob larger than one request may carry is uploaded in chunks (the
/// distribution spec's PATCH sequence), through the host library with a
/// 16 KiB request bound, and pulls back byte for byte.
#[tokio::test(flavor = "multi_thread")]
async fn a_blob_larger_than_a_request_is_uploaded_in_chunks() {
    use std::sync::Arc;
    use warden_host::oci::StaticLogins;
    use warden_host::{Host, HostConfig, PackageSource};

    let registry = TestRegistry::start().await;
    let mut egress = warden_egress::testing::config(registry.ca(), &[(REGISTRY_HOST, 443)]);
    egress.max_request_body = 16 << 10;
    let resolver = warden_egress::resolve::OverrideResolver::new()
        .with_socket(REGISTRY_HOST, [registry.addr()]);
    let host = Host::builder(HostConfig {
        egress,
        ..HostConfig::default()
    })
    .resolver(Arc::new(resolver))
    .build()
    .unwrap();
    let location = host.open_location("chunks");
    let loaded = location
        .load_package(&PackageSource::Dir(repo_root().join("packages/echo")))
        .unwrap();
    let artifact = loaded.artifact().unwrap();
    let module = artifact.module.clone().unwrap().1;
    assert!(
        module.len() > 4 * (16 << 10),
        "the component spans several chunks"
    );

    let client = host.registry(Arc::new(StaticLogins::new()));
    let reference = registry.reference("acme/chunked:1.0").parse().unwrap();
    let digest = client.push(&reference, &artifact).await.unwrap();
    let pulled = client.pull(&reference).await.unwrap();
    assert_eq!(pulled.resolved.digest, digest);
    assert_eq!(pulled.module.unwrap().1, module);
    assert!(
        registry
            .log()
            .contains("PATCH /v2/acme/chunked/blobs/uploads/"),
        "uploaded in chunks:\n{}",
        registry.log()
    );
}
