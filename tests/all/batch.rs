//! `talaria batch run`: 50 prompts on 4 workers, the process killed
//! half-way and the batch resumed — every id written exactly once, every
//! line a valid trajectory; Ctrl-C stops cleanly; bad input is refused
//! before anything runs.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;

fn config(model: &ScriptedServer) -> String {
    format!(
        "model:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key: sk-test\n\
         retry:\n  max_retries: 0\n",
        model.openai_base_url()
    )
}

/// `n` prompts; item 7 may use only the todo tools, item 9 has a system text.
fn write_prompts(path: &Path, n: usize) {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let mut line = serde_json::json!({"id": i, "prompt": format!("question {i}")});
            if i == 7 {
                line["toolsets"] = serde_json::json!(["todo"]);
            }
            if i == 9 {
                line["system"] = serde_json::json!("Answer in French.");
            }
            line.to_string()
        })
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The lines written so far (each must parse): the complete ones, ended by a newline — a
/// batch still running may be in the middle of writing the next.
fn lines(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("trajectories.jsonl"))
        .unwrap_or_default()
        .split_inclusive('\n')
        .filter_map(|line| line.strip_suffix('\n'))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn batch(home: &Home, args: &[&str]) -> std::process::Command {
    let mut all = vec!["batch", "run"];
    all.extend_from_slice(args);
    home.talaria(&all)
}

#[test]
fn fifty_prompts_killed_half_way_and_resumed_are_each_written_once() {
    let home = Home::new();
    let work = home.workdir();
    let prompts = work.path().join("prompts.jsonl");
    write_prompts(&prompts, 50);
    let out = work.path().join("out");
    let (prompts_arg, out_arg) = (prompts.display().to_string(), out.display().to_string());

    let slow = ScriptedServer::spawn(Script::new(
        (0..50).map(|i| Step::text(format!("answer {i}")).delayed(150)),
    ))
    .unwrap();
    home.write_config(&config(&slow));
    let mut first = batch(&home, &[&prompts_arg, "--out", &out_arg, "--workers", "4"])
        .spawn()
        .unwrap();
    wait_until("20 lines", Duration::from_secs(120), || {
        lines(&out).len() >= 20
    });
    first.kill().unwrap();
    let _ = first.wait();
    let before = lines(&out).len();
    assert!(before < 50, "killed half-way, not at the end ({before})");

    // The resumed run: the first answer it gets is a refusal.
    let model = ScriptedServer::spawn(Script::new(
        std::iter::once(Step::error(400, "this prompt is not allowed"))
            .chain((0..60).map(|i| Step::text(format!("answer again {i}")))),
    ))
    .unwrap();
    home.write_config(&config(&model));
    let refused = run(batch(&home, &[&prompts_arg, "--out", &out_arg]));
    assert_code(&refused, 2);
    assert_contains(&stderr(&refused), "pass --resume");
    let resumed = run(batch(
        &home,
        &[
            &prompts_arg,
            "--out",
            &out_arg,
            "--workers",
            "4",
            "--resume",
        ],
    ));
    assert_code(&resumed, 0);
    assert_contains(
        &stderr(&resumed),
        &format!("{} to run, {before} already written", 50 - before),
    );
    assert_contains(&stdout(&resumed), "49 done, 1 failed, 0 remaining");
    assert_eq!(
        model.requests().len(),
        50 - before,
        "only the missing items ran"
    );

    let all = lines(&out);
    let ids: Vec<&str> = all
        .iter()
        .map(|line| line["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 50);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 50, "each id once");
    let failed: Vec<&Value> = all.iter().filter(|l| l["completed"] == false).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["exit"], "error");
    assert_contains(failed[0]["error"].as_str().unwrap(), "not allowed");
    for line in &all {
        let turns = line["conversations"].as_array().unwrap();
        assert_eq!(turns[0]["from"], "system");
        let id = line["id"].as_str().unwrap();
        assert_eq!(
            turns[1],
            serde_json::json!({"from": "human", "value": format!("question {id}")})
        );
        if line["completed"] == true {
            assert_eq!(turns[2]["from"], "gpt");
            assert!(line["answer"].as_str().unwrap().starts_with("answer"));
        }
        assert!(line["session_id"].as_str().is_some());
    }
    let item = |id: &str| all.iter().find(|l| l["id"] == id).unwrap();
    let tools: Value = serde_json::from_str(item("7")["tools"].as_str().unwrap()).unwrap();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["todo"], "item 7's toolsets");
    assert_contains(
        item("9")["conversations"][0]["value"].as_str().unwrap(),
        "Answer in French.",
    );
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(
        (stats["done"].as_u64(), stats["failed"].as_u64()),
        (Some(49), Some(1))
    );
    assert_eq!(stats["items"], 50);
    assert_eq!(stats["remaining"], 0);
}

