//! `talaria import hermes`: brings a Hermes Agent home over — skills,
//! MEMORY.md/USER.md, SOUL.md, API keys from its `.env`, the config keys
//! that have a Talaria equivalent, and the chat platforms of its gateway
//! (`hermes_gateway`). Nothing in the profile is replaced unless
//! asked; everything kept, skipped or not mappable is reported.

use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

use crate::config_edit::{ConfigEditError, set};
use crate::env::EnvLayer;
use crate::hermes_gateway::{GatewayImport, parse_dotenv};
use crate::home::ProfileHome;

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// Files and settings brought over.
    pub imported: Vec<String>,
    /// Present in the profile already and left alone.
    pub kept: Vec<String>,
    /// Hermes settings with no Talaria equivalent, by dotted key.
    pub unmapped: Vec<String>,
    /// The chat platforms written under `gateway.platforms` (each needs a
    /// chat adapter plugin that serves it).
    pub gateway_platforms: Vec<String>,
}

/// An import that could not run.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The source is not a Hermes home.
    #[error("{} is not a Hermes home (no config.yaml, skills/, memories/ or SOUL.md there)", .0.display())]
    NotHermes(PathBuf),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Hermes's config.yaml is not YAML.
    #[error("{}: {message}", path.display())]
    HermesConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A mapped setting did not validate.
    #[error(transparent)]
    Config(#[from] ConfigEditError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Imports `from` into `home`. With `overwrite`, files and settings that
/// exist are replaced; without, they are kept and listed.
pub fn import_hermes(
    from: &Path,
    home: &ProfileHome,
    overwrite: bool,
    env: &EnvLayer,
) -> Result<ImportReport, ImportError> {
    let looks_like_hermes = ["config.yaml", "skills", "memories", "SOUL.md"]
        .iter()
        .any(|entry| from.join(entry).exists());
    if !looks_like_hermes {
        return Err(ImportError::NotHermes(from.to_path_buf()));
    }
    let mut report = ImportReport::default();
    std::fs::create_dir_all(home.root()).map_err(io(home.root()))?;

    let skills = from.join("skills");
    if skills.is_dir() {
        copy_tree(&skills, &home.skills_dir(), overwrite, &mut report)?;
    }
    for name in ["MEMORY.md", "USER.md"] {
        let source = [from.join("memories").join(name), from.join(name)]
            .into_iter()
            .find(|p| p.is_file());
        if let Some(source) = source {
            copy_file(
                &source,
                &home.memory_dir().join(name),
                overwrite,
                &mut report,
            )?;
        }
    }
    let soul = from.join("SOUL.md");
    if soul.is_file() {
        copy_file(&soul, &home.soul_file(), overwrite, &mut report)?;
    }
    let hermes_env = std::fs::read_to_string(from.join(".env")).unwrap_or_default();
    let mut gateway = GatewayImport::from_env(&parse_dotenv(&hermes_env));
    import_keys(
        &from.join(".env"),
        &home.env_file(),
        overwrite,
        gateway.secrets(),
        &mut report,
    )?;
    // Keys just imported into .env may be what the imported settings refer to
    // (`${TELEGRAM_BOT_TOKEN}`): every config edit below validates with them.
    let env = env
        .reload_dotenv(&home.env_file())
        .map_err(|error| ImportError::HermesConfig {
            path: home.env_file(),
            message: error.message,
        })?;
    let config = from.join("config.yaml");
    if config.is_file() {
        import_config(&config, home, overwrite, &env, &mut gateway, &mut report)?;
    }
    gateway.apply(home, overwrite, &env, &mut report)?;
    Ok(report)
}

fn copy_file(
    from: &Path,
    to: &Path,
    overwrite: bool,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    if to.exists() && !overwrite {
        report.kept.push(to.display().to_string());
        return Ok(());
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::copy(from, to).map_err(io(from))?;
    report.imported.push(to.display().to_string());
    Ok(())
}

fn copy_tree(
    from: &Path,
    to: &Path,
    overwrite: bool,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let path = entry.path();
        // Symlinks are not followed: a skill must not drag in files from elsewhere.
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()), overwrite, report)?;
        } else if kind.is_file() {
            copy_file(&path, &to.join(entry.file_name()), overwrite, report)?;
        }
    }
    Ok(())
}

