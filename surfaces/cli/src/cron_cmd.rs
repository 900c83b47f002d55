//! `talaria cron add|list|show|pause|resume|remove|run|tick`: the profile's
//! scheduled jobs (`cron/jobs.json`, Hermes's layout). Times are shown in the profile's
//! time zone (`timezone:` in config.yaml, else the system's).

use std::io::Write;
use std::sync::Arc;

use clap::Subcommand;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use talaria_cron::{Job, JobState, JobStore, NewJob};
use talaria_gateway::AgentRunner;
use talaria_gateway::cron::{self, CronDelivery, CronLimits, CronRunner};
use talaria_profile::{Overrides, ProfileHome};
use tokio_util::sync::CancellationToken;

use crate::exit::{Status, usage_error};

/// `talaria cron …`.
#[derive(Debug, Subcommand)]
pub enum CronCommand {
    /// Schedule a prompt: SCHEDULE is a duration for one run (30m, 2h, 1d),
    /// `every 30m`, a 5-field cron expression ('0 9 * * 1-5') or a timestamp
    /// (2026-03-01T09:00, in the profile's time zone unless it has an offset).
    Add {
        schedule: String,
        /// What the agent is asked on each run.
        prompt: String,
        /// A name to refer to it by (default: the start of the prompt).
        #[arg(long)]
        name: Option<String>,
        /// Where answers go: local (only saved, the default here),
        /// PLATFORM[:chat[:thread]], comma-combined.
        #[arg(long)]
        deliver: Option<String>,
        /// Run this many times in all (default: until removed).
        #[arg(long, value_name = "N")]
        repeat: Option<u32>,
        /// A skill the run loads first (repeatable).
        #[arg(long = "skill", value_name = "NAME")]
        skills: Vec<String>,
        /// The model of its runs (default: the profile's).
        #[arg(long)]
        model: Option<String>,
    },
    /// The jobs, with their next run times (--json: RFC 3339 with offset).
    List {
        #[arg(long)]
        json: bool,
    },
    /// One job (by id, name or id prefix), with its recent runs.
    Show { job: String },
    /// Stop running a job until it is resumed.
    Pause { job: String },
    /// Run a paused job again from its next fire time.
    Resume { job: String },
    /// Delete a job and its saved output.
    Remove { job: String },
    /// Run one job now, whatever its schedule (its next fire time stays).
    Run { job: String },
    /// Run the jobs that are due (for a system timer when no gateway runs;
    /// `talaria gateway run` ticks by itself). Answers for chats go out
    /// through the platforms' adapters, each opened only to send.
    Tick,
}

/// Runs a `cron` subcommand.
pub async fn run(command: CronCommand, home: &ProfileHome) -> Status {
    let (tz, limits) = match cron::settings(home) {
        Ok(found) => found,
        Err(message) => return usage_error(&message),
    };
    let store = JobStore::new(home.cron_dir());
    let now = talaria_cron::now();
    let outcome = match command {
        CronCommand::Add {
            schedule,
            prompt,
            name,
            deliver,
            repeat,
            skills,
            model,
        } => {
            let new = NewJob {
                name,
                prompt,
                schedule,
                deliver,
                repeat,
                skills,
                model,
                origin: None,
            };
            add(&store, new, now, &tz)
        }
        CronCommand::List { json } => list(&store, json, &tz),
        CronCommand::Show { job } => show(&store, &job, &tz),
        CronCommand::Pause { job } => change(&store, &job, |job| {
            Ok(
                match talaria_cron::pause(job, now, "paused with talaria cron pause")? {
                    true => format!("paused job {}", job.name),
                    false => format!("job {} is already paused", job.name),
                },
            )
        }),
        CronCommand::Resume { job } => change(&store, &job, |job| {
            talaria_cron::resume(job, now, &tz)?;
            Ok(format!(
                "resumed job {}, next run {}",
                job.name,
                when(job.next_run_at, &tz)
            ))
        }),
        CronCommand::Remove { job } => remove(&store, &job),
        CronCommand::Run { job } => return run_now(&store, &job, home, limits).await,
        CronCommand::Tick => return tick(&store, &tz, home, limits).await,
    };
    match outcome {
        Ok(()) => Status::Answered,
        Err(message) => usage_error(&message),
    }
}

/// The runner of jobs (agents built from the profile, working in the
/// current directory) and where their answers go without a gateway.
fn runner(home: &ProfileHome) -> Result<(Arc<dyn CronRunner>, CronDelivery), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let delivery = CronDelivery::send_only(home, cwd.clone())?;
    let runner = AgentRunner::new(home.clone(), Overrides::default(), cwd);
    Ok((Arc::new(runner), delivery))
}

async fn run_now(store: &JobStore, key: &str, home: &ProfileHome, limits: CronLimits) -> Status {
    let (runner, delivery) = match runner(home) {
        Ok(found) => found,
        Err(message) => return usage_error(&message),
    };
    let claimed = match store.claim_now(key, Timestamp::now()) {
        Ok(Ok(claimed)) => claimed,
        Ok(Err(message)) => return usage_error(&message),
        Err(error) => return usage_error(&error.to_string()),
    };
    let summary = cron::run_claimed(
        store,
        &claimed,
        runner.as_ref(),
        &delivery,
        limits,
        &CancellationToken::new(),
    )
    .await;
    report(&summary)
}

