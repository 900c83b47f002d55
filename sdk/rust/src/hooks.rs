//! Lifecycle hooks: a type implementing [`Hooks`] and one [`export_hooks!`](crate::export_hooks).
//!
//! ```ignore
//! #[derive(Default)]
//! struct Guard;
//!
//! impl Hooks for Guard {
//!     fn subscriptions() -> Vec<Subscription> {
//!         vec![Subscription { event: HookEvent::PreTool, priority: 10 }]
//!     }
//!
//!     fn pre_tool(_: SessionInfo, tool: String, arguments: Value) -> Verdict {
//!         if tool == "terminal" && arguments["command"].as_str().is_some_and(|c| c.contains("sudo")) {
//!             return Verdict::Veto("sudo is not allowed in this project".into());
//!         }
//!         Verdict::Proceed
//!     }
//! }
//!
//! talaria_plugin_sdk::export_hooks!(Guard);
//! ```

use serde_json::Value;

use crate::ToolError;
use crate::{Message, SessionInfo};

pub use crate::hooks_bindings::exports::talaria::plugin::hooks::{
    Event as HookEvent, PreToolVerdict, Subscription,
};

/// What a `pre-tool` hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Let the call run.
    Proceed,
    /// Do not run it; the model reads the reason.
    Veto(String),
    /// Run it with these arguments instead.
    Rewrite(Value),
}

/// A hooks plugin. Only the events returned by [`Hooks::subscriptions`] are
/// delivered; every handler defaults to doing nothing. Hooks run in a fresh
/// instance per event: keep state in [`crate::kv`].
pub trait Hooks {
    /// The events to receive, each with a priority (higher runs first).
    fn subscriptions() -> Vec<Subscription>;

    /// Before the session's first turn.
    fn session_start(_session: SessionInfo) {}

    /// When the session ends.
    fn session_end(_session: SessionInfo) {}

    /// Once per user turn: text appended to the user's message (never to the
    /// system prompt).
    fn pre_llm(_session: SessionInfo, _last_user_message: String) -> Option<String> {
        None
    }

    /// After each model reply.
    fn post_llm(_session: SessionInfo, _reply: Message) {}

    /// Before a tool call: proceed, veto or rewrite its arguments.
    fn pre_tool(_session: SessionInfo, _tool: String, _arguments: Value) -> Verdict {
        Verdict::Proceed
    }

    /// After a tool call: `Some` replaces the result text the model reads.
    fn post_tool(
        _session: SessionInfo,
        _tool: String,
        _arguments: Value,
        _result: Result<String, ToolError>,
    ) -> Option<String> {
        None
    }
}

/// Converts a [`Verdict`] to its WIT form.
pub fn verdict_to_wit(verdict: Verdict) -> PreToolVerdict {
    match verdict {
        Verdict::Proceed => PreToolVerdict::Proceed,
        Verdict::Veto(reason) => PreToolVerdict::Veto(reason),
        Verdict::Rewrite(arguments) => PreToolVerdict::Rewrite(arguments.to_string()),
    }
}

/// Parses the arguments the host sends (always a JSON object); anything
/// unparsable arrives as `null` rather than aborting the hook.
pub fn parse_arguments(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or(Value::Null)
}

/// Exports a type implementing [`Hooks`] as the plugin's `hooks` interface.
/// Use it once per plugin crate, at the crate root; it can sit next to
/// [`export_tools!`](crate::export_tools).
#[macro_export]
macro_rules! export_hooks {
    ($hooks:ty) => {
        #[doc(hidden)]
        pub struct __TalariaHooksPlugin;

        impl $crate::HooksProvider for __TalariaHooksPlugin {
            fn subscriptions() -> ::std::vec::Vec<$crate::Subscription> {
                <$hooks as $crate::Hooks>::subscriptions()
            }

            fn session_start(session: $crate::SessionInfo) {
                $crate::install_panic_hook();
                <$hooks as $crate::Hooks>::session_start(session)
            }

            fn session_end(session: $crate::SessionInfo) {
                $crate::install_panic_hook();
                <$hooks as $crate::Hooks>::session_end(session)
            }

            fn pre_llm(
                session: $crate::SessionInfo,
                last_user_message: ::std::string::String,
            ) -> ::core::option::Option<::std::string::String> {
                $crate::install_panic_hook();
                <$hooks as $crate::Hooks>::pre_llm(session, last_user_message)
            }

            fn post_llm(session: $crate::SessionInfo, reply: $crate::Message) {
                $crate::install_panic_hook();
                <$hooks as $crate::Hooks>::post_llm(session, reply)
            }

            fn pre_tool(
                session: $crate::SessionInfo,
                tool: ::std::string::String,
                arguments: $crate::Json,
            ) -> $crate::hooks_bindings::exports::talaria::plugin::hooks::PreToolVerdict {
                $crate::install_panic_hook();
                $crate::verdict_to_wit(<$hooks as $crate::Hooks>::pre_tool(
                    session,
                    tool,
                    $crate::parse_arguments(&arguments),
                ))
            }

            fn post_tool(
                session: $crate::SessionInfo,
                tool: ::std::string::String,
                arguments: $crate::Json,
                result: ::core::result::Result<$crate::Json, $crate::ToolError>,
            ) -> ::core::option::Option<$crate::Json> {
                $crate::install_panic_hook();
                <$hooks as $crate::Hooks>::post_tool(
                    session,
                    tool,
                    $crate::parse_arguments(&arguments),
                    result,
                )
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::hooks_bindings::__export_hooks_plugin!(
            __TalariaHooksPlugin with_types_in $crate::hooks_bindings
        );
    };
}