/// Hermes's `.env` names that Talaria spells differently.
const RENAMED_KEYS: &[(&str, &str)] = &[("API_SERVER_KEY", "TALARIA_API_SERVER_KEY")];

/// API keys (`*_API_KEY`, `*_TOKEN`, the API server's key, renamed, and the
/// `secrets` the gateway settings name) from Hermes's `.env`, appended to the
/// profile's `.env` unless the name is set there. Values are never printed.
fn import_keys(
    from: &Path,
    to: &Path,
    overwrite: bool,
    secrets: &std::collections::BTreeSet<String>,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let Ok(text) = std::fs::read_to_string(from) else {
        return Ok(());
    };
    let existing = std::fs::read_to_string(to).unwrap_or_default();
    let defined = |name: &str| {
        existing.lines().any(|l| {
            l.trim_start()
                .trim_start_matches("export ")
                .starts_with(&format!("{name}="))
        })
    };
    let mut added = String::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((name, _)) = line.trim_start_matches("export ").split_once('=') else {
            continue;
        };
        let name = name.trim();
        let renamed = RENAMED_KEYS
            .iter()
            .find(|(hermes, _)| *hermes == name)
            .map(|(_, ours)| *ours);
        let key = name.ends_with("_API_KEY") || name.ends_with("_TOKEN") || secrets.contains(name);
        if renamed.is_none() && !key {
            continue;
        }
        let ours = renamed.unwrap_or(name);
        if defined(ours) && !overwrite {
            report.kept.push(format!(".env {ours}"));
            continue;
        }
        match renamed {
            Some(ours) => {
                let value = line
                    .trim_start_matches("export ")
                    .split_once('=')
                    .map_or("", |(_, v)| v);
                added.push_str(&format!("{ours}={value}"));
            }
            None => added.push_str(line),
        }
        added.push('\n');
        report.imported.push(format!(".env {ours}"));
    }
    if !added.is_empty() {
        let mut text = existing;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# imported from Hermes\n");
        text.push_str(&added);
        crate::home_modes::write_private(to, text).map_err(io(to))?;
    }
    Ok(())
}

/// Dotted keys of every leaf of a YAML mapping.
fn leaves(value: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Mapping(map) if !map.is_empty() => {
            for (key, inner) in map {
                let key = key
                    .as_str()
                    .map_or_else(|| format!("{key:?}"), str::to_owned);
                let path = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                leaves(inner, &path, out);
            }
        }
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// The Talaria key and value for one Hermes setting, if it has one.
fn mapping(key: &str, value: &Value) -> Option<(&'static str, String)> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    match key {
        "model" | "model.default" | "model.name" => Some(("model.name", text)),
        "model.base_url" => Some(("model.base_url", text)),
        "model.provider" => match text.as_str() {
            "anthropic" => Some(("model.provider", "anthropic".into())),
            // Hermes's Codex provider speaks the Responses API.
            "openai-codex" => Some(("model.provider", "openai-responses".into())),
            // Everything else Hermes talks to speaks the OpenAI wire format.
            "openai" | "openrouter" | "custom" | "nous" | "ollama" | "vllm" | "lmstudio" => {
                Some(("model.provider", "openai".into()))
            }
            _ => None,
        },
        // The wire format, when Hermes was told it outright; it outranks `model.provider`.
        "model.api_mode" => match text.as_str() {
            "chat_completions" => Some(("model.provider", "openai".into())),
            "codex_responses" => Some(("model.provider", "openai-responses".into())),
            "anthropic_messages" => Some(("model.provider", "anthropic".into())),
            _ => None,
        },
        "agent.max_turns" => Some(("budget.max_iterations", text)),
        "terminal.backend" => match text.as_str() {
            "local" | "ssh" => Some(("terminal.backend", text)),
            _ => None,
        },
        _ => None,
    }
}

