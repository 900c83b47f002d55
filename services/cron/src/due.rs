//! What a scheduler tick does with a job, and what a finished run changes:
//! plain functions of the job, the time and the time zone.
//!
//! A fire time found late (the machine slept, no scheduler ran) is run once
//! if it is within the grace window — half the gap to the fire time after
//! it, clamped to 2 min – 2 h; 2 h for a one-shot — and otherwise counted as
//! missed. Either way the schedule moves on from *now*, so a long sleep never
//! turns into a burst of catch-up runs. A job still running at its next fire
//! time is skipped, not stacked.

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use crate::job::{Job, JobState, RunClaim};

const GRACE_MIN: SignedDuration = SignedDuration::from_mins(2);
const GRACE_MAX: SignedDuration = SignedDuration::from_hours(2);

/// What a tick does with one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Nothing yet (or nothing ever: paused, finished, no next time).
    Wait,
    /// Run it now for the fire time `scheduled_for`; the time after is `next`.
    Run {
        scheduled_for: Timestamp,
        next: Option<Timestamp>,
    },
    /// `scheduled_for` was found too late to run; the schedule moves on.
    Missed {
        scheduled_for: Timestamp,
        grace: SignedDuration,
        next: Option<Timestamp>,
    },
    /// Its fire time came while the previous run is still going.
    StillRunning { next: Option<Timestamp> },
}

/// How late a fire time of `job` may be found and still run.
pub fn grace(job: &Job, fire: Timestamp, tz: &TimeZone) -> SignedDuration {
    if job.schedule.is_once() {
        return GRACE_MAX;
    }
    match job.schedule.next_after(fire, tz) {
        Some(following) => (following.duration_since(fire) / 2).clamp(GRACE_MIN, GRACE_MAX),
        None => GRACE_MAX,
    }
}

/// What a tick at `now` does with `job`.
pub fn decide(job: &Job, now: Timestamp, tz: &TimeZone) -> Due {
    let Some(fire) = job.next_run_at else {
        return Due::Wait;
    };
    if fire > now || !job.enabled {
        return Due::Wait;
    }
    let next = job.schedule.next_after(now, tz);
    match job.state {
        JobState::Paused | JobState::Completed => Due::Wait,
        JobState::Running => Due::StillRunning { next },
        JobState::Scheduled => {
            let grace = grace(job, fire, tz);
            if now.duration_since(fire) <= grace {
                Due::Run {
                    scheduled_for: fire,
                    next,
                }
            } else {
                Due::Missed {
                    scheduled_for: fire,
                    grace,
                    next,
                }
            }
        }
    }
}

/// Applies a tick's decision to the job (under the store's lock). Returns
/// whether the job is now claimed for a run by this process.
pub fn apply(job: &mut Job, due: &Due, now: Timestamp) -> bool {
    match *due {
        Due::Wait => false,
        Due::Run {
            scheduled_for,
            next,
        } => {
            job.state = JobState::Running;
            job.run_claim = Some(RunClaim {
                pid: std::process::id(),
                at: now,
                scheduled_for,
            });
            job.next_run_at = next;
            true
        }
        Due::Missed {
            scheduled_for,
            grace,
            next,
        } => {
            job.last_status = Some("missed".to_owned());
            job.last_error = Some(format!(
                "missed its run at {scheduled_for}: found {} later, past the grace of {}",
                round_minutes(now.duration_since(scheduled_for)),
                round_minutes(grace)
            ));
            job.next_run_at = next;
            if next.is_none() {
                finish(job);
            }
            false
        }
        Due::StillRunning { next } => {
            job.next_run_at = next;
            false
        }
    }
}

/// Records a finished run (under the store's lock): `started` is when it
/// began, `error` why it failed.
pub fn record_run(job: &mut Job, started: Timestamp, error: Option<String>) {
    job.run_claim = None;
    job.last_run_at = Some(started);
    job.repeat.completed = job.repeat.completed.saturating_add(1);
    job.last_status = Some(if error.is_some() { "error" } else { "ok" }.to_owned());
    job.last_error = error;
    if job.schedule.is_once() || job.repeats_exhausted() || job.next_run_at.is_none() {
        finish(job);
    } else if job.state == JobState::Running {
        job.state = JobState::Scheduled;
    }
}

/// A run claimed by a process that is gone, or older than `stale_after`:
/// released, so the job is scheduled again (the run counts as failed).
pub fn release_stale_claim(
    job: &mut Job,
    now: Timestamp,
    stale_after: SignedDuration,
    alive: impl Fn(u32) -> bool,
) -> bool {
    let Some(claim) = &job.run_claim else {
        return false;
    };
    let too_old = now.duration_since(claim.at) > stale_after;
    if !too_old && alive(claim.pid) {
        return false;
    }
    let started = claim.at;
    let why = if too_old {
        "the run did not finish in time"
    } else {
        "the scheduler running it stopped"
    };
    record_run(job, started, Some(format!("{why}; it was abandoned")));
    true
}

fn finish(job: &mut Job) {
    job.state = JobState::Completed;
    job.enabled = false;
    job.next_run_at = None;
}

