//! `talaria plugin pack|publish|keygen` in a runtime-only build (no `compiler` feature): refused
//! with the other tools for plugin authors.

use std::path::{Path, PathBuf};

use super::{Failure, Outcome};

fn refuse(command: &str) -> Outcome {
    Err(Failure::Failed(crate::plugin_compile::without_tools(
        command,
    )))
}

pub(crate) fn pack(_dir: Option<PathBuf>, _out: Option<PathBuf>) -> Outcome {
    refuse("plugin pack")
}

pub(crate) fn publish(
    _archive: &Path,
    _index: &Path,
    _key: &Path,
    _url_base: Option<&str>,
) -> Outcome {
    refuse("plugin publish")
}

pub(crate) fn keygen(_out: &Path, _id: &str) -> Outcome {
    refuse("plugin keygen")
}
