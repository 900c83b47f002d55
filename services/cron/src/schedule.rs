//! When a job runs: once (after a duration, or at a timestamp), every
//! interval, or on a 5-field cron expression in the profile's time zone.
//!
//! The text forms are Hermes's (`30m`, `every 2h`, `0 9 * * 1-5`,
//! `2026-03-01T09:00`), and so is the stored form (`{"kind": "cron", "expr":
//! …, "display": …}` in `cron/jobs.json`), so imported jobs keep working.
//! Cron expressions are croner's (Vixie rules: day-of-month OR day-of-week
//! when both are restricted; `L`, `#`, `W`, month and day names); its DST
//! handling is the one this module promises: a time in a spring-forward gap
//! runs once at the first valid minute after it, a time repeated on a
//! fall-back night runs once.

use std::fmt;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Zoned};
use serde::{Deserialize, Serialize};

/// The shortest interval `every` takes.
const MIN_INTERVAL_MINUTES: i64 = 1;
/// The longest duration or interval: a year (a typo like `every 5000d` is
/// refused rather than silently never run).
const MAX_MINUTES: i64 = 366 * 24 * 60;

/// A job's schedule, as stored in `cron/jobs.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Schedule {
    /// Runs once at `run_at`.
    Once {
        run_at: Timestamp,
        /// What the user wrote (`30m`, `2026-03-01T09:00`).
        display: String,
    },
    /// Runs every `minutes`, counted from the previous run (the first one
    /// interval after the job is created).
    Interval { minutes: i64, display: String },
    /// Runs whenever the cron expression matches, in the profile's time zone.
    Cron { expr: String, display: String },
}

/// A schedule that could not be read, with what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(String);

impl ScheduleError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl Schedule {
    /// Reads a schedule as the user writes it. A duration (`30m`, `2h`, `1d`)
    /// is a one-shot that long after `now`; a timestamp without an offset is
    /// in `tz`, the profile's time zone.
    pub fn parse(text: &str, now: Timestamp, tz: &TimeZone) -> Result<Self, ScheduleError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ScheduleError::new(
                "the schedule is empty: use a duration (30m), 'every 2h', a cron expression \
                 ('0 9 * * *') or a timestamp (2026-03-01T09:00)",
            ));
        }
        let display = text.to_owned();
        let lower = text.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("every ") {
            let minutes = duration_minutes(rest.trim()).ok_or_else(|| {
                ScheduleError::new(format!(
                    "'{text}' is not an interval: write 'every' and a duration such as 30m, \
                     2h or 1d"
                ))
            })?;
            check_minutes(minutes, MIN_INTERVAL_MINUTES, text)?;
            return Ok(Self::Interval { minutes, display });
        }
        if let Some(minutes) = duration_minutes(&lower) {
            check_minutes(minutes, 1, text)?;
            let run_at = now
                .checked_add(SignedDuration::from_mins(minutes))
                .map_err(|e| ScheduleError::new(format!("'{text}' is too far away: {e}")))?;
            return Ok(Self::Once { run_at, display });
        }
        if looks_like_timestamp(text) {
            let run_at = parse_timestamp(text, tz)?;
            return Ok(Self::Once { run_at, display });
        }
        parse_cron(text)?;
        Ok(Self::Cron {
            expr: text.to_owned(),
            display,
        })
    }

    /// What the user wrote.
    pub fn display(&self) -> &str {
        match self {
            Self::Once { display, .. }
            | Self::Interval { display, .. }
            | Self::Cron { display, .. } => display,
        }
    }

    /// Whether the job runs once.
    pub fn is_once(&self) -> bool {
        matches!(self, Self::Once { .. })
    }

    /// The first time the schedule fires strictly after `after`, in `tz`;
    /// `None` when it never does again (a one-shot whose time has passed, an
    /// expression that matches no date). An interval counts from `after`.
    pub fn next_after(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        match self {
            Self::Once { run_at, .. } => (*run_at > after).then_some(*run_at),
            Self::Interval { minutes, .. } => {
                after.checked_add(SignedDuration::from_mins(*minutes)).ok()
            }
            Self::Cron { expr, .. } => {
                let cron = parse_cron(expr).ok()?;
                let start = after.to_zoned(tz.clone());
                cron.find_next_occurrence(&start, false)
                    .ok()
                    .map(|next: Zoned| next.timestamp())
            }
        }
    }

    /// Checks a stored schedule (one read from jobs.json, which a person or
    /// another program may have edited).
    pub fn validate(&self) -> Result<(), ScheduleError> {
        match self {
            Self::Once { .. } => Ok(()),
            Self::Interval { minutes, display } => {
                check_minutes(*minutes, MIN_INTERVAL_MINUTES, display)
            }
            Self::Cron { expr, .. } => parse_cron(expr).map(drop),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display())
    }
}

