//! Resolves the model settings of a run. Precedence: flag > environment >
//! config file > built-in default. Missing settings are reported together, each
//! with every way to set it.

use std::time::Duration;

use talaria_kernel::{Budget, LoopConfig, Pricing, RetryPolicy};
use talaria_providers::ProviderKind;

use crate::config::{ConfigFile, ModelConfig};
use crate::env::EnvLayer;
use crate::home::ProfileHome;

/// Values given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
}

/// Everything needed to talk to one model.
#[derive(Clone, PartialEq)]
pub struct ModelSettings {
    /// Wire format.
    pub provider: ProviderKind,
    /// Model name.
    pub model: String,
    /// Endpoint.
    pub base_url: String,
    /// Key, if the endpoint needs one.
    pub api_key: Option<String>,
    /// Stream responses.
    pub stream: bool,
    /// Output token cap.
    pub max_tokens: Option<u32>,
    /// Prices per million tokens.
    pub pricing: Pricing,
    /// `model.max_reply_bytes` (the provider's default when unset).
    pub max_reply_bytes: Option<u64>,
    /// `model.max_prompt_bytes` (the provider's default when unset).
    pub max_prompt_bytes: Option<u64>,
    /// `model.cache_control`: breakpoints on the OpenAI wire.
    pub cache_control: crate::config::CacheControl,
}

impl std::fmt::Debug for ModelSettings {
    // Never print the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

/// The resolved settings of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The primary model.
    pub primary: ModelSettings,
    /// Fallbacks, in order.
    pub fallbacks: Vec<ModelSettings>,
    /// The cheaper model for side jobs (condensing search hits, summaries), if configured.
    pub auxiliary: Option<ModelSettings>,
    /// The parsed config file (for the remaining sections).
    pub config: ConfigFile,
    /// `--yolo`: dangerous commands run without asking (hardline ones never).
    pub yolo: bool,
}

/// Settings that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// Required settings are absent.
    #[error("missing settings:\n{}", .0.iter().map(|m| format!("  - {m}")).collect::<Vec<_>>().join("\n"))]
    Missing(Vec<String>),
    /// A provider name is not known.
    #[error("unknown provider '{value}' (from {source_name}): expected {names}", names = ProviderKind::names())]
    UnknownProvider {
        /// The value given.
        value: String,
        /// Where it came from.
        source_name: String,
    },
}

/// Conventional environment names of a provider's endpoint and key.
fn conventional_env(kind: ProviderKind) -> (&'static str, &'static str) {
    match kind {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
            ("OPENAI_BASE_URL", "OPENAI_API_KEY")
        }
        ProviderKind::Anthropic => ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    }
}

fn parse_provider(value: &str, source_name: &str) -> Result<ProviderKind, SettingsError> {
    value.parse().map_err(|_| SettingsError::UnknownProvider {
        value: value.to_owned(),
        source_name: source_name.to_owned(),
    })
}

