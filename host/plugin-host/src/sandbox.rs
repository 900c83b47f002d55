//! Capability enforcement through WASI: filesystem preopens of the granted
//! directories only, no inherited environment, no stdin, captured stdout and
//! stderr, and sockets checked against the granted `host:port` patterns (a
//! refused address is logged and repeated by the call's error).

use std::path::{Path, PathBuf};

use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::imports::net::{Refusals, socket_check};
use crate::log::{CapturedOutput, LogLevel, LogSource};
use crate::state::PluginShared;
use talaria_plugin_manifest::Access;

/// One directory made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Preopen {
    /// Canonical host path.
    pub(crate) host: PathBuf,
    /// The path the guest uses.
    pub(crate) guest: String,
    pub(crate) access: Access,
}

/// The preopens of one plugin for one working directory, and the `cwd` to
/// pass in `call-context`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sandbox {
    pub(crate) preopens: Vec<Preopen>,
    /// The canonical working directory, when the plugin was granted `$CWD`.
    pub(crate) guest_cwd: Option<String>,
    /// The canonical working directory (for `exec`), whether granted or not.
    pub(crate) host_cwd: Option<PathBuf>,
}

/// Resolves a manifest path (`$CWD`, `$PLUGIN_DATA`, with an optional
/// `/sub/path`, or an absolute path) to a canonical existing directory.
/// `$PLUGIN_DATA` (and paths below it) are created on demand.
pub(crate) fn resolve_grant(
    spelled: &str,
    cwd: Option<&Path>,
    plugin_data: &Path,
) -> Result<PathBuf, String> {
    let (base, rest, create) = if let Some(rest) = spelled.strip_prefix("$CWD") {
        let cwd = cwd.ok_or_else(|| "no working directory is known here".to_string())?;
        (cwd.to_path_buf(), rest, false)
    } else if let Some(rest) = spelled.strip_prefix("$PLUGIN_DATA") {
        (plugin_data.to_path_buf(), rest, true)
    } else {
        (PathBuf::from(spelled), "", false)
    };
    let rest = rest.trim_start_matches('/');
    let path = if rest.is_empty() {
        base
    } else {
        base.join(rest)
    };
    if create {
        std::fs::create_dir_all(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| format!("{} does not exist or is unreachable ({e})", path.display()))?;
    if !canonical.is_dir() {
        return Err(format!("{} is not a directory", canonical.display()));
    }
    Ok(canonical)
}

/// `access` to `host`, made read-only when `host` is (or is inside) one of
/// the profile's protected paths or a profile home holding them: a preopen
/// cannot leave out a subpath, and a plugin writing there on its own (not
/// through a path in its arguments, which the tool-call check sees) would
/// change the agent's controls unasked. A directory *holding* a home (a
/// `$CWD` of `$HOME`) stays writable; the tool-call check covers it.
fn confine(plugin: &PluginShared, host: &Path, access: Access) -> Access {
    if access == Access::ReadWrite
        && let Some(protected) = plugin
            .exec
            .executor
            .policy()
            .protected()
            .write_protected(host)
    {
        plugin.log.push(
            LogLevel::Warn,
            LogSource::Host,
            &format!(
                "{} is granted read-only: it holds the profile's protected {}",
                host.display(),
                protected.display()
            ),
        );
        return Access::ReadOnly;
    }
    access
}

impl Sandbox {
    /// The sandbox of `plugin` for calls running in `cwd` (canonical).
    pub(crate) fn resolve(plugin: &PluginShared, cwd: Option<&Path>) -> Result<Self, String> {
        let mut sandbox = Sandbox {
            host_cwd: cwd.map(Path::to_path_buf),
            ..Sandbox::default()
        };
        for grant in &plugin.caps.filesystem {
            let host = resolve_grant(&grant.path, cwd, &plugin.data_dir)
                .map_err(|e| format!("filesystem grant {}: {e}", grant.path))?;
            let guest = host
                .to_str()
                .ok_or_else(|| {
                    format!(
                        "filesystem grant {}: {} is not valid UTF-8",
                        grant.path,
                        host.display()
                    )
                })?
                .to_owned();
            let access = confine(plugin, &host, grant.access);
            if Some(host.as_path()) == cwd {
                sandbox.guest_cwd = Some(guest.clone());
                sandbox.add(Preopen {
                    host: host.clone(),
                    guest: ".".into(),
                    access,
                });
            }
            sandbox.add(Preopen {
                host,
                guest,
                access,
            });
        }
        Ok(sandbox)
    }

    fn add(&mut self, preopen: Preopen) {
        match self.preopens.iter_mut().find(|p| p.guest == preopen.guest) {
            Some(existing) => existing.access = existing.access.max(preopen.access),
            None => self.preopens.push(preopen),
        }
    }

    /// A fresh WASI context for one instance; guest output goes to
    /// `stdout`/`stderr`, refused socket addresses to `refused`.
    pub(crate) fn wasi_ctx(
        &self,
        plugin: &PluginShared,
        stdout: &CapturedOutput,
        stderr: &CapturedOutput,
        refused: &Refusals,
    ) -> Result<WasiCtx, String> {
        let mut builder = WasiCtxBuilder::new();
        builder.stdout(stdout.clone()).stderr(stderr.clone());
        for name in &plugin.caps.env {
            if let Some(value) = talaria_environ::var(name) {
                builder.env(name, value);
            }
        }
        for preopen in &self.preopens {
            let perms = match preopen.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&preopen.host, &preopen.guest, perms)
                .map_err(|e| format!("opening {}: {e}", preopen.host.display()))?;
        }
        // Sockets may be made even with no grant: the check refuses (and names the missing
        // grant of) every connection and datagram outside the grants, and allows no server.
        // A name lookup needs a grant (imports::name_lookup says which when there is none).
        builder
            .allow_tcp(true)
            .allow_udp(true)
            .allow_ip_name_lookup(!plugin.net.is_empty())
            .socket_addr_check(socket_check(
                &plugin.name,
                &plugin.net,
                &plugin.log,
                refused,
            ));
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use talaria_approval::{ApprovalPolicy, DenyAll, PathContext, ProtectedPaths};
    use talaria_exec::{GatedExecutor, LocalBackend};

    use super::*;
    use crate::imports::exec::ExecServices;
    use crate::state::HostCtx;
    use talaria_plugin_manifest::{Capabilities, FsCapability};

    /// A `$CWD` read-write grant in a directory that is a profile home is
    /// opened read-only; one holding the home stays writable.
    #[test]
    fn a_grant_of_a_profile_home_is_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join(".talaria");
        std::fs::create_dir_all(&home).unwrap();
        let caps = Capabilities {
            filesystem: vec![FsCapability {
                path: "$CWD".into(),
                access: Access::ReadWrite,
            }],
            ..Capabilities::default()
        };
        let ctx = HostCtx::for_tests(caps, &root);
        let mut shared = ctx.plugin.clone_for_tests();
        let paths = ProtectedPaths {
            write: vec![home.join("config.yaml")],
            read: vec![],
            homes: vec![home.clone()],
        };
        let policy = ApprovalPolicy::load(root.join("approvals.toml"))
            .unwrap()
            .with_protected(paths, &PathContext::default());
        shared.exec = ExecServices::new(Arc::new(GatedExecutor::new(
            Arc::new(LocalBackend::new()),
            Arc::new(policy),
            Arc::new(DenyAll),
        )));
        let in_home = Sandbox::resolve(&shared, Some(&home)).unwrap();
        assert!(!in_home.preopens.is_empty());
        assert!(
            in_home
                .preopens
                .iter()
                .all(|p| p.access == Access::ReadOnly),
            "{:?}",
            in_home.preopens
        );
        let above = Sandbox::resolve(&shared, Some(&root)).unwrap();
        assert!(above.preopens.iter().all(|p| p.access == Access::ReadWrite));
    }
}
