//! Making a job from what a user (`talaria cron add`) or the model (the
//! `cronjob` tool) asked for, with the same checks for both; finding a job
//! by id or name.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::{Job, JobState, Origin, Repeat, Schedule, new_id};

/// The longest prompt a job takes.
pub const MAX_PROMPT_CHARS: usize = 20_000;
/// The longest name.
const MAX_NAME_CHARS: usize = 80;

/// What a new job is asked to be.
#[derive(Debug, Clone, Default)]
pub struct NewJob {
    /// Default: the start of the prompt.
    pub name: Option<String>,
    pub prompt: String,
    /// As the user writes it (`30m`, `every 2h`, `0 9 * * *`, a timestamp).
    pub schedule: String,
    /// Default: `origin` when there is one, else `local`.
    pub deliver: Option<String>,
    /// Runs in all (None: until removed).
    pub repeat: Option<u32>,
    pub skills: Vec<String>,
    pub model: Option<String>,
    /// The chat it was asked from.
    pub origin: Option<Origin>,
}

/// Where a run's answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The chat the job was created from.
    Origin,
    /// Only saved in the job's output.
    Local,
    /// Every platform's home channel (Hermes's `all`).
    HomeChannels,
    /// A chat on a platform: `PLATFORM[:chat[:thread]]` (no chat: the
    /// platform's home channel).
    Chat {
        platform: String,
        chat: Option<String>,
        thread: Option<String>,
    },
}

/// Reads a `deliver` value: targets separated by commas.
pub fn parse_deliver(text: &str) -> Result<Vec<Target>, String> {
    let mut targets = Vec::new();
    for part in text.split(',').map(str::trim) {
        let target = match part {
            "" => return Err(format!("deliver '{text}' has an empty target")),
            "origin" => Target::Origin,
            "local" => Target::Local,
            "all" => Target::HomeChannels,
            _ => {
                let mut fields = part.splitn(3, ':');
                let platform = fields.next().unwrap_or_default();
                if !platform
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                {
                    return Err(format!(
                        "deliver target '{part}' is not origin, local, all or \
                         PLATFORM[:chat[:thread]] (a platform name is lowercase letters, \
                         digits, '-' and '_')"
                    ));
                }
                let field = |value: Option<&str>| {
                    value
                        .map(str::trim)
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned)
                };
                Target::Chat {
                    platform: platform.to_owned(),
                    chat: field(fields.next()),
                    thread: field(fields.next()),
                }
            }
        };
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    Ok(targets)
}

/// A new job from `new`, checked against the jobs there are (names are
/// unique). `now` and `tz` read the schedule.
pub fn create(new: NewJob, existing: &[Job], now: Timestamp, tz: &TimeZone) -> Result<Job, String> {
    let prompt = checked_prompt(&new.prompt)?;
    let schedule = Schedule::parse(&new.schedule, now, tz).map_err(|e| e.to_string())?;
    let name = match new.name.as_deref() {
        Some(name) => name.to_owned(),
        None => default_name(&prompt),
    };
    let name = checked_name(&name, existing)?;
    let deliver = match new.deliver {
        Some(deliver) => deliver,
        None if new.origin.is_some() => "origin".to_owned(),
        None => "local".to_owned(),
    };
    check_deliver(&deliver, new.origin.as_ref())?;
    if new.repeat == Some(0) {
        return Err("repeat must be at least 1 (leave it out to repeat until removed)".to_owned());
    }
    check_skills(&new.skills)?;
    let next_run_at = first_run(&schedule, now, tz)?;
    let job = serde_json::json!({
        "id": new_id().map_err(|e| e.to_string())?,
        "name": name,
        "prompt": prompt,
        "skills": new.skills,
        "skill": new.skills.first(),
        "model": new.model,
        "schedule_display": schedule.display(),
        "schedule": schedule,
        "repeat": Repeat { times: new.repeat, completed: 0 },
        "enabled": true,
        "state": JobState::Scheduled,
        "created_at": now,
        "next_run_at": next_run_at,
        "deliver": deliver,
        "origin": new.origin,
    });
    serde_json::from_value(job).map_err(|e| format!("cannot make the job: {e}"))
}

/// The prompt, trimmed, if a job may run it.
pub(crate) fn checked_prompt(prompt: &str) -> Result<String, String> {
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err("the prompt is empty: say what the job should do".to_owned());
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(format!(
            "the prompt is too long: at most {MAX_PROMPT_CHARS} characters"
        ));
    }
    Ok(prompt.to_owned())
}

/// The name, trimmed, if it is one line and no job of `others` has it.
pub(crate) fn checked_name<'a>(
    name: &str,
    others: impl IntoIterator<Item = &'a Job>,
) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("the name is empty".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(format!(
            "the name must be one line of at most {MAX_NAME_CHARS} characters"
        ));
    }
    if others.into_iter().any(|job| job.name == name) {
        return Err(format!(
            "there is already a job named '{name}': choose another name or update that one"
        ));
    }
    Ok(name.to_owned())
}

/// Whether `deliver` can be delivered for a job from `origin`.
pub(crate) fn check_deliver(deliver: &str, origin: Option<&Origin>) -> Result<(), String> {
    let targets = parse_deliver(deliver)?;
    if targets.contains(&Target::Origin) && origin.is_none() {
        return Err(
            "deliver 'origin' needs a chat to deliver to, and this job was not created from \
             one: use local or PLATFORM[:chat]"
                .to_owned(),
        );
    }
    Ok(())
}

