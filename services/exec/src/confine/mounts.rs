//! The private mount namespace: read-only binds of the control paths, secrets bound over,
//! views, and writable holes, made by the supervisor before it starts a command.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getgid, getuid};

use super::Mount;

/// Enters a new mount namespace and applies `mounts` in order. An error leaves the process
/// in whatever state it reached (the caller then relies on Landlock rules).
pub(super) fn apply(mounts: &[Mount]) -> Result<(), String> {
    let root = nix::unistd::geteuid().is_root();
    if mounts.is_empty() && !root {
        // Nothing to bind, and without root no private `/proc` can be mounted.
        return Ok(());
    }
    enter_namespace()?;
    if root {
        private_proc()?;
    }
    // Opened in the new namespace (a bind's source must be in it) before anything is hidden:
    // a writable hole inside a hidden directory is bound from here.
    let holes: Vec<(PathBuf, File)> = mounts
        .iter()
        .filter_map(|mount| match mount {
            Mount::Writable(path) => open_path(path).map(|file| (path.clone(), file)),
            _ => None,
        })
        .collect();
    let mut hidden_dirs = Vec::new();
    for entry in mounts {
        match entry {
            Mount::ReadOnly(path) => {
                let Ok(real) = path.canonicalize() else {
                    continue;
                };
                bind(&real, &real)?;
                remount_read_only(&real)?;
            }
            Mount::Hidden(path) => {
                let Ok(real) = path.canonicalize() else {
                    continue;
                };
                if real.is_dir() {
                    mount(
                        Some("tmpfs"),
                        &real,
                        Some("tmpfs"),
                        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                        Some("size=64k,mode=0700"),
                    )
                    .map_err(|e| format!("hiding {}: {e}", real.display()))?;
                    hidden_dirs.push(real);
                } else {
                    bind(Path::new("/dev/null"), &real)?;
                    remount_read_only(&real)?;
                }
            }
            Mount::View { path, shown } => {
                let Ok(real) = path.canonicalize() else {
                    continue;
                };
                bind(shown, &real)?;
                remount_read_only(&real)?;
            }
            Mount::Writable(path) => {
                let Some((_, source)) = holes.iter().find(|(hole, _)| hole == path) else {
                    continue;
                };
                // Inside a hidden (empty) directory the mount point has to be made first.
                if !path.exists() {
                    std::fs::create_dir_all(path)
                        .map_err(|e| format!("making room for {}: {e}", path.display()))?;
                }
                let from = PathBuf::from(format!("/proc/self/fd/{}", source.as_raw_fd()));
                bind(&from, path)?;
            }
        }
    }
    for dir in hidden_dirs {
        remount_read_only(&dir)?;
    }
    Ok(())
}

/// A new mount namespace whose changes stay private: directly with root's `CAP_SYS_ADMIN`,
/// else inside a new user namespace that maps only this user's own ids (so files keep their
/// owners and nothing gains rights outside).
fn enter_namespace() -> Result<(), String> {
    let direct = nix::unistd::geteuid().is_root() && unshare(CloneFlags::CLONE_NEWNS).is_ok();
    if !direct {
        let (uid, gid) = (getuid(), getgid());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("cannot make a user and mount namespace: {e}"))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
        };
        write("/proc/self/setgroups", "deny".to_owned())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))
}

/// A `/proc` of our own in which the processes this one may not ptrace are invisible
/// (`hidepid=ptraceable`, Linux 5.8+; plain `hidepid=2` would still show root everything):
/// once the command is in its Landlock domain, that is every process outside it — the agent,
/// its MCP servers, the browser — whose `environ` Landlock alone does not keep from it
/// (measured on Linux 6.18: `mem`, `exe` and `fd/` are refused, `environ` and `maps` are not).
fn private_proc() -> Result<(), String> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        flags,
        Some("hidepid=ptraceable"),
    )
    .map_err(|e| format!("cannot mount a private /proc: {e}"))
}

fn bind(source: &Path, target: &Path) -> Result<(), String> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("binding {} on {}: {e}", source.display(), target.display()))
}

/// Makes the bind at `target` read-only, keeping the flags a user namespace may not drop
/// (nosuid, nodev, noexec, atime).
fn remount_read_only(target: &Path) -> Result<(), String> {
    let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | locked(target);
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("making {} read-only: {e}", target.display()))
}

/// The mount flags of `path`'s file system that a remount must keep.
fn locked(path: &Path) -> MsFlags {
    let Ok(stat) = statvfs(path) else {
        return MsFlags::empty();
    };
    let flags = stat.flags();
    [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(fs, _)| flags.contains(*fs))
    .fold(MsFlags::empty(), |all, (_, ms)| all | ms)
}

/// An `O_PATH` handle on an existing directory (a bind source that survives hiding its path).
fn open_path(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_PATH | nix::libc::O_DIRECTORY)
        .open(path)
        .ok()
}
