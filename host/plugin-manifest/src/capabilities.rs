//! Checks of a manifest's `[capabilities]`: what a native plugin may ask
//! for, filesystem paths, network patterns, environment and secret names.

use std::path::{Component, Path};

use crate::manifest::{Capabilities, Runtime};

pub(crate) const NATIVE_MUST_REQUEST_TRUST: &str = "a native plugin runs unsandboxed and must request it: \
     `[capabilities] trust-native = true`";

pub(crate) fn validate_capabilities(
    caps: &Capabilities,
    runtime: Runtime,
) -> Result<(), (String, String)> {
    if runtime == Runtime::Native {
        if !caps.trust_native {
            return Err((
                "capabilities.trust-native".into(),
                NATIVE_MUST_REQUEST_TRUST.into(),
            ));
        }
        let sandboxed = [
            ("filesystem", !caps.filesystem.is_empty()),
            ("network", !caps.network.is_empty()),
            ("exec", caps.exec),
            ("env", !caps.env.is_empty()),
            ("secrets", !caps.secrets.is_empty()),
            ("kv", caps.kv),
            ("session-search", caps.session_search),
            ("auxiliary-model", caps.auxiliary_model),
        ];
        if let Some((key, _)) = sandboxed.iter().find(|(_, asked)| *asked) {
            return Err((
                format!("capabilities.{key}"),
                "a native plugin runs unsandboxed: it cannot be limited to capabilities; \
                 request only trust-native"
                    .into(),
            ));
        }
        return Ok(());
    }
    if caps.trust_native {
        return Err((
            "capabilities.trust-native".into(),
            "only native plugins (`runtime = \"native\"`) request trust-native".into(),
        ));
    }
    for (i, fs) in caps.filesystem.iter().enumerate() {
        let key = format!("capabilities.filesystem[{i}].path");
        let path = fs.path.as_str();
        let var_ok = ["$CWD", "$PLUGIN_DATA"].iter().any(|var| {
            path.strip_prefix(var)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        if path.starts_with('$') && !var_ok {
            return Err((
                key,
                format!("{path:?}: only $CWD and $PLUGIN_DATA may be used as variables"),
            ));
        }
        if !path.starts_with('$') && !Path::new(path).is_absolute() {
            return Err((
                key,
                format!("{path:?} must be absolute or start with $CWD or $PLUGIN_DATA"),
            ));
        }
        if Path::new(path)
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        {
            return Err((key, format!("{path:?} must not contain `..`")));
        }
    }
    for (i, pattern) in caps.network.iter().enumerate() {
        check_net_pattern(pattern)
            .map_err(|message| (format!("capabilities.network[{i}]"), message))?;
    }
    for (i, name) in caps.env.iter().enumerate() {
        if !is_env_name(name) {
            return Err((
                format!("capabilities.env[{i}]"),
                format!("{name:?} is not an environment variable name"),
            ));
        }
    }
    for (i, secret) in caps.secrets.iter().enumerate() {
        let key = format!("capabilities.secrets[{i}]");
        if !is_env_name(&secret.name) {
            return Err((
                format!("{key}.name"),
                format!("{:?} is not an environment variable name", secret.name),
            ));
        }
        if secret.hosts.is_empty() {
            return Err((
                format!("{key}.hosts"),
                "name the hosts the secret may be sent to".into(),
            ));
        }
        for (j, pattern) in secret.hosts.iter().enumerate() {
            check_net_pattern(pattern).map_err(|message| (format!("{key}.hosts[{j}]"), message))?;
        }
    }
    Ok(())
}

/// A `host:port` pattern or a `$config.<key>` request (whose key is checked
/// against `[config]` by the manifest's own validation).
fn check_net_pattern(pattern: &str) -> Result<(), String> {
    match pattern.strip_prefix(crate::net_pattern::CONFIG_REQUEST_PREFIX) {
        Some("") => Err(format!("{pattern:?}: name a [config] key")),
        Some(_) => Ok(()),
        None => crate::net_pattern::NetPattern::parse(pattern).map(drop),
    }
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
