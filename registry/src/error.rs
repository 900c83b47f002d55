//! Everything that can go wrong between an index and an installed plugin.

use std::path::PathBuf;

/// A registry operation that failed; every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A file of an index (or a lockfile, or index settings) is malformed.
    #[error("{origin}: {message}")]
    Format {
        /// The file or URL.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// Fetching from an index failed.
    #[error("cannot fetch {url}: {message}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// Why it failed.
        message: String,
    },
    /// The index has no such file (HTTP 404 or a missing file).
    #[error("{url} does not exist")]
    Missing {
        /// What was fetched.
        url: String,
    },
    /// A download or file is larger than allowed.
    #[error("{url} is larger than {limit} bytes")]
    TooLarge {
        /// What was fetched.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// No configured index has the plugin.
    #[error("no plugin named '{name}' in {searched}")]
    NotFound {
        /// The plugin.
        name: String,
        /// The indexes searched, for the message.
        searched: String,
    },
    /// Versions exist but none can be installed; `reasons` says why, one per version.
    #[error("no version of {name} satisfies {requirement} (index {index}):\n{reasons}")]
    Unsatisfiable {
        /// The plugin.
        name: String,
        /// What was asked for.
        requirement: String,
        /// Which index was consulted.
        index: String,
        /// One line per rejected version.
        reasons: String,
    },
    /// A signature is missing or does not verify.
    #[error("{plugin} {version}: {message}")]
    Signature {
        /// The plugin.
        plugin: String,
        /// The version.
        version: String,
        /// What is wrong.
        message: String,
    },
    /// A downloaded archive is not what the index promised.
    #[error("{plugin} {version}: {message}; nothing was installed")]
    Integrity {
        /// The plugin.
        plugin: String,
        /// The version.
        version: String,
        /// What did not match.
        message: String,
    },
    /// An archive that is unsafe to unpack.
    #[error("refusing the package archive: {0}")]
    UnsafeArchive(String),
    /// An archive or package that is not a valid plugin package.
    #[error("not a valid plugin package: {0}")]
    Package(String),
    /// Installing would go back to an older version.
    #[error(
        "{name} {installed} is installed and {candidate} is older; pass --allow-downgrade to install it anyway"
    )]
    Downgrade {
        /// The plugin.
        name: String,
        /// The installed version.
        installed: String,
        /// The version resolution chose.
        candidate: String,
    },
    /// A lockfile entry that cannot be reproduced.
    #[error("{name} {version} from the lockfile: {message}")]
    Locked {
        /// The plugin.
        name: String,
        /// The locked version.
        version: String,
        /// Why.
        message: String,
    },
    /// A signing key that cannot be read or used.
    #[error("{0}")]
    Key(String),
    /// Index settings given on the command line or in the profile that are invalid.
    #[error("{0}")]
    Settings(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl RegistryError {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
