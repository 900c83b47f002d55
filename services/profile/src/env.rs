//! Environment lookup: the process environment first (with the keys sealed out of its block,
//! `talaria-environ`), then the profile's `.env` file. The process environment is never
//! modified.

use std::collections::HashMap;
use std::path::Path;

/// Where setting values may come from besides flags and the config file.
#[derive(Debug, Clone, Default)]
pub struct EnvLayer {
    dotenv: HashMap<String, String>,
    process: Option<HashMap<String, String>>,
}

/// The `.env` file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DotenvError {
    /// The file.
    pub path: String,
    /// What went wrong (dotenvy's message names the line).
    pub message: String,
}

impl EnvLayer {
    /// The process environment plus `dotenv_path` if it exists.
    pub fn load(dotenv_path: &Path) -> Result<Self, DotenvError> {
        let mut dotenv = HashMap::new();
        if dotenv_path.exists() {
            let error = |message: String| DotenvError {
                path: dotenv_path.display().to_string(),
                message,
            };
            let iter = dotenvy::from_path_iter(dotenv_path).map_err(|e| error(e.to_string()))?;
            for item in iter {
                let (key, value) = item.map_err(|e| error(e.to_string()))?;
                dotenv.insert(key, value);
            }
        }
        Ok(Self {
            dotenv,
            process: None,
        })
    }

    /// The same process part with the `.env` part read again from `dotenv_path` (after the
    /// file changed, as an import does).
    pub fn reload_dotenv(&self, dotenv_path: &Path) -> Result<Self, DotenvError> {
        let fresh = Self::load(dotenv_path)?;
        Ok(Self {
            dotenv: fresh.dotenv,
            process: self.process.clone(),
        })
    }

    /// A layer with fixed values only (for tests): `process` replaces the real environment.
    pub fn fixed(process: HashMap<String, String>, dotenv: HashMap<String, String>) -> Self {
        Self {
            dotenv,
            process: Some(process),
        }
    }

    /// A fixed layer from `(name, value)` pairs, with an empty `.env` (for tests).
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        let process = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Self::fixed(process, HashMap::new())
    }

    /// The value of `name`, ignoring empty values.
    pub fn get(&self, name: &str) -> Option<String> {
        let from_process = match &self.process {
            Some(fixed) => fixed.get(name).cloned(),
            None => talaria_environ::var(name),
        };
        from_process
            .or_else(|| self.dotenv.get(name).cloned())
            .filter(|v| !v.is_empty())
    }
}
