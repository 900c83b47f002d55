//! `talaria cron`: jobs are added, listed (with next run times in the
//! profile's time zone), shown, paused, resumed and removed; bad schedules,
//! unknown jobs, a bad time zone and a broken jobs file are refused with the
//! reason, and a Hermes jobs file is read as it is.

use crate::common::*;

fn json(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(output)).unwrap_or_else(|e| panic!("{e}: {}", stdout(output)))
}

#[test]
fn jobs_are_added_listed_paused_resumed_and_removed() {
    let home = Home::new();
    home.write_config("timezone: America/New_York\n");
    let empty = run(home.talaria(&["cron", "list"]));
    assert_code(&empty, 0);
    assert_contains(&stdout(&empty), "no scheduled jobs");

    let added = run(home.talaria(&[
        "cron",
        "add",
        "0 9 * * 1-5",
        "Summarise my inbox",
        "--name",
        "inbox",
    ]));
    assert_code(&added, 0);
    assert_contains(&stdout(&added), "(inbox): 0 9 * * 1-5, next run ");
    let added = run(home.talaria(&[
        "cron",
        "add",
        "every 2h",
        "check the build",
        "--repeat",
        "3",
    ]));
    assert_code(&added, 0);

    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    let jobs = listed.as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["name"], "inbox");
    // 09:00 on a weekday in New York: -05:00 or -04:00 by the season.
    let next = jobs[0]["next_run_at"].as_str().unwrap();
    assert!(
        next.ends_with("T09:00:00-05:00") || next.ends_with("T09:00:00-04:00"),
        "{next}"
    );
    assert_eq!(jobs[1]["name"], "check the build");
    assert_eq!(jobs[1]["repeat"]["times"], 3);

    let paused = run(home.talaria(&["cron", "pause", "inbox"]));
    assert_code(&paused, 0);
    let shown = stdout(&run(home.talaria(&["cron", "show", "inbox"])));
    assert_contains(&shown, "state:     paused");
    assert_contains(&shown, "prompt:    Summarise my inbox");
    assert_code(&run(home.talaria(&["cron", "resume", "inbox"])), 0);
    let resumed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(resumed[0]["state"], "scheduled");

    let id = jobs[1]["id"].as_str().unwrap();
    let removed = run(home.talaria(&["cron", "remove", &id[..6]]));
    assert_code(&removed, 0);
    assert_contains(&stdout(&removed), "removed job check the build");
    let left = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(left.as_array().unwrap().len(), 1);
}

#[test]
fn bad_input_is_refused_with_the_reason_and_nothing_changes() {
    let home = Home::new();
    let bad = run(home.talaria(&["cron", "add", "whenever", "x"]));
    assert_code(&bad, 2);
    assert_contains(&stderr(&bad), "a cron expression has 5 fields");
    let origin = run(home.talaria(&["cron", "add", "1h", "x", "--deliver", "origin"]));
    assert_code(&origin, 2);
    assert_contains(&stderr(&origin), "needs a chat to deliver to");
    let unknown = run(home.talaria(&["cron", "pause", "nope"]));
    assert_code(&unknown, 2);
    assert_contains(&stderr(&unknown), "no job 'nope'");
    assert!(!home.path().join("cron/jobs.json").exists());

    home.write_config("timezone: Mars/Olympus\n");
    let zone = run(home.talaria(&["cron", "list"]));
    assert_code(&zone, 2);
    assert_contains(&stderr(&zone), "'Mars/Olympus' is not a time zone");

    home.write_config("");
    std::fs::create_dir_all(home.path().join("cron")).unwrap();
    std::fs::write(home.path().join("cron/jobs.json"), "{\"jobs\": [").unwrap();
    let broken = run(home.talaria(&["cron", "add", "1h", "x"]));
    assert_code(&broken, 2);
    assert_contains(&stderr(&broken), "is not a valid jobs file");
    let kept = std::fs::read_to_string(home.path().join("cron/jobs.json")).unwrap();
    assert_eq!(kept, "{\"jobs\": [");
}

