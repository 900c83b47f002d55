//! The batch surface (`talaria batch run`): a JSONL file of prompts
//! ([`prompts`]) run in parallel, each a fresh session of the profile's
//! agent ([`agent_runner`]), into one ShareGPT trajectory line per item
//! ([`trajectory`], [`output`]) and a summary; [`pool`] schedules them,
//! stops at a cost cap or on Ctrl-C, and resumes where a run stopped.

pub mod agent_runner;
pub mod output;
pub mod pool;
pub mod prompts;
pub mod trajectory;

pub use agent_runner::{AgentItemRunner, ItemLimits};
pub use output::{Output, OutputError, Stats};
pub use pool::{BatchOptions, ItemRunner, Progress, run_batch};
pub use prompts::{BatchItem, PromptsError, parse_prompts};
pub use trajectory::{ExitReason, Trajectory, Turn};
