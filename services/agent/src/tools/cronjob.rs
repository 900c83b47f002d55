//! `cronjob`: the model schedules, changes and lists the profile's jobs
//! (Hermes's arguments: `action` create|list|update|pause|resume|remove|run,
//! `job_id`, `prompt`, `schedule`, `name`, `repeat`, `deliver`, `skills`,
//! `model`), with the checks of `talaria cron` (talaria-cron does both).
//!
//! A job runs later, without anyone watching, for as long as it exists:
//! every change is persistence, so it passes the approval layer like a
//! dangerous command (asked, allowed in yolo mode, refused where nobody can
//! answer) after its checks, so nobody is asked about a job that would be
//! refused. A prompt that trips the threat scanner is refused on the way in
//! (it is scanned again before each run). Offered only where an answer can
//! come; never inside a cron run (its tool profile leaves it out).

use std::sync::Arc;

use async_trait::async_trait;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use talaria_approval::Finding;
use talaria_cron::{Job, JobChanges, JobStore, NewJob, Origin};
use talaria_exec::{ExecOrigin, GatedExecutor};
use talaria_kernel::{ToolContext, ToolSpec};

use super::NativeTool;

/// The most of a prompt shown in a listing or an approval request.
const SHOWN_PROMPT_CHARS: usize = 300;

/// What the tool is built from.
pub struct CronJobSetup {
    /// The profile's jobs.
    pub store: JobStore,
    /// The profile's `timezone:` (an IANA name; the system's when unset), found at the tool's
    /// first call: finding any zone reads the whole time-zone database.
    pub timezone: Option<String>,
    /// The chat the session runs in (for `deliver: origin`).
    pub origin: Option<Origin>,
    /// The profile's provider: the one a job's model runs on.
    pub provider: String,
}

/// The `cronjob` tool.
pub struct CronJobTool {
    setup: CronJobSetup,
    gate: Arc<GatedExecutor>,
    tz: std::sync::OnceLock<TimeZone>,
}

impl CronJobTool {
    /// The tool over `setup`, asking through `gate`'s approval layer.
    pub fn new(setup: CronJobSetup, gate: Arc<GatedExecutor>) -> Self {
        Self {
            setup,
            gate,
            tz: std::sync::OnceLock::new(),
        }
    }

    /// The profile's time zone, found now the first time.
    fn time_zone(&self) -> Result<&TimeZone, String> {
        if let Some(tz) = self.tz.get() {
            return Ok(tz);
        }
        let tz = talaria_profile::cron_config::time_zone(self.setup.timezone.as_deref())?;
        Ok(self.tz.get_or_init(|| tz))
    }

    /// The time zone [`Self::time_zone`] found (every action finds it first).
    fn tz(&self) -> &TimeZone {
        static FALLBACK: TimeZone = TimeZone::UTC;
        self.tz.get().unwrap_or(&FALLBACK)
    }

    /// Whether a change could ever be allowed: yolo mode, or someone to ask.
    pub fn offered(gate: &GatedExecutor, someone_can_approve: bool) -> bool {
        gate.policy().yolo() || someone_can_approve
    }

    /// Checks `apply` on a copy of the jobs, asks for approval of `shown`,
    /// then applies it under the store's lock.
    async fn persist(
        &self,
        context: &ToolContext,
        shown: &str,
        apply: impl Fn(&mut Vec<Job>) -> Result<Value, String>,
    ) -> Result<Value, String> {
        let mut trial = self.setup.store.load().map_err(|e| e.to_string())?;
        apply(&mut trial)?;
        let origin = ExecOrigin::new("talaria", "cronjob", context.session_id.clone());
        let finding = Finding {
            id: "cronjob".to_owned(),
            description: "schedules work that runs later without you, for as long as the job \
                          exists"
                .to_owned(),
        };
        self.gate
            .approve_text(shown, &origin, finding, false)
            .await
            .map_err(|e| format!("the scheduled jobs were not changed: {e}"))?;
        self.setup.store.update(apply).map_err(|e| e.to_string())?
    }

    fn list(&self) -> Result<Value, String> {
        let jobs = self.setup.store.load().map_err(|e| e.to_string())?;
        let rows: Vec<Value> = jobs.iter().map(|job| self.describe(job)).collect();
        Ok(json!({ "jobs": rows, "timezone": self.tz().iana_name() }))
    }

    fn describe(&self, job: &Job) -> Value {
        let at = |at: Option<jiff::Timestamp>| at.map(|at| talaria_cron::rfc3339(at, self.tz()));
        json!({
            "job_id": job.id,
            "name": job.name,
            "schedule": job.schedule_display,
            "state": job.state,
            "next_run_at": at(job.next_run_at),
            "last_run_at": at(job.last_run_at),
            "last_status": job.last_status,
            "last_error": job.last_error,
            "deliver": job.deliver,
            "repeat": job.repeat,
            "skills": job.skills,
            "model": job.model,
            "prompt": shorten(&job.prompt),
        })
    }

