//! Command approval for Talaria's terminal tool.
//!
//! A command is first [normalised](normalize) (case, whitespace, quoting, escapes, terminal control
//! sequences and Unicode look-alikes) and then [classified](Classifier::classify) against two lists
//! kept as data in `patterns.toml`:
//!
//! * **hardline** — never allowed, not even in yolo mode or a sandbox;
//! * **dangerous** — allowed only after the user approves it (once, for the session, or always).
//!
//! [`ApprovalPolicy`] turns a classification into a decision, asking an [`Approver`] (the surface's
//! port to the user) when needed.
#![warn(missing_docs)]

mod always;
mod approver;
mod classifier;
mod error;
mod normalize;
mod policy;
mod views;

pub use approver::{ApprovalRequest, Approver, Decision, DenyAll};
pub use classifier::{Classifier, Finding, Risk};
pub use error::ApprovalError;
pub use normalize::{homoglyph, normalize};
pub use policy::{Approval, ApprovalPolicy, DEFAULT_TIMEOUT, Denied, DeniedKind};
