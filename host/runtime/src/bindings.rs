//! Host bindings of the `warden:tool` contract, generated from `wit/`.
//!
//! Every import is async (the `http` import awaits the network) and
//! trappable (a host bug traps; a policy denial is a WIT error value).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "sandboxed-tool",
    imports: { default: async | trappable },
    exports: { default: async },
    with: {
        "warden:tool/credential.handle": crate::host::credential::Handle,
    },
});
