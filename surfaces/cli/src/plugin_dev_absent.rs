//! `talaria plugin new|build|sdk` in a runtime-only build (no `compiler` feature): refused, since
//! it leaves out the templates, the SDK and the compiler a plugin author needs.

use std::path::{Path, PathBuf};

use crate::exit::Status;

fn refuse(command: &str) -> Status {
    eprintln!("error: {}", crate::plugin_compile::without_tools(command));
    Status::Failed
}

pub fn new(_name: &str, _dir: Option<PathBuf>, _lang: Option<&str>, _kind: Option<&str>) -> Status {
    refuse("plugin new")
}

pub fn sdk(_dir: &Path) -> Status {
    refuse("plugin sdk")
}

pub async fn build_and_compile(_dir: &Path, _home: &talaria_profile::ProfileHome) -> Status {
    refuse("plugin build")
}
