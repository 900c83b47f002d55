//! Test plugin `noop`: one tool, `noop`, that returns `{}`. The host's
//! benchmarks use it to measure the fixed cost of a plugin call
//! (instantiation, argument and result transfer).

use talaria_plugin_sdk::{CallContext, NoArgs, Tool, ToolError, ToolFlags, Value};

/// `noop`: does nothing.
#[derive(Default)]
pub struct Noop;

impl Tool for Noop {
    const NAME: &'static str = "noop";
    const DESCRIPTION: &'static str = "Does nothing and returns {}";
    type Args = NoArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, _args: NoArgs, _ctx: &CallContext) -> Result<Value, ToolError> {
        Ok(Value::Object(Default::default()))
    }
}

talaria_plugin_sdk::export_tools!(Noop);
