//! Shared helpers: built packages, runtimes, fake networks.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use warden_core::net::{
    AuthNeeded, BoxFuture, CallNetwork, CredentialError, GuestRequest, GuestResponse, HttpError,
};
use warden_runtime::{
    CallOutcome, CallRequest, CapabilitySpec, ComponentSpec, InstalledComponent, Limits, Runtime,
    RuntimeConfig,
};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `packages/echo` package.
pub(crate) fn echo_dir() -> PathBuf {
    root().join("packages/echo")
}

/// The hostile fixture package.
pub(crate) fn hostile_dir() -> PathBuf {
    root().join("tests/fixtures/packages/hostile")
}

/// The `wasm32-wasip2` fixture package (imports WASI 0.2).
pub(crate) fn wasi_tool_dir() -> PathBuf {
    root().join("tests/fixtures/packages/wasi-tool")
}

/// A package directory as a [`ComponentSpec`]: its module and each tool's schemas and limits.
pub(crate) fn package(dir: &Path) -> ComponentSpec<'static> {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.join("manifest.toml")).expect("manifest.toml"))
            .expect("manifest parses");
    let module = manifest["runtime"]["module"]
        .as_str()
        .expect("runtime.module");
    let wasm_path = dir.join(module);
    let wasm = std::fs::read(&wasm_path).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}): run `cargo xtask bundle` first",
            wasm_path.display()
        )
    });
    let schema = |tool: &toml::Table, key: &str| -> Option<Value> {
        let path = dir.join(tool.get(key)?.as_str()?);
        Some(serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("json"))
    };
    let mut spec = ComponentSpec::new(manifest["id"].as_str().expect("id"), wasm);
    for tool in manifest["tools"].as_array().expect("tools") {
        let tool = tool.as_table().expect("tool table");
        let mut capability = CapabilitySpec::new(tool["id"].as_str().expect("tool id"));
        capability.input_schema = schema(tool, "input_schema_ref");
        capability.output_schema = schema(tool, "output_schema_ref");
        spec = spec.with_capability(capability);
    }
    spec
}

/// A runtime configuration with its own cache directory `dir`.
pub(crate) fn cached(dir: &Path) -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: Some(dir.to_owned()),
        max_concurrent: 4,
        ..RuntimeConfig::default()
    }
}

/// A runtime on the cache directory `dir` whose cache misses `compiler` compiles.
pub(crate) fn compiling_with(
    dir: &Path,
    compiler: impl warden_runtime::ExternalCompiler + 'static,
) -> Runtime {
    Runtime::new(RuntimeConfig {
        external_compiler: Some(Arc::new(compiler)),
        ..cached(dir)
    })
    .expect("runtime")
}

/// `runtime` compiling into its cache, as an [`warden_runtime::ExternalCompiler`] does.
pub(crate) fn compile_in(runtime: &Runtime, name: &str, wasm: &[u8]) -> Result<(), String> {
    runtime
        .compile_to_cache(name, wasm)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The test configuration: a shared cache (so most runtimes compile nothing),
/// a 5 s default deadline, a modest pool.
pub(crate) fn config() -> RuntimeConfig {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    let cache = CACHE.get_or_init(|| tempfile::tempdir().expect("tempdir"));
    RuntimeConfig {
        defaults: Limits {
            timeout: Duration::from_secs(5),
            ..Limits::DEFAULT
        },
        cache_dir: Some(cache.path().to_owned()),
        max_concurrent: 32,
        ..RuntimeConfig::default()
    }
}

/// A runtime with echo and hostile installed.
pub(crate) struct Host {
    pub(crate) runtime: Runtime,
    pub(crate) echo: InstalledComponent,
    pub(crate) hostile: InstalledComponent,
}

impl Host {
    pub(crate) fn new(config: RuntimeConfig) -> Host {
        let runtime = Runtime::new(config).expect("runtime");
        let echo = runtime.install(package(&echo_dir())).expect("install echo");
        let hostile = runtime
            .install(package(&hostile_dir()))
            .expect("install hostile");
        Host {
            runtime,
            echo,
            hostile,
        }
    }

    /// Call `hostile.<op>` with `input`.
    pub(crate) async fn hostile(&self, op: &str, input: &str) -> CallOutcome {
        self.hostile
            .call(CallRequest::new(format!("hostile.{op}"), input))
            .await
    }

    /// Call `hostile.spin` (an endless loop) with unlimited fuel, so only the
    /// `timeout_ms` deadline can stop it.
    pub(crate) async fn spin(&self, timeout_ms: u64) -> CallOutcome {
        let limits = warden_runtime::LimitOverrides {
            timeout_ms: Some(timeout_ms),
            fuel: Some(u64::MAX),
            ..warden_runtime::LimitOverrides::default()
        };
        self.hostile
            .call(CallRequest::new("hostile.spin", "{}").limits(limits))
            .await
    }

    /// Call `echo.echo` and assert that it works.
    pub(crate) async fn assert_echo_works(&self) {
        let outcome = self
            .echo
            .call(CallRequest::new(
                "echo.echo",
                r#"{"text": "still here", "transform": "upper"}"#,
            ))
            .await;
        let output = outcome
            .result
            .expect("echo succeeds after the previous call");
        assert_eq!(output["text"], "STILL HERE");
    }
}

/// Call `hostile.healthy` with the secret spelled with a JSON escape in its
/// input, which the guest echoes back decoded (as a guest that recovered a
/// secret would), and assert that the output carries it redacted.
pub(crate) async fn assert_echoed_secret_is_redacted(hostile: &InstalledComponent) {
    let outcome = hostile
        .call(
            CallRequest::new("hostile.healthy", r#"{"note": "s3cr\u0033t here"}"#)
                .network(FakeNetwork::new(true, false)),
        )
        .await;
    let output = outcome.result.expect("healthy");
    assert_eq!(output["input"]["note"], "[REDACTED] here");
    assert!(!output.to_string().contains("s3cr3t"), "{output}");
}

/// A `200` answer with an empty JSON object, as a fake network's request gets.
pub(crate) fn empty_json_answer() -> GuestResponse {
    GuestResponse {
        status: 200,
        headers: Vec::new(),
        body: b"{}".to_vec(),
    }
}

/// A network that knows one credential (`hostile_token`) and one secret.
pub(crate) struct FakeNetwork {
    pub(crate) secret: &'static str,
    pub(crate) configured: bool,
    pub(crate) deny: bool,
    pub(crate) seen: Mutex<Vec<(GuestRequest, Option<String>)>>,
}

impl FakeNetwork {
    pub(crate) fn new(configured: bool, deny: bool) -> Arc<FakeNetwork> {
        Arc::new(FakeNetwork {
            secret: "s3cr3t",
            configured,
            deny,
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl CallNetwork for FakeNetwork {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        match (handle, self.configured) {
            ("hostile_token", true) => Ok(()),
            ("hostile_token", false) => Err(CredentialError::NotConfigured(AuthNeeded {
                vendor: "example".into(),
                scopes: vec!["records.read".into()],
            })),
            _ => Err(CredentialError::NotDeclared(handle.into())),
        }
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        self.seen
            .lock()
            .unwrap()
            .push((request, credential.map(str::to_owned)));
        Box::pin(async move {
            if self.deny {
                return Err(HttpError::Denied(format!(
                    "api.example.com is not allowed (token {})",
                    self.secret
                )));
            }
            Ok(GuestResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: br#"{"hello": "[REDACTED]"}"#.to_vec(),
            })
        })
    }

    fn redact(&self, text: &str) -> String {
        text.replace(self.secret, "[REDACTED]")
    }
}
