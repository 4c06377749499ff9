//! `cargo xtask conformance`: the official MCP conformance suite's client
//! scenarios, with Warden as the client, and its server scenarios, with
//! `warden serve --http` as the server ([`server`]). `cargo xtask test`
//! runs them too, with the binary its `cargo test` built.
//!
//! Installs Node 22 and `@modelcontextprotocol/conformance` with npm into
//! `target/conformance/` (once), builds `warden`, and runs
//! `conformance client --scenario <name> --command <script>` per scenario.
//! The script runs `warden mcp probe --loopback-http` against the URL the
//! suite appends: the suite's servers are plain http on localhost, which
//! the probe allows for loopback names only; everything else is Warden's
//! hosted lane as a package uses it (rmcp client, egress transport, bounded
//! discovery). The `auth/*` scenarios add `--auth`: the probe authorizes
//! as an installed server's account does (challenge → RFC 9728/8414
//! discovery → configured client, client ID metadata document or dynamic
//! registration → PKCE with the RFC 8707 `resource` → step-up on 403), and
//! `$BROWSER` — a one-line Node `fetch` that follows the authorization
//! server's redirect to the probe's loopback listener — plays the user.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::workspace;

mod hosted;
mod server;

/// A scenario: its name, the probe's arguments, and shell lines run first.
struct Scenario {
    name: &'static str,
    args: &'static str,
    prelude: &'static str,
}

const fn plain(name: &'static str, args: &'static str) -> Scenario {
    Scenario {
        name,
        args,
        prelude: "",
    }
}

/// The authorized probe: call the suite's protected `test-tool`.
const AUTH: &str = "--auth --call test-tool";

/// Where the suite's `auth/basic-cimd` expects the client's metadata document.
const CIMD: &str = "--auth --call test-tool \
    --client-metadata-url https://conformance-test.local/client-metadata.json";

/// `auth/pre-registration`: the suite hands the pre-registered client in
/// `$MCP_CONFORMANCE_CONTEXT`; the secret goes through the environment.
const PRE_REGISTERED: &str = r#"--auth --call test-tool --client-id "$CLIENT_ID" \
    --client-secret-env WARDEN_PROBE_CLIENT_SECRET"#;
const READ_CONTEXT: &str = r#"CLIENT_ID="$(node -p 'JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).client_id')"
export WARDEN_PROBE_CLIENT_SECRET="$(node -p 'JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT).client_secret')"
"#;

/// `elicitation-sep1034-client-defaults`: the probe asks the server's
/// form on its terminal (`TerminalRelay`); the person presses Enter at each
/// field, taking its default.
const ENTER_AT_EACH_FIELD: &str = "exec 0<<EOF\n\n\n\n\n\n\nEOF\n";

/// The scenarios run.
const SCENARIOS: &[Scenario] = &[
    plain("initialize", ""),
    plain(
        "tools_call",
        r#"--call add_numbers --input '{"a":5,"b":3}'"#,
    ),
    Scenario {
        name: "elicitation-sep1034-client-defaults",
        args: "--call test_client_elicitation_defaults",
        prelude: ENTER_AT_EACH_FIELD,
    },
    plain("sse-retry", "--call test_reconnection"),
    plain("auth/metadata-default", AUTH),
    plain("auth/metadata-var1", AUTH),
    plain("auth/metadata-var2", AUTH),
    plain("auth/metadata-var3", AUTH),
    plain("auth/basic-cimd", CIMD),
    plain("auth/scope-from-www-authenticate", AUTH),
    plain("auth/scope-from-scopes-supported", AUTH),
    plain("auth/scope-omitted-when-undefined", AUTH),
    plain("auth/scope-step-up", AUTH),
    plain("auth/scope-retry-limit", AUTH),
    plain("auth/token-endpoint-auth-basic", AUTH),
    plain("auth/token-endpoint-auth-post", AUTH),
    plain("auth/token-endpoint-auth-none", AUTH),
    Scenario {
        name: "auth/pre-registration",
        args: PRE_REGISTERED,
        prelude: READ_CONTEXT,
    },
    plain("auth/resource-mismatch", AUTH),
    plain("auth/2025-03-26-oauth-metadata-backcompat", AUTH),
    plain("auth/2025-03-26-oauth-endpoint-fallback", AUTH),
    plain("auth/offline-access-scope", AUTH),
    plain("auth/offline-access-not-supported", AUTH),
];

