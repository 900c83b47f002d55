//! Running a batch: the items without a line go to `workers` threads, each
//! running one item at a time; their trajectories come back to the caller's
//! thread, which alone writes the output. A failing item is a line like any
//! other. Past the cost cap no item starts (the running ones finish); on
//! cancel (Ctrl-C) the running items stop and are not written, so a resume
//! runs them again.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::output::{Output, OutputError, Stats};
use crate::prompts::BatchItem;
use crate::trajectory::Trajectory;

/// Runs one item.
pub trait ItemRunner: Send + Sync + 'static {
    /// The item's trajectory; `None` when `cancel` stopped it (the batch is
    /// stopping: nothing is written for it).
    fn run(&self, item: &BatchItem, cancel: &CancellationToken) -> Option<Trajectory>;
}

/// What a batch is told as it goes (a progress bar, log lines).
pub trait Progress {
    /// `to_run` items will run; `skipped` have their line already.
    fn started(&mut self, to_run: usize, skipped: usize);
    /// An item ended; `finished` of `to_run` have.
    fn finished(&mut self, trajectory: &Trajectory, finished: usize, to_run: usize);
}

/// How a batch runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchOptions {
    /// Items at once.
    pub workers: usize,
    /// No item starts once the lines cost this much (USD).
    pub max_cost_usd: Option<f64>,
}

/// Runs every item of `items` that `output` has no line for, and writes the
/// summary. `Err` only when the output cannot be written (then the batch
/// stops; the lines written stay).
pub fn run_batch(
    items: &[BatchItem],
    output: &mut Output,
    runner: Arc<dyn ItemRunner>,
    options: BatchOptions,
    cancel: &CancellationToken,
    progress: &mut dyn Progress,
) -> Result<Stats, OutputError> {
    let started = Instant::now();
    let todo: VecDeque<BatchItem> = items
        .iter()
        .filter(|item| !output.has(&item.id))
        .cloned()
        .collect();
    let to_run = todo.len();
    progress.started(to_run, items.len() - to_run);
    let queue = Arc::new(Mutex::new(todo));
    // What the lines cost so far, counted by the workers as each item ends,
    // so the next one never starts past the cap.
    let spent = Arc::new(Mutex::new(output.cost_usd()));
    let (results, finished) = mpsc::channel::<Option<Trajectory>>();
    let mut workers = Vec::new();
    for _ in 0..options.workers.max(1).min(to_run.max(1)) {
        let (queue, spent, runner, results, cancel) = (
            queue.clone(),
            spent.clone(),
            runner.clone(),
            results.clone(),
            cancel.clone(),
        );
        workers.push(std::thread::spawn(move || {
            loop {
                let over = options.max_cost_usd.is_some_and(|cap| *lock(&spent) >= cap);
                if cancel.is_cancelled() || over {
                    return;
                }
                let Some(item) = lock(&queue).pop_front() else {
                    return;
                };
                let trajectory = runner.run(&item, &cancel);
                if let Some(trajectory) = &trajectory {
                    *lock(&spent) += trajectory.cost_usd;
                }
                if results.send(trajectory).is_err() {
                    return;
                }
            }
        }));
    }
    drop(results);
    let mut done = 0;
    let mut failure = None;
    for trajectory in finished {
        let Some(trajectory) = trajectory else {
            continue;
        };
        if let Err(error) = output.write(&trajectory) {
            // Nothing more can be kept: stop everything.
            cancel.cancel();
            failure = Some(error);
            break;
        }
        done += 1;
        progress.finished(&trajectory, done, to_run);
    }
    for worker in workers {
        let _ = worker.join();
    }
    if let Some(error) = failure {
        return Err(error);
    }
    let left = !lock(&queue).is_empty();
    let stopped = if cancel.is_cancelled() {
        Some("interrupted".to_owned())
    } else {
        let cap = options.max_cost_usd.filter(|_| left);
        cap.map(|cap| format!("the cost cap of ${cap:.2} was reached (--max-cost)"))
    };
    let mut stats = output.stats(items.len(), started.elapsed().as_secs_f64(), done);
    stats.stopped = stopped;
    output.write_stats(&stats)?;
    Ok(stats)
}

