//! Host-side bindings generated from `wit/world.wit`; nothing else.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "engine",
});

pub use qmd::engine::types::*;
