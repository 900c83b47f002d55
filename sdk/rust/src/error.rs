//! The two error types that cross the component boundary.

use std::fmt;

/// Why a tool call failed; the model reads the message.
///
/// This is the WIT `tool-error` variant of `talaria:plugin/types`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments do not fit the schema or make no sense.
    InvalidArguments(String),
    /// A capability the call needs was not granted.
    Denied(String),
    /// The call ran and failed.
    Failed(String),
}

impl ToolError {
    /// [`ToolError::InvalidArguments`] with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArguments(message.into())
    }

    /// [`ToolError::Denied`] with `message`.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::Denied(message.into())
    }

    /// [`ToolError::Failed`] with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidArguments(m) | Self::Denied(m) | Self::Failed(m) => m,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
            Self::Denied(m) => write!(f, "denied: {m}"),
            Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ToolError {}

/// An error from a host import (`config`, `kv`, `exec`, `session-search`).
///
/// This is the WIT `host-error` variant of `talaria:plugin/host-types`. A
/// capability that was not granted is a [`HostError::Denied`] value, never a
/// trap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostError {
    /// The capability was not granted to this plugin.
    Denied(String),
    /// The thing asked for does not exist.
    NotFound(String),
    /// The host tried and failed.
    Failed(String),
}

impl HostError {
    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Self::Denied(m) | Self::NotFound(m) | Self::Failed(m) => m,
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Denied(m) => write!(f, "denied by the host: {m}"),
            Self::NotFound(m) => write!(f, "not found: {m}"),
            Self::Failed(m) => write!(f, "host failure: {m}"),
        }
    }
}

impl std::error::Error for HostError {}

/// A denial stays a denial; anything else is a failed call.
impl From<HostError> for ToolError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Denied(m) => Self::Denied(m),
            other => Self::Failed(other.to_string()),
        }
    }
}
