//! Write Talaria plugins in Rust.
//!
//! A plugin is a WebAssembly component (target `wasm32-wasip2`) of the WIT
//! package `talaria:plugin@0.1.3`. For a tool plugin, each tool is a type
//! implementing [`Tool`] and one [`export_tools!`] exports them all:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use talaria_plugin_sdk::{CallContext, Tool, ToolError, ToolFlags, Value, json, log};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WordCountArgs {
//!     /// The text to count the words of.
//!     text: String,
//!     /// Count only words of at least this many characters (default 1).
//!     min_len: Option<usize>,
//! }
//!
//! #[derive(Default)]
//! struct WordCount;
//!
//! impl Tool for WordCount {
//!     const NAME: &'static str = "word_count";
//!     const DESCRIPTION: &'static str = "Counts the words in a text";
//!     type Args = WordCountArgs;
//!
//!     fn flags() -> ToolFlags {
//!         ToolFlags::read_only()
//!     }
//!
//!     fn call(&self, args: WordCountArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
//!         let min = args.min_len.unwrap_or(1);
//!         let words = args.text.split_whitespace().filter(|w| w.chars().count() >= min).count();
//!         log::debug(format!("counted {words} words"));
//!         Ok(json!({ "words": words }))
//!     }
//! }
//!
//! talaria_plugin_sdk::export_tools!(WordCount);
//! # fn main() {
//! #     use talaria_plugin_sdk::{ToolSet, dispatch};
//! #     let ctx = talaria_plugin_sdk::CallContext {
//! #         session_id: "s".into(), call_id: "c".into(), cwd: None };
//! #     assert_eq!(dispatch::<WordCount>("word_count", r#"{"text":"a bb ccc"}"#, &ctx),
//! #         Ok(r#"{"words":3}"#.to_string()));
//! #     talaria_plugin_sdk::validate::<WordCount>().unwrap();
//! # }
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release` (crate type
//! `cdylib`); the `.wasm` is a component, packaged next to its `plugin.toml`
//! manifest (see the SDK's README).
//!
//! What the SDK does for you:
//! - the tool's `parameters` are the JSON Schema of `Args` (derived with
//!   `schemars`; doc comments become descriptions; fields that are not
//!   `Option` are `required`), see [`parameters_schema`];
//! - arguments are parsed with `serde`; a mismatch becomes
//!   [`ToolError::InvalidArguments`] that names the problem and the expected
//!   parameters, so the model can correct its call;
//! - an unknown tool name is an `InvalidArguments` listing the known tools;
//! - a panic is logged to the host (`log::error`) and then traps: the host
//!   reports the call as failed. Return [`ToolError`]s for expected failures.
//!
//! Chat adapters (the `chat-adapter-plugin` world) implement [`ChatAdapter`]
//! and [`ChatConnection`]; [`chat`] has a line-oriented connection over TCP
//! or the host's TLS for line protocols such as IRC.
//!
//! Host services are in [`log`], [`config`], [`kv`], [`exec`] and
//! [`session_search`]; each needs its capability in the manifest, except
//! logging. Outside a component (native unit tests) they do nothing useful:
//! logging goes to stderr and the rest return [`HostError::Failed`].
//!
//! To implement the exported interface by hand (e.g. to return raw JSON text),
//! implement [`ToolProvider`] and use [`export_tool_provider!`]; [`dispatch`]
//! and [`ToolSet::specs`] still do the usual work for [`Tool`] types, and
//! [`install_panic_hook`] the panic logging.

pub mod chat;
mod commands;
mod error;
mod hooks;
mod host;
pub mod http;
pub mod memory;
mod skins;
mod tool;

/// The bindings `wit_bindgen` generates for the `tool-plugin` world.
///
/// Prefer the wrappers at the crate root; these are here for the export
/// macros and for anything the wrappers do not cover.
// The generated component-ABI glue contains `unsafe` code; rustc does not apply
// the `unsafe_code` lint to proc-macro output, so the workspace's
// `forbid(unsafe_code)` stands for everything written here by hand.
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "tool-plugin",
        // The contract: the repository's `wit/plugin` package.
        path: "../../wit/plugin",
        pub_export_macro: true,
        export_macro_name: "__export_tool_plugin",
        default_bindings_module: "::talaria_plugin_sdk::bindings",
        additional_type_attributes: {
            "talaria:plugin/types@0.1.3/tool-flags": [#[derive(Default)]],
        },
        with: {
            "talaria:plugin/types@0.1.3/tool-error": crate::ToolError,
            "talaria:plugin/host-types@0.1.3/host-error": crate::HostError,
        },
    });
}

/// The bindings `wit_bindgen` generates for the `hooks-plugin` world. Its
/// host imports are those of [`bindings`], so one crate can export tools and
/// hooks together.
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod hooks_bindings {
    wit_bindgen::generate!({
        world: "hooks-plugin",
        path: "../../wit/plugin",
        pub_export_macro: true,
        export_macro_name: "__export_hooks_plugin",
        default_bindings_module: "::talaria_plugin_sdk::hooks_bindings",
        with: {
            "talaria:plugin/types@0.1.3/tool-error": crate::ToolError,
            "talaria:plugin/host-types@0.1.3/host-error": crate::HostError,
            "talaria:plugin/log@0.1.3": crate::bindings::talaria::plugin::log,
            "talaria:plugin/config@0.1.3": crate::bindings::talaria::plugin::config,
            "talaria:plugin/kv@0.1.3": crate::bindings::talaria::plugin::kv,
            "talaria:plugin/exec@0.1.3": crate::bindings::talaria::plugin::exec,
            "talaria:plugin/process@0.1.3": crate::bindings::talaria::plugin::process,
            "talaria:plugin/session-search@0.1.3": crate::bindings::talaria::plugin::session_search,
            "talaria:plugin/editor@0.1.3": crate::bindings::talaria::plugin::editor,
            "talaria:plugin/auxiliary@0.1.3": crate::bindings::talaria::plugin::auxiliary,
        },
    });
}

/// Bindings for a world exporting one provider whose host imports are those
/// of [`bindings`] and whose types are those of [`hooks_bindings`], so one
/// crate can export tools, hooks, commands and skins together.
macro_rules! export_world {
    ($(#[$doc:meta])* $module:ident, $world:literal, $export_macro:literal, $path:literal) => {
        $(#[$doc])*
        #[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
        pub mod $module {
            wit_bindgen::generate!({
                world: $world,
                path: "../../wit/plugin",
                pub_export_macro: true,
                export_macro_name: $export_macro,
                default_bindings_module: $path,
                with: {
                    "talaria:plugin/types@0.1.3": crate::hooks_bindings::talaria::plugin::types,
                    "talaria:plugin/host-types@0.1.3": crate::bindings::talaria::plugin::host_types,
                    "talaria:plugin/log@0.1.3": crate::bindings::talaria::plugin::log,
                    "talaria:plugin/config@0.1.3": crate::bindings::talaria::plugin::config,
                    "talaria:plugin/kv@0.1.3": crate::bindings::talaria::plugin::kv,
                    "talaria:plugin/exec@0.1.3": crate::bindings::talaria::plugin::exec,
                    "talaria:plugin/process@0.1.3": crate::bindings::talaria::plugin::process,
                    "talaria:plugin/session-search@0.1.3": crate::bindings::talaria::plugin::session_search,
                    "talaria:plugin/editor@0.1.3": crate::bindings::talaria::plugin::editor,
                    "talaria:plugin/auxiliary@0.1.3": crate::bindings::talaria::plugin::auxiliary,
                },
            });
        }
    };
}

export_world!(
    /// The bindings `wit_bindgen` generates for the `command-plugin` world.
    command_bindings,
    "command-plugin",
    "__export_command_plugin",
    "::talaria_plugin_sdk::command_bindings"
);
export_world!(
    /// The bindings `wit_bindgen` generates for the `skin-plugin` world.
    skin_bindings,
    "skin-plugin",
    "__export_skin_plugin",
    "::talaria_plugin_sdk::skin_bindings"
);
export_world!(
    /// The bindings `wit_bindgen` generates for the `memory-lifecycle-plugin`
    /// world (0.1.2): `memory-provider` with the session lifecycle. Implement
    /// [`Memory`] and export it with [`export_memory!`].
    memory_bindings,
    "memory-lifecycle-plugin",
    "__export_memory_plugin",
    "::talaria_plugin_sdk::memory_bindings"
);
export_world!(
    /// The bindings `wit_bindgen` generates for the `platform-plugin` world
    /// (no wrapper yet: implement [`PlatformAdapter`] and export it with
    /// `platform_bindings::__export_platform_plugin!`).
    platform_bindings,
    "platform-plugin",
    "__export_platform_plugin",
    "::talaria_plugin_sdk::platform_bindings"
);

/// The bindings `wit_bindgen` generates for the `chat-adapter-identity-plugin`
/// world (0.1.3): a long-lived connection to a chat platform, and how the
/// adapter identifies senders. Its `wasi:io` types are those of the `wasip2`
/// crate, so the host's `host-work` pollable polls together with
/// `wasi:sockets` streams. Implement [`ChatAdapter`], [`ChatConnection`] and
/// [`ChatIdentity`] on your adapter and export them with
/// `chat_bindings::__export_chat_adapter_plugin!`.
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod chat_bindings {
    wit_bindgen::generate!({
        world: "chat-adapter-identity-plugin",
        path: "../../wit/plugin",
        pub_export_macro: true,
        export_macro_name: "__export_chat_adapter_plugin",
        default_bindings_module: "::talaria_plugin_sdk::chat_bindings",
        with: {
            "wasi:io/poll@0.2.12": ::wasip2::io::poll,
            "wasi:io/streams@0.2.12": ::wasip2::io::streams,
            "wasi:io/error@0.2.12": ::wasip2::io::error,
            "talaria:plugin/types@0.1.3": crate::hooks_bindings::talaria::plugin::types,
            "talaria:plugin/host-types@0.1.3/host-error": crate::HostError,
            "talaria:plugin/log@0.1.3": crate::bindings::talaria::plugin::log,
            "talaria:plugin/config@0.1.3": crate::bindings::talaria::plugin::config,
            "talaria:plugin/kv@0.1.3": crate::bindings::talaria::plugin::kv,
            "talaria:plugin/exec@0.1.3": crate::bindings::talaria::plugin::exec,
            "talaria:plugin/process@0.1.3": crate::bindings::talaria::plugin::process,
            "talaria:plugin/session-search@0.1.3": crate::bindings::talaria::plugin::session_search,
            "talaria:plugin/editor@0.1.3": crate::bindings::talaria::plugin::editor,
            "talaria:plugin/auxiliary@0.1.3": crate::bindings::talaria::plugin::auxiliary,
        },
    });
}

pub use chat_bindings::exports::talaria::plugin::chat_adapter::{
    Guest as ChatAdapter, GuestConnection as ChatConnection,
};
pub use chat_bindings::exports::talaria::plugin::chat_identity::{
    Guest as ChatIdentity, IdStrength, SenderIdentity,
};
pub use chat_bindings::talaria::plugin::chat_host;
pub use chat_bindings::talaria::plugin::chat_types;

pub use bindings::exports::talaria::plugin::tool_provider::Guest as ToolProvider;
pub use bindings::talaria::plugin::types::{CallContext, Json, ToolFlags, ToolSpec};
pub use command_bindings::exports::talaria::plugin::command_provider::Guest as CommandProvider;
pub use commands::{CommandSpec, Commands};
pub use error::{HostError, ToolError};
pub use hooks::{HookEvent, Hooks, Subscription, Verdict, parse_arguments, verdict_to_wit};
pub use hooks_bindings::exports::talaria::plugin::hooks::Guest as HooksProvider;
pub use hooks_bindings::talaria::plugin::types::{Message, Role, SessionInfo};
pub use host::{auxiliary, config, editor, exec, kv, log, process, session_search};
pub use memory::{Memory, MemoryScope, ProviderOptions, SessionKind};
pub use memory_bindings::exports::talaria::plugin::memory_provider::Guest as MemoryProvider;
pub use platform_bindings::exports::talaria::plugin::platform_adapter::Guest as PlatformAdapter;
pub use skin_bindings::exports::talaria::plugin::skin_provider::Guest as SkinProvider;
pub use skins::{Skin, Skins};
pub use tool::{
    NoArgs, Tool, ToolSet, dispatch, invoke, parameters_schema, parse_args, spec, validate,
};

pub use schemars;
pub use serde;
pub use serde_json::{self, Value, json};

/// Exports tool types (each implementing [`Tool`]) as the plugin's
/// `tool-provider`: `list-tools` returns their specs in order and `call-tool`
/// dispatches by name. Use it once per plugin crate, at the crate root.
///
/// Up to 16 tools; group more in nested tuples with
/// [`export_tool_provider!`] and a hand-written [`ToolProvider`].
///
/// ```ignore
/// talaria_plugin_sdk::export_tools!(ReadFile, WriteFile, Patch);
/// ```
#[macro_export]
macro_rules! export_tools {
    ($($tool:ty),+ $(,)?) => {
        #[doc(hidden)]
        pub struct __TalariaToolPlugin;

        impl $crate::ToolProvider for __TalariaToolPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::ToolSpec> {
                <($($tool,)+) as $crate::ToolSet>::specs()
            }

            fn call_tool(
                name: ::std::string::String,
                arguments: $crate::Json,
                context: $crate::CallContext,
            ) -> ::core::result::Result<$crate::Json, $crate::ToolError> {
                $crate::install_panic_hook();
                $crate::dispatch::<($($tool,)+)>(&name, &arguments, &context)
            }
        }

        $crate::export_tool_provider!(__TalariaToolPlugin);
    };
}

/// Exports a hand-written [`ToolProvider`] implementation (a type name).
///
/// Call [`install_panic_hook`] at the start of `call_tool` to have panics
/// logged to the host like [`export_tools!`] does.
#[macro_export]
macro_rules! export_tool_provider {
    ($provider:ident) => {
        // Component exports exist only in the wasm build: natively (unit tests
        // of a plugin crate) their names, which contain `:`, would not link.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_tool_plugin!($provider with_types_in $crate::bindings);
    };
}

/// Makes a panic log its message to the host (`log::error`, "plugin panicked:
/// …") before the instance traps. Idempotent; [`export_tools!`] calls it on
/// every call.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            log::error(format!("plugin panicked: {info}"));
            default(info);
        }));
    });
}

#[cfg(test)]
mod tests;
