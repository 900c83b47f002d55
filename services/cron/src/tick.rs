//! A scheduler tick's two moments in the store: claiming the jobs that are
//! due (under the store's lock, so two schedulers never claim one fire time
//! twice), and recording a claimed run when it ends. Running the agent in
//! between belongs to the surface.

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use crate::due::{self, Due};
use crate::{Job, JobState, JobStore, RunClaim, StoreError};

/// A job this process claimed and must now run.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub job: Job,
    /// The fire time being run.
    pub scheduled_for: Timestamp,
}

/// What a tick saw, for the log.
#[derive(Debug, Default)]
pub struct TickReport {
    /// Claimed by this tick: run them.
    pub claimed: Vec<Claimed>,
    /// Found too late: (job name, the fire time missed).
    pub missed: Vec<(String, Timestamp)>,
    /// Still running at their next fire time: skipped.
    pub skipped: Vec<String>,
    /// Runs abandoned by a scheduler that stopped: released.
    pub released: Vec<String>,
}

impl JobStore {
    /// Claims every job due at `now` (in `tz`), as many as keep the runs
    /// under way at most `limit` (the rest stay due for the next tick),
    /// releasing runs whose claim is older
    /// than `stale_after` or whose process is not `alive`.
    pub fn claim_due(
        &self,
        now: Timestamp,
        tz: &TimeZone,
        limit: usize,
        stale_after: SignedDuration,
        alive: impl Fn(u32) -> bool,
    ) -> Result<TickReport, StoreError> {
        self.update(|jobs| {
            let mut report = TickReport::default();
            for job in jobs.iter_mut() {
                if due::release_stale_claim(job, now, stale_after, &alive) {
                    report.released.push(job.name.clone());
                }
            }
            // Runs still going (another tick's, another process's) count
            // against the limit.
            let running = jobs.iter().filter(|job| job.run_claim.is_some()).count();
            let limit = limit.saturating_sub(running);
            for job in jobs.iter_mut() {
                let decision = due::decide(job, now, tz);
                if matches!(decision, Due::Run { .. }) && report.claimed.len() >= limit {
                    continue;
                }
                match &decision {
                    Due::Missed { scheduled_for, .. } => {
                        report.missed.push((job.name.clone(), *scheduled_for));
                    }
                    Due::StillRunning { .. } => report.skipped.push(job.name.clone()),
                    Due::Wait | Due::Run { .. } => {}
                }
                if due::apply(job, &decision, now)
                    && let Due::Run { scheduled_for, .. } = decision
                {
                    report.claimed.push(Claimed {
                        job: job.clone(),
                        scheduled_for,
                    });
                }
            }
            report
        })
    }

    /// Claims job `key` (id, name or id prefix) to run now, whatever its
    /// schedule (`talaria cron run`); its next fire time stays.
    pub fn claim_now(
        &self,
        key: &str,
        now: Timestamp,
    ) -> Result<Result<Claimed, String>, StoreError> {
        self.update(|jobs| {
            let at = crate::find(jobs, key)?;
            let job = &mut jobs[at];
            match job.state {
                JobState::Running => return Err(format!("job {} is running now", job.name)),
                JobState::Paused => {
                    return Err(format!("job {} is paused: resume it first", job.name));
                }
                JobState::Completed => {
                    return Err(format!("job {} has finished its runs", job.name));
                }
                JobState::Scheduled => {}
            }
            job.state = JobState::Running;
            job.run_claim = Some(RunClaim {
                pid: std::process::id(),
                at: now,
                scheduled_for: now,
            });
            Ok(Claimed {
                job: job.clone(),
                scheduled_for: now,
            })
        })
    }

    /// Records the end of a claimed run of job `id`: started at `started`,
    /// failed with `error` when it did. A job removed meanwhile is left
    /// removed; returns whether it was found.
    pub fn record_run(
        &self,
        id: &str,
        started: Timestamp,
        error: Option<String>,
    ) -> Result<bool, StoreError> {
        self.update(|jobs| match jobs.iter_mut().find(|job| job.id == id) {
            Some(job) => {
                due::record_run(job, started, error);
                true
            }
            None => false,
        })
    }
}

