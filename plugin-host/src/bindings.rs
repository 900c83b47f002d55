//! Host bindings generated from `wit/plugin` (`talaria:plugin@0.1.0`).
//!
//! Imports are async (exec awaits a child process); exports are called with
//! `call_*` async methods on a fiber, so epoch ticks can yield.

wasmtime::component::bindgen!({
    world: "tool-plugin",
    path: "../wit/plugin",
    imports: { default: async },
    exports: { default: async },
});

pub(crate) use exports::talaria::plugin::tool_provider::{CallContext, ToolError, ToolSpec};
pub(crate) use talaria::plugin::host_types::HostError;
