//! COMMAND_REGISTRY: the one table of slash commands. Built-in rows live in
//! [`BUILTINS`]; plugins add theirs through the command world and skills are
//! offered as `/<skill>`. Every surface derives dispatch, `/help`, completion
//! and its menus (`talaria commands --json`) from a [`Registry`].

mod builtin;
mod context;
mod invocation;
mod registry;
mod spec;

pub use builtin::{BUILTINS, preview};
pub use context::{Context, Effect, Pending, Reply};
pub use invocation::{Invocation, parse_args, split_command};
pub use registry::{ArgValues, Registry, SkillCommand};
pub use spec::{ArgKind, ArgSpec, Builtin, BuiltinFn, Command, Handler, Surfaces};
