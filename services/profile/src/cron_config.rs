//! `timezone:` (top level) and `cron:` in config.yaml: the zone cron
//! expressions and timestamps without an offset are read in, and the limits
//! of scheduled runs.

use serde::{Deserialize, Serialize};

/// `cron` in config.yaml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CronConfig {
    /// The longest a scheduled run may take, in minutes.
    pub job_timeout_minutes: u32,
    /// The most scheduled runs at once.
    pub max_parallel_jobs: u32,
}

impl Default for CronConfig {
    fn default() -> Self {
        Self {
            job_timeout_minutes: 30,
            max_parallel_jobs: 2,
        }
    }
}

/// The time zone named by `timezone:` (an IANA name such as
/// `Europe/Berlin`), or the system's when unset.
pub fn time_zone(name: Option<&str>) -> Result<jiff::tz::TimeZone, String> {
    match name {
        None => Ok(jiff::tz::TimeZone::system()),
        Some(name) => jiff::tz::TimeZone::get(name).map_err(|_| {
            format!(
                "timezone '{name}' is not a time zone: use an IANA name such as \
                 Europe/Berlin, America/New_York or UTC"
            )
        }),
    }
}

/// Checks `timezone` and `cron` of the parsed `text` (the file at `path`).
pub(crate) fn check(
    timezone: Option<&str>,
    cron: &CronConfig,
    text: &str,
    path: &std::path::Path,
) -> Result<(), crate::ConfigError> {
    let invalid = |at, message| crate::config::invalid_at(path, at, message);
    // Only a named zone can be wrong; finding the system's reads the whole time-zone
    // database, which only cron needs.
    if let Some(name) = timezone
        && let Err(message) = time_zone(Some(name))
    {
        return Err(invalid(crate::config::locate(text, "timezone"), message));
    }
    for (key, value, least, most) in [
        ("job_timeout_minutes", cron.job_timeout_minutes, 1, 24 * 60),
        ("max_parallel_jobs", cron.max_parallel_jobs, 1, 64),
    ] {
        if !(least..=most).contains(&value) {
            return Err(invalid(
                crate::config::locate_after(text, "cron", key),
                format!("cron.{key} must be from {least} to {most}, not {value}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use crate::{ConfigFile, EnvLayer};

    fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::parse(text, Path::new("config.yaml"), &EnvLayer::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_time_zone_and_limits_are_read_and_checked() {
        let config = parse("timezone: Europe/Berlin\ncron:\n  max_parallel_jobs: 4\n").unwrap();
        assert_eq!(config.timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(config.cron.max_parallel_jobs, 4);
        assert_eq!(config.cron.job_timeout_minutes, 30);
        let error = parse("model:\n  name: x\ntimezone: Mars/Olympus\n").unwrap_err();
        assert!(error.starts_with("config.yaml:3:1: "), "{error}");
        assert!(
            error.contains("'Mars/Olympus' is not a time zone"),
            "{error}"
        );
        let error = parse("cron:\n  job_timeout_minutes: 0\n").unwrap_err();
        assert!(
            error.contains("cron.job_timeout_minutes must be from 1"),
            "{error}"
        );
        assert!(
            parse("cron:\n  every: 5\n")
                .unwrap_err()
                .contains("unknown field")
        );
    }
}
