//! `talaria plugin search|install|update|remove|pack|publish|keygen|index`, and
//! the index side of `plugin list --outdated` and `plugin info`: community
//! plugins from indexes. The registry crate fetches, verifies and stages; this
//! module talks to the user and records their grants.

mod grants;
mod indexes;
pub(crate) mod install;
#[cfg(feature = "compiler")]
mod publish;
#[cfg(not(feature = "compiler"))]
#[path = "publish_absent.rs"]
mod publish;

use talaria_profile::ProfileHome;
use talaria_registry::{
    Index, IndexList, Layout, LockedPlugin, PATH_SOURCE, Registry, RegistryError,
};

use crate::args::RegistryCommand;
use crate::exit::Status;

pub(crate) use indexes::{Listing, listing};

/// Runs a registry subcommand of `talaria plugin`.
pub async fn run(command: RegistryCommand, home: &ProfileHome) -> Status {
    if matches!(
        command,
        RegistryCommand::Install(_) | RegistryCommand::Update { .. }
    ) && let Err(message) = crate::plugin_compile::require_compiler()
    {
        return fail(Failure::Failed(message));
    }
    let result = match command {
        RegistryCommand::Search { term } => indexes::search(home, &term).await,
        RegistryCommand::Index(command) => indexes::run(home, command).await,
        RegistryCommand::Install(args) => install::install(home, args).await,
        RegistryCommand::Update { names, grant } => {
            install::update(home, &names, grant.as_deref()).await
        }
        RegistryCommand::Remove { name } => install::remove(home, &name),
        RegistryCommand::Pack { dir, out } => publish::pack(dir, out),
        RegistryCommand::Publish {
            archive,
            index,
            key,
            url_base,
        } => publish::publish(&archive, &index, &key, url_base.as_deref()),
        RegistryCommand::Keygen { out, id } => publish::keygen(&out, &id),
    };
    result.unwrap_or_else(fail)
}

/// `plugin list --outdated`.
pub(crate) async fn outdated(home: &ProfileHome) -> Status {
    install::outdated(home).await.unwrap_or_else(fail)
}

/// Reports `failure` and gives the exit status it means.
pub(crate) fn fail(failure: Failure) -> Status {
    match failure {
        Failure::Usage(message) => crate::exit::usage_error(&message),
        Failure::Failed(message) => {
            eprintln!("error: {message}");
            Status::Failed
        }
    }
}

/// How a plugin in the profile's directory got there, from its lockfile entry.
pub(crate) fn origin(locked: Option<&LockedPlugin>) -> String {
    match locked {
        Some(l) if l.source == PATH_SOURCE => format!("from the local package {}", l.url),
        Some(l) => format!("from index {} ({})", l.source, l.requirement),
        None => "copied in by hand".to_owned(),
    }
}

/// How a command failed: the user's input (exit 2) or the operation (exit 1).
#[derive(Debug)]
pub(crate) enum Failure {
    Usage(String),
    Failed(String),
}

impl Failure {
    /// What went wrong, for the user.
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Usage(message) | Self::Failed(message) => message,
        }
    }
}

impl From<RegistryError> for Failure {
    fn from(error: RegistryError) -> Self {
        match error {
            RegistryError::Settings(_) | RegistryError::Key(_) => Self::Usage(error.to_string()),
            other => Self::Failed(other.to_string()),
        }
    }
}

impl From<talaria_agent::grants::GrantError> for Failure {
    fn from(error: talaria_agent::grants::GrantError) -> Self {
        use talaria_agent::grants::GrantError;
        match error {
            // The grant file could not be read or written: the operation failed.
            GrantError::Io { .. } => Self::Failed(error.to_string()),
            // A bad --grant value or a file the user must fix.
            _ => Self::Usage(error.to_string()),
        }
    }
}

pub(crate) type Outcome = Result<Status, Failure>;

/// The profile's install layout.
pub(crate) fn layout(home: &ProfileHome) -> Layout {
    Layout::new(home.plugins_dir(), home.plugin_lockfile())
}

/// The profile's indexes, highest priority first.
pub(crate) fn registry(home: &ProfileHome) -> Result<Registry, RegistryError> {
    let list = IndexList::load(&home.plugin_indexes_file())?;
    let indexes = list
        .by_priority()
        .into_iter()
        .map(|settings| Index::open(settings.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Registry::new(indexes))
}