impl Settings {
    /// Resolves from flags, environment and config file.
    pub fn resolve(
        overrides: &Overrides,
        env: &EnvLayer,
        config: ConfigFile,
        home: &ProfileHome,
    ) -> Result<Self, SettingsError> {
        let config_path = home.config_file();
        let config_path = config_path.display();
        let file = &config.model;

        let provider = match (
            &overrides.provider,
            env.get("TALARIA_PROVIDER"),
            &file.provider,
        ) {
            (Some(v), _, _) => parse_provider(v, "--provider")?,
            (None, Some(v), _) => parse_provider(&v, "TALARIA_PROVIDER")?,
            (None, None, Some(v)) => {
                parse_provider(v, &format!("model.provider in {config_path}"))?
            }
            (None, None, None) => ProviderKind::OpenAi,
        };
        let (url_env, key_env) = conventional_env(provider);
        let model = overrides
            .model
            .clone()
            .or_else(|| env.get("TALARIA_MODEL"))
            .or(file.name.clone());
        let base_url = overrides
            .base_url
            .clone()
            .or_else(|| env.get("TALARIA_BASE_URL"))
            .or_else(|| env.get(url_env))
            .or(file.base_url.clone())
            .unwrap_or_else(|| provider.default_base_url().to_owned());
        let api_key = env
            .get("TALARIA_API_KEY")
            .or_else(|| env.get(key_env))
            .or(file.api_key.clone());

        let mut missing = Vec::new();
        if model.is_none() {
            missing.push(format!(
                "model: pass --model, set TALARIA_MODEL, or set model.name in {config_path}"
            ));
        }
        if api_key.is_none() && base_url == provider.default_base_url() {
            missing.push(format!(
                "API key for {base_url}: set TALARIA_API_KEY or {key_env} (in the environment \
                 or {}), or model.api_key in {config_path}; a local server needs --base-url instead",
                home.env_file().display()
            ));
        }
        let Some(model) = model.filter(|_| missing.is_empty()) else {
            return Err(SettingsError::Missing(missing));
        };
        let mut primary = ModelSettings {
            provider,
            model,
            base_url,
            api_key,
            stream: file.stream.unwrap_or(true),
            max_tokens: file.max_tokens,
            pricing: file.pricing.unwrap_or_default(),
            max_reply_bytes: file.max_reply_bytes,
            max_prompt_bytes: file.max_prompt_bytes,
            cache_control: file.cache_control.unwrap_or_default(),
        };
        // A credential pool: the same model with each further key, tried before the fallbacks
        // (the first key of the pool when `api_key` is not set).
        let mut keys = config.model.api_keys.iter();
        if primary.api_key.is_none() {
            primary.api_key = keys.next().cloned();
        }
        let pooled = keys.map(|key| ModelSettings {
            api_key: Some(key.clone()),
            ..primary.clone()
        });
        let mut fallbacks: Vec<ModelSettings> = pooled.collect();
        for (i, entry) in config.fallback.iter().enumerate() {
            fallbacks.push(derived(
                entry,
                &primary,
                &format!("fallback[{i}]"),
                &config_path.to_string(),
            )?);
        }
        let auxiliary = config
            .auxiliary
            .as_ref()
            .map(|entry| derived(entry, &primary, "auxiliary", &config_path.to_string()))
            .transpose()?;
        Ok(Self {
            primary,
            fallbacks,
            auxiliary,
            config,
            yolo: false,
        })
    }

    /// The budget for one run.
    pub fn budget(&self) -> Budget {
        let limits = &self.config.budget;
        let mut budget = Budget::with_iterations(limits.max_iterations);
        budget.wall_clock = limits.max_seconds.map(Duration::from_secs);
        budget.max_cost_usd = limits.max_cost_usd;
        budget.pricing = self.primary.pricing;
        budget
    }

    /// The loop's tunables.
    pub fn loop_config(&self) -> LoopConfig {
        let retry = &self.config.retry;
        LoopConfig {
            retry: RetryPolicy {
                max_retries: retry.max_retries,
                base_delay: Duration::from_millis(retry.base_delay_ms),
                max_delay: Duration::from_millis(retry.max_delay_ms),
                ..RetryPolicy::default()
            },
            max_tokens: self.primary.max_tokens,
            context_window: self.config.compression.enabled.then(|| {
                self.config
                    .model
                    .context_window
                    .unwrap_or_else(|| default_context_window(&self.primary.model))
            }),
            compress_at: self.config.compression.threshold,
            max_overflow_compressions: self.config.compression.max_attempts,
            ..LoopConfig::standard()
        }
    }
}