async fn tick(store: &JobStore, tz: &TimeZone, home: &ProfileHome, limits: CronLimits) -> Status {
    let (runner, delivery) = match runner(home) {
        Ok(found) => found,
        Err(message) => return usage_error(&message),
    };
    let result = cron::tick(
        store,
        tz,
        runner,
        &delivery,
        limits,
        &CancellationToken::new(),
    )
    .await;
    let (ticked, runs) = match result {
        Ok(Some(done)) => done,
        Ok(None) => {
            println!("another scheduler is ticking; nothing done");
            return Status::Answered;
        }
        Err(message) => return usage_error(&message),
    };
    for (name, at) in &ticked.missed {
        println!("{name}: missed its run at {}", when(Some(*at), tz));
    }
    if runs.is_empty() {
        println!("no job is due");
        return Status::Answered;
    }
    runs.iter()
        .map(report)
        .fold(Status::Answered, |worst, status| {
            if status == Status::Answered {
                worst
            } else {
                status
            }
        })
}

/// Prints what became of a run; failed when it did.
fn report(run: &cron::RunSummary) -> Status {
    match &run.error {
        Some(error) => println!("{}: failed: {error}", run.job),
        None => println!("{}: ran", run.job),
    }
    for target in &run.delivered {
        println!("  delivered to {target}");
    }
    for (target, why) in &run.undelivered {
        println!("  not delivered to {target}: {why}");
    }
    if run.error.is_some() {
        Status::Failed
    } else {
        Status::Answered
    }
}

fn add(store: &JobStore, new: NewJob, now: Timestamp, tz: &TimeZone) -> Result<(), String> {
    let job = store
        .update(|jobs| {
            let job = talaria_cron::create(new, jobs, now, tz)?;
            jobs.push(job.clone());
            Ok::<Job, String>(job)
        })
        .map_err(|e| e.to_string())??;
    println!(
        "added job {} ({}): {}, next run {}",
        job.id,
        job.name,
        job.schedule_display,
        when(job.next_run_at, tz)
    );
    Ok(())
}

fn list(store: &JobStore, json: bool, tz: &TimeZone) -> Result<(), String> {
    let jobs = store.load().map_err(|e| e.to_string())?;
    if json {
        let rows: Vec<serde_json::Value> = jobs
            .iter()
            .map(|job| {
                serde_json::json!({
                    "id": job.id,
                    "name": job.name,
                    "schedule": job.schedule_display,
                    "state": job.state,
                    "enabled": job.enabled,
                    "next_run_at": job.next_run_at.map(|at| talaria_cron::rfc3339(at, tz)),
                    "last_run_at": job.last_run_at.map(|at| talaria_cron::rfc3339(at, tz)),
                    "last_status": job.last_status,
                    "deliver": job.deliver,
                    "repeat": job.repeat,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        // Often piped into another program, which may stop reading early.
        let _ = writeln!(std::io::stdout(), "{text}");
        return Ok(());
    }
    if jobs.is_empty() {
        println!("no scheduled jobs (talaria cron add SCHEDULE PROMPT adds one)");
        return Ok(());
    }
    for job in &jobs {
        println!(
            "{}  {:<24} {:<18} {:<10} next {}",
            job.id,
            job.name,
            job.schedule_display,
            state(job),
            when(job.next_run_at, tz)
        );
    }
    Ok(())
}

fn show(store: &JobStore, key: &str, tz: &TimeZone) -> Result<(), String> {
    let jobs = store.load().map_err(|e| e.to_string())?;
    let job = &jobs[talaria_cron::find(&jobs, key)?];
    println!("{} ({})", job.name, job.id);
    println!("  schedule:  {}", job.schedule_display);
    println!("  state:     {}", state(job));
    println!("  next run:  {}", when(job.next_run_at, tz));
    println!("  last run:  {}", when(job.last_run_at, tz));
    if let Some(status) = &job.last_status {
        let error = job.last_error.as_deref().unwrap_or_default();
        println!("  last:      {status} {error}");
    }
    let times = job.repeat.times.map_or("∞".to_owned(), |t| t.to_string());
    println!("  runs:      {} of {times}", job.repeat.completed);
    println!("  deliver:   {}", job.deliver);
    if !job.skills.is_empty() {
        println!("  skills:    {}", job.skills.join(", "));
    }
    println!("  prompt:    {}", job.prompt);
    let outputs = store.outputs(&job.id).map_err(|e| e.to_string())?;
    if let Some(latest) = outputs.last() {
        println!(
            "  output:    {} run(s) saved, latest {}",
            outputs.len(),
            latest.display()
        );
    }
    Ok(())
}

/// Finds `key` and changes that job; `change` says what it did.
fn change(
    store: &JobStore,
    key: &str,
    change: impl FnOnce(&mut Job) -> Result<String, String>,
) -> Result<(), String> {
    let message = store
        .update(|jobs| {
            let at = talaria_cron::find(jobs, key)?;
            change(&mut jobs[at])
        })
        .map_err(|e| e.to_string())??;
    println!("{message}");
    Ok(())
}

fn remove(store: &JobStore, key: &str) -> Result<(), String> {
    let job = store
        .update(|jobs| {
            let at = talaria_cron::find(jobs, key)?;
            Ok::<Job, String>(jobs.remove(at))
        })
        .map_err(|e| e.to_string())??;
    if let Err(error) = store.remove_outputs(&job.id) {
        eprintln!("warning: {error}");
    }
    println!("removed job {} ({})", job.name, job.id);
    Ok(())
}

fn state(job: &Job) -> &'static str {
    match job.state {
        JobState::Scheduled => "scheduled",
        JobState::Paused => "paused",
        JobState::Running => "running",
        JobState::Completed => "completed",
    }
}

/// A time for people: in the profile's zone, or "never".
fn when(at: Option<Timestamp>, tz: &TimeZone) -> String {
    at.map_or_else(
        || "never".to_owned(),
        |at| at.to_zoned(tz.clone()).strftime("%F %T %Z").to_string(),
    )
}