/// Whether process `pid` is running (Linux: it has a `/proc` entry).
pub fn process_alive(pid: u32) -> bool {
    std::path::Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Barrier};

    use super::*;
    use crate::NewJob;

    const HOUR: SignedDuration = SignedDuration::from_hours(1);

    fn store_with(schedules: &[&str], now: Timestamp) -> (tempfile::TempDir, JobStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = JobStore::new(dir.path());
        store
            .update(|jobs| {
                for (n, schedule) in schedules.iter().enumerate() {
                    let new = NewJob {
                        name: Some(format!("job{n}")),
                        prompt: "p".into(),
                        schedule: (*schedule).into(),
                        ..NewJob::default()
                    };
                    let job = crate::create(new, jobs, now, &TimeZone::UTC).unwrap();
                    jobs.push(job);
                }
            })
            .unwrap();
        (dir, store)
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn two_concurrent_ticks_claim_a_due_job_exactly_once() {
        let created = at("2026-03-01T08:00:00Z");
        let (_dir, store) = store_with(&["5m", "every 5m", "0 9 * * *"], created);
        let now = at("2026-03-01T08:05:30Z");
        let ticks = 8;
        let barrier = Arc::new(Barrier::new(ticks));
        let claimed: Vec<Vec<String>> = std::thread::scope(|scope| {
            // Every thread is spawned before any is joined: they meet at the barrier.
            #[allow(clippy::needless_collect)]
            let handles: Vec<_> = (0..ticks)
                .map(|_| {
                    let barrier = barrier.clone();
                    let store = store.clone();
                    scope.spawn(move || {
                        barrier.wait();
                        let report = store
                            .claim_due(now, &TimeZone::UTC, 10, HOUR, |_| true)
                            .unwrap();
                        report
                            .claimed
                            .into_iter()
                            .map(|c| c.job.name)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<String> = claimed.into_iter().flatten().collect();
        all.sort();
        assert_eq!(
            all,
            ["job0", "job1"],
            "each due job claimed by one tick only"
        );
        let jobs = store.load().unwrap();
        assert_eq!(jobs[0].state, JobState::Running);
        assert_eq!(jobs[2].state, JobState::Scheduled);
    }

    #[test]
    fn a_run_is_recorded_and_the_limit_leaves_the_rest_for_the_next_tick() {
        let created = at("2026-03-01T08:00:00Z");
        let (_dir, store) = store_with(&["every 5m", "every 5m", "every 5m"], created);
        let now = at("2026-03-01T08:05:00Z");
        let first = store
            .claim_due(now, &TimeZone::UTC, 2, HOUR, |_| true)
            .unwrap();
        assert_eq!(first.claimed.len(), 2);
        let full = store
            .claim_due(now, &TimeZone::UTC, 2, HOUR, |_| true)
            .unwrap();
        assert!(full.claimed.is_empty(), "two runs under way: the limit");
        let id = first.claimed[0].job.id.clone();
        assert!(store.record_run(&id, now, None).unwrap());
        let second = store
            .claim_due(now, &TimeZone::UTC, 2, HOUR, |_| true)
            .unwrap();
        assert_eq!(second.claimed.len(), 1);
        let jobs = store.load().unwrap();
        let job = jobs.iter().find(|job| job.id == id).unwrap();
        assert_eq!(job.state, JobState::Scheduled);
        assert_eq!(job.last_status.as_deref(), Some("ok"));
        assert_eq!(job.next_run_at, Some(at("2026-03-01T08:10:00Z")));
        assert!(!store.record_run("gone", now, None).unwrap());
    }

    #[test]
    fn a_job_is_claimed_to_run_now_unless_it_runs_is_paused_or_finished() {
        let created = at("2026-03-01T08:00:00Z");
        let (_dir, store) = store_with(&["0 9 * * *"], created);
        let now = at("2026-03-01T08:01:00Z");
        let claimed = store.claim_now("job0", now).unwrap().unwrap();
        assert_eq!(claimed.scheduled_for, now);
        let again = store.claim_now("job0", now).unwrap().unwrap_err();
        assert!(again.contains("running now"), "{again}");
        store.record_run(&claimed.job.id, now, None).unwrap();
        let job = &store.load().unwrap()[0];
        assert_eq!(
            job.next_run_at,
            Some(at("2026-03-01T09:00:00Z")),
            "the schedule stays"
        );
        assert_eq!(job.state, JobState::Scheduled);
        let unknown = store.claim_now("nope", now).unwrap().unwrap_err();
        assert!(unknown.contains("no job 'nope'"));
    }

    #[test]
    fn a_run_abandoned_by_a_dead_scheduler_is_released_and_reported() {
        let created = at("2026-03-01T08:00:00Z");
        let (_dir, store) = store_with(&["every 5m"], created);
        let now = at("2026-03-01T08:05:00Z");
        store
            .claim_due(now, &TimeZone::UTC, 1, HOUR, |_| true)
            .unwrap();
        let later = at("2026-03-01T08:06:00Z");
        let report = store
            .claim_due(later, &TimeZone::UTC, 1, HOUR, |_| false)
            .unwrap();
        assert_eq!(report.released, ["job0"]);
        let jobs = store.load().unwrap();
        assert_eq!(jobs[0].last_status.as_deref(), Some("error"));
        assert!(process_alive(std::process::id()));
    }
}
