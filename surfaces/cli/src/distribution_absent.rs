//! `talaria dist` in a runtime-only build (no `compiler` feature): refused, since it cannot
//! compile a distribution's plugins.

use talaria_profile::ProfileHome;

use crate::args::DistCommand;
use crate::exit::Status;

pub async fn run(_command: DistCommand, _home: &ProfileHome) -> Status {
    eprintln!("error: {}", crate::plugin_compile::without_tools("dist"));
    Status::Failed
}
