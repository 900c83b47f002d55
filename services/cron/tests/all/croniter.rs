//! Differential test of cron schedules against croniter 7.0.0 (Hermes's own
//! cron library, installed by scripts/install-cron-peers): a corpus of
//! expressions × start times × time zones — leap days, `L`, `#`, names,
//! Vixie's day-of-month OR day-of-week, DST gaps and overlaps, zones with
//! 30- and 45-minute offsets — must give the same next fire times, except
//! the few cases listed in `EXPECTED_DIFFERENCES` with their reason.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use talaria_cron::Schedule;

/// Each expression as Talaria takes it, and as croniter spells it when that
/// differs (croniter writes the last Friday `L5` and refuses `5L`, `5#L`).
const EXPRESSIONS: &[(&str, Option<&str>)] = &[
    ("0 9 * * *", None),
    ("*/15 * * * *", None),
    ("0 */6 * * *", None),
    ("30 2 * * *", None),
    ("30 1 * * *", None),
    ("0 2 * * *", None),
    ("45 23 * * SUN", None),
    ("0 12 13 * FRI", None),
    ("0 0 L * *", None),
    ("30 8 L 2 *", None),
    ("0 0 29 2 *", None),
    ("0 9 * * MON#2", None),
    ("0 9 * * 1#1", None),
    ("0 18 * * 5#L", Some("0 18 * * L5")),
    ("15 10 * JAN,JUL MON-FRI", None),
    ("0 0 1 */3 *", None),
    ("5 4 * * 0", None),
    ("0 22 * * 1-5", None),
    ("59 23 31 12 *", None),
    ("0 0 1,15 * 3", None),
];

const STARTS: &[&str] = &[
    "2026-01-01T00:00:00Z",
    "2026-03-07T12:00:00Z",
    "2026-03-28T12:00:00Z",
    // Lord Howe and Chatham fall back on 5 April, spring forward on 4 October.
    "2026-04-03T12:00:00Z",
    "2026-10-02T12:00:00Z",
    "2026-10-24T12:00:00Z",
    "2026-10-31T12:00:00Z",
    "2028-02-27T23:30:00Z",
    "2026-12-31T23:59:00Z",
];

const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/Sao_Paulo",
];

/// Fire times looked at per case.
const FIRES: usize = 6;

/// Where croniter and Talaria disagree on purpose: (expression, zone, why).
/// A fixed time that a fall-back night repeats runs once in Talaria (the
/// issue's rule: "on fall-back it runs once"); croniter runs it on both
/// passes of the repeated hour.
const EXPECTED_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "30 1 * * *",
        "America/New_York",
        "01:30 is repeated on the fall-back night: Talaria runs once, croniter twice",
    ),
    (
        "30 1 * * *",
        "Australia/Lord_Howe",
        "Lord Howe's DST is 30 min: 01:30 is repeated on its fall-back night",
    ),
    (
        "0 2 * * *",
        "Europe/Berlin",
        "02:00 is repeated on the fall-back night: Talaria runs once, croniter twice",
    ),
    (
        "30 2 * * *",
        "Europe/Berlin",
        "02:30 is repeated on the fall-back night: Talaria runs once, croniter twice",
    ),
];

fn peers() -> Option<PathBuf> {
    let dir = std::env::var_os("TALARIA_CRON_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/peers/cron")
        });
    let python = dir.join("py/bin/python");
    if python.is_file() {
        return Some(python);
    }
    let reason = format!(
        "croniter is not installed in {} (run scripts/install-cron-peers)",
        dir.display()
    );
    assert!(
        std::env::var_os("TALARIA_REQUIRE_PEERS").is_none(),
        "{reason}; TALARIA_REQUIRE_PEERS is set"
    );
    eprintln!("skipped: {reason}");
    None
}

/// croniter's answers for `cases`, one per case.
fn oracle(python: &PathBuf, cases: &[Value]) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/croniter_oracle.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let input = serde_json::to_vec(cases).expect("cases are JSON");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&input)
        .expect("the cases are written");
    let output = child.wait_with_output().expect("the oracle finishes");
    assert!(
        output.status.success(),
        "the oracle failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the oracle answers JSON")
}

/// Talaria's next fire times, as the oracle writes them.
fn talaria(expr: &str, start: Timestamp, zone: &str) -> Vec<String> {
    let tz = TimeZone::get(zone).expect("the zone exists");
    let schedule = Schedule::parse(expr, start, &tz).expect("Talaria takes the expression");
    let mut after = start;
    let mut out = Vec::new();
    for _ in 0..FIRES {
        let Some(next) = schedule.next_after(after, &tz) else {
            break;
        };
        out.push(next.to_zoned(tz.clone()).strftime("%FT%T%:z").to_string());
        after = next;
    }
    out
}

#[test]
fn cron_schedules_fire_when_croniter_says_but_for_the_listed_differences() {
    let Some(python) = peers() else {
        return;
    };
    let mut cases = Vec::new();
    let mut keys = Vec::new();
    for &(expr, croniter_expr) in EXPRESSIONS {
        for &start in STARTS {
            for &zone in ZONES {
                cases.push(json!({
                    "expr": croniter_expr.unwrap_or(expr),
                    "start": start,
                    "tz": zone,
                    "count": FIRES,
                }));
                keys.push((expr, start, zone));
            }
        }
    }
    let answers = oracle(&python, &cases);
    assert_eq!(answers.len(), keys.len());
    let mut same = 0;
    let mut expected = Vec::new();
    let mut unexpected = Vec::new();
    for (&(expr, start, zone), answer) in keys.iter().zip(&answers) {
        let theirs: Vec<String> = serde_json::from_value(answer.clone())
            .unwrap_or_else(|_| panic!("croniter refused {expr:?}: {answer}"));
        let ours = talaria(expr, start.parse().expect("a timestamp"), zone);
        if ours == theirs {
            same += 1;
            continue;
        }
        let case =
            format!("{expr:?} from {start} in {zone}:\n  talaria  {ours:?}\n  croniter {theirs:?}");
        match EXPECTED_DIFFERENCES
            .iter()
            .find(|(e, z, _)| *e == expr && *z == zone)
        {
            Some((_, _, why)) => {
                // An expected difference is only ever one extra croniter run
                // inside a repeated hour: without it, the two agree.
                let shared: Vec<&String> = theirs.iter().filter(|t| ours.contains(t)).collect();
                assert!(
                    theirs.len() == shared.len() + 1
                        && ours.iter().take(shared.len()).eq(shared.iter().copied()),
                    "{case}\n  expected only: {why}"
                );
                expected.push(case);
            }
            None => unexpected.push(case),
        }
    }
    eprintln!(
        "croniter: {} cases ({} fire times each): {same} the same, {} expected differences",
        keys.len(),
        FIRES,
        expected.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} cases differ from croniter:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    // Each listed difference still shows up (the list stays honest).
    for (expr, zone, why) in EXPECTED_DIFFERENCES {
        assert!(
            expected
                .iter()
                .any(|case| case.starts_with(&format!("{expr:?}")) && case.contains(zone)),
            "no case shows the expected difference {expr:?} in {zone} ({why})"
        );
    }
}
