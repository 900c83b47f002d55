//! Changing a job that exists — update, pause, resume, run soon — with the
//! same checks for `talaria cron` and the `cronjob` tool. Each is a plain
//! function of the jobs, run under the store's lock by the caller.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::create::{check_deliver, check_skills, checked_name, checked_prompt, first_run};
use crate::{Job, JobState, Schedule};

/// What an update changes: each field that is set.
#[derive(Debug, Clone, Default)]
pub struct JobChanges {
    pub name: Option<String>,
    pub prompt: Option<String>,
    /// As the user writes it; the next run is counted from now.
    pub schedule: Option<String>,
    pub deliver: Option<String>,
    /// Runs in all, counting those done.
    pub repeat: Option<u32>,
    pub skills: Option<Vec<String>>,
    /// An empty name goes back to the profile's model.
    pub model: Option<String>,
}

impl JobChanges {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.prompt.is_none()
            && self.schedule.is_none()
            && self.deliver.is_none()
            && self.repeat.is_none()
            && self.skills.is_none()
            && self.model.is_none()
    }
}

/// Applies `changes` to `jobs[at]`, checked as a new job would be; nothing
/// changes when a check fails.
pub fn update(
    jobs: &mut [Job],
    at: usize,
    changes: JobChanges,
    now: Timestamp,
    tz: &TimeZone,
) -> Result<(), String> {
    if changes.is_empty() {
        return Err(
            "nothing to change: give a new name, prompt, schedule, deliver, repeat, \
                    skills or model"
                .to_owned(),
        );
    }
    let mut job = jobs
        .get(at)
        .cloned()
        .ok_or_else(|| "no such job".to_owned())?;
    if let Some(name) = &changes.name {
        let others = jobs.iter().enumerate().filter(|(n, _)| *n != at);
        job.name = checked_name(name, others.map(|(_, job)| job))?;
    }
    if let Some(prompt) = &changes.prompt {
        job.prompt = checked_prompt(prompt)?;
    }
    if let Some(deliver) = changes.deliver {
        check_deliver(&deliver, job.origin.as_ref())?;
        job.deliver = deliver;
    }
    if let Some(skills) = changes.skills {
        check_skills(&skills)?;
        job.skill = skills.first().cloned();
        job.skills = skills;
    }
    if let Some(model) = changes.model {
        job.model = Some(model.trim().to_owned()).filter(|m| !m.is_empty());
    }
    if let Some(times) = changes.repeat {
        if times <= job.repeat.completed {
            return Err(format!(
                "repeat {times} is not more than the {} run(s) done: give a larger number",
                job.repeat.completed
            ));
        }
        job.repeat.times = Some(times);
        if job.state == JobState::Completed {
            job.state = JobState::Scheduled;
        }
    }
    if let Some(text) = &changes.schedule {
        let schedule = Schedule::parse(text, now, tz).map_err(|e| e.to_string())?;
        job.next_run_at = Some(first_run(&schedule, now, tz)?);
        job.schedule_display = schedule.display().to_owned();
        job.schedule = schedule;
        if job.state == JobState::Completed {
            job.state = JobState::Scheduled;
        }
    }
    if job.state == JobState::Scheduled && job.next_run_at.is_none() {
        // Re-opened by a larger repeat, but its schedule has no time left.
        job.next_run_at = Some(first_run(&job.schedule, now, tz)?);
    }
    if job.state == JobState::Scheduled && job.repeats_exhausted() {
        return Err(format!(
            "job {} has done all its {} run(s)",
            job.name, job.repeat.completed
        ));
    }
    jobs[at] = job;
    Ok(())
}

/// Pauses the job; `false` when it was paused already.
pub fn pause(job: &mut Job, now: Timestamp, reason: &str) -> Result<bool, String> {
    match job.state {
        JobState::Paused => Ok(false),
        JobState::Completed => Err(format!("job {} has finished: nothing to pause", job.name)),
        JobState::Scheduled | JobState::Running => {
            job.state = JobState::Paused;
            job.paused_at = Some(now);
            job.paused_reason = Some(reason.to_owned());
            Ok(true)
        }
    }
}

/// Resumes a paused job from its next fire time after `now`: the runs it
/// missed while paused are not made up.
pub fn resume(job: &mut Job, now: Timestamp, tz: &TimeZone) -> Result<(), String> {
    if job.state != JobState::Paused {
        return Err(format!("job {} is not paused", job.name));
    }
    // A run still going keeps its claim; it finishes as scheduled.
    job.state = if job.run_claim.is_some() {
        JobState::Running
    } else {
        JobState::Scheduled
    };
    job.enabled = true;
    job.paused_at = None;
    job.paused_reason = None;
    job.next_run_at = job.schedule.next_after(now, tz);
    Ok(())
}

