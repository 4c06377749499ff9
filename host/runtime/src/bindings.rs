//! Host bindings of the `warden:tool` contract, one module per version:
//! [`v0_2`] from `wit/warden.wit`, [`v0_1`] from `wit/warden-0.1.0/`, whose
//! components run unchanged beside the new ones. Both link into the one
//! linker (their interfaces have versioned names); the host functions of
//! the interfaces they share are written once (`crate::host`).
//!
//! Every import is async (the `http` import awaits the network) and
//! trappable (a host bug traps; a policy denial is a WIT error value).

/// `warden:tool@0.2.0`: content blocks, progress, cancellation.
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "sandboxed-tool",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "warden:tool/credential.handle": crate::host::credential::Handle,
        },
    });
}

/// `warden:tool@0.1.0`: JSON output only.
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/warden-0.1.0",
        world: "sandboxed-tool",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "warden:tool/credential.handle": crate::host::credential::Handle,
        },
    });
}
