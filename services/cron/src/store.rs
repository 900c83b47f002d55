//! `cron/` in the profile home: `jobs.json` (Hermes's layout) changed only
//! under an exclusive lock on `.jobs.lock`, written whole to a temporary
//! file and renamed into place; `output/<job>/<timestamp>.md`, the newest
//! runs' answers.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Job;

/// How many runs' output a job keeps.
pub const OUTPUTS_KEPT: usize = 50;

/// Something wrong with the store, for the user.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is not a valid jobs file ({source}); fix or move it, nothing was changed",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

/// The file as a whole: the jobs and whatever else it holds.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct JobsFile {
    #[serde(default)]
    pub(crate) jobs: Vec<Job>,
    #[serde(default)]
    updated_at: Option<Timestamp>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// The jobs of one profile.
#[derive(Debug, Clone)]
pub struct JobStore {
    dir: PathBuf,
}

/// Holds `cron/.tick.lock`: one scheduler tick at a time in a profile.
#[derive(Debug)]
pub struct TickLock {
    _file: File,
}

impl JobStore {
    /// The store in `dir` (the profile's `cron/`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    /// The jobs, read under the lock.
    pub fn load(&self) -> Result<Vec<Job>, StoreError> {
        self.update(|jobs| jobs.clone())
    }

    /// Runs `change` on the jobs under the exclusive lock and writes them
    /// back if it changed them.
    pub fn update<R>(&self, change: impl FnOnce(&mut Vec<Job>) -> R) -> Result<R, StoreError> {
        let _lock = self.lock(".jobs.lock", true)?;
        let mut file = self.read()?;
        let before = file.jobs.clone();
        let result = change(&mut file.jobs);
        if file.jobs != before {
            file.updated_at = Some(Timestamp::now());
            self.write(&file)?;
        }
        Ok(result)
    }

    /// Takes the tick lock, or `None` when another tick holds it.
    pub fn try_tick_lock(&self) -> Result<Option<TickLock>, StoreError> {
        Ok(self
            .lock(".tick.lock", false)?
            .map(|file| TickLock { _file: file }))
    }

    /// Opens `name` in the store and locks it: waiting for it when `wait`,
    /// else `None` when it is held.
    fn lock(&self, name: &str, wait: bool) -> Result<Option<File>, StoreError> {
        let path = self.dir.join(name);
        create_private_dir(&self.dir)?;
        // 0600 whatever the umask: the profile home is private.
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| io("open", &path, source))?;
        if wait {
            file.lock().map_err(|source| io("lock", &path, source))?;
            return Ok(Some(file));
        }
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(source)) => Err(io("lock", &path, source)),
        }
    }

    /// The jobs file as it is, without the lock (for the store's own
    /// writers under it, and reading another home's file without touching it).
    pub(crate) fn read(&self) -> Result<JobsFile, StoreError> {
        let path = self.jobs_path();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JobsFile::default()),
            Err(source) => return Err(io("read", &path, source)),
        };
        if text.trim().is_empty() {
            return Ok(JobsFile::default());
        }
        let file: JobsFile =
            serde_json::from_str(&text).map_err(|source| StoreError::Corrupt { path, source })?;
        for job in &file.jobs {
            job.schedule.validate().map_err(|e| {
                StoreError::Invalid(format!("job {} ({}) in jobs.json: {e}", job.id, job.name))
            })?;
        }
        Ok(file)
    }

    fn write(&self, file: &JobsFile) -> Result<(), StoreError> {
        let path = self.jobs_path();
        let mut text = serde_json::to_string_pretty(file).map_err(|source| {
            StoreError::Invalid(format!("cannot write the jobs as JSON: {source}"))
        })?;
        text.push('\n');
        write_atomically(&self.dir, &path, text.as_bytes())
    }

    /// Saves a run's answer as `output/<job>/<timestamp>.md` and removes the
    /// oldest beyond [`OUTPUTS_KEPT`]. Returns the file's path.
    pub fn save_output(
        &self,
        job_id: &str,
        started: Timestamp,
        text: &str,
    ) -> Result<PathBuf, StoreError> {
        let dir = self.output_dir(job_id)?;
        create_private_dir(&dir)?;
        let name = started.strftime("%Y-%m-%d_%H-%M-%S").to_string();
        let mut path = dir.join(format!("{name}.md"));
        let mut counter = 1;
        while path.exists() {
            counter += 1;
            path = dir.join(format!("{name}-{counter}.md"));
        }
        write_atomically(&dir, &path, text.as_bytes())?;
        let outputs = self.outputs(job_id)?;
        for old in outputs
            .iter()
            .take(outputs.len().saturating_sub(OUTPUTS_KEPT))
        {
            fs::remove_file(old).map_err(|source| io("remove", old, source))?;
        }
        Ok(path)
    }

    /// Deletes a job's saved outputs (when the job is removed).
    pub fn remove_outputs(&self, job_id: &str) -> Result<(), StoreError> {
        let dir = self.output_dir(job_id)?;
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", &dir, e)),
            _ => Ok(()),
        }
    }

    /// A job's saved outputs, oldest first.
    pub fn outputs(&self, job_id: &str) -> Result<Vec<PathBuf>, StoreError> {
        let dir = self.output_dir(job_id)?;
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io("read", &dir, source)),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        // The names are timestamps: their order is the runs'.
        files.sort();
        Ok(files)
    }

    /// `output/<id>`, refusing an id that is not one path component.
    pub(crate) fn output_dir(&self, job_id: &str) -> Result<PathBuf, StoreError> {
        if !valid_id(job_id) {
            return Err(StoreError::Invalid(format!(
                "'{job_id}' is not a job id (letters, digits, '-' and '_')"
            )));
        }
        Ok(self.dir.join("output").join(job_id))
    }
}

