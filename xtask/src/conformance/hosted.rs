//! The server scenarios whose tools ask the client (sampling and
//! elicitation), which a guest cannot do by design: run through a hosted
//! fixture server behind Warden. The server (`hosted-fixture.mjs`, the MCP
//! TypeScript SDK on Node, HTTPS with a certificate from a CA made here)
//! is reached as `https://mcp.example.com/mcp` through the data
//! directory's `[resolve]` override and `extra_roots`, as an `[mcp]`
//! package named `test`, so `warden serve` publishes `test_sampling`, …,
//! and relays each of its requests to the suite's client within the call.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

use super::server::{Serve, free_loopback, grant, run_scenarios, wait_for};

/// The scenarios run through the hosted fixture.
pub(crate) const SCENARIOS: &[&str] = &[
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];

/// The fixture's tools, granted before the scenarios run, with an input
/// each accepts.
const TOOLS: &[(&str, &str)] = &[
    ("sampling", r#"{"prompt": "hello"}"#),
    ("elicitation", r#"{"message": "hello"}"#),
    ("elicitation_sep1034_defaults", "{}"),
    ("elicitation_sep1330_enums", "{}"),
];

/// The fixture server's script, written next to the suite's `node_modules`.
const SCRIPT: &str = include_str!("hosted-fixture.mjs");

/// The name Warden reaches the fixture by.
const HOST: &str = "mcp.example.com";

/// Run [`SCENARIOS`] against `binary` serving the hosted fixture; returns
/// the names of those that failed.
pub(crate) fn run(
    binary: &Path,
    conformance: &Path,
    path: &std::ffi::OsStr,
    dir: &Path,
) -> Result<Vec<&'static str>> {
    let work = dir.join("hosted");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    let (data, package) = (work.join("data"), work.join("package"));
    std::fs::create_dir_all(&data)?;
    std::fs::create_dir_all(&package)?;
    let (ca, key, cert) = tls_files(&work)?;
    std::fs::write(dir.join("hosted-fixture.mjs"), SCRIPT)?;
    let fixture_address = free_loopback()?;
    let _fixture = Serve(
        Command::new(dir.join("node_modules/.bin/node"))
            .current_dir(dir)
            .arg("hosted-fixture.mjs")
            .arg(fixture_address.port().to_string())
            .arg(&key)
            .arg(&cert)
            .stdout(Stdio::null())
            .spawn()
            .context("starting the hosted fixture server")?,
    );
    wait_for(fixture_address)?;
    std::fs::write(
        data.join("warden.toml"),
        format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [\"{HOST}:443\"]\n\n[resolve]\n\"{HOST}\" = [\"{fixture_address}\"]\n"
        ),
    )?;
    std::fs::write(package.join("manifest.toml"), manifest())?;
    let warden = |args: &[&str]| {
        Command::new(binary)
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .output()
            .context("running warden")
    };
    for args in [
        &["install", &package.display().to_string()][..],
        &["mcp", "refresh", "test"],
    ] {
        let ran = warden(args)?;
        if !ran.status.success() {
            bail!(
                "`warden {}` failed for the hosted fixture: {}",
                args.join(" "),
                String::from_utf8_lossy(&ran.stderr)
            );
        }
    }
    for (tool, input) in TOOLS {
        grant(&warden, &format!("test.{tool}"), input)?;
    }
    run_scenarios(binary, &data, conformance, path, SCENARIOS)
}

/// The `[mcp]` package of the fixture: package `test`, no account.
fn manifest() -> String {
    format!(
        r#"schema_version = "reborn.extension_manifest.v3"
id = "test"
name = "Conformance hosted fixture"
version = "0.1.0"
description = "Test fixture: the conformance suite's sampling and elicitation tools, served by a hosted MCP server. Never install outside tests."

[mcp]
origin_gate_matrix = {{ loop_run = "gated_unless_granted", product = "consent_sufficient", automation = "forbidden" }}
server = "https://{HOST}/mcp"
namespace = "test"
max_tools = 16
default_permission = "allow"
effects = ["network"]
"#
    )
}

/// A CA, and a key and certificate for [`HOST`] it signed, as PEM files in
/// `dir`: (CA, key, certificate).
fn tls_files(dir: &Path) -> Result<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec![HOST.to_owned()])?.signed_by(&key, &issuer)?;
    let paths = (
        dir.join("ca.pem"),
        dir.join("key.pem"),
        dir.join("cert.pem"),
    );
    std::fs::write(&paths.0, ca_cert.pem())?;
    std::fs::write(&paths.1, key.serialize_pem())?;
    std::fs::write(&paths.2, cert.pem())?;
    Ok(paths)
}
