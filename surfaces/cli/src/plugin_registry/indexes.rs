//! `plugin index add|remove|list`, `plugin search` and the index half of `plugin info`.

use talaria_plugin_manifest::HOST_API;
use talaria_profile::ProfileHome;
use talaria_registry::{
    Index, IndexKey, IndexList, IndexSettings, PluginFile, RegistryError, decode_public, verify,
};

use super::{Failure, Outcome, layout, registry};
use crate::args::IndexCommand;
use crate::exit::Status;

/// `plugin index …`.
pub(crate) async fn run(home: &ProfileHome, command: IndexCommand) -> Outcome {
    let path = home.plugin_indexes_file();
    let mut list = IndexList::load(&path)?;
    match command {
        IndexCommand::List => {
            let indexes = list.by_priority();
            if indexes.is_empty() {
                println!(
                    "No plugin index configured: add one with `talaria plugin index add NAME URL`."
                );
            }
            for index in indexes {
                let keys: Vec<&str> = index.keys.iter().map(|k| k.id.as_str()).collect();
                let trust = match (keys.is_empty(), index.allow_unsigned) {
                    (true, true) => "unsigned allowed".to_owned(),
                    (true, false) => "no key (installs will fail)".to_owned(),
                    (false, unsigned) => format!(
                        "keys: {}{}",
                        keys.join(", "),
                        if unsigned { "; unsigned allowed" } else { "" }
                    ),
                };
                println!(
                    "{}  {}  priority {}  {trust}",
                    index.name, index.url, index.priority
                );
            }
            Ok(Status::Answered)
        }
        IndexCommand::Remove { name } => {
            list.remove(&name)?;
            println!("removed index {name}");
            Ok(Status::Answered)
        }
        IndexCommand::Add {
            name,
            url,
            priority,
            key,
            allow_unsigned,
            replace,
        } => {
            let mut settings = IndexSettings {
                name: name.clone(),
                url,
                priority,
                keys: Vec::new(),
                allow_unsigned,
            };
            let index = Index::open(settings.clone())?;
            // Reading index.json now proves the location works before it is saved.
            let config = index.config().await?;
            settings.keys = match key {
                Some(text) => vec![parse_key(&text)?],
                None => {
                    for key in &config.keys {
                        decode_public(key)?;
                    }
                    config.keys.clone()
                }
            };
            if settings.keys.is_empty() && !allow_unsigned {
                return Err(Failure::Failed(format!(
                    "index '{}' lists no signing key; pass --key ID=BASE64 if you have it out of \
                     band, or --allow-unsigned to accept unsigned plugins from it",
                    config.name
                )));
            }
            list.add(settings.clone(), replace)?;
            println!(
                "added index {name} ({} plugins listed)",
                config.plugins.len()
            );
            for key in &settings.keys {
                println!("trusting key {} = {}", key.id, key.ed25519);
            }
            if allow_unsigned {
                println!("unsigned entries are accepted from {name}");
            }
            Ok(Status::Answered)
        }
    }
}

fn parse_key(text: &str) -> Result<IndexKey, RegistryError> {
    let whole = IndexKey {
        id: "main".to_owned(),
        ed25519: text.trim().to_owned(),
    };
    if decode_public(&whole).is_ok() {
        return Ok(whole);
    }
    let (id, key) = text.split_once('=').ok_or_else(|| {
        RegistryError::Key(format!(
            "--key '{text}' is not an ed25519 public key: give BASE64 or ID=BASE64"
        ))
    })?;
    let key = IndexKey {
        id: id.trim().to_owned(),
        ed25519: key.trim().to_owned(),
    };
    decode_public(&key)?;
    Ok(key)
}

