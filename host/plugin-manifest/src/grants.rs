//! What the user granted. A plugin gets the intersection of what its manifest
//! requests and what is granted here.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::manifest::{Access, Capabilities, FsCapability, Manifest};

/// The user's decision for one plugin, keyed by the manifest's own spelling
/// (`"$CWD"`, `"api.example.org:443"`, `"GITHUB_TOKEN"`), so it can be stored
/// next to the user's configuration and shown back to them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Grants {
    /// Manifest filesystem paths granted, with the most access allowed for each
    /// (a read-write request granted `read-only` is preopened read-only).
    pub filesystem: BTreeMap<String, Access>,
    /// Network patterns granted: as the manifest spells them, or narrower
    /// than one it requests (`127.0.0.1:8931` for a request of `127.0.0.1:*`).
    pub network: BTreeSet<String>,
    /// Environment variable names granted.
    pub env: BTreeSet<String>,
    /// Secrets the host may write into the plugin's requests (by name).
    pub secrets: BTreeSet<String>,
    /// Whether `exec` is granted.
    pub exec: bool,
    /// Whether the key-value store is granted.
    pub kv: bool,
    /// Whether session search is granted.
    pub session_search: bool,
    /// Whether the auxiliary model is granted.
    pub auxiliary_model: bool,
    /// Whether the user trusts this native plugin to run unsandboxed. Never
    /// implied: not by the distribution's defaults nor by granting `all`.
    pub trust_native: bool,
}

impl Grants {
    /// Nothing granted: the plugin may only log and read its `[config]`.
    pub fn none() -> Self {
        Self::default()
    }

    /// Everything the manifest requests, as requested.
    pub fn all_requested(manifest: &Manifest) -> Self {
        let caps = &manifest.capabilities;
        Self {
            filesystem: caps
                .filesystem
                .iter()
                .map(|fs| (fs.path.clone(), fs.access))
                .collect(),
            network: caps.network.iter().cloned().collect(),
            env: caps.env.iter().cloned().collect(),
            secrets: caps.secrets.iter().map(|s| s.name.clone()).collect(),
            exec: caps.exec,
            kv: caps.kv,
            session_search: caps.session_search,
            auxiliary_model: caps.auxiliary_model,
            trust_native: caps.trust_native,
        }
    }

    /// The same grants with every directory downgraded to read-only.
    pub fn read_only(mut self) -> Self {
        for access in self.filesystem.values_mut() {
            *access = Access::ReadOnly;
        }
        self
    }

    /// What a plugin requesting `requested` may actually use.
    pub fn effective(&self, requested: &Capabilities) -> Capabilities {
        let mut filesystem: Vec<FsCapability> = Vec::new();
        for fs in &requested.filesystem {
            let Some(granted) = self.filesystem.get(&fs.path) else {
                continue;
            };
            let access = fs.access.min(*granted);
            match filesystem.iter_mut().find(|f| f.path == fs.path) {
                Some(existing) => existing.access = existing.access.max(access),
                None => filesystem.push(FsCapability {
                    path: fs.path.clone(),
                    access,
                }),
            }
        }
        Capabilities {
            filesystem,
            network: self
                .network
                .iter()
                .filter(|granted| network_request_covers(&requested.network, granted))
                .cloned()
                .collect(),
            env: requested
                .env
                .iter()
                .filter(|e| self.env.contains(*e))
                .cloned()
                .collect(),
            secrets: requested
                .secrets
                .iter()
                .filter(|s| self.secrets.contains(&s.name))
                .cloned()
                .collect(),
            exec: requested.exec && self.exec,
            kv: requested.kv && self.kv,
            session_search: requested.session_search && self.session_search,
            auxiliary_model: requested.auxiliary_model && self.auxiliary_model,
            trust_native: requested.trust_native && self.trust_native,
        }
    }
}

/// Whether a network pattern the user granted is one the manifest requests,
/// or narrower than one (`$config.*` requests are matched as spelled: their
/// host is only known once the settings are read).
pub fn network_request_covers(requested: &[String], granted: &str) -> bool {
    if requested.iter().any(|r| r == granted) {
        return true;
    }
    let Ok(narrow) = crate::NetPattern::parse(granted) else {
        return false;
    };
    requested
        .iter()
        .filter_map(|r| crate::NetPattern::parse(r).ok())
        .any(|wide| narrow.within(&wide))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_is_the_intersection() {
        let requested = Capabilities {
            filesystem: vec![
                FsCapability {
                    path: "$CWD".into(),
                    access: Access::ReadWrite,
                },
                FsCapability {
                    path: "/opt".into(),
                    access: Access::ReadOnly,
                },
            ],
            network: vec!["a.org:443".into(), "b.org:443".into()],
            exec: true,
            env: vec!["A".into()],
            secrets: ["K1", "K2"]
                .map(|name| crate::SecretCapability {
                    name: name.into(),
                    hosts: vec!["a.org:443".into()],
                })
                .to_vec(),
            kv: true,
            session_search: false,
            auxiliary_model: true,
            trust_native: false,
        };
        let grants = Grants {
            filesystem: [("$CWD".to_string(), Access::ReadOnly)].into(),
            network: ["b.org:443".to_string(), "c.org:443".to_string()].into(),
            env: ["A".to_string(), "B".to_string()].into(),
            secrets: ["K2".to_string(), "K3".to_string()].into(),
            exec: false,
            kv: true,
            session_search: true,
            auxiliary_model: false,
            trust_native: true,
        };
        let eff = grants.effective(&requested);
        assert_eq!(
            eff.filesystem,
            vec![FsCapability {
                path: "$CWD".into(),
                access: Access::ReadOnly
            }]
        );
        assert_eq!(eff.network, vec!["b.org:443".to_string()]);
        assert_eq!(eff.env, vec!["A".to_string()]);
        let secrets: Vec<&str> = eff.secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(secrets, ["K2"]);
        assert!(!eff.exec);
        assert!(eff.kv);
        assert!(!eff.session_search);
        assert!(!eff.auxiliary_model, "requested but not granted");
        assert!(!eff.trust_native, "granted but not requested");
    }

    #[test]
    fn a_narrower_network_grant_is_what_the_plugin_gets() {
        let requested = Capabilities {
            network: vec!["127.0.0.1:*".into(), "$config.server".into()],
            ..Capabilities::default()
        };
        let grants = Grants {
            network: [
                "127.0.0.1:18931".to_string(),
                "10.0.0.1:80".to_string(),
                "$config.server".to_string(),
            ]
            .into(),
            ..Grants::none()
        };
        let eff = grants.effective(&requested);
        assert_eq!(eff.network, ["$config.server", "127.0.0.1:18931"]);
        assert!(network_request_covers(
            &requested.network,
            "127.0.0.1:18931"
        ));
        assert!(!network_request_covers(
            &requested.network,
            "127.0.0.2:18931"
        ));
        assert!(!network_request_covers(&requested.network, "$config.other"));
    }
}
