//! Compiling plugins before a session needs them: `plugin install`,
//! `update` and `build` compile into the profile's cache, so the first
//! session after them starts at once; a session that must still compile
//! (after Talaria itself was updated, say) says so on stderr.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use talaria_plugin_host::{CompileObserver, HostOptions, PluginHost};
use talaria_profile::ProfileHome;

/// The profile's compile cache, as sessions read it.
pub fn cache_options(home: &ProfileHome) -> HostOptions {
    HostOptions::new(home.plugin_cache_dir(), home.plugin_data_dir())
        .with_cache_key_file(home.plugin_cache_key_file())
        .with_prebuilt_dirs(crate::plugins::prebuilt_dirs())
        .with_prebuilt_key(crate::plugins::DISTRIBUTION_KEY.map(str::to_owned))
}

/// What compiling ahead did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AheadOfTime {
    /// Compiled now, in this long.
    Compiled(Duration),
    /// The cache (or the distribution's compiled plugins) already held it,
    /// or it is not a component.
    AlreadyReady,
}

/// Compiles the plugin package in `dir` into `home`'s cache; `progress` is
/// told the plugin's name and size first when it must compile.
pub async fn compile_ahead(
    home: &ProfileHome,
    dir: &Path,
    progress: Arc<dyn CompileObserver>,
) -> Result<AheadOfTime, String> {
    let host = PluginHost::new(cache_options(home).with_compile_observer(progress))
        .map_err(|e| format!("the plugin host: {e}"))?;
    let started = Instant::now();
    match host.compile(dir).await {
        Ok(true) => Ok(AheadOfTime::Compiled(started.elapsed())),
        Ok(false) => Ok(AheadOfTime::AlreadyReady),
        Err(error) => Err(error.to_string()),
    }
}

/// Says that a session's start is compiling a plugin (seconds for a large
/// component; otherwise the start looks hung): on stderr at once, or, where
/// stderr is the terminal a prompt is already drawn on, among the session's
/// notices once it has started.
#[derive(Debug, Default)]
pub(crate) struct CompilingNotice {
    /// Notices kept until [`Self::take`]; after it (a plugin compiled at its first use, in the
    /// middle of a session) they are printed.
    deferred: Option<std::sync::Mutex<Option<Vec<String>>>>,
}

impl CompilingNotice {
    /// Notices kept for [`Self::take`] instead of printed.
    pub(crate) fn deferred() -> Self {
        Self {
            deferred: Some(std::sync::Mutex::new(Some(Vec::new()))),
        }
    }

    /// The notices kept so far; later ones are printed.
    pub(crate) fn take(&self) -> Vec<String> {
        self.deferred
            .as_ref()
            .and_then(|kept| kept.lock().ok().and_then(|mut kept| kept.take()))
            .unwrap_or_default()
    }
}

impl CompileObserver for CompilingNotice {
    fn compiling(&self, plugin: &str, bytes: u64) {
        let size = megabytes(bytes);
        let mut kept = self.deferred.as_ref().and_then(|kept| kept.lock().ok());
        match kept.as_mut().and_then(|kept| kept.as_mut()) {
            Some(kept) => kept.push(format!(
                "plugin {plugin} ({size}) was compiled for this start; later starts load it from the cache"
            )),
            None => eprintln!(
                "note: compiling plugin {plugin} ({size}); this happens once, later starts load it from the cache"
            ),
        }
    }
}

/// `bytes` for people: "12.3 MB".
pub fn megabytes(bytes: u64) -> String {
    // Precision is irrelevant at these sizes.
    #[allow(clippy::cast_precision_loss)]
    let mb = bytes as f64 / 1_000_000.0;
    format!("{mb:.1} MB")
}