/// Minutes in a duration such as `30m`, `2 h`, `1day` (Hermes's units:
/// minutes, hours, days), or `None` when it is not one.
fn duration_minutes(text: &str) -> Option<i64> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let count: i64 = text[..digits].parse().ok()?;
    let unit = text[digits..].trim();
    let per_unit = match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => 1,
        "h" | "hr" | "hrs" | "hour" | "hours" => 60,
        "d" | "day" | "days" => 24 * 60,
        _ => return None,
    };
    count.checked_mul(per_unit)
}

fn check_minutes(minutes: i64, least: i64, text: &str) -> Result<(), ScheduleError> {
    if minutes < least {
        return Err(ScheduleError::new(format!(
            "'{text}' is too short: the least is {least} minute"
        )));
    }
    if minutes > MAX_MINUTES {
        return Err(ScheduleError::new(format!(
            "'{text}' is too long: the most is 366 days"
        )));
    }
    Ok(())
}

/// `2026-03-01T09:00…` or `2026-03-01 09:00…`.
fn looks_like_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 16
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && matches!(bytes[10], b'T' | b't' | b' ')
}

/// A timestamp with an offset (or `Z`) is that instant; one without is a
/// wall-clock time in `tz` (in a DST gap: the time after it; repeated: the
/// first).
fn parse_timestamp(text: &str, tz: &TimeZone) -> Result<Timestamp, ScheduleError> {
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let civil: DateTime = text.parse().map_err(|e| {
        ScheduleError::new(format!(
            "'{text}' is not a timestamp (write 2026-03-01T09:00, optionally with an offset \
             such as +01:00 or Z): {e}"
        ))
    })?;
    civil
        .to_zoned(tz.clone())
        .map(|zoned| zoned.timestamp())
        .map_err(|e| ScheduleError::new(format!("'{text}' is not a time in the time zone: {e}")))
}

