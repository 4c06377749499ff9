//! Host bindings of the `near:agent@0.4.1` compatibility world, generated
//! from `wit/near-agent-0.4.1/`.
//!
//! Imports are async (`http-request` awaits the network) and trappable (a
//! host bug traps; a refusal is an `http-failure` value).

wasmtime::component::bindgen!({
    path: "../../wit/near-agent-0.4.1",
    world: "sandboxed-tool",
    imports: { default: async | trappable },
    exports: { default: async },
});