/// `plugin search TERM`.
pub(crate) async fn search(home: &ProfileHome, term: &str) -> Outcome {
    let registry = registry(home)?;
    if registry.indexes().is_empty() {
        return Err(Failure::Usage(
            "no plugin index is configured; add one with `talaria plugin index add NAME URL`"
                .into(),
        ));
    }
    let (hits, errors) = registry.search(term).await;
    for error in &errors {
        eprintln!("warning: {error}");
    }
    if hits.is_empty() {
        println!("No plugin matches '{term}'.");
    }
    let width = hits.iter().map(|h| h.entry.name.len()).max().unwrap_or(0);
    for hit in &hits {
        println!(
            "{:width$}  {}  [{}]",
            hit.entry.name, hit.entry.description, hit.index
        );
    }
    Ok(if hits.is_empty() && !errors.is_empty() {
        Status::Failed
    } else {
        Status::Answered
    })
}

/// What the configured indexes say about one plugin, for `plugin info`.
pub(crate) enum Listing {
    /// The first index listing it, rendered.
    Listed(String),
    /// No index is configured.
    NoIndex,
    /// No configured index (or not the one asked for) lists it.
    NotListed,
    /// The indexes could not be read.
    Unavailable(Failure),
}

/// Looks `name` up in the indexes (only in `only` when given) and renders
/// what the first one listing it offers: versions, API ranges, capabilities,
/// signatures.
pub(crate) async fn listing(home: &ProfileHome, name: &str, only: Option<&str>) -> Listing {
    let registry = match registry(home) {
        Ok(registry) => registry,
        Err(error) => return Listing::Unavailable(error.into()),
    };
    if only.is_none() && registry.indexes().is_empty() {
        return Listing::NoIndex;
    }
    match registry.find(name, only).await {
        Ok((index, file)) => Listing::Listed(render_listing(home, index, &file)),
        Err(RegistryError::NotFound { .. }) => Listing::NotListed,
        Err(error) => Listing::Unavailable(error.into()),
    }
}

fn render_listing(home: &ProfileHome, index: &Index, file: &PluginFile) -> String {
    let installed = layout(home).installed(&file.name).map(|m| m.version);
    let mut lines = vec![
        format!("{} — {}", file.name, file.description),
        format!("index:     {}", index.name()),
    ];
    if !file.license.is_empty() {
        lines.push(format!("license:   {}", file.license));
    }
    if let Some(homepage) = &file.homepage {
        lines.push(format!("homepage:  {homepage}"));
    }
    if let Some(version) = &installed {
        lines.push(format!("installed: {version}"));
    }
    let mut versions: Vec<_> = file.versions.iter().collect();
    versions.sort_by(|a, b| b.version.cmp(&a.version));
    lines.push(format!(
        "versions (this Talaria implements plugin API {HOST_API}):"
    ));
    for entry in versions {
        let mut notes = Vec::new();
        if !entry.api.matches(&HOST_API) {
            notes.push(format!("needs API {}", entry.api));
        }
        if entry.yanked {
            notes.push("yanked".to_owned());
        }
        match index.verify(&file.name, entry) {
            Ok(()) if entry.signature.is_some() => notes.push("signed".to_owned()),
            Ok(()) => notes.push("unsigned".to_owned()),
            Err(_) => notes.push(format!(
                "SIGNATURE INVALID ({})",
                verify(&file.name, entry, &index.settings.keys)
                    .err()
                    .unwrap_or_default()
            )),
        }
        let caps = capability_summary(&entry.capabilities);
        lines.push(format!(
            "  {:10} api {:8} {:>9} bytes  {}  capabilities: {caps}",
            entry.version.to_string(),
            entry.api.to_string(),
            entry.size,
            notes.join(", ")
        ));
    }
    lines.push(String::new());
    lines.join("\n")
}

/// The requested capabilities of an index entry, briefly.
fn capability_summary(caps: &serde_json::Value) -> String {
    let Some(map) = caps.as_object() else {
        return "none".to_owned();
    };
    let mut parts = Vec::new();
    for (key, value) in map {
        match value {
            serde_json::Value::Bool(true) => parts.push(key.clone()),
            serde_json::Value::Array(items) if !items.is_empty() => {
                let shown: Vec<String> = items
                    .iter()
                    .map(|item| match item {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Object(o) => o
                            .get("path")
                            .and_then(|p| p.as_str())
                            .unwrap_or("?")
                            .to_owned(),
                        other => other.to_string(),
                    })
                    .collect();
                parts.push(format!("{key}:{}", shown.join("|")));
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}
