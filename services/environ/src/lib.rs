//! Talaria's keys kept out of its environment block.
//!
//! A process's initial environment block stays in its memory for its whole life: unsetting a
//! variable does not erase it, and root reads it through `/proc/PID/environ` (or `mem`) even
//! when the process is not dumpable. So `talaria` calls [`seal`] first thing: when variables
//! whose names say key, token, secret or password are in its environment, it writes them to an
//! anonymous memory file (a memfd), executes itself again without them, and names the memfd in
//! [`SEALED_FD_ENV`]. The new image reads them into memory, closes the file, and every lookup
//! of a setting goes through [`var`] / [`var_os`] / [`vars_os`], which see them as if they were
//! still in the environment. Commands never get them from there: their environment is built
//! from scratch (the exec crate's `PASSED_ENV` and the user's passthrough list).
#![warn(missing_docs)]

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

use nix::sys::memfd::{MFdFlags, memfd_create};

/// The variable naming the memfd that holds the sealed variables in the re-executed process.
pub const SEALED_FD_ENV: &str = "TALARIA_SEALED_ENV_FD";

/// The memfd's name, checked before it is read (so the variable cannot point at another file).
const MEMFD_NAME: &str = "talaria-keys";

/// The sealed variables of this process (empty when nothing was sealed).
static SEALED: OnceLock<HashMap<OsString, OsString>> = OnceLock::new();

/// Why the environment could not be sealed; the process then goes on with its environment as
/// it is, and the caller says so.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The memfd could not be made or written.
    #[error("cannot hand the keys over in memory: {0}")]
    Memfd(String),
    /// Executing this program again failed.
    #[error("cannot start again without the keys in the environment: {0}")]
    Exec(std::io::Error),
    /// The variable names something that is not a memfd of ours, or it could not be read.
    #[error("{SEALED_FD_ENV} does not name a readable set of sealed keys: {0}")]
    Sealed(String),
}

/// Whether a variable's name says it holds a secret: a `KEY`/`KEYS`/`APIKEY` part
/// (`OPENAI_API_KEY`, `BRAVE_APIKEY`), or `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`,
/// `CREDENTIAL` anywhere (`HF_TOKEN`, `PGPASSWORD`). `KEYBOARD` is not a key.
pub fn is_secret_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if name == SEALED_FD_ENV {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    upper
        .split('_')
        .any(|part| matches!(part, "KEY" | "KEYS" | "APIKEY" | "APIKEYS"))
        || ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
            .iter()
            .any(|word| upper.contains(word))
}

/// Seals the environment's secrets: in a process started with some, this executes the program
/// again without them and does not return unless that fails; in the re-executed process (or one
/// started without secrets) it loads what was sealed and returns. Call it first in `main`,
/// before any thread starts.
pub fn seal() -> Result<(), SealError> {
    if let Some(fd) = std::env::var_os(SEALED_FD_ENV) {
        let sealed = load(&fd);
        let _ = SEALED.set(sealed.as_ref().cloned().unwrap_or_default());
        return sealed.map(drop);
    }
    let secrets: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| is_secret_name(name))
        .collect();
    if secrets.is_empty() {
        let _ = SEALED.set(HashMap::new());
        return Ok(());
    }
    let memfd =
        memfd_create(MEMFD_NAME, MFdFlags::empty()).map_err(|e| SealError::Memfd(e.to_string()))?;
    let mut file = File::from(memfd);
    file.write_all(&encode(&secrets))
        .map_err(|e| SealError::Memfd(e.to_string()))?;
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| "talaria".into());
    let mut command = Command::new("/proc/self/exe");
    command
        .arg0(arg0)
        .args(args)
        .env(SEALED_FD_ENV, file.as_raw_fd().to_string());
    for (name, _) in &secrets {
        command.env_remove(name);
    }
    // The memfd has no close-on-exec flag, so the new image finds it open; `file` lives until
    // `exec`, which only returns on failure.
    let error = command.exec();
    drop(file);
    Err(SealError::Exec(error))
}