/// The client scenarios not run, with why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "auth/client-credentials-jwt",
        "an OAuth extension (client credentials, machine to machine) Warden does not \
         implement: a hosted server's account is a person's, connected with the \
         authorization code flow",
    ),
    (
        "auth/client-credentials-basic",
        "the client credentials extension, as auth/client-credentials-jwt",
    ),
    (
        "auth/cross-app-access-complete-flow",
        "an OAuth extension (cross-app access, token exchange) Warden does not implement",
    ),
];

/// `$BROWSER` for the scenarios: fetch the authorize URL, following its
/// redirect to the loopback callback (no whitespace inside the script).
const BROWSER: &str = "node -e fetch(process.argv[1]).then(r=>r.text())";

/// Run `cargo xtask conformance`: build `warden`, then every scenario.
pub(crate) fn run() -> Result<()> {
    println!("conformance: building the warden binary");
    let status = workspace::cargo()
        .args(["build", "-p", "warden"])
        .status()?;
    if !status.success() {
        bail!("building warden failed");
    }
    run_with(&workspace::root().join("target/debug/warden"))
}

/// Every scenario with `binary` as the client.
pub(crate) fn run_with(binary: &Path) -> Result<()> {
    let dir = workspace::root().join("target/conformance");
    std::fs::create_dir_all(&dir)?;
    crate::setup::ensure_npm()?;
    install_suite(&dir)?;
    let data = dir.join("data");
    std::fs::create_dir_all(&data)?;
    let bin = dir.join("node_modules/.bin");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let script = dir.join(format!("{}.sh", scenario.name.replace('/', "-")));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nexport BROWSER='{BROWSER}'\n{}exec {:?} --data-dir {:?} mcp probe --loopback-http {} \"$@\"\n",
                scenario.prelude,
                binary.display().to_string(),
                data.display().to_string(),
                scenario.args,
            ),
        )?;
        make_executable(&script)?;
        let started = std::time::Instant::now();
        let output = std::process::Command::new(bin.join("conformance"))
            .args(["client", "--scenario", scenario.name, "--command"])
            .arg(&script)
            .env("PATH", &path)
            .output()
            .context("running the conformance suite")?;
        let (out, err) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        // The suite prints its verdict on stderr and exits 0 when it passed.
        let passed = out.contains("OVERALL: PASSED") || err.contains("OVERALL: PASSED");
        if output.status.success() && passed {
            println!(
                "conformance: {} passed ({:.1?})",
                scenario.name,
                started.elapsed()
            );
        } else {
            print!("{out}");
            eprint!("{err}");
            println!("conformance: {} FAILED", scenario.name);
            failed.push(scenario.name);
        }
    }
    failed.extend(server::run(binary, &bin.join("conformance"), &path, &dir)?);
    if !failed.is_empty() {
        bail!("conformance scenarios failed: {}", failed.join(", "));
    }
    println!(
        "conformance: {} client and {} server scenarios passed",
        SCENARIOS.len(),
        server::SCENARIOS.len() + hosted::SCENARIOS.len()
    );
    for (name, why) in NOT_RUN {
        println!("conformance: client {name} not run: {why}");
    }
    for (name, why) in server::NOT_RUN {
        println!("conformance: server {name} not run: {why}");
    }
    Ok(())
}

/// `npm install node@22 @modelcontextprotocol/conformance` into `dir`, once.
fn install_suite(dir: &Path) -> Result<()> {
    let bin = dir.join("node_modules/.bin");
    if bin.join("conformance").exists() && bin.join("node").exists() {
        return Ok(());
    }
    println!("conformance: installing Node 22 and the suite with npm");
    crate::setup::npm_install(dir, &["node@22", "@modelcontextprotocol/conformance"])
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    bail!("the conformance task needs a Unix shell")
}

#[cfg(test)]
mod tests {
    use super::{NOT_RUN, SCENARIOS};

    #[test]
    fn a_client_scenario_is_either_run_or_named_with_why() {
        for scenario in SCENARIOS {
            assert!(
                !NOT_RUN.iter().any(|(name, _)| *name == scenario.name),
                "{} is both run and not run",
                scenario.name
            );
        }
    }
}