/// A job id: what Talaria makes (12 hex digits) or Hermes made; never a
/// path.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A new job id: 12 random hex digits.
pub fn new_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)
        .map_err(|e| StoreError::Invalid(format!("no randomness for a job id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|source| io("create", dir, source))
}

/// Writes `bytes` to a temporary file in `dir`, then renames it to `path`:
/// readers see the old file or the new one, never half of one.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut temp =
        tempfile::NamedTempFile::new_in(dir).map_err(|source| io("write", path, source))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|source| io("write", path, source))?;
    temp.persist(path).map_err(|e| io("write", path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use jiff::tz::TimeZone;

    use super::*;
    use crate::Schedule;

    fn job(id: &str) -> Job {
        let now = Timestamp::now();
        serde_json::from_value(serde_json::json!({
            "id": id,
            "name": "n",
            "prompt": "p",
            "schedule": Schedule::parse("every 1h", now, &TimeZone::UTC).unwrap(),
            "state": "scheduled",
            "created_at": now,
        }))
        .unwrap()
    }

    #[test]
    fn hermes_jobs_round_trip_with_fields_this_version_does_not_know() {
        let dir = tempfile::tempdir().unwrap();
        let hermes = serde_json::json!({
            "jobs": [{
                "id": "a1b2c3d4e5f6", "name": "inbox", "prompt": "Summarise my inbox",
                "skills": ["email"], "skill": "email", "model": null, "provider": null,
                "base_url": null,
                "schedule": {"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"},
                "schedule_display": "0 9 * * *", "repeat": {"times": null, "completed": 3},
                "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
                "created_at": "2026-01-01T00:00:00+00:00",
                "next_run_at": "2026-03-02T09:00:00+00:00", "last_run_at": null,
                "last_status": "ok", "last_error": null, "deliver": "telegram",
                "origin": {"platform": "telegram", "chat_id": "42", "chat_name": "me"},
                "no_agent": false, "context_from": null
            }],
            "updated_at": "2026-03-01T00:00:00+00:00",
            "version": 2
        });
        fs::write(dir.path().join("jobs.json"), hermes.to_string()).unwrap();
        let store = JobStore::new(dir.path());
        let jobs = store.load().unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].repeat.completed, 3);
        assert_eq!(jobs[0].origin.as_ref().unwrap().chat_id, "42");
        store.update(|jobs| jobs[0].repeat.completed = 4).unwrap();
        let written: Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("jobs.json")).unwrap())
                .unwrap();
        assert_eq!(written["version"], 2);
        assert_eq!(written["jobs"][0]["no_agent"], false);
        assert_eq!(written["jobs"][0]["repeat"]["completed"], 4);
        assert_eq!(written["jobs"][0]["skills"][0], "email");
    }

    #[test]
    fn a_broken_file_is_reported_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.json");
        fs::write(&path, "{\"jobs\": [").unwrap();
        let store = JobStore::new(dir.path());
        let error = store.update(|jobs| jobs.push(job("abc"))).unwrap_err();
        assert!(
            error.to_string().contains("not a valid jobs file"),
            "{error}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"jobs\": [");
        let bad = serde_json::json!({"jobs": [{
            "id": "x", "name": "bad", "prompt": "p", "state": "scheduled",
            "created_at": "2026-01-01T00:00:00Z",
            "schedule": {"kind": "cron", "expr": "61 * * * *", "display": "61 * * * *"}
        }]});
        fs::write(&path, bad.to_string()).unwrap();
        let error = store.load().unwrap_err().to_string();
        assert!(error.contains("job x (bad)"), "{error}");
    }

    #[test]
    fn outputs_keep_the_newest_fifty_and_ids_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        let store = JobStore::new(dir.path());
        let start: Timestamp = "2026-03-01T00:00:00Z".parse().unwrap();
        for minute in 0..55 {
            let at = start + jiff::SignedDuration::from_mins(minute);
            store
                .save_output("abc", at, &format!("run {minute}"))
                .unwrap();
        }
        let outputs = store.outputs("abc").unwrap();
        assert_eq!(outputs.len(), OUTPUTS_KEPT);
        assert_eq!(fs::read_to_string(&outputs[0]).unwrap(), "run 5");
        assert_eq!(
            fs::read_to_string(outputs.last().unwrap()).unwrap(),
            "run 54"
        );
        for bad in ["../x", "a/b", "", ".."] {
            assert!(store.save_output(bad, start, "x").is_err(), "{bad}");
        }
        let id = new_id().unwrap();
        assert!(id.len() == 12 && valid_id(&id));
    }

    #[test]
    fn the_tick_lock_is_held_by_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = JobStore::new(dir.path());
        let held = store.try_tick_lock().unwrap();
        assert!(held.is_some());
        assert!(store.try_tick_lock().unwrap().is_none());
        drop(held);
        assert!(store.try_tick_lock().unwrap().is_some());
    }
}
