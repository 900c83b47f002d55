//! Host bindings generated from `wit/plugin` (`talaria:plugin@0.1.3`).
//!
//! Imports are async (exec awaits a child process); exports are called with
//! `call_*` async methods on a fiber, so epoch ticks can yield. The
//! `tool-plugin` world brings the host imports; the other worlds reuse them
//! (`with`) and add only their exports.

wasmtime::component::bindgen!({
    world: "tool-plugin",
    path: "../../wit/plugin",
    imports: { default: async },
    exports: { default: async },
});

pub(crate) use exports::talaria::plugin::tool_provider::{CallContext, ToolError, ToolSpec};
pub(crate) use talaria::plugin::host_types::HostError;

/// Bindings for a world that exports one provider and imports what the
/// `tool-plugin` world already bound (shared types, so values cross freely).
macro_rules! export_world {
    ($(#[$doc:meta])* $module:ident, $world:literal) => {
        $(#[$doc])*
        pub(crate) mod $module {
            wasmtime::component::bindgen!({
                world: $world,
                path: "../../wit/plugin",
                imports: { default: async },
                exports: { default: async },
                with: {
                    "talaria:plugin/types": crate::bindings::talaria::plugin::types,
                    "talaria:plugin/host-types": crate::bindings::talaria::plugin::host_types,
                    "talaria:plugin/log": crate::bindings::talaria::plugin::log,
                    "talaria:plugin/config": crate::bindings::talaria::plugin::config,
                    "talaria:plugin/kv": crate::bindings::talaria::plugin::kv,
                    "talaria:plugin/exec": crate::bindings::talaria::plugin::exec,
                    "talaria:plugin/process": crate::bindings::talaria::plugin::process,
                    "talaria:plugin/session-search": crate::bindings::talaria::plugin::session_search,
                    "talaria:plugin/editor": crate::bindings::talaria::plugin::editor,
                    "talaria:plugin/auxiliary": crate::bindings::talaria::plugin::auxiliary,
                },
            });
        }
    };
}

export_world!(
    /// The `hooks-plugin` world's exports.
    hooks_world,
    "hooks-plugin"
);
export_world!(
    /// The `command-plugin` world's exports.
    command_world,
    "command-plugin"
);
export_world!(
    /// The `skin-plugin` world's exports.
    skin_world,
    "skin-plugin"
);
export_world!(
    /// The `memory-plugin` world's exports.
    memory_world,
    "memory-plugin"
);
export_world!(
    /// The `memory-lifecycle-plugin` world's exports (0.1.2).
    memory_lifecycle_world,
    "memory-lifecycle-plugin"
);
export_world!(
    /// The `platform-plugin` world's exports.
    platform_world,
    "platform-plugin"
);

/// The `chat-adapter-plugin` world (0.1.2): the host imports of the other
/// worlds, `chat-host`, and the `connection` resource. Its `wasi:io` types
/// are wasmtime-wasi's, so a `host-work` pollable and a TLS stream are the
/// same resources WASI's sockets hand out.
pub(crate) mod chat_world {
    wasmtime::component::bindgen!({
        world: "chat-adapter-plugin",
        path: "../../wit/plugin",
        // A full resource table is a trap, not a value the guest could handle.
        imports: { "talaria:plugin/chat-host": async | trappable, default: async },
        exports: { default: async },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "talaria:plugin/types": crate::bindings::talaria::plugin::types,
            "talaria:plugin/host-types": crate::bindings::talaria::plugin::host_types,
            "talaria:plugin/log": crate::bindings::talaria::plugin::log,
            "talaria:plugin/config": crate::bindings::talaria::plugin::config,
            "talaria:plugin/kv": crate::bindings::talaria::plugin::kv,
            "talaria:plugin/exec": crate::bindings::talaria::plugin::exec,
            "talaria:plugin/process": crate::bindings::talaria::plugin::process,
            "talaria:plugin/session-search": crate::bindings::talaria::plugin::session_search,
            "talaria:plugin/editor": crate::bindings::talaria::plugin::editor,
            "talaria:plugin/auxiliary": crate::bindings::talaria::plugin::auxiliary,
        },
    });
}

/// The `chat-adapter-identity-plugin` world (0.1.3): a chat adapter that
/// also exports `chat-identity`. Only its exports are new; its imports and
/// types are the `chat-adapter-plugin` world's, so the two share a linker
/// and messages cross between them as they are.
pub(crate) mod chat_identity_world {
    wasmtime::component::bindgen!({
        world: "chat-adapter-identity-plugin",
        path: "../../wit/plugin",
        // `chat-host` is the `chat-adapter-plugin` world's (see `with`).
        imports: { default: async },
        exports: { default: async },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "talaria:plugin/types": crate::bindings::talaria::plugin::types,
            "talaria:plugin/host-types": crate::bindings::talaria::plugin::host_types,
            "talaria:plugin/log": crate::bindings::talaria::plugin::log,
            "talaria:plugin/config": crate::bindings::talaria::plugin::config,
            "talaria:plugin/kv": crate::bindings::talaria::plugin::kv,
            "talaria:plugin/exec": crate::bindings::talaria::plugin::exec,
            "talaria:plugin/process": crate::bindings::talaria::plugin::process,
            "talaria:plugin/session-search": crate::bindings::talaria::plugin::session_search,
            "talaria:plugin/editor": crate::bindings::talaria::plugin::editor,
            "talaria:plugin/auxiliary": crate::bindings::talaria::plugin::auxiliary,
            "talaria:plugin/chat-types": crate::bindings::chat_world::talaria::plugin::chat_types,
            "talaria:plugin/chat-host": crate::bindings::chat_world::talaria::plugin::chat_host,
        },
    });
}
