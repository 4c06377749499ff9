//! Install-time checks of imports, exports and schemas.

use warden_runtime::{CapabilitySpec, ComponentSpec, Runtime, RuntimeError};
use wit_parser::{ManglingAndAbi, Resolve};

use crate::support::{config, echo_dir, package};

/// A component built from `wit` (world `w`) with a dummy core module.
pub(crate) fn component(wit: &str) -> Vec<u8> {
    component_of(wit, |resolve, world| {
        wit_component::dummy_module(resolve, world, ManglingAndAbi::Standard32)
    })
}

/// A component built from `wit` (world `w`) with the core module `module`
/// makes for it.
pub(crate) fn component_of(
    wit: &str,
    module: impl FnOnce(&Resolve, wit_parser::WorldId) -> Vec<u8>,
) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let package = resolve.push_str("test.wit", wit).expect("wit parses");
    let world = resolve
        .select_world(&[package], Some("w"))
        .expect("world w");
    let mut module = module(&resolve, world);
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("embed");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("module")
        .validate(true)
        .encode()
        .expect("encode")
}

/// A component importing `wasi:sockets/tcp@0.2.0`, outside the contract.
pub(crate) fn socket_importing_component() -> Vec<u8> {
    component(
        "package test:bad;
        world w {
            import wasi:sockets/tcp@0.2.0;
            export run: func() -> u32;
        }
        package wasi:sockets@0.2.0 {
            interface tcp { connect: func(address: string) -> u32; }
        }",
    )
}

#[test]
fn an_import_outside_the_contract_is_refused_by_name() {
    let wasm = socket_importing_component();
    let runtime = Runtime::new(config()).unwrap();
    let error = runtime
        .install(ComponentSpec::new("bad", wasm))
        .unwrap_err();
    assert_eq!(
        error,
        RuntimeError::ImportNotAllowed {
            component: "bad".into(),
            import: "wasi:sockets/tcp@0.2.0".into()
        }
    );
    assert!(error.to_string().contains("wasi:sockets/tcp@0.2.0"));
}

#[test]
fn a_component_without_the_tool_export_is_refused() {
    let wasm = component("package test:empty; world w { export run: func() -> u32; }");
    let runtime = Runtime::new(config()).unwrap();
    let error = runtime
        .install(ComponentSpec::new("empty", wasm))
        .unwrap_err();
    assert_eq!(error.code(), "export_missing", "{error}");
}

#[test]
fn garbage_and_bad_schemas_are_refused() {
    let runtime = Runtime::new(config()).unwrap();
    let error = runtime
        .install(ComponentSpec::new("junk", b"not wasm".to_vec()))
        .unwrap_err();
    assert_eq!(error.code(), "compile_failed");

    let spec = package(&echo_dir()).with_capability(
        CapabilitySpec::new("echo.broken").input_schema(serde_json::json!({"type": 5})),
    );
    let error = runtime.install(spec).unwrap_err();
    let RuntimeError::InvalidSchema {
        capability_id,
        which,
        ..
    } = error
    else {
        panic!("expected invalid schema, got {error:?}");
    };
    assert_eq!((capability_id.as_str(), which), ("echo.broken", "input"));
}
