//! Memory providers: a type implementing [`Memory`] and one
//! [`export_memory!`](crate::export_memory).
//!
//! The host keeps one instance of the component per session and calls it one
//! call at a time, so the provider is a value the SDK keeps between calls:
//! [`Memory::initialize`] makes it for the session, the other methods use it.
//!
//! ```ignore
//! struct Notes { seen: Vec<String> }
//!
//! impl Memory for Notes {
//!     fn initialize(_scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
//!         Ok((Notes { seen: Vec::new() }, ProviderOptions::default()))
//!     }
//!
//!     fn prefetch(&mut self, query: String) -> Result<String, String> {
//!         Ok(self.seen.iter().filter(|s| s.contains(&query)).cloned().collect::<Vec<_>>().join("\n"))
//!     }
//!
//!     fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
//!         self.seen.extend(turn.into_iter().map(|m| m.content));
//!         Ok(())
//!     }
//! }
//!
//! talaria_plugin_sdk::export_memory!(Notes);
//! ```

use std::cell::RefCell;

use crate::Message;

pub use crate::memory_bindings::exports::talaria::plugin::memory_lifecycle::{
    MemoryScope, ProviderOptions, SessionKind,
};

impl Default for ProviderOptions {
    fn default() -> Self {
        Self {
            write_in_secondary: false,
        }
    }
}

/// A memory provider for one session. Every method but [`Memory::initialize`],
/// [`Memory::prefetch`] and [`Memory::sync_turn`] defaults to doing nothing.
pub trait Memory: Sized + 'static {
    /// Opens the provider for the session described by `scope`; an error
    /// disables it for the session.
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String>;

    /// Text for the system prompt, read once per session.
    fn system_prompt_block(&mut self) -> Option<String> {
        None
    }

    /// What to recall for the coming turn, whose user message is `query`;
    /// the host wraps it in `<memory-context>` on that turn. Empty: nothing.
    fn prefetch(&mut self, query: String) -> Result<String, String>;

    /// Learns from a finished turn (its user message through the reply).
    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String>;

    /// Prepares what the next [`Memory::prefetch`] needs, after the turn
    /// whose user message was `query`.
    fn queue_prefetch(&mut self, _query: String) {}

    /// The conversation is about to be compressed: what the summary must keep.
    fn on_pre_compress(&mut self, _messages: Vec<Message>) -> Option<String> {
        None
    }

    /// The built-in memory tool wrote to `target` (`memory` or `user`).
    fn on_memory_write(&mut self, _action: String, _target: String, _content: String) {}

    /// A sub-agent finished a delegated task.
    fn on_delegation(&mut self, _task: String, _summary: String, _child_session: String) {}

    /// The session ends.
    fn on_session_end(&mut self, _messages: Vec<Message>) {}

    /// The last call: flush what is pending.
    fn shutdown(&mut self) {}
}

/// Where [`export_memory!`](crate::export_memory) keeps a provider between
/// the host's calls (a component instance is single-threaded).
#[doc(hidden)]
pub struct Slot<M>(RefCell<Option<M>>);

impl<M> Slot<M> {
    /// An empty slot.
    pub const fn new() -> Self {
        Self(RefCell::new(None))
    }

    /// Keeps `provider`.
    pub fn set(&self, provider: M) {
        *self.0.borrow_mut() = Some(provider);
    }

    /// Runs `f` on the provider; `None` before `initialize` succeeded.
    pub fn with<R>(&self, f: impl FnOnce(&mut M) -> R) -> Option<R> {
        self.0.borrow_mut().as_mut().map(f)
    }
}

impl<M> Default for Slot<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// The error of a call made before `initialize` succeeded.
#[doc(hidden)]
pub fn not_initialized() -> String {
    "the memory provider was not initialized".to_owned()
}

/// Exports a type implementing [`Memory`] as the plugin's `memory-provider`
/// and `memory-lifecycle` interfaces. Use it once per plugin crate, at the
/// crate root; it can sit next to [`export_tools!`](crate::export_tools)
/// (a provider's own tools run in fresh instances: share state through
/// [`crate::kv`]).
#[macro_export]
macro_rules! export_memory {
    ($memory:ty) => {
        ::std::thread_local! {
            static __TALARIA_MEMORY: $crate::memory::Slot<$memory> =
                const { $crate::memory::Slot::new() };
        }

        #[doc(hidden)]
        pub struct __TalariaMemoryPlugin;

        impl __TalariaMemoryPlugin {
            fn with<R>(f: impl FnOnce(&mut $memory) -> R) -> ::core::option::Option<R> {
                $crate::install_panic_hook();
                __TALARIA_MEMORY.with(|slot| slot.with(f))
            }
        }

        impl $crate::memory_bindings::exports::talaria::plugin::memory_provider::Guest
            for __TalariaMemoryPlugin
        {
            fn prefetch(
                _session: $crate::SessionInfo,
                query: ::std::string::String,
            ) -> ::core::result::Result<::std::string::String, ::std::string::String> {
                Self::with(|m| <$memory as $crate::Memory>::prefetch(m, query))
                    .unwrap_or_else(|| Err($crate::memory::not_initialized()))
            }

            fn sync_turn(
                _session: $crate::SessionInfo,
                turn: ::std::vec::Vec<$crate::Message>,
            ) -> ::core::result::Result<(), ::std::string::String> {
                Self::with(|m| <$memory as $crate::Memory>::sync_turn(m, turn))
                    .unwrap_or_else(|| Err($crate::memory::not_initialized()))
            }

            fn shutdown() {
                Self::with(|m| <$memory as $crate::Memory>::shutdown(m));
            }
        }

        impl $crate::memory_bindings::exports::talaria::plugin::memory_lifecycle::Guest
            for __TalariaMemoryPlugin
        {
            fn initialize(
                scope: $crate::memory::MemoryScope,
            ) -> ::core::result::Result<$crate::memory::ProviderOptions, ::std::string::String> {
                $crate::install_panic_hook();
                let (provider, options) = <$memory as $crate::Memory>::initialize(scope)?;
                __TALARIA_MEMORY.with(|slot| slot.set(provider));
                Ok(options)
            }

            fn system_prompt_block() -> ::core::option::Option<::std::string::String> {
                Self::with(|m| <$memory as $crate::Memory>::system_prompt_block(m)).flatten()
            }

            fn queue_prefetch(query: ::std::string::String) {
                Self::with(|m| <$memory as $crate::Memory>::queue_prefetch(m, query));
            }

            fn on_pre_compress(
                messages: ::std::vec::Vec<$crate::Message>,
            ) -> ::core::option::Option<::std::string::String> {
                Self::with(|m| <$memory as $crate::Memory>::on_pre_compress(m, messages)).flatten()
            }

            fn on_memory_write(
                action: ::std::string::String,
                target: ::std::string::String,
                content: ::std::string::String,
            ) {
                Self::with(|m| {
                    <$memory as $crate::Memory>::on_memory_write(m, action, target, content)
                });
            }

            fn on_delegation(
                task: ::std::string::String,
                summary: ::std::string::String,
                child_session: ::std::string::String,
            ) {
                Self::with(|m| {
                    <$memory as $crate::Memory>::on_delegation(m, task, summary, child_session)
                });
            }

            fn on_session_end(messages: ::std::vec::Vec<$crate::Message>) {
                Self::with(|m| <$memory as $crate::Memory>::on_session_end(m, messages));
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::memory_bindings::__export_memory_plugin!(
            __TalariaMemoryPlugin with_types_in $crate::memory_bindings
        );
    };
}