    async fn create(&self, args: &Args<'_>, context: &ToolContext) -> Result<Value, String> {
        let schedule = args
            .text("schedule")?
            .ok_or("'schedule' is required to create a job")?;
        let prompt = args
            .text("prompt")?
            .ok_or("'prompt' is required to create a job")?;
        scan(prompt)?;
        let new = NewJob {
            name: args.text("name")?.map(str::to_owned),
            prompt: prompt.to_owned(),
            schedule: schedule.to_owned(),
            deliver: args.text("deliver")?.map(str::to_owned),
            repeat: args.repeat()?,
            skills: args.skills()?.unwrap_or_default(),
            model: args.model(&self.setup.provider)?,
            origin: self.setup.origin.clone(),
        };
        let now = talaria_cron::now();
        let deliver = new.deliver.clone().unwrap_or_else(|| {
            if new.origin.is_some() {
                "origin"
            } else {
                "local"
            }
            .to_owned()
        });
        let shown = format!(
            "schedule a job ({schedule}, delivered to {deliver}): {}",
            shorten(prompt)
        );
        self.persist(context, &shown, |jobs| {
            let job = talaria_cron::create(new.clone(), jobs, now, self.tz())?;
            let created = self.describe(&job);
            jobs.push(job);
            Ok(json!({ "created": true, "job": created }))
        })
        .await
    }

    async fn update(&self, args: &Args<'_>, context: &ToolContext) -> Result<Value, String> {
        let key = args.job_id()?;
        let changes = JobChanges {
            name: args.text("name")?.map(str::to_owned),
            prompt: args.text("prompt")?.map(str::to_owned),
            schedule: args.text("schedule")?.map(str::to_owned),
            deliver: args.text("deliver")?.map(str::to_owned),
            repeat: args.repeat()?,
            skills: args.skills()?,
            model: args.model(&self.setup.provider)?,
        };
        if let Some(prompt) = &changes.prompt {
            scan(prompt)?;
        }
        let now = talaria_cron::now();
        let shown = format!("change scheduled job {key}: {}", summary(&changes));
        self.persist(context, &shown, |jobs| {
            let at = talaria_cron::find(jobs, key)?;
            talaria_cron::update(jobs, at, changes.clone(), now, self.tz())?;
            Ok(json!({ "updated": true, "job": self.describe(&jobs[at]) }))
        })
        .await
    }

    /// pause, resume, remove and run: one job, no other arguments.
    async fn change_state(
        &self,
        action: &str,
        args: &Args<'_>,
        context: &ToolContext,
    ) -> Result<Value, String> {
        let key = args.job_id()?;
        let now = talaria_cron::now();
        let tz = self.tz();
        let shown = format!("{action} scheduled job {key}");
        let result = self
            .persist(context, &shown, |jobs| {
                let at = talaria_cron::find(jobs, key)?;
                match action {
                    "pause" => {
                        talaria_cron::pause(&mut jobs[at], now, "paused by the cronjob tool")?;
                    }
                    "resume" => talaria_cron::resume(&mut jobs[at], now, tz)?,
                    "run" => talaria_cron::run_soon(&mut jobs[at], now)?,
                    _ => {
                        let job = jobs.remove(at);
                        return Ok(json!({ "removed": true, "job_id": job.id, "name": job.name }));
                    }
                }
                Ok(json!({ action: true, "job": self.describe(&jobs[at]) }))
            })
            .await?;
        if action == "remove"
            && let Some(id) = result["job_id"].as_str()
        {
            // The job is gone either way; its old outputs only take space.
            let _ = self.setup.store.remove_outputs(id);
        }
        if action == "run" {
            let mut result = result;
            result["note"] = json!(
                "it runs at the next scheduler tick: within a minute while `talaria gateway run` \
                 is up, else at the next `talaria cron tick`"
            );
            return Ok(result);
        }
        Ok(result)
    }
}

