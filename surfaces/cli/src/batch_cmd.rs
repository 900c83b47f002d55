//! `talaria batch run PROMPTS.jsonl --out DIR`: every prompt a fresh
//! session, several at once, each written as one trajectory line; a
//! progress bar on a terminal, one line per item otherwise.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use talaria_batch::{
    AgentItemRunner, BatchOptions, ItemLimits, Output, Progress, Trajectory, parse_prompts,
    run_batch,
};
use talaria_profile::ProfileHome;
use tokio_util::sync::CancellationToken;

use crate::args::ModelArgs;
use crate::exit::{Status, usage_error};

/// `talaria batch …`.
#[derive(Debug, Subcommand)]
pub enum BatchCommand {
    /// Run a JSONL file of prompts (`{"id": …, "prompt": …}`, optional
    /// `toolsets`, `model`, `system`) into `DIR/trajectories.jsonl`
    /// (ShareGPT, one line per item) and `DIR/stats.json`.
    Run(BatchRunArgs),
}

/// Options of `talaria batch run`.
#[derive(Debug, Args)]
pub struct BatchRunArgs {
    /// The prompts file.
    pub prompts: PathBuf,
    /// Where the trajectories and the summary go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Items at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Go on with an output directory that has lines: items with one are skipped.
    #[arg(long)]
    pub resume: bool,
    /// Start no item once the trajectories cost this many USD (with the model's prices set).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Model calls per item (default: budget.max_iterations).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
    /// Seconds per item: then the model is asked for a summary, a minute
    /// later the item is stopped.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub item_timeout: Option<u64>,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Runs a `batch` subcommand.
pub async fn run(command: BatchCommand, home: &ProfileHome) -> Status {
    let BatchCommand::Run(args) = command;
    if args
        .max_cost
        .is_some_and(|usd| !usd.is_finite() || usd < 0.0)
    {
        return usage_error("--max-cost must be a number of USD, at least 0");
    }
    let text = match std::fs::read_to_string(&args.prompts) {
        Ok(text) => text,
        Err(error) => {
            return usage_error(&format!("cannot read {}: {error}", args.prompts.display()));
        }
    };
    let items = match parse_prompts(&text) {
        Ok(items) => items,
        Err(error) => return usage_error(&format!("{}: {error}", args.prompts.display())),
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => return usage_error(&format!("cannot read the working directory: {error}")),
    };
    let limits = ItemLimits {
        max_iterations: args.max_iterations,
        timeout: args.item_timeout.map(Duration::from_secs),
    };
    let overrides = crate::run::overrides(&args.model);
    // Said before anything runs: every item would fail the same way.
    let runner = match AgentItemRunner::new(home.clone(), &overrides, cwd, limits) {
        Ok(runner) => runner,
        Err(problem) => return usage_error(&talaria_redact::redact(&problem)),
    };
    let mut output = match Output::open(&args.out, args.resume) {
        Ok(output) => output,
        Err(error) => return usage_error(&error.to_string()),
    };
    let cancel = CancellationToken::new();
    crate::shutdown::stop_on_signals(cancel.clone(), "batch");
    let options = BatchOptions {
        workers: usize::from(args.workers),
        max_cost_usd: args.max_cost,
    };
    let runner = Arc::new(runner);
    // The workers block on their own threads; this thread writes the lines.
    let outcome = tokio::task::spawn_blocking(move || {
        let mut progress = Report::new(std::io::stderr().is_terminal());
        run_batch(&items, &mut output, runner, options, &cancel, &mut progress)
    })
    .await;
    let stats = match outcome {
        Ok(Ok(stats)) => stats,
        Ok(Err(error)) => {
            eprintln!("talaria batch: {error}");
            return Status::Failed;
        }
        Err(error) => {
            eprintln!("talaria batch: the batch stopped: {error}");
            return Status::Failed;
        }
    };
    println!(
        "{} done, {} failed, {} remaining; {} tokens in, {} out; ${:.4}; {:.1} s ({:.2} items/s)",
        stats.done,
        stats.failed,
        stats.remaining,
        stats.tokens.input,
        stats.tokens.output,
        stats.cost_usd,
        stats.seconds,
        stats.items_per_second
    );
    match stats.stopped {
        Some(why) if why == "interrupted" => {
            println!("stopped: {why} (run again with --resume to finish)");
            Status::Interrupted
        }
        Some(why) => {
            println!("stopped: {why}");
            Status::Failed
        }
        None => Status::Answered,
    }
}

/// Progress on standard error: a bar redrawn in place on a terminal, one
/// line per item otherwise (logs, CI).
struct Report {
    terminal: bool,
    failed: usize,
}

impl Report {
    fn new(terminal: bool) -> Self {
        Self {
            terminal,
            failed: 0,
        }
    }
}

impl Progress for Report {
    fn started(&mut self, to_run: usize, skipped: usize) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "talaria batch: {to_run} to run, {skipped} already written"
        );
    }

    fn finished(&mut self, trajectory: &Trajectory, finished: usize, to_run: usize) {
        if !trajectory.completed {
            self.failed += 1;
        }
        let mut err = std::io::stderr().lock();
        if self.terminal {
            const WIDTH: usize = 30;
            let filled = (finished * WIDTH).checked_div(to_run).unwrap_or(WIDTH);
            let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH - filled));
            let _ = write!(err, "\r[{bar}] {finished}/{to_run}, {} failed", self.failed);
            if finished == to_run {
                let _ = writeln!(err);
            }
            return;
        }
        let how = match &trajectory.error {
            Some(error) => format!("failed: {error}"),
            None => format!("done ({} model calls)", trajectory.api_calls),
        };
        let _ = writeln!(
            err,
            "[{finished}/{to_run}] {}: {how}, {} ms",
            trajectory.id, trajectory.duration_ms
        );
    }
}
