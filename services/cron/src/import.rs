//! Hermes's scheduled jobs brought over (`talaria import hermes`): its
//! `cron/jobs.json` has this store's layout, so each job is read as it is
//! and added unless the profile has a job with its id (replaced only when
//! asked) or its name. The saved answers of the jobs added come along.

use std::fs;
use std::path::Path;

use crate::store::valid_id;
use crate::store::{create_private_dir, io};
use crate::{JobState, JobStore, StoreError};

/// What an import of jobs did, one line per job.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct JobsImport {
    pub imported: Vec<String>,
    /// Left out, with why.
    pub kept: Vec<String>,
}

impl JobStore {
    /// Adds the jobs of the `cron/` directory `from` (read, never written:
    /// it is another program's home). With `overwrite`, a job whose id is
    /// here already is replaced.
    pub fn import_from(&self, from: &Path, overwrite: bool) -> Result<JobsImport, StoreError> {
        let theirs = JobStore::new(from).read()?.jobs;
        let mut report = JobsImport::default();
        if theirs.is_empty() {
            return Ok(report);
        }
        let added = self.update(|mine| {
            let mut added = Vec::new();
            for mut job in theirs {
                let label = format!("cron job {} ({})", job.name, job.id);
                if !valid_id(&job.id) {
                    report.kept.push(format!("{label}: its id is not a job id"));
                    continue;
                }
                // A run Hermes had under way is not this profile's to finish.
                job.run_claim = None;
                if job.state == JobState::Running {
                    job.state = JobState::Scheduled;
                }
                let same_id = mine.iter().position(|m| m.id == job.id);
                let name_taken = mine.iter().any(|m| m.name == job.name && m.id != job.id);
                match same_id {
                    Some(_) if !overwrite => report.kept.push(format!("{label}: exists")),
                    _ if name_taken => {
                        report
                            .kept
                            .push(format!("{label}: a job of that name exists"));
                    }
                    Some(at) => {
                        added.push(job.id.clone());
                        mine[at] = job;
                        report.imported.push(label);
                    }
                    None => {
                        added.push(job.id.clone());
                        mine.push(job);
                        report.imported.push(label);
                    }
                }
            }
            added
        })?;
        for id in added {
            self.copy_outputs(&from.join("output").join(&id), &id)?;
        }
        Ok(report)
    }

    /// Copies the `.md` answers in `from` to job `id`'s outputs, keeping
    /// those already here.
    fn copy_outputs(&self, from: &Path, id: &str) -> Result<(), StoreError> {
        let entries = match fs::read_dir(from) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(io("read", from, source)),
        };
        let dir = self.output_dir(id)?;
        create_private_dir(&dir)?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
            if !is_file || path.extension().is_none_or(|ext| ext != "md") {
                continue;
            }
            let to = dir.join(entry.file_name());
            if !to.exists() {
                fs::copy(&path, &to).map_err(|source| io("copy", &path, source))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use jiff::tz::TimeZone;

    use super::*;
    use crate::{NewJob, create};

    fn job_named(store: &JobStore, name: &str) -> crate::Job {
        store
            .update(|jobs| {
                let new = NewJob {
                    name: Some(name.into()),
                    prompt: format!("report on {name}"),
                    schedule: "every 1h".into(),
                    ..NewJob::default()
                };
                let job = create(new, jobs, crate::now(), &TimeZone::UTC).unwrap();
                jobs.push(job.clone());
                job
            })
            .unwrap()
    }

    #[test]
    fn jobs_are_added_unless_their_id_or_name_is_taken_and_outputs_come_along() {
        let hermes = tempfile::tempdir().unwrap();
        let theirs = JobStore::new(hermes.path());
        let standup = job_named(&theirs, "standup");
        let inbox = job_named(&theirs, "inbox");
        theirs
            .update(|jobs| {
                jobs[1].state = JobState::Running;
                jobs[1].run_claim = Some(crate::RunClaim {
                    pid: 1,
                    at: crate::now(),
                    scheduled_for: crate::now(),
                });
            })
            .unwrap();
        theirs
            .save_output(&inbox.id, crate::now(), "inbox was empty")
            .unwrap();
        let before = fs::read(hermes.path().join("jobs.json")).unwrap();
        fs::remove_file(hermes.path().join(".jobs.lock")).unwrap();

        let profile = tempfile::tempdir().unwrap();
        let mine = JobStore::new(profile.path());
        job_named(&mine, "standup");
        let report = mine.import_from(hermes.path(), false).unwrap();
        assert_eq!(report.imported, [format!("cron job inbox ({})", inbox.id)]);
        assert_eq!(
            report.kept,
            [format!(
                "cron job standup ({}): a job of that name exists",
                standup.id
            )]
        );
        let jobs = mine.load().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            jobs[1].state,
            JobState::Scheduled,
            "Hermes's run is not ours"
        );
        assert!(jobs[1].run_claim.is_none());
        let outputs = mine.outputs(&inbox.id).unwrap();
        assert_eq!(fs::read_to_string(&outputs[0]).unwrap(), "inbox was empty");

        let again = mine.import_from(hermes.path(), false).unwrap();
        assert!(again.imported.is_empty());
        assert_eq!(again.kept.len(), 2);
        let replaced = mine.import_from(hermes.path(), true).unwrap();
        assert_eq!(replaced.imported.len(), 1, "{replaced:?}");
        assert_eq!(
            fs::read(hermes.path().join("jobs.json")).unwrap(),
            before,
            "Hermes's file is read, never written"
        );
        assert!(!hermes.path().join(".jobs.lock").exists(), "nor locked");
    }

    #[test]
    fn a_broken_hermes_file_is_refused_and_nothing_changes() {
        let hermes = tempfile::tempdir().unwrap();
        fs::write(hermes.path().join("jobs.json"), "{\"jobs\": [").unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mine = JobStore::new(profile.path());
        let error = mine.import_from(hermes.path(), false).unwrap_err();
        assert!(
            error.to_string().contains("is not a valid jobs file"),
            "{error}"
        );
        assert!(mine.load().unwrap().is_empty());
        let missing = mine
            .import_from(&hermes.path().join("nope"), false)
            .unwrap();
        assert_eq!(missing, JobsImport::default());
    }
}