#[test]
fn ctrl_c_stops_the_batch_with_only_complete_lines() {
    let home = Home::new();
    let work = home.workdir();
    let prompts = work.path().join("prompts.jsonl");
    write_prompts(&prompts, 12);
    let out = work.path().join("out");
    let model = ScriptedServer::spawn(Script::new(
        (0..12).map(|i| Step::text(format!("answer {i}")).delayed(400)),
    ))
    .unwrap();
    home.write_config(&config(&model));
    let child = batch(
        &home,
        &[
            &prompts.display().to_string(),
            "--out",
            &out.display().to_string(),
            "--workers",
            "2",
        ],
    )
    .spawn()
    .unwrap();
    wait_until("2 lines", Duration::from_secs(60), || {
        lines(&out).len() >= 2
    });
    interrupt(&child);
    let stopped = wait(child);
    assert_eq!(stopped.status.code(), Some(130), "{}", stderr(&stopped));
    assert_contains(&stdout(&stopped), "run again with --resume");
    let written = lines(&out).len();
    assert!(written < 12, "{written}");
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["stopped"], "interrupted");
    assert_eq!(stats["remaining"].as_u64(), Some(12 - written as u64));
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let home = Home::new();
    let work = home.workdir();
    let prompts = work.path().join("prompts.jsonl");
    let out = work.path().join("out");
    let (prompts_arg, out_arg) = (prompts.display().to_string(), out.display().to_string());
    let model = ScriptedServer::spawn(Script::new([Step::text("never")])).unwrap();
    home.write_config(&config(&model));

    std::fs::write(
        &prompts,
        "{\"id\": 1, \"prompt\": \"ok\"}\n{\"id\": 1, \"prompt\": \"again\"}\nnope\n",
    )
    .unwrap();
    let bad = run(batch(&home, &[&prompts_arg, "--out", &out_arg]));
    assert_code(&bad, 2);
    let text = stderr(&bad);
    assert_contains(&text, "2 bad line(s)");
    assert_contains(&text, "line 2: id \"1\" is used by an earlier line");
    assert_contains(&text, "line 3:");
    assert!(!out.exists(), "nothing was written");

    let missing = run(batch(
        &home,
        &["/nonexistent/prompts.jsonl", "--out", &out_arg],
    ));
    assert_code(&missing, 2);
    assert_contains(&stderr(&missing), "cannot read /nonexistent/prompts.jsonl");

    std::fs::write(&prompts, "{\"id\": 1, \"prompt\": \"ok\"}\n").unwrap();
    home.write_config("");
    let unconfigured = run(batch(&home, &[&prompts_arg, "--out", &out_arg]));
    assert_code(&unconfigured, 2);
    assert_contains(&stderr(&unconfigured), "missing settings");
    let cost = run(batch(
        &home,
        &[&prompts_arg, "--out", &out_arg, "--max-cost=-1"],
    ));
    assert_code(&cost, 2);
    assert!(model.requests().is_empty());
}

#[test]
fn an_item_past_its_iteration_limit_is_written_with_its_summary() {
    use talaria_testkit::ToolCall;

    let home = Home::new();
    let work = home.workdir();
    let prompts = work.path().join("prompts.jsonl");
    std::fs::write(
        &prompts,
        "{\"id\": \"long\", \"prompt\": \"plan my week\"}\n",
    )
    .unwrap();
    let out = work.path().join("out");
    // One call, one warned call past the limit (still calling tools), then
    // the forced summary.
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("todo", r#"{"todos": []}"#)]),
        Step::tool_calls([ToolCall::new("todo", r#"{"todos": []}"#)]),
        Step::text("Summary: the week is half planned."),
    ]))
    .unwrap();
    home.write_config(&config(&model));
    let done = run(batch(
        &home,
        &[
            &prompts.display().to_string(),
            "--out",
            &out.display().to_string(),
            "--max-iterations",
            "1",
        ],
    ));
    assert_code(&done, 0);
    assert_contains(&stdout(&done), "0 done, 1 failed");
    let line = &lines(&out)[0];
    assert_eq!(line["exit"], "budget");
    assert_eq!(line["completed"], false);
    assert_contains(line["error"].as_str().unwrap(), "iteration budget");
    assert_eq!(line["answer"], "Summary: the week is half planned.");
    assert!(line["tool_calls"].as_u64().unwrap() >= 1);
    let turns: Vec<&str> = line["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["from"].as_str().unwrap())
        .collect();
    assert_eq!(turns[..4], ["system", "human", "gpt", "tool"]);
    // Nobody watches a batch: no questions.
    let tools = model.requests()[0].tools_raw();
    assert!(
        tools.contains("\"todo\"") && !tools.contains("\"clarify\""),
        "{tools}"
    );
}