pub(crate) fn check_skills(skills: &[String]) -> Result<(), String> {
    for skill in skills {
        if skill.trim().is_empty() || skill.contains(['/', '\\']) || skill.starts_with('.') {
            return Err(format!("'{skill}' is not a skill name"));
        }
    }
    Ok(())
}

/// The schedule's first fire time after `now`, if it has one.
pub(crate) fn first_run(
    schedule: &Schedule,
    now: Timestamp,
    tz: &TimeZone,
) -> Result<Timestamp, String> {
    schedule.next_after(now, tz).ok_or_else(|| {
        format!(
            "the schedule '{}' never fires after now ({now})",
            schedule.display()
        )
    })
}

/// The first words of the prompt, as a name.
fn default_name(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default();
    let mut name: String = line.chars().take(40).collect();
    if line.chars().count() > 40 {
        name = name.trim_end().to_owned() + "…";
    }
    name
}

/// The index of the job `key` names: its id, its name, or a prefix of one
/// id only.
pub fn find(jobs: &[Job], key: &str) -> Result<usize, String> {
    let key = key.trim();
    if let Some(at) = jobs.iter().position(|job| job.id == key || job.name == key) {
        return Ok(at);
    }
    let matches: Vec<usize> = jobs
        .iter()
        .enumerate()
        .filter(|(_, job)| key.len() >= 4 && job.id.starts_with(key))
        .map(|(at, _)| at)
        .collect();
    match matches.as_slice() {
        [at] => Ok(*at),
        [] => Err(format!("no job '{key}' (talaria cron list shows them)")),
        _ => Err(format!(
            "'{key}' is the start of {} job ids: give more of it",
            matches.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn new(schedule: &str, prompt: &str) -> NewJob {
        NewJob {
            prompt: prompt.into(),
            schedule: schedule.into(),
            ..NewJob::default()
        }
    }

    fn now() -> Timestamp {
        "2026-03-01T08:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_job_is_made_with_hermes_defaults_and_its_next_run() {
        let job = create(
            new("0 9 * * *", "Summarise my inbox"),
            &[],
            now(),
            &TimeZone::UTC,
        )
        .unwrap();
        assert_eq!(job.name, "Summarise my inbox");
        assert_eq!(job.deliver, "local");
        assert_eq!(job.schedule_display, "0 9 * * *");
        assert_eq!(
            job.next_run_at,
            Some("2026-03-01T09:00:00Z".parse().unwrap())
        );
        assert_eq!(job.state, JobState::Scheduled);
        assert_eq!(job.id.len(), 12);
        let from_chat = create(
            NewJob {
                origin: Some(Origin {
                    platform: "irc".into(),
                    chat_id: "#team".into(),
                    thread_id: None,
                    chat_name: None,
                }),
                ..new("every 2h", "check the build")
            },
            std::slice::from_ref(&job),
            now(),
            &TimeZone::UTC,
        )
        .unwrap();
        assert_eq!(from_chat.deliver, "origin");
    }

    #[test]
    fn bad_requests_are_refused_with_the_reason() {
        let error = |job: NewJob| create(job, &[], now(), &TimeZone::UTC).unwrap_err();
        assert!(error(new("0 9 * * *", "  ")).contains("prompt is empty"));
        assert!(error(new("whenever", "x")).contains("5 fields"));
        assert!(error(new("2020-01-01T00:00", "x")).contains("never fires"));
        let origin = NewJob {
            deliver: Some("origin".into()),
            ..new("1h", "x")
        };
        assert!(error(origin).contains("needs a chat"));
        let repeat = NewJob {
            repeat: Some(0),
            ..new("1h", "x")
        };
        assert!(error(repeat).contains("at least 1"));
        let skill = NewJob {
            skills: vec!["../etc".into()],
            ..new("1h", "x")
        };
        assert!(error(skill).contains("not a skill name"));
        let first = create(new("1h", "x"), &[], now(), &TimeZone::UTC).unwrap();
        let twice = create(new("2h", "x"), &[first], now(), &TimeZone::UTC).unwrap_err();
        assert!(twice.contains("already a job named 'x'"));
    }

    #[test]
    fn deliver_targets_combine_and_bad_ones_are_named() {
        assert_eq!(
            parse_deliver("origin, telegram:42:7,local,irc,all").unwrap(),
            [
                Target::Origin,
                Target::Chat {
                    platform: "telegram".into(),
                    chat: Some("42".into()),
                    thread: Some("7".into())
                },
                Target::Local,
                Target::Chat {
                    platform: "irc".into(),
                    chat: None,
                    thread: None
                },
                Target::HomeChannels,
            ]
        );
        assert!(
            parse_deliver("local,,irc")
                .unwrap_err()
                .contains("empty target")
        );
        assert!(
            parse_deliver("Tele gram")
                .unwrap_err()
                .contains("not origin, local")
        );
    }

    #[test]
    fn jobs_are_found_by_id_name_or_a_unique_id_prefix() {
        let a = create(new("1h", "alpha"), &[], now(), &TimeZone::UTC).unwrap();
        let b = create(
            new("1h", "beta"),
            std::slice::from_ref(&a),
            now(),
            &TimeZone::UTC,
        )
        .unwrap();
        let jobs = [a.clone(), b];
        assert_eq!(find(&jobs, "beta"), Ok(1));
        assert_eq!(find(&jobs, &a.id), Ok(0));
        assert_eq!(find(&jobs, &a.id[..6]), Ok(0));
        assert!(find(&jobs, "gamma").unwrap_err().contains("no job 'gamma'"));
    }
}