/// A poisoned lock only means a worker panicked mid-update; the value is whole.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::trajectory::{ExitReason, Tokens};

    /// Answers after a short pause; `fail…` prompts fail; every answer costs
    /// `cost`; stops at `cancel_after` runs by cancelling the batch.
    struct Scripted {
        cost: f64,
        runs: AtomicUsize,
        cancel_after: Option<(usize, CancellationToken)>,
    }

    impl ItemRunner for Scripted {
        fn run(&self, item: &BatchItem, cancel: &CancellationToken) -> Option<Trajectory> {
            let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some((after, token)) = &self.cancel_after
                && run > *after
            {
                token.cancel();
            }
            std::thread::sleep(Duration::from_millis(5));
            if cancel.is_cancelled() {
                return None;
            }
            let failed = item.prompt.starts_with("fail");
            Some(Trajectory {
                id: item.id.clone(),
                completed: !failed,
                exit: if failed {
                    ExitReason::Error
                } else {
                    ExitReason::Final
                },
                error: failed.then(|| "the model is down".to_owned()),
                answer: String::new(),
                conversations: Vec::new(),
                tools: "[]".into(),
                model: "m".into(),
                tokens: Tokens::default(),
                cost_usd: self.cost,
                api_calls: 1,
                tool_calls: 0,
                duration_ms: 5,
                session_id: String::new(),
                source: "talaria".into(),
            })
        }
    }

    #[derive(Default)]
    struct Counted(Vec<String>);

    impl Progress for Counted {
        fn started(&mut self, to_run: usize, skipped: usize) {
            self.0.push(format!("start {to_run} skip {skipped}"));
        }
        fn finished(&mut self, trajectory: &Trajectory, finished: usize, to_run: usize) {
            self.0
                .push(format!("{} {finished}/{to_run}", trajectory.id));
        }
    }

    fn items(n: usize) -> Vec<BatchItem> {
        (0..n)
            .map(|i| BatchItem {
                id: i.to_string(),
                prompt: if i % 7 == 3 {
                    "fail".into()
                } else {
                    format!("q{i}")
                },
                toolsets: None,
                model: None,
                system: None,
            })
            .collect()
    }

    fn ids(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_to_string(dir.join(crate::output::TRAJECTORIES))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Trajectory>(line).unwrap().id)
            .collect()
    }

    fn scripted(cost: f64, cancel_after: Option<(usize, CancellationToken)>) -> Arc<Scripted> {
        Arc::new(Scripted {
            cost,
            runs: AtomicUsize::new(0),
            cancel_after,
        })
    }

    const FOUR: BatchOptions = BatchOptions {
        workers: 4,
        max_cost_usd: None,
    };

    #[test]
    fn a_stopped_batch_resumes_and_every_item_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let items = items(30);
        let cancel = CancellationToken::new();
        let mut output = Output::open(dir.path(), false).unwrap();
        let runner = scripted(0.0, Some((12, cancel.clone())));
        let stats = run_batch(
            &items,
            &mut output,
            runner,
            FOUR,
            &cancel,
            &mut Counted::default(),
        )
        .unwrap();
        assert_eq!(stats.stopped.as_deref(), Some("interrupted"));
        let first = ids(dir.path());
        assert!(first.len() < 30 && !first.is_empty(), "{}", first.len());

        let mut output = Output::open(dir.path(), true).unwrap();
        let mut progress = Counted::default();
        let runner = scripted(0.0, None);
        let stats = run_batch(
            &items,
            &mut output,
            runner,
            FOUR,
            &CancellationToken::new(),
            &mut progress,
        )
        .unwrap();
        assert_eq!(
            progress.0[0],
            format!("start {} skip {}", 30 - first.len(), first.len())
        );
        let all = ids(dir.path());
        assert_eq!(all.len(), 30);
        assert_eq!(all.iter().collect::<HashSet<_>>().len(), 30, "each id once");
        assert_eq!((stats.done, stats.failed, stats.remaining), (26, 4, 0));
        assert_eq!(stats.stopped, None);
    }

    #[test]
    fn no_item_starts_past_the_cost_cap() {
        let dir = tempfile::tempdir().unwrap();
        let mut output = Output::open(dir.path(), false).unwrap();
        let options = BatchOptions {
            workers: 1,
            max_cost_usd: Some(1.0),
        };
        let stats = run_batch(
            &items(10),
            &mut output,
            scripted(0.3, None),
            options,
            &CancellationToken::new(),
            &mut Counted::default(),
        )
        .unwrap();
        assert_eq!(ids(dir.path()).len(), 4, "0.3 × 4 reaches $1");
        assert_eq!(stats.remaining, 6);
        assert!(stats.stopped.unwrap().contains("cost cap of $1.00"));
    }
}
