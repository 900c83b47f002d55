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

#[test]
fn a_job_the_model_schedules_runs_on_the_next_tick_and_its_answer_is_saved() {
    use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

    let home = Home::new();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "cronjob",
            r#"{"action": "create", "schedule": "every 1h", "name": "weather",
                "prompt": "Report the weather in Lisbon", "deliver": "local"}"#,
        )]),
        Step::tool_calls([ToolCall::new(
            "cronjob",
            r#"{"action": "run", "job_id": "weather"}"#,
        )]),
        Step::text("Scheduled: the weather, hourly, starting now."),
        Step::text("Sunny, 21 °C"),
    ]))
    .unwrap();
    home.write_config(&model_config(&model));
    // Yolo mode: nobody is at a terminal to approve the new job.
    let asked = run(home.talaria(&["-q", "report the weather every hour", "--yolo"]));
    assert_code(&asked, 0);
    assert_contains(&model.requests()[0].tools_raw(), "\"cronjob\"");
    let created = &tool_results(&model, 1)[0];
    assert_contains(created, "\"created\":true");
    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(listed[0]["name"], "weather");
    assert_eq!(listed[0]["schedule"], "every 1h");

    let ticked = run(home.talaria(&["cron", "tick"]));
    assert_code(&ticked, 0);
    assert_contains(&stdout(&ticked), "weather: ran");
    assert_contains(
        &model.requests()[3].messages().last().unwrap().text,
        "Report the weather in Lisbon",
    );
    let id = listed[0]["id"].as_str().unwrap();
    let outputs: Vec<_> = std::fs::read_dir(home.path().join("cron/output").join(id))
        .unwrap()
        .collect();
    assert_eq!(outputs.len(), 1);
    let saved = std::fs::read_to_string(outputs[0].as_ref().unwrap().path()).unwrap();
    assert_eq!(saved, "Sunny, 21 °C");
    // Run once: the schedule goes on an hour later.
    let after = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(after[0]["last_status"], "ok");
    assert_contains(
        &stdout(&run(home.talaria(&["cron", "tick"]))),
        "no job is due",
    );
}

#[test]
fn where_nobody_can_approve_the_model_cannot_schedule_anything() {
    use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};

    let home = Home::new();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "cronjob",
            r#"{"action": "create", "schedule": "every 1h", "prompt": "x"}"#,
        )]),
        Step::text("could not"),
    ]))
    .unwrap();
    home.write_config(&format!(
        "{}approvals:\n  mode: deny\n",
        model_config(&model)
    ));
    let asked = run(home.talaria(&["-q", "schedule x hourly"]));
    assert_code(&asked, 0);
    let tools = model.requests()[0].tools_raw();
    assert!(!tools.contains("\"cronjob\""), "{tools}");
    assert_contains(&tool_results(&model, 1)[0], "Unknown tool 'cronjob'");
    assert!(!home.path().join("cron/jobs.json").exists());
}

#[test]
fn hermes_jobs_and_their_outputs_are_imported() {
    let home = Home::new();
    home.write_config("timezone: UTC\n");
    let hermes = home.workdir();
    let root = hermes.path();
    std::fs::write(root.join("config.yaml"), "model:\n  default: gpt-4.1\n").unwrap();
    std::fs::create_dir_all(root.join("cron/output/a1b2c3d4e5f6")).unwrap();
    let jobs = serde_json::json!({"jobs": [{
        "id": "a1b2c3d4e5f6", "name": "standup", "prompt": "Post the standup notes",
        "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "display": "0 9 * * 1-5"},
        "schedule_display": "0 9 * * 1-5", "repeat": {"times": null, "completed": 4},
        "enabled": true, "state": "scheduled", "created_at": "2026-01-01T00:00:00+00:00",
        "next_run_at": "2099-01-01T09:00:00+00:00", "deliver": "origin",
        "origin": {"platform": "telegram", "chat_id": "42"}
    }]});
    std::fs::write(root.join("cron/jobs.json"), jobs.to_string()).unwrap();
    std::fs::write(
        root.join("cron/output/a1b2c3d4e5f6/2026-11-30_09-00-00.md"),
        "notes posted",
    )
    .unwrap();
    let from = root.display().to_string();
    let imported = run(home.talaria(&["import", "hermes", "--from", &from]));
    assert_code(&imported, 0);
    assert_contains(&stdout(&imported), "+ cron job standup (a1b2c3d4e5f6)");
    let listed = json(&run(home.talaria(&["cron", "list", "--json"])));
    assert_eq!(listed[0]["name"], "standup");
    assert_eq!(listed[0]["repeat"]["completed"], 4);
    let shown = stdout(&run(home.talaria(&["cron", "show", "standup"])));
    assert_contains(&shown, "output:    1 run(s) saved");
    let again = run(home.talaria(&["import", "hermes", "--from", &from]));
    assert_contains(
        &stdout(&again),
        "= cron job standup (a1b2c3d4e5f6): exists; not imported",
    );
}