#[test]
fn a_hermes_jobs_file_is_listed_as_it_is() {
    let home = Home::new();
    home.write_config("timezone: UTC\n");
    std::fs::create_dir_all(home.path().join("cron")).unwrap();
    let hermes = serde_json::json!({"jobs": [{
        "id": "a1b2c3d4e5f6", "name": "standup", "prompt": "Post the standup notes",
        "skills": [], "skill": null, "model": null, "provider": null, "base_url": null,
        "schedule": {"kind": "interval", "minutes": 30, "display": "every 30m"},
        "schedule_display": "every 30m", "repeat": {"times": null, "completed": 12},
        "enabled": true, "state": "scheduled", "paused_at": null, "paused_reason": null,
        "created_at": "2026-01-01T00:00:00+00:00", "next_run_at": "2030-01-01T00:30:00+00:00",
        "last_run_at": "2030-01-01T00:00:00+00:00", "last_status": "ok", "last_error": null,
        "deliver": "origin", "origin": {"platform": "telegram", "chat_id": "42"}
    }], "updated_at": "2030-01-01T00:00:00+00:00"});
    std::fs::write(home.path().join("cron/jobs.json"), hermes.to_string()).unwrap();
    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(listed[0]["next_run_at"], "2030-01-01T00:30:00+00:00");
    assert_eq!(listed[0]["repeat"]["completed"], 12);
    assert_eq!(listed[0]["deliver"], "origin");
    let shown = stdout(&run(home.talaria(&["cron", "show", "standup"])));
    assert_contains(&shown, "runs:      12 of ∞");
    assert_contains(&shown, "last:      ok");
}

/// A jobs file with `jobs` (name, schedule as stored, next run) in Hermes's
/// layout, delivering locally.
fn write_jobs(home: &Home, jobs: &[(&str, serde_json::Value, &str)]) {
    let jobs: Vec<serde_json::Value> = jobs
        .iter()
        .enumerate()
        .map(|(n, (name, schedule, next))| {
            serde_json::json!({
                "id": format!("00000000000{n}"), "name": name,
                "prompt": format!("Report on {name}"), "schedule": schedule,
                "state": "scheduled", "created_at": "2026-01-01T00:00:00Z",
                "next_run_at": next, "deliver": "local"
            })
        })
        .collect();
    std::fs::create_dir_all(home.path().join("cron")).unwrap();
    std::fs::write(
        home.path().join("cron/jobs.json"),
        serde_json::json!({ "jobs": jobs }).to_string(),
    )
    .unwrap();
}

fn model_config(model: &talaria_testkit::ScriptedServer) -> String {
    format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         timezone: UTC\n",
        model.openai_base_url()
    )
}

#[test]
fn a_tick_runs_the_due_job_once_saves_its_answer_and_run_starts_one_now() {
    use talaria_testkit::{Script, ScriptedServer, Step};

    let home = Home::new();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("the build is green"),
        Step::text("standup posted"),
    ]))
    .unwrap();
    home.write_config(&model_config(&model));
    // Due 20 s ago: well within an hourly job's grace.
    let just_now = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(20);
    let every_hour =
        serde_json::json!({"kind": "cron", "expr": "0 * * * *", "display": "0 * * * *"});
    let daily = serde_json::json!({"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"});
    write_jobs(
        &home,
        &[
            ("build", every_hour, &just_now.to_string()),
            ("standup", daily, "2099-01-01T09:00:00Z"),
        ],
    );

    let ticked = run(home.talaria(&["cron", "tick"]));
    assert_code(&ticked, 0);
    assert_contains(&stdout(&ticked), "build: ran");
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "only the due job ran");
    assert_contains(&requests[0].system_prompt_raw(), "scheduled job");
    // The cron profile: nobody to ask, no scheduling or messaging on its own.
    let tools = requests[0].tools_raw();
    assert_contains(&tools, "\"terminal\"");
    for absent in ["\"clarify\"", "\"cronjob\"", "\"send_message\""] {
        assert!(!tools.contains(absent), "{absent} offered: {tools}");
    }
    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(listed[0]["last_status"], "ok");
    assert_eq!(listed[0]["state"], "scheduled");
    let output = std::fs::read_dir(home.path().join("cron/output/000000000000"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(
        std::fs::read_to_string(output).unwrap(),
        "the build is green"
    );

    let again = run(home.talaria(&["cron", "tick"]));
    assert_code(&again, 0);
    assert_contains(&stdout(&again), "no job is due");
    assert_eq!(model.requests().len(), 1);

    let now = run(home.talaria(&["cron", "run", "standup"]));
    assert_code(&now, 0);
    assert_contains(&stdout(&now), "standup: ran");
    assert_eq!(model.requests().len(), 2);
    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(
        listed[1]["next_run_at"], "2099-01-01T09:00:00+00:00",
        "its schedule stays"
    );
}
