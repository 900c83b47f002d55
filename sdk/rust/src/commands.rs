//! Slash commands: a type implementing [`Commands`] and one
//! [`export_commands!`](crate::export_commands).
//!
//! ```
//! use talaria_plugin_sdk::{CommandSpec, Commands, SessionInfo};
//!
//! struct Greet;
//!
//! impl Commands for Greet {
//!     fn commands() -> Vec<CommandSpec> {
//!         vec![CommandSpec::new("greet", "Says hello")
//!             .with_alias("hi")
//!             .with_args_hint("<name>")
//!             .with_category("Fun")]
//!     }
//!
//!     fn run(name: String, args: String, _session: SessionInfo) -> Result<String, String> {
//!         match name.as_str() {
//!             "greet" if args.trim().is_empty() => Err("whom should I greet?".into()),
//!             "greet" => Ok(format!("hello, {}!", args.trim())),
//!             other => Err(format!("unknown command {other}")),
//!         }
//!     }
//! }
//!
//! talaria_plugin_sdk::export_commands!(Greet);
//! # fn main() {
//! #     let session = SessionInfo { session_id: "s".into(), surface: "cli".into(), model: "m".into() };
//! #     assert_eq!(Greet::run("greet".into(), "Ada".into(), session), Ok("hello, Ada!".into()));
//! #     assert_eq!(Greet::commands()[0].aliases, ["hi"]);
//! # }
//! ```

use crate::SessionInfo;

pub use crate::hooks_bindings::talaria::plugin::types::CommandSpec;

impl CommandSpec {
    /// A command named `name` (`[a-z0-9][a-z0-9-]*`, at most 32 characters,
    /// without the slash) described by one line for `/help`; no aliases, no
    /// argument hint, no category.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            aliases: Vec::new(),
            description: description.into(),
            args_hint: String::new(),
            category: String::new(),
        }
    }

    /// The same command, also answering to `alias`.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// The same command, with what follows its name shown as `hint` (e.g.
    /// `<name> [--now]`).
    pub fn with_args_hint(mut self, hint: impl Into<String>) -> Self {
        self.args_hint = hint.into();
        self
    }

    /// The same command, listed under `category` in `/help`.
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        self.category = category.into();
        self
    }
}

/// A command plugin. The host lists [`Commands::commands`] once at load
/// (invalid or repeated names are dropped there) and runs each command in a
/// fresh instance: keep state in [`crate::kv`].
pub trait Commands {
    /// The commands this plugin provides.
    fn commands() -> Vec<CommandSpec>;

    /// Runs the command `name` (always a name from [`Commands::commands`],
    /// never an alias) with the text the user typed after it. `Ok` is shown
    /// to the user; so is `Err`, as the command's failure.
    fn run(name: String, args: String, session: SessionInfo) -> Result<String, String>;
}

/// Exports a type implementing [`Commands`] as the plugin's
/// `command-provider`. Use it once per plugin crate, at the crate root; it
/// can sit next to [`export_tools!`](crate::export_tools),
/// [`export_hooks!`](crate::export_hooks) and
/// [`export_skins!`](crate::export_skins).
#[macro_export]
macro_rules! export_commands {
    ($commands:ty) => {
        #[doc(hidden)]
        pub struct __TalariaCommandPlugin;

        impl $crate::CommandProvider for __TalariaCommandPlugin {
            fn list_commands() -> ::std::vec::Vec<$crate::CommandSpec> {
                $crate::install_panic_hook();
                <$commands as $crate::Commands>::commands()
            }

            fn run_command(
                name: ::std::string::String,
                args: ::std::string::String,
                session: $crate::SessionInfo,
            ) -> ::core::result::Result<::std::string::String, ::std::string::String> {
                $crate::install_panic_hook();
                <$commands as $crate::Commands>::run(name, args, session)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::command_bindings::__export_command_plugin!(
            __TalariaCommandPlugin with_types_in $crate::command_bindings
        );
    };
}
