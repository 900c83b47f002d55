//! The webhook surface: the listener ([`server`]), who may post
//! ([`signature`]), what each route takes once and how often ([`intake`]),
//! what the agent is asked ([`render`]) and the turns that answer ([`jobs`]).

pub mod intake;
pub mod jobs;
pub mod render;
pub mod server;
pub mod signature;

pub use intake::{DeliveryLog, LogError, ReplayKey};
pub use jobs::{ChatPoster, JobSender, QUEUED_JOBS, WebhookRunner, job_queue, run_jobs};
pub use render::{DEFAULT_TEMPLATE, Delivery, render};
pub use server::{
    DEFAULT_MAX_PER_MINUTE, JobQueue, PlatformWebhooks, QueueFull, WebhookJob, WebhookLimits,
    WebhookRoute, WebhookService, serve,
};
pub use signature::{SignatureError, SignatureScheme, sign};
