//! Bench helpers: packages, a Tokio runtime, and a bare-wasmtime host of the
//! same contract (the baselines of benchmarks (a) and (b)).
//!
//! The per-call-linker baselines of (b) come in two sizes: one links only
//! the contract's five host functions; the other links the contract plus
//! WASI 0.2 (`wasmtime_wasi::p2::add_to_linker_sync`) on every call, which
//! is how hosts that accept `wasm32-wasip2` tools build their linker, and
//! the same import surface Warden's own linker carries (contract + WASI lane).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use warden_runtime::{CapabilitySpec, ComponentSpec};
use wasmtime::component::{Component, HasSelf, InstancePre, Linker, Resource, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The Tokio runtime every async benchmark runs on (2 workers, like the machine).
pub(crate) static TOKIO: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
});

pub(crate) const ECHO_INPUT: &str = r#"{"text": "hello, benchmark", "transform": "upper"}"#;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A package directory as a spec; `tag` (when given) appends a custom
/// section so the bytes, and so the cache key, differ.
pub(crate) fn package(rel: &str, tag: Option<usize>) -> ComponentSpec<'static> {
    let dir = root().join(rel);
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.join("manifest.toml")).expect("manifest"))
            .expect("toml");
    let module = dir.join(manifest["runtime"]["module"].as_str().expect("module"));
    let mut wasm = std::fs::read(&module).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}): run `cargo xtask bundle`",
            module.display()
        )
    });
    if let Some(tag) = tag {
        let name = format!("bench-{tag}");
        wasm.push(0); // custom section
        wasm.push((name.len() + 1) as u8);
        wasm.push(name.len() as u8);
        wasm.extend_from_slice(name.as_bytes());
    }
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

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "sandboxed-tool",
});

use exports::warden::tool::tool::{CallContext, Request};
use warden::tool::{call, credential, http, log};

/// Store data of the bare host: nothing but stub imports.
pub(crate) struct Bare;

impl log::Host for Bare {
    fn log(&mut self, _level: log::Level, _message: String) {}
}

impl credential::Host for Bare {
    fn acquire(
        &mut self,
        name: String,
    ) -> Result<Resource<credential::Handle>, credential::CredentialError> {
        Err(credential::CredentialError::NotDeclared(name))
    }
}

impl credential::HostHandle for Bare {
    fn name(&mut self, _handle: Resource<credential::Handle>) -> String {
        String::new()
    }

    fn drop(&mut self, _handle: Resource<credential::Handle>) -> wasmtime::Result<()> {
        Ok(())
    }
}

impl http::Host for Bare {
    fn send(
        &mut self,
        _request: http::Request,
        _credential: Option<Resource<credential::Handle>>,
    ) -> Result<http::Response, http::HttpError> {
        Err(http::HttpError::Denied("bare".into()))
    }
}

impl call::Host for Bare {
    fn report_progress(&mut self, _progress: f64, _total: Option<f64>, _message: Option<String>) {}

    fn cancelled(&mut self) -> bool {
        false
    }
}

/// Store data of a host that also links WASI 0.2 (with an empty context).
pub(crate) struct BareWasi {
    bare: Bare,
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BareWasi {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// The request both hosts send to echo.
pub(crate) fn echo_request() -> Request {
    Request {
        capability_id: "echo.echo".into(),
        input: ECHO_INPUT.into(),
        context: CallContext {
            call_id: "bench".into(),
            origin: "loop-run".into(),
        },
    }
}

/// A plain wasmtime host: default engine, one linker, an `InstancePre`.
pub(crate) struct BareHost {
    pub(crate) engine: Engine,
    pub(crate) component: Component,
    pub(crate) pre: SandboxedToolPre<Bare>,
}

/// Link the contract's stub imports into `linker`.
pub(crate) fn link(linker: &mut Linker<Bare>) {
    SandboxedTool::add_to_linker::<Bare, HasSelf<Bare>>(linker, |s| s).expect("link");
}

impl BareHost {
    pub(crate) fn new(wasm: &[u8]) -> BareHost {
        let engine = Engine::default();
        let component = Component::new(&engine, wasm).expect("compile");
        let mut linker = Linker::new(&engine);
        link(&mut linker);
        let pre: InstancePre<Bare> = linker.instantiate_pre(&component).expect("pre");
        BareHost {
            engine,
            component,
            pre: SandboxedToolPre::new(pre).expect("tool pre"),
        }
    }

    /// Instantiate from the `InstancePre` and call once.
    pub(crate) fn call(&self, request: &Request) -> String {
        let mut store = Store::new(&self.engine, Bare);
        let tool = self.pre.instantiate(&mut store).expect("instantiate");
        tool.warden_tool_tool()
            .call_execute(&mut store, request)
            .expect("call")
            .expect("echo ok")
            .structured
            .expect("echo's JSON")
    }

    /// Build a new linker and instantiate per call, as some hosts do.
    pub(crate) fn call_with_new_linker(&self, request: &Request) -> String {
        let mut linker = Linker::new(&self.engine);
        link(&mut linker);
        let mut store = Store::new(&self.engine, Bare);
        let tool =
            SandboxedTool::instantiate(&mut store, &self.component, &linker).expect("instantiate");
        tool.warden_tool_tool()
            .call_execute(&mut store, request)
            .expect("call")
            .expect("echo ok")
            .structured
            .expect("echo's JSON")
    }

    /// Build a new linker with WASI 0.2 and the contract, a fresh WASI
    /// context, and instantiate per call.
    pub(crate) fn call_with_new_wasi_linker(&self, request: &Request) -> String {
        let mut linker = Linker::<BareWasi>::new(&self.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("link wasi");
        SandboxedTool::add_to_linker::<BareWasi, HasSelf<Bare>>(&mut linker, |s| &mut s.bare)
            .expect("link");
        let data = BareWasi {
            bare: Bare,
            ctx: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(&self.engine, data);
        let tool =
            SandboxedTool::instantiate(&mut store, &self.component, &linker).expect("instantiate");
        tool.warden_tool_tool()
            .call_execute(&mut store, request)
            .expect("call")
            .expect("echo ok")
            .structured
            .expect("echo's JSON")
    }
}