/// The value of `name`: a sealed one first, else the process environment's.
pub fn var_os(name: impl AsRef<OsStr>) -> Option<OsString> {
    let name = name.as_ref();
    SEALED
        .get()
        .and_then(|sealed| sealed.get(name).cloned())
        .or_else(|| std::env::var_os(name))
}

/// [`var_os`] as a `String` (`None` when unset or not UTF-8).
pub fn var(name: impl AsRef<OsStr>) -> Option<String> {
    var_os(name).and_then(|value| value.into_string().ok())
}

/// The whole environment as if nothing had been sealed (minus [`SEALED_FD_ENV`]).
pub fn vars_os() -> Vec<(OsString, OsString)> {
    let sealed = SEALED.get();
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name != SEALED_FD_ENV)
        .filter(|(name, _)| !sealed.is_some_and(|s| s.contains_key(name)))
        .collect();
    if let Some(sealed) = sealed {
        vars.extend(sealed.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    vars
}

/// How many variables this process holds sealed (for reports).
pub fn sealed_count() -> usize {
    SEALED.get().map_or(0, HashMap::len)
}

/// Reads the sealed variables from the memfd `fd` names, then closes it so no command inherits
/// it.
fn load(fd: &OsStr) -> Result<HashMap<OsString, OsString>, SealError> {
    let number: i32 = fd
        .to_str()
        .and_then(|text| text.parse().ok())
        .filter(|number| *number > 2)
        .ok_or_else(|| SealError::Sealed(format!("{fd:?} is not a descriptor number")))?;
    let link = format!("/proc/self/fd/{number}");
    let target = std::fs::read_link(&link).map_err(|e| SealError::Sealed(e.to_string()))?;
    if !target
        .as_os_str()
        .as_bytes()
        .starts_with(format!("/memfd:{MEMFD_NAME}").as_bytes())
    {
        return Err(SealError::Sealed(format!("{link} is {}", target.display())));
    }
    let mut bytes = Vec::new();
    let read = File::open(&link).and_then(|mut file| file.read_to_end(&mut bytes));
    // Closed whether or not it could be read: commands must never inherit it.
    let _ = nix::unistd::close(number);
    read.map_err(|e| SealError::Sealed(e.to_string()))?;
    Ok(decode(&bytes).into_iter().collect())
}

/// `NAME\0VALUE\0` for each variable.
fn encode(vars: &[(OsString, OsString)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, value) in vars {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// The pairs [`encode`] wrote; a trailing half pair is dropped.
fn decode(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    let mut fields = bytes
        .split(|b| *b == 0)
        .map(|field| OsString::from_vec(field.to_vec()));
    let mut vars = Vec::new();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        if !name.is_empty() {
            vars.push((name, value));
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_say_secret_are_secret() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "TALARIA_API_SERVER_KEY",
            "BRAVE_APIKEY",
            "HF_TOKEN",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "PGPASSWORD",
            "DB_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "telegram_bot_token",
            "SSH_KEYS",
        ] {
            assert!(is_secret_name(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD_LAYOUT",
            "MONKEY",
            "TALARIA_HOME",
            SEALED_FD_ENV,
        ] {
            assert!(!is_secret_name(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn sealed_pairs_round_trip_with_any_bytes() {
        let vars = vec![
            (OsString::from("A_KEY"), OsString::from("v=1 two")),
            (
                OsString::from("B_TOKEN"),
                OsString::from_vec(vec![0xff, b'x']),
            ),
            (OsString::from("EMPTY_SECRET"), OsString::new()),
        ];
        assert_eq!(decode(&encode(&vars)), vars);
        assert_eq!(decode(b"A"), Vec::new());
    }

    #[test]
    fn a_descriptor_that_is_not_our_memfd_is_refused() {
        assert!(load(OsStr::new("1")).is_err());
        assert!(load(OsStr::new("x")).is_err());
        let file = tempfile_in_proc();
        let err = load(OsStr::new(&file.as_raw_fd().to_string())).unwrap_err();
        assert!(err.to_string().contains("is "), "{err}");
    }

    fn tempfile_in_proc() -> File {
        File::open("/proc/self/status").unwrap()
    }
}
