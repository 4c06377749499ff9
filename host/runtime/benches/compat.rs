//! The same read call through the `near:agent@0.4.1` compatibility world and
//! through Warden's own world, in one run:
//!
//! - `read/warden_world`: `github.get_repo` of `packages/github` (Warden's
//!   world, `wasm32-unknown-unknown`, names its credential handle);
//! - `read/near_agent_world`: `near-probe.get_repo` of the compatibility
//!   fixture (`wasm32-wasip2`, WASI 0.2 linked, credential chosen by URL,
//!   `headers-json` both ways).
//!
//! Both send one `GET https://api.github.com/repos/octo/hello` to the same
//! in-process network (a canned 200 with GitHub's repository JSON) and return
//! it, so the difference is the lane: imports, WASI, context and result mapping.
//!
//! Run: `cargo bench -p warden-runtime --bench compat` (after `cargo xtask bundle`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use divan::Bencher;
use warden_core::net::{
    AuthNeeded, BoxFuture, CallNetwork, CredentialError, CredentialMatch, GuestRequest,
    GuestResponse, HttpError,
};
use warden_runtime::{
    CallRequest, CapabilitySpec, ComponentSpec, ComponentWorld, InstalledComponent, Runtime,
    RuntimeConfig,
};

fn main() {
    divan::main();
}

static TOKIO: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
});

const INPUT: &str = r#"{"owner":"octo","repo":"hello"}"#;

const REPO: &str = r#"{"name":"hello","full_name":"octo/hello","owner":{"login":"octo"},
"private":false,"html_url":"https://github.com/octo/hello","description":"a repository",
"default_branch":"main","stargazers_count":1,"forks_count":0,"open_issues_count":0,
"archived":false,"visibility":"public","created_at":"2011-01-26T19:01:12Z",
"updated_at":"2011-01-26T19:14:43Z"}"#;

/// A canned provider behind the call-network trait: one credential,
/// `github_runtime_token`, for `https://api.github.com`.
struct Canned;

impl CallNetwork for Canned {
    fn acquire(&self, _handle: &str) -> Result<(), CredentialError> {
        Ok(())
    }

    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        Ok(url
            .starts_with("https://api.github.com/")
            .then(|| CredentialMatch {
                handle: "github_runtime_token".into(),
                needed: AuthNeeded {
                    vendor: "github".into(),
                    scopes: Vec::new(),
                },
            }))
    }

    fn send<'a>(
        &'a self,
        _request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: std::time::Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async {
            Ok(GuestResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: REPO.as_bytes().to_vec(),
            })
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A package directory as a spec, with the tools' schemas.
fn package(rel: &str) -> ComponentSpec<'static> {
    let dir = root().join(rel);
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.join("manifest.toml")).expect("manifest"))
            .expect("toml");
    let module = dir.join(manifest["runtime"]["module"].as_str().expect("module"));
    let wasm = std::fs::read(&module)
        .unwrap_or_else(|e| panic!("{} ({e}): run `cargo xtask bundle`", module.display()));
    let mut spec = ComponentSpec::new(manifest["id"].as_str().expect("id"), wasm);
    for tool in manifest["tools"].as_array().expect("tools") {
        let read = |key: &str| {
            tool.get(key).and_then(|p| p.as_str()).map(|p| {
                serde_json::from_str(&std::fs::read_to_string(dir.join(p)).expect("schema"))
                    .expect("json")
            })
        };
        let mut capability = CapabilitySpec::new(tool["id"].as_str().expect("tool id"));
        capability.input_schema = read("input_schema_ref");
        capability.output_schema = read("output_schema_ref");
        spec = spec.with_capability(capability);
    }
    spec
}

static RUNTIME: LazyLock<Runtime> =
    LazyLock::new(|| Runtime::new(RuntimeConfig::default()).expect("runtime"));

static GITHUB: LazyLock<InstalledComponent> =
    LazyLock::new(|| RUNTIME.install(package("packages/github")).expect("github"));

static NEAR_PROBE: LazyLock<InstalledComponent> = LazyLock::new(|| {
    let tool = RUNTIME
        .install(package("tests/fixtures/packages/near-probe"))
        .expect("near-probe");
    assert_eq!(tool.world(), ComponentWorld::NearAgent);
    tool
});

fn read(b: Bencher<'_, '_>, tool: &InstalledComponent, capability: &str) {
    let network: Arc<dyn CallNetwork> = Arc::new(Canned);
    b.bench(|| {
        let call = CallRequest::new(capability, INPUT).network(Arc::clone(&network));
        let outcome = TOKIO.block_on(tool.call(call));
        assert_eq!(
            outcome.result.expect("the read succeeds")["full_name"],
            "octo/hello"
        );
    });
}

mod read {
    use super::*;

    /// `github.get_repo` in Warden's own world.
    #[divan::bench]
    fn warden_world(b: Bencher<'_, '_>) {
        read(b, &GITHUB, "github.get_repo");
    }

    /// `near-probe.get_repo` in the `near:agent@0.4.1` compatibility world.
    #[divan::bench]
    fn near_agent_world(b: Bencher<'_, '_>) {
        read(b, &NEAR_PROBE, "near-probe.get_repo");
    }
}
