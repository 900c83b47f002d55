//! Command approval for Talaria's terminal tool.
//!
//! A command is first [normalised](normalize) (case, whitespace, quoting, escapes, terminal control
//! sequences and Unicode look-alikes) and then [classified](Classifier::classify) against three lists
//! kept as data in `patterns.toml`:
//!
//! * **hardline** — never allowed, not even in yolo mode or a sandbox;
//! * **protected** — changes the agent's own controls (the `talaria` command's settings, grants
//!   and plugins); the user must approve it even in yolo mode or a sandbox;
//! * **dangerous** — allowed only after the user approves it (once, for the session, or always).
//!
//! The line is also parsed as bash (brush-parser) and each simple command screened with what
//! `programs.toml` says of its program: quoted data arguments are masked, abbreviated long options
//! written out, and the command lines programs run (option values, `-c` payloads, fed scripts,
//! substitutions) judged as commands. A command word built at run time
//! (`rm${IFS}-rf /`, `$(echo rm) -rf ~`) is judged as each command it may spell and is at least
//! dangerous, and a line bash would not parse is at least dangerous.
//!
//! The policy also screens commands for the profile's [protected paths](ProtectedPaths).
//!
//! [`ApprovalPolicy`] turns a classification into a decision, asking an [`Approver`] (the surface's
//! port to the user) when needed.
#![warn(missing_docs)]

mod always;
mod approver;
mod classifier;
mod error;
mod normalize;
mod parse_check;
mod paths;
mod policy;
mod procfs;
mod programs;
mod protected;
mod screen;
mod shapes;
mod syntax;
mod views;

pub use approver::{ApprovalRequest, Approver, Decision, DenyAll, RatedRisk, Rating};
pub use classifier::{Classifier, Finding, Risk};
pub use error::ApprovalError;
pub use normalize::normalize;
pub use parse_check::{PARSE_CHECK_ARG, enable_parse_check, parse_check_main};
pub use policy::{
    Admitted, Approval, ApprovalPolicy, CommandCheck, DEFAULT_TIMEOUT, Denied, DeniedKind,
    PathAccess,
};
pub use protected::{PathContext, ProtectedPaths, resolve_existing};