/// A 5-field cron expression (or a nickname such as `@daily`): croner's
/// Vixie-compatible reading, without seconds or years.
fn parse_cron(text: &str) -> Result<Cron, ScheduleError> {
    let fields = text.split_whitespace().count();
    if !text.starts_with('@') && fields != 5 {
        return Err(ScheduleError::new(format!(
            "'{text}' is not a schedule: a cron expression has 5 fields (minute hour \
             day-of-month month day-of-week), this has {fields}; other forms are 30m, \
             'every 2h' and 2026-03-01T09:00"
        )));
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(text)
        .map_err(|e| ScheduleError::new(format!("'{text}' is not a valid cron expression: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn tz(name: &str) -> TimeZone {
        TimeZone::get(name).unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// The next fire times after `start`, as RFC 3339 in the zone.
    fn fires(schedule: &Schedule, start: &str, zone: &str, count: usize) -> Vec<String> {
        let zone = tz(zone);
        let mut after = at(start);
        let mut out = Vec::new();
        for _ in 0..count {
            let Some(next) = schedule.next_after(after, &zone) else {
                break;
            };
            out.push(next.to_zoned(zone.clone()).strftime("%FT%T%:z").to_string());
            after = next;
        }
        out
    }

    fn cron(expr: &str) -> Schedule {
        Schedule::parse(expr, at("2026-01-01T00:00:00Z"), &TimeZone::UTC).unwrap()
    }

    #[test]
    fn durations_are_one_shots_and_every_is_an_interval() {
        let now = at("2026-03-01T10:00:00Z");
        let once = Schedule::parse("30m", now, &TimeZone::UTC).unwrap();
        assert_eq!(
            once,
            Schedule::Once {
                run_at: at("2026-03-01T10:30:00Z"),
                display: "30m".into()
            }
        );
        assert_eq!(
            Schedule::parse("2 hours", now, &TimeZone::UTC).unwrap(),
            Schedule::Once {
                run_at: at("2026-03-01T12:00:00Z"),
                display: "2 hours".into()
            }
        );
        let every = Schedule::parse("Every 1d", now, &TimeZone::UTC).unwrap();
        assert_eq!(
            every,
            Schedule::Interval {
                minutes: 1440,
                display: "Every 1d".into()
            }
        );
        assert_eq!(
            every.next_after(now, &TimeZone::UTC),
            Some(at("2026-03-02T10:00:00Z"))
        );
        assert_eq!(
            once.next_after(at("2026-03-01T10:30:00Z"), &TimeZone::UTC),
            None
        );
    }

    #[test]
    fn a_timestamp_without_offset_is_in_the_profiles_time_zone() {
        let now = at("2026-01-01T00:00:00Z");
        let paris = tz("Europe/Paris");
        let local = Schedule::parse("2026-03-01T09:00", now, &paris).unwrap();
        assert_eq!(
            local.next_after(now, &paris),
            Some(at("2026-03-01T08:00:00Z"))
        );
        let exact = Schedule::parse("2026-03-01T09:00:00+05:00", now, &paris).unwrap();
        assert_eq!(
            exact.next_after(now, &paris),
            Some(at("2026-03-01T04:00:00Z"))
        );
    }

    #[test]
    fn bad_schedules_say_what_was_wrong() {
        let now = at("2026-01-01T00:00:00Z");
        let error = |text: &str| Schedule::parse(text, now, &TimeZone::UTC).unwrap_err().0;
        assert!(error("").contains("empty"));
        assert!(error("every fortnight").contains("not an interval"));
        assert!(error("every 0m").contains("too short"));
        assert!(error("every 400d").contains("too long"));
        assert!(
            error("0 9 * *").contains("5 fields"),
            "{}",
            error("0 9 * *")
        );
        assert!(error("0 0 9 * * *").contains("this has 6"));
        assert!(error("61 9 * * *").contains("not a valid cron expression"));
        assert!(error("2026-13-01T09:00").contains("not a timestamp"));
    }

    #[test]
    fn cron_follows_vixie_or_and_knows_last_and_nth() {
        // Day 13 or a Friday (either restricts: OR).
        assert_eq!(
            fires(&cron("0 12 13 * FRI"), "2026-02-01T00:00:00Z", "UTC", 4),
            [
                "2026-02-06T12:00:00+00:00",
                "2026-02-13T12:00:00+00:00",
                "2026-02-20T12:00:00+00:00",
                "2026-02-27T12:00:00+00:00"
            ]
        );
        // The last day of February in a leap year, then in the next.
        assert_eq!(
            fires(&cron("30 8 L 2 *"), "2028-01-01T00:00:00Z", "UTC", 2),
            ["2028-02-29T08:30:00+00:00", "2029-02-28T08:30:00+00:00"]
        );
        // The second Monday.
        assert_eq!(
            fires(&cron("0 9 * * MON#2"), "2026-03-01T00:00:00Z", "UTC", 2),
            ["2026-03-09T09:00:00+00:00", "2026-04-13T09:00:00+00:00"]
        );
    }

    #[test]
    fn a_time_in_the_spring_gap_runs_once_after_it_and_a_repeated_one_once() {
        // America/New_York: 2026-03-08 02:00 -> 03:00; 2026-11-01 02:00 -> 01:00.
        assert_eq!(
            fires(
                &cron("30 2 * * *"),
                "2026-03-07T12:00:00Z",
                "America/New_York",
                3
            ),
            [
                "2026-03-08T03:00:00-04:00",
                "2026-03-09T02:30:00-04:00",
                "2026-03-10T02:30:00-04:00"
            ]
        );
        assert_eq!(
            fires(
                &cron("30 1 * * *"),
                "2026-10-31T12:00:00Z",
                "America/New_York",
                3
            ),
            [
                "2026-11-01T01:30:00-04:00",
                "2026-11-02T01:30:00-05:00",
                "2026-11-03T01:30:00-05:00"
            ]
        );
    }

    #[test]
    fn the_stored_form_is_hermes_layout() {
        let stored = serde_json::to_value(cron("0 9 * * 1-5")).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"kind": "cron", "expr": "0 9 * * 1-5", "display": "0 9 * * 1-5"})
        );
        let hermes: Schedule = serde_json::from_value(serde_json::json!(
            {"kind": "interval", "minutes": 30, "display": "every 30m"}
        ))
        .unwrap();
        assert_eq!(
            hermes,
            Schedule::Interval {
                minutes: 30,
                display: "every 30m".into()
            }
        );
        let once: Schedule = serde_json::from_value(serde_json::json!(
            {"kind": "once", "run_at": "2026-02-03T14:00:00+00:00", "display": "2026-02-03T14:00"}
        ))
        .unwrap();
        assert!(once.is_once());
    }
}
