//! Reading a profile before anything runs: its `.env` layer, then
//! `config.yaml` resolved against it.

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