/// Makes the job due at `now`, so the next tick runs it once; its schedule
/// goes on from that run.
pub fn run_soon(job: &mut Job, now: Timestamp) -> Result<(), String> {
    match job.state {
        JobState::Scheduled => {
            job.next_run_at = Some(now);
            Ok(())
        }
        JobState::Running => Err(format!("job {} is running now", job.name)),
        JobState::Paused => Err(format!("job {} is paused: resume it first", job.name)),
        JobState::Completed => Err(format!("job {} has finished its runs", job.name)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{NewJob, create, due};

    fn now() -> Timestamp {
        "2026-03-01T08:00:00Z".parse().unwrap()
    }

    fn jobs(names: &[&str]) -> Vec<Job> {
        let mut jobs: Vec<Job> = Vec::new();
        for name in names {
            let new = NewJob {
                name: Some((*name).into()),
                prompt: format!("report on {name}"),
                schedule: "0 9 * * *".into(),
                repeat: Some(2),
                ..NewJob::default()
            };
            let job = create(new, &jobs, now(), &TimeZone::UTC).unwrap();
            jobs.push(job);
        }
        jobs
    }

    #[test]
    fn an_update_is_checked_like_a_new_job_and_changes_nothing_when_refused() {
        let mut all = jobs(&["inbox", "build"]);
        let before = all.clone();
        let refuse = |all: &mut Vec<Job>, changes: JobChanges| {
            update(all, 1, changes, now(), &TimeZone::UTC).unwrap_err()
        };
        let taken = JobChanges {
            name: Some("inbox".into()),
            ..JobChanges::default()
        };
        assert!(refuse(&mut all, taken).contains("already a job named 'inbox'"));
        let half_bad = JobChanges {
            prompt: Some("a new prompt".into()),
            schedule: Some("whenever".into()),
            ..JobChanges::default()
        };
        assert!(refuse(&mut all, half_bad).contains("5 fields"));
        let origin = JobChanges {
            deliver: Some("origin".into()),
            ..JobChanges::default()
        };
        assert!(refuse(&mut all, origin).contains("needs a chat"));
        assert!(refuse(&mut all, JobChanges::default()).contains("nothing to change"));
        assert_eq!(all, before);

        let changes = JobChanges {
            name: Some("build ".into()),
            schedule: Some("every 2h".into()),
            skills: Some(vec!["ci".into()]),
            model: Some("small".into()),
            ..JobChanges::default()
        };
        update(&mut all, 1, changes, now(), &TimeZone::UTC).unwrap();
        let job = &all[1];
        assert_eq!(job.name, "build", "its own name is not taken");
        assert_eq!(job.schedule_display, "every 2h");
        assert_eq!(
            job.next_run_at,
            Some("2026-03-01T10:00:00Z".parse().unwrap())
        );
        assert_eq!(
            (job.skill.as_deref(), job.model.as_deref()),
            (Some("ci"), Some("small"))
        );
        assert_eq!(all[0], before[0]);
    }

    #[test]
    fn a_finished_job_reopens_with_a_larger_repeat_only() {
        let mut all = jobs(&["inbox"]);
        for _ in 0..2 {
            due::record_run(&mut all[0], now(), None);
        }
        assert_eq!(all[0].state, JobState::Completed);
        let same = JobChanges {
            repeat: Some(2),
            ..JobChanges::default()
        };
        let refused = update(&mut all, 0, same, now(), &TimeZone::UTC).unwrap_err();
        assert!(refused.contains("not more than the 2 run(s)"), "{refused}");
        let more = JobChanges {
            repeat: Some(3),
            ..JobChanges::default()
        };
        update(&mut all, 0, more, now(), &TimeZone::UTC).unwrap();
        assert_eq!(all[0].state, JobState::Scheduled);
        assert!(all[0].next_run_at.is_some());
    }

    #[test]
    fn pause_resume_and_run_soon_follow_the_job_state() {
        let mut job = jobs(&["inbox"]).remove(0);
        assert_eq!(pause(&mut job, now(), "asked"), Ok(true));
        assert_eq!(pause(&mut job, now(), "asked"), Ok(false));
        assert!(run_soon(&mut job, now()).unwrap_err().contains("paused"));
        let later: Timestamp = "2026-03-03T10:00:00Z".parse().unwrap();
        resume(&mut job, later, &TimeZone::UTC).unwrap();
        assert_eq!(job.state, JobState::Scheduled);
        assert_eq!(
            job.next_run_at,
            Some("2026-03-04T09:00:00Z".parse().unwrap()),
            "missed runs are not made up"
        );
        assert!(resume(&mut job, later, &TimeZone::UTC).is_err());
        run_soon(&mut job, later).unwrap();
        assert!(matches!(
            due::decide(&job, later, &TimeZone::UTC),
            due::Due::Run { .. }
        ));
    }
}