fn round_minutes(duration: SignedDuration) -> String {
    let minutes = duration.as_secs() / 60;
    if minutes >= 120 {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::Schedule;
    use crate::job::Repeat;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn job(schedule: &str, next: &str) -> Job {
        let created = at("2026-03-01T00:00:00Z");
        let schedule = Schedule::parse(schedule, created, &TimeZone::UTC).unwrap();
        serde_json::from_value(serde_json::json!({
            "id": "0123456789ab",
            "name": "test",
            "prompt": "hello",
            "schedule": schedule,
            "state": "scheduled",
            "created_at": created,
            "next_run_at": at(next),
        }))
        .unwrap()
    }

    #[test]
    fn a_fire_time_found_within_half_the_gap_runs_once_and_the_schedule_moves_on() {
        let hourly = job("0 * * * *", "2026-03-01T10:00:00Z");
        assert_eq!(
            decide(&hourly, at("2026-03-01T09:59:00Z"), &TimeZone::UTC),
            Due::Wait
        );
        assert_eq!(
            decide(&hourly, at("2026-03-01T10:29:00Z"), &TimeZone::UTC),
            Due::Run {
                scheduled_for: at("2026-03-01T10:00:00Z"),
                next: Some(at("2026-03-01T11:00:00Z"))
            }
        );
        // Found 31 min late: past half the hour, missed; no catch-up burst
        // after a night's sleep either.
        let late = decide(&hourly, at("2026-03-01T10:31:00Z"), &TimeZone::UTC);
        assert!(
            matches!(late, Due::Missed { grace, .. } if grace == SignedDuration::from_mins(30))
        );
        let mut slept = hourly.clone();
        let due = decide(&slept, at("2026-03-01T18:10:00Z"), &TimeZone::UTC);
        assert!(!apply(&mut slept, &due, at("2026-03-01T18:10:00Z")));
        assert_eq!(slept.next_run_at, Some(at("2026-03-01T19:00:00Z")));
        assert_eq!(slept.last_status.as_deref(), Some("missed"));
        assert!(slept.last_error.unwrap().contains("found 8 h later"));
    }

    #[test]
    fn the_grace_window_is_clamped_and_two_hours_for_one_shots() {
        let minutely = job("* * * * *", "2026-03-01T10:00:00Z");
        assert_eq!(
            grace(&minutely, at("2026-03-01T10:00:00Z"), &TimeZone::UTC),
            SignedDuration::from_mins(2)
        );
        let daily = job("0 9 * * *", "2026-03-01T09:00:00Z");
        assert_eq!(
            grace(&daily, at("2026-03-01T09:00:00Z"), &TimeZone::UTC),
            SignedDuration::from_hours(2)
        );
        let once = job("30m", "2026-03-01T00:30:00Z");
        assert!(matches!(
            decide(&once, at("2026-03-01T02:29:00Z"), &TimeZone::UTC),
            Due::Run { next: None, .. }
        ));
        let mut missed = once.clone();
        let due = decide(&missed, at("2026-03-01T02:31:00Z"), &TimeZone::UTC);
        apply(&mut missed, &due, at("2026-03-01T02:31:00Z"));
        assert_eq!(missed.state, JobState::Completed);
        assert!(!missed.enabled);
    }

    #[test]
    fn a_claimed_run_is_not_run_again_and_its_next_time_is_skipped_while_it_runs() {
        let mut hourly = job("0 * * * *", "2026-03-01T10:00:00Z");
        let now = at("2026-03-01T10:00:05Z");
        let due = decide(&hourly, now, &TimeZone::UTC);
        assert!(apply(&mut hourly, &due, now));
        assert_eq!(hourly.state, JobState::Running);
        assert_eq!(decide(&hourly, now, &TimeZone::UTC), Due::Wait);
        let later = at("2026-03-01T11:00:10Z");
        let due = decide(&hourly, later, &TimeZone::UTC);
        assert_eq!(
            due,
            Due::StillRunning {
                next: Some(at("2026-03-01T12:00:00Z"))
            }
        );
        assert!(!apply(&mut hourly, &due, later));
        record_run(&mut hourly, now, None);
        assert_eq!(hourly.state, JobState::Scheduled);
        assert_eq!(hourly.next_run_at, Some(at("2026-03-01T12:00:00Z")));
        assert_eq!(hourly.repeat.completed, 1);
        assert_eq!(hourly.last_status.as_deref(), Some("ok"));
    }

    #[test]
    fn repeats_and_one_shots_finish_and_a_pause_during_a_run_holds() {
        let mut twice = job("every 30m", "2026-03-01T00:30:00Z");
        twice.repeat = Repeat {
            times: Some(2),
            completed: 1,
        };
        let now = at("2026-03-01T00:30:00Z");
        let due = decide(&twice, now, &TimeZone::UTC);
        assert!(apply(&mut twice, &due, now));
        record_run(&mut twice, now, Some("model unreachable".into()));
        assert_eq!(twice.state, JobState::Completed);
        assert_eq!(twice.last_status.as_deref(), Some("error"));
        assert_eq!(twice.last_error.as_deref(), Some("model unreachable"));

        let mut paused = job("every 30m", "2026-03-01T00:30:00Z");
        let due = decide(&paused, now, &TimeZone::UTC);
        assert!(apply(&mut paused, &due, now));
        paused.state = JobState::Paused;
        record_run(&mut paused, now, None);
        assert_eq!(paused.state, JobState::Paused);
    }

    #[test]
    fn a_claim_whose_process_is_gone_or_too_old_is_released() {
        let mut hourly = job("0 * * * *", "2026-03-01T10:00:00Z");
        let now = at("2026-03-01T10:00:00Z");
        let due = decide(&hourly, now, &TimeZone::UTC);
        apply(&mut hourly, &due, now);
        let limit = SignedDuration::from_mins(30);
        let soon = at("2026-03-01T10:10:00Z");
        assert!(!release_stale_claim(&mut hourly, soon, limit, |_| true));
        assert!(release_stale_claim(
            &mut hourly.clone(),
            soon,
            limit,
            |_| false
        ));
        assert!(release_stale_claim(
            &mut hourly,
            at("2026-03-01T10:31:00Z"),
            limit,
            |_| true
        ));
        assert_eq!(hourly.state, JobState::Scheduled);
        assert!(
            hourly
                .last_error
                .unwrap()
                .contains("did not finish in time")
        );
    }
}