#[async_trait]
impl NativeTool for CronJobTool {
    fn toolset(&self) -> &'static str {
        "cronjob"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "cronjob".into(),
            description: "Schedule the agent to run a prompt later or repeatedly, and manage \
                those jobs. Each run starts a fresh session with no memory of this one, so \
                the prompt must say everything the run needs. Its answer is delivered to \
                `deliver` (`origin`: this chat; `local`: only saved; `all`: every home \
                channel; `platform:chat_id[:thread_id]`; comma-combined). An answer of \
                exactly [SILENT] is saved but not delivered. Creating or changing a job needs \
                the user's approval."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["create", "list", "update", "pause", "resume", "remove", "run"]
                    },
                    "job_id": {"type": "string", "description": "The job's id or name (not for create/list)."},
                    "prompt": {"type": "string", "description": "What each run is asked, self-contained."},
                    "schedule": {
                        "type": "string",
                        "description": "\"30m\" (once, that long from now), \"every 2h\", a cron expression \"0 9 * * 1-5\", or an ISO timestamp, in the profile's time zone."
                    },
                    "name": {"type": "string"},
                    "repeat": {"type": "integer", "minimum": 1, "description": "Runs in all (default: until removed)."},
                    "deliver": {"type": "string"},
                    "skills": {"type": "array", "items": {"type": "string"}, "description": "Skills each run loads first."},
                    "model": {
                        "type": "object",
                        "properties": {"provider": {"type": "string"}, "model": {"type": "string"}},
                        "description": "The model of its runs (default: the profile's)."
                    }
                },
                "required": ["action"]
            }),
            refunds_iteration: false,
        }
    }

    async fn call(&self, arguments: &Value, context: &ToolContext) -> Result<Value, String> {
        let args = Args(arguments);
        self.time_zone()
            .map_err(|message| format!("cronjob cannot run: {message}"))?;
        match args.text("action")?.unwrap_or_default() {
            "list" => self.list(),
            "create" => self.create(&args, context).await,
            "update" => self.update(&args, context).await,
            action @ ("pause" | "resume" | "remove" | "run") => {
                self.change_state(action, &args, context).await
            }
            "" => Err(
                "'action' is required: create, list, update, pause, resume, remove or run"
                    .to_owned(),
            ),
            other => Err(format!(
                "unknown action '{other}': use create, list, update, pause, resume, remove or run"
            )),
        }
    }
}

/// The call's arguments, read leniently where models vary (a number as a
/// string, one skill as a string, a model as a name).
struct Args<'a>(&'a Value);

impl<'a> Args<'a> {
    fn text(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(format!("'{name}' must be a string, not {other}")),
        }
    }

    fn job_id(&self) -> Result<&'a str, String> {
        self.text("job_id")?.ok_or_else(|| {
            "'job_id' is required: the job's id or name (action list shows them)".to_owned()
        })
    }

    fn repeat(&self) -> Result<Option<u32>, String> {
        let value = match self.0.get("repeat") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
            Some(value) => value.as_u64(),
        };
        value
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| "'repeat' must be a whole number of runs, at least 1".to_owned())
    }

    fn skills(&self) -> Result<Option<Vec<String>>, String> {
        match self.0.get("skills") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(one)) => Ok(Some(vec![one.clone()])),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("'skills' holds skill names, not {item}"))
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(format!(
                "'skills' must be a list of skill names, not {other}"
            )),
        }
    }

    /// The model a job runs on: a name, or `{provider, model}` whose
    /// provider must be the profile's (jobs run on its endpoint and key).
    fn model(&self, profile_provider: &str) -> Result<Option<String>, String> {
        let (provider, model) = match self.0.get("model") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(name)) => (None, Some(name.as_str())),
            Some(Value::Object(fields)) => (
                fields.get("provider").and_then(Value::as_str),
                fields.get("model").and_then(Value::as_str),
            ),
            Some(other) => {
                return Err(format!(
                    "'model' must be {{\"provider\": …, \"model\": …}} or a model name, not {other}"
                ));
            }
        };
        if let Some(provider) = provider.filter(|p| !p.is_empty() && *p != profile_provider) {
            return Err(format!(
                "a job runs on this profile's provider ({profile_provider}), not {provider}: \
                 give only the model"
            ));
        }
        Ok(model.map(|m| m.trim().to_owned()))
    }
}

/// Refuses a prompt the threat scanner flags (a scheduled prompt runs later
/// with nobody watching).
fn scan(prompt: &str) -> Result<(), String> {
    let scanner = talaria_memory::Scanner::builtin()
        .map_err(|e| format!("the threat scanner is unavailable: {e}"))?;
    match scanner.scan_in(prompt, talaria_memory::Scope::Document) {
        Some(threat) => Err(format!(
            "the prompt was refused by the threat scanner: {threat}"
        )),
        None => Ok(()),
    }
}

fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(SHOWN_PROMPT_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// The changes, as the user is shown them.
fn summary(changes: &JobChanges) -> String {
    let mut parts = Vec::new();
    let mut set = |field: &str, value: Option<String>| {
        if let Some(value) = value {
            parts.push(format!("{field} = {value}"));
        }
    };
    set("name", changes.name.clone());
    set("schedule", changes.schedule.clone());
    set("deliver", changes.deliver.clone());
    set("repeat", changes.repeat.map(|n| n.to_string()));
    set("skills", changes.skills.as_ref().map(|s| s.join(", ")));
    set("model", changes.model.clone());
    set("prompt", changes.prompt.as_deref().map(shorten));
    parts.join("; ")
}

#[cfg(test)]
#[path = "cronjob_tests.rs"]
mod tests;