fn import_config(
    path: &Path,
    home: &ProfileHome,
    overwrite: bool,
    env: &EnvLayer,
    gateway: &mut GatewayImport,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let mut document: Value =
        serde_yaml_ng::from_str(&text).map_err(|e| ImportError::HermesConfig {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let (servers, platforms) = match &mut document {
        Value::Mapping(map) => (map.remove("mcp_servers"), map.remove("platforms")),
        _ => (None, None),
    };
    if let Some(platforms) = platforms {
        gateway.add_config(&platforms);
    }
    let ours: Value = std::fs::read_to_string(home.config_file())
        .ok()
        .and_then(|t| serde_yaml_ng::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let is_set = |key: &str| {
        key.split('.')
            .try_fold(&ours, |v, part| v.get(part))
            .is_some_and(|v| !v.is_null())
    };
    let mut settings = Vec::new();
    leaves(&document, "", &mut settings);
    let api_mode = settings
        .iter()
        .any(|(key, value)| key == "model.api_mode" && mapping(key, value).is_some());
    for (key, value) in settings {
        if key.is_empty() {
            continue;
        }
        if api_mode && key == "model.provider" {
            report
                .unmapped
                .push(format!("{key} (model.api_mode gives the wire format)"));
            continue;
        }
        if key.ends_with("api_key") {
            report.unmapped.push(format!("{key} (keys belong in .env)"));
            continue;
        }
        match mapping(&key, &value) {
            Some((ours_key, _)) if is_set(ours_key) && !overwrite => {
                report.kept.push(format!("config {ours_key}"));
            }
            Some((ours_key, new)) => {
                set(&home.config_file(), ours_key, &new, env)?;
                report.imported.push(format!("config {key} → {ours_key}"));
            }
            None => report.unmapped.push(key),
        }
    }
    if let Some(servers) = servers {
        import_mcp_servers(&servers, home, overwrite, env, &is_set, report)?;
    }
    Ok(())
}

/// Hermes's `mcp_servers`, one server at a time: a server that does not validate here (a
/// variable that is not set, the SSE transport) is reported and the rest go on.
fn import_mcp_servers(
    servers: &Value,
    home: &ProfileHome,
    overwrite: bool,
    env: &EnvLayer,
    is_set: &dyn Fn(&str) -> bool,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let mut taken = std::collections::BTreeSet::new();
    for server in crate::hermes_mcp::convert(servers) {
        let key = format!("mcp_servers.{}", server.name);
        let renamed = if server.name == server.hermes_name {
            String::new()
        } else {
            format!(" (Hermes's {:?})", server.hermes_name)
        };
        report.unmapped.extend(server.unmapped);
        if !taken.insert(server.name.clone()) {
            report.unmapped.push(format!(
                "{key}{renamed} (not imported: another Hermes server has the same name here)"
            ));
            continue;
        }
        let value = match server.value {
            Ok(value) => value,
            Err(why) => {
                report
                    .unmapped
                    .push(format!("{key}{renamed} (not imported: {why})"));
                continue;
            }
        };
        if is_set(&key) && !overwrite {
            report.kept.push(format!("config {key}"));
            continue;
        }
        let text = serde_yaml_ng::to_string(&value).map_err(|e| ImportError::HermesConfig {
            path: home.config_file(),
            message: e.to_string(),
        })?;
        match set(&home.config_file(), &key, &text, env) {
            Ok(()) => report.imported.push(format!("config {key}{renamed}")),
            Err(ConfigEditError::Invalid(crate::config::ConfigError::Invalid {
                message, ..
            })) => report
                .unmapped
                .push(format!("{key}{renamed} (not imported: {message})")),
            Err(other) => return Err(other.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hermes_home() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("skills/devops/deploy")).unwrap();
        std::fs::write(
            root.join("skills/devops/deploy/SKILL.md"),
            "---\nname: deploy\n---\nbody",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("memories")).unwrap();
        std::fs::write(root.join("memories/MEMORY.md"), "uses tabs\n§\nCI is slow").unwrap();
        std::fs::write(root.join("memories/USER.md"), "name: Ada").unwrap();
        std::fs::write(root.join("SOUL.md"), "You are calm.").unwrap();
        std::fs::write(
            root.join(".env"),
            "OPENROUTER_API_KEY=sk-or-1\nOTHER=x\nAPI_SERVER_KEY=hermes-server-key-0123\n",
        )
        .unwrap();
        std::fs::write(
            root.join("config.yaml"),
            "model:\n  default: anthropic/claude-sonnet-4\n  provider: openrouter\n  base_url: http://127.0.0.1:9/v1\nagent:\n  max_turns: 40\nterminal:\n  backend: docker\ndisplay:\n  skin: ares\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn a_hermes_home_is_imported_and_the_rest_reported() {
        let hermes = hermes_home();
        let target = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(target.path());
        let env = EnvLayer::from_pairs(&[]);
        let report = import_hermes(hermes.path(), &home, false, &env).unwrap();

        assert!(home.skills_dir().join("devops/deploy/SKILL.md").is_file());
        assert_eq!(
            std::fs::read_to_string(target.path().join("MEMORY.md")).unwrap(),
            "uses tabs\n§\nCI is slow"
        );
        assert!(home.soul_file().is_file());
        let dotenv = std::fs::read_to_string(home.env_file()).unwrap();
        assert!(dotenv.contains("OPENROUTER_API_KEY=sk-or-1") && !dotenv.contains("OTHER"));
        // Hermes's API server key, under Talaria's name.
        assert!(
            dotenv.contains("\nTALARIA_API_SERVER_KEY=hermes-server-key-0123\n"),
            "{dotenv}"
        );
        assert!(!dotenv.contains("\nAPI_SERVER_KEY"), "{dotenv}");
        let config = crate::config::ConfigFile::load(&home.config_file(), &env).unwrap();
        assert_eq!(
            config.model.name.as_deref(),
            Some("anthropic/claude-sonnet-4")
        );
        assert_eq!(config.model.provider.as_deref(), Some("openai"));
        assert_eq!(config.budget.max_iterations, 40);
        assert_eq!(report.unmapped, ["terminal.backend", "display.skin"]);
        assert!(
            report
                .imported
                .iter()
                .any(|i| i.contains("agent.max_turns → budget.max_iterations"))
        );
        assert!(
            !format!("{report:?}").contains("sk-or-1"),
            "secret values are never reported"
        );

        // A second import keeps what is there.
        std::fs::write(target.path().join("MEMORY.md"), "mine").unwrap();
        let again = import_hermes(hermes.path(), &home, false, &env).unwrap();
        assert_eq!(
            std::fs::read_to_string(target.path().join("MEMORY.md")).unwrap(),
            "mine"
        );
        assert!(again.kept.iter().any(|k| k.ends_with("MEMORY.md")));
        assert!(again.kept.contains(&"config model.name".to_string()));
        assert!(again.imported.is_empty(), "{again:?}");
    }

    #[test]
    fn the_wire_format_comes_from_api_mode_before_the_provider() {
        for (model, expected) in [
            (
                "  provider: custom\n  api_mode: codex_responses\n",
                "openai-responses",
            ),
            (
                "  api_mode: anthropic_messages\n  provider: custom\n",
                "anthropic",
            ),
            ("  provider: openai-codex\n", "openai-responses"),
            (
                "  provider: anthropic\n  api_mode: chat_completions\n",
                "openai",
            ),
        ] {
            let hermes = tempfile::tempdir().unwrap();
            std::fs::write(
                hermes.path().join("config.yaml"),
                format!("model:\n  default: gpt-5-codex\n{model}"),
            )
            .unwrap();
            let target = tempfile::tempdir().unwrap();
            let home = ProfileHome::at(target.path());
            let env = EnvLayer::from_pairs(&[]);
            let report = import_hermes(hermes.path(), &home, false, &env).unwrap();
            let config = crate::config::ConfigFile::load(&home.config_file(), &env).unwrap();
            assert_eq!(config.model.provider.as_deref(), Some(expected), "{model}");
            assert!(
                report
                    .unmapped
                    .iter()
                    .all(|key| !key.starts_with("model.api_mode")),
                "{report:?}"
            );
        }
    }

    #[test]
    fn mcp_servers_are_imported_one_by_one() {
        let hermes = tempfile::tempdir().unwrap();
        std::fs::write(hermes.path().join(".env"), "GH_TOKEN=ghp_fromhermes\n").unwrap();
        std::fs::write(
            hermes.path().join("config.yaml"),
            "mcp_servers:\n  github:\n    command: npx\n    args: [-y, server-github]\n    \
             env: {GITHUB_PERSONAL_ACCESS_TOKEN: \"${env:GH_TOKEN}\"}\n    timeout: 120\n    \
             tools: {exclude: delete_repo, resources: false}\n    sampling: {enabled: true}\n  \
             remote.api:\n    url: https://mcp.example.com/mcp\n    \
             headers: {Authorization: \"Bearer ${REMOTE_TOKEN}\"}\n  \
             old:\n    url: http://h/sse\n    transport: sse\n",
        )
        .unwrap();
        let target = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(target.path());
        let env = EnvLayer::from_pairs(&[]);
        let report = import_hermes(hermes.path(), &home, false, &env).unwrap();
        let text = std::fs::read_to_string(home.config_file()).unwrap();
        assert!(
            text.contains("GITHUB_PERSONAL_ACCESS_TOKEN: ${GH_TOKEN}"),
            "{text}"
        );
        let env = env.reload_dotenv(&home.env_file()).unwrap();
        let config = crate::config::ConfigFile::load(&home.config_file(), &env).unwrap();
        let github = &config.mcp_servers["github"];
        assert_eq!(github.args, ["-y", "server-github"]);
        assert_eq!(github.env["GITHUB_PERSONAL_ACCESS_TOKEN"], "ghp_fromhermes");
        assert_eq!(github.call_timeout(), std::time::Duration::from_secs(120));
        assert!(!github.tools.allows("delete_repo") && !github.tools.resources);
        assert!(
            report
                .imported
                .contains(&"config mcp_servers.github".to_string())
        );
        assert!(
            report
                .unmapped
                .contains(&"mcp_servers.github.sampling".to_string())
        );
        let not_imported = |name: &str, why: &str| {
            report
                .unmapped
                .iter()
                .any(|u| u.starts_with(name) && u.contains("not imported") && u.contains(why))
        };
        assert!(
            not_imported(
                "mcp_servers.remote_api (Hermes's \"remote.api\")",
                "REMOTE_TOKEN is not set"
            ),
            "{report:?}"
        );
        assert!(
            not_imported("mcp_servers.old", "transport sse"),
            "{report:?}"
        );
        assert!(!format!("{report:?}").contains("ghp_fromhermes"));

        let again = import_hermes(hermes.path(), &home, false, &env).unwrap();
        assert!(
            again
                .kept
                .contains(&"config mcp_servers.github".to_string()),
            "{again:?}"
        );
    }

    #[test]
    fn a_directory_that_is_not_hermes_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let err = import_hermes(
            empty.path(),
            &ProfileHome::at(target.path()),
            false,
            &EnvLayer::from_pairs(&[]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("is not a Hermes home"), "{err}");
    }
}