/// Context windows of known model families, in tokens; 128k otherwise.
pub fn default_context_window(model: &str) -> u32 {
    let model = model.to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    if name.contains("claude") {
        200_000
    } else if name.starts_with("gpt-4.1") || name.contains("gemini") {
        1_000_000
    } else if name.starts_with("gpt-5") {
        400_000
    } else if name.starts_with("o1") || name.starts_with("o3") || name.starts_with("o4") {
        200_000
    } else if name.contains("deepseek") {
        64_000
    } else {
        128_000
    }
}

/// A fallback (or the auxiliary model) inherits whatever it does not set
/// from the primary, so a bare `- name: cheaper-model` means "same endpoint,
/// other model". `label` names the entry in messages (`fallback[0]`, `auxiliary`).
fn derived(
    entry: &ModelConfig,
    primary: &ModelSettings,
    label: &str,
    config_path: &str,
) -> Result<ModelSettings, SettingsError> {
    let provider = match &entry.provider {
        Some(v) => parse_provider(v, &format!("{label}.provider in {config_path}"))?,
        None => primary.provider,
    };
    // Another vendor's endpoint and key; OpenAI's two wire formats share theirs.
    let switched = conventional_env(provider) != conventional_env(primary.provider);
    let Some(model) = entry.name.clone() else {
        return Err(SettingsError::Missing(vec![format!(
            "{label}.name in {config_path}"
        )]));
    };
    Ok(ModelSettings {
        provider,
        model,
        base_url: entry.base_url.clone().unwrap_or_else(|| {
            if switched {
                provider.default_base_url().to_owned()
            } else {
                primary.base_url.clone()
            }
        }),
        api_key: entry
            .api_key
            .clone()
            .or_else(|| (!switched).then(|| primary.api_key.clone()).flatten()),
        stream: entry.stream.unwrap_or(primary.stream),
        max_tokens: entry.max_tokens.or(primary.max_tokens),
        pricing: entry.pricing.unwrap_or(primary.pricing),
        max_reply_bytes: entry.max_reply_bytes.or(primary.max_reply_bytes),
        max_prompt_bytes: entry.max_prompt_bytes.or(primary.max_prompt_bytes),
        cache_control: entry.cache_control.unwrap_or(primary.cache_control),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> ConfigFile {
        ConfigFile::parse(text, Path::new("config.yaml"), &EnvLayer::from_pairs(&[])).unwrap()
    }

    fn home() -> ProfileHome {
        ProfileHome::at("/h")
    }

    #[test]
    fn flags_beat_env_beat_config() {
        let file =
            config("model:\n  provider: anthropic\n  name: from-file\n  base_url: http://file\n");
        let from_file = Settings::resolve(
            &Overrides::default(),
            &EnvLayer::from_pairs(&[]),
            file.clone(),
            &home(),
        )
        .unwrap();
        assert_eq!(from_file.primary.model, "from-file");
        assert_eq!(from_file.primary.provider, ProviderKind::Anthropic);

        let e = EnvLayer::from_pairs(&[
            ("TALARIA_MODEL", "from-env"),
            ("ANTHROPIC_BASE_URL", "http://env"),
        ]);
        let from_env = Settings::resolve(&Overrides::default(), &e, file.clone(), &home()).unwrap();
        assert_eq!(from_env.primary.model, "from-env");
        assert_eq!(from_env.primary.base_url, "http://env");

        let flags = Overrides {
            provider: Some("openai".into()),
            model: Some("from-flag".into()),
            base_url: Some("http://flag".into()),
        };
        let from_flags = Settings::resolve(&flags, &e, file, &home()).unwrap();
        assert_eq!(from_flags.primary.model, "from-flag");
        assert_eq!(from_flags.primary.base_url, "http://flag");
        assert_eq!(from_flags.primary.provider, ProviderKind::OpenAi);
    }

    #[test]
    fn talaria_key_wins_over_the_conventional_one() {
        let e = EnvLayer::from_pairs(&[
            ("TALARIA_API_KEY", "t"),
            ("OPENAI_API_KEY", "o"),
            ("TALARIA_MODEL", "m"),
        ]);
        let s =
            Settings::resolve(&Overrides::default(), &e, ConfigFile::default(), &home()).unwrap();
        assert_eq!(s.primary.api_key.as_deref(), Some("t"));
        assert_eq!(s.primary.base_url, "https://api.openai.com/v1");
    }

    #[test]
    fn missing_settings_are_all_named_at_once() {
        let error = Settings::resolve(
            &Overrides::default(),
            &EnvLayer::from_pairs(&[]),
            ConfigFile::default(),
            &home(),
        )
        .unwrap_err();
        let SettingsError::Missing(items) = &error else {
            panic!("{error}")
        };
        assert_eq!(items.len(), 2);
        assert!(items[0].contains("--model") && items[0].contains("TALARIA_MODEL"));
        assert!(items[1].contains("OPENAI_API_KEY") && items[1].contains("/h/.env"));
    }

    #[test]
    fn local_endpoints_need_no_key() {
        let flags = Overrides {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("llama".into()),
            ..Overrides::default()
        };
        let s = Settings::resolve(
            &flags,
            &EnvLayer::from_pairs(&[]),
            ConfigFile::default(),
            &home(),
        )
        .unwrap();
        assert_eq!(s.primary.api_key, None);
    }

    #[test]
    fn unknown_providers_say_where_they_came_from() {
        let e = EnvLayer::from_pairs(&[("TALARIA_PROVIDER", "gemini")]);
        let error = Settings::resolve(&Overrides::default(), &e, ConfigFile::default(), &home())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown provider 'gemini' (from TALARIA_PROVIDER): expected openai, openai-responses \
             or anthropic"
        );
    }

    #[test]
    fn fallbacks_inherit_the_endpoint_unless_they_switch_provider() {
        let file = config(
            "model:\n  name: big\n  base_url: http://local/v1\n  api_key: k\n\
             fallback:\n  - name: small\n  - provider: anthropic\n    name: claude\n    api_key: a\n\
             \x20 - provider: openai-responses\n    name: codex\n",
        );
        let s = Settings::resolve(
            &Overrides::default(),
            &EnvLayer::from_pairs(&[]),
            file,
            &home(),
        )
        .unwrap();
        assert_eq!(s.fallbacks[0].base_url, "http://local/v1");
        assert_eq!(s.fallbacks[0].api_key.as_deref(), Some("k"));
        assert_eq!(s.fallbacks[1].base_url, "https://api.anthropic.com");
        assert_eq!(s.fallbacks[1].api_key.as_deref(), Some("a"));
        // OpenAI's other wire format: the same endpoint and key.
        assert_eq!(s.fallbacks[2].provider, ProviderKind::OpenAiResponses);
        assert_eq!(s.fallbacks[2].base_url, "http://local/v1");
        assert_eq!(s.fallbacks[2].api_key.as_deref(), Some("k"));
    }

    #[test]
    fn the_responses_wire_uses_the_openai_endpoint_and_key() {
        let e = EnvLayer::from_pairs(&[
            ("TALARIA_PROVIDER", "openai-responses"),
            ("TALARIA_MODEL", "gpt-5-codex"),
            ("OPENAI_API_KEY", "sk-o"),
        ]);
        let s =
            Settings::resolve(&Overrides::default(), &e, ConfigFile::default(), &home()).unwrap();
        assert_eq!(s.primary.provider, ProviderKind::OpenAiResponses);
        assert_eq!(s.primary.base_url, "https://api.openai.com/v1");
        assert_eq!(s.primary.api_key.as_deref(), Some("sk-o"));
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let e = EnvLayer::from_pairs(&[("TALARIA_API_KEY", "sk-secret"), ("TALARIA_MODEL", "m")]);
        let s =
            Settings::resolve(&Overrides::default(), &e, ConfigFile::default(), &home()).unwrap();
        assert!(!format!("{s:?}").contains("sk-secret"));
    }
}
