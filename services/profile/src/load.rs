//! Reading a profile before anything runs: its `.env` layer, then
//! `config.yaml` resolved against it.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use crate::config::{ConfigError, ConfigFile};
use crate::env::{DotenvError, EnvLayer};
use crate::home::ProfileHome;

/// The profile's `.env` or `config.yaml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `.env` is unreadable or malformed.
    #[error(transparent)]
    Env(#[from] DotenvError),
    /// `config.yaml` is unreadable or malformed.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The profile's environment layer and config.
pub fn load_profile(home: &ProfileHome) -> Result<(EnvLayer, ConfigFile), LoadError> {
    let env = EnvLayer::load(&home.env_file())?;
    let config = ConfigFile::load(&home.config_file(), &env)?;
    Ok((env, config))
}

/// What identifies one version of a file without reading it (none when it is absent): its
/// size, inode and modification and change times.
fn stamp(path: &Path) -> Option<(u64, u64, i64, i64, i64, i64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| {
        (
            m.len(),
            m.ino(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    })
}

type Stamps = [Option<(u64, u64, i64, i64, i64, i64)>; 2];

/// The profile as a long-lived surface reads it for each session: read again only when
/// `config.yaml` or `.env` changed since the last read (a change still applies to the next
/// session, as with [`load_profile`]; an unchanged profile is not parsed per message).
#[derive(Debug, Default)]
pub struct ProfileCache {
    last: Mutex<Option<(Stamps, EnvLayer, ConfigFile)>>,
}

impl ProfileCache {
    /// [`load_profile`], from the last read while both files are unchanged.
    pub fn load(&self, home: &ProfileHome) -> Result<(EnvLayer, ConfigFile), LoadError> {
        let stamps = [stamp(&home.env_file()), stamp(&home.config_file())];
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, env, config)) = last.as_ref()
            && *seen == stamps
        {
            return Ok((env.clone(), config.clone()));
        }
        let (env, config) = load_profile(home)?;
        *last = Some((stamps, env.clone(), config.clone()));
        Ok((env, config))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_cache_reads_the_profile_again_only_when_a_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path());
        std::fs::write(home.config_file(), "retry:\n  base_delay_ms: 21\n").unwrap();
        let cache = ProfileCache::default();
        let (_, first) = cache.load(&home).unwrap();
        assert_eq!(first, load_profile(&home).unwrap().1);
        std::fs::write(home.config_file(), "retry:\n  base_delay_ms: 222\n").unwrap();
        let (_, second) = cache.load(&home).unwrap();
        assert_ne!(first, second, "a changed config.yaml was not read again");
        assert_eq!(second, load_profile(&home).unwrap().1);
        std::fs::write(home.config_file(), "retry: [broken\n").unwrap();
        assert!(
            cache.load(&home).is_err(),
            "a broken config.yaml was served from the cache"
        );
    }
}
