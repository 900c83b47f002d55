//! Compiling a plugin ahead of its first session, with a progress line:
//! after `plugin install`, `update` and `build`, and while `plugin info`
//! loads one that is not compiled yet.

use std::path::Path;
use std::sync::Arc;

use talaria_agent::plugin_compile::{AheadOfTime, compile_ahead, megabytes};
use talaria_plugin_host::CompileObserver;
use talaria_profile::ProfileHome;

/// Why a runtime-only distribution (built without the `compiler` feature) refuses to install
/// or update plugins: it could not load them.
const CANNOT_COMPILE: &str = "this Talaria is a runtime-only distribution: it runs \
     only the plugins compiled when it was built and cannot compile new ones. Add the plugin to \
     the distribution's dist.toml and build it again (talaria dist build), or use a distribution \
     that has the plugin compiler (the default one)";

/// Refuses, when this build cannot compile, a command that would leave an unloadable plugin.
pub(crate) fn require_compiler() -> Result<(), String> {
    if talaria_plugin_host::CAN_COMPILE {
        Ok(())
    } else {
        Err(CANNOT_COMPILE.to_owned())
    }
}

/// Why a runtime-only build refuses a plugin author's or distribution builder's `command`: it
/// leaves their tools out.
#[cfg(not(feature = "compiler"))]
pub(crate) fn without_tools(command: &str) -> String {
    format!(
        "this Talaria is a runtime-only distribution, without the tools for building plugins and \
         distributions: `talaria {command}` needs a Talaria that has the plugin compiler (the \
         default distribution)"
    )
}

/// Prints a line when a plugin starts compiling (it takes seconds for a
/// large component).
#[derive(Debug)]
pub(crate) struct CompileProgress;

impl CompileObserver for CompileProgress {
    fn compiling(&self, plugin: &str, bytes: u64) {
        println!(
            "  compiling {plugin} ({}); this happens once, sessions then load it from the cache…",
            megabytes(bytes)
        );
    }
}

/// Compiles the package in `dir` into the profile's cache and says how long
/// it took. A failure is only a warning: the package is in place, and a
/// session that cannot load it says why.
pub(crate) async fn ahead_of_time(home: &ProfileHome, dir: &Path) {
    match compile_ahead(home, dir, Arc::new(CompileProgress)).await {
        Ok(AheadOfTime::Compiled(took)) => {
            println!(
                "  compiled in {:.1} s; sessions load it from the cache",
                took.as_secs_f64()
            );
        }
        Ok(AheadOfTime::AlreadyReady) => {}
        Err(error) => eprintln!("warning: not compiled ahead of time: {error}"),
    }
}
