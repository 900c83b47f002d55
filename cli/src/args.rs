//! Command-line arguments.

use clap::{Args, Parser, Subcommand};

/// Talaria: a self-improving LLM agent with sandboxed WebAssembly plugins.
#[derive(Debug, Parser)]
#[command(name = "talaria", version, about, long_about = None)]
pub struct Cli {
    /// What to run (default: chat).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the default chat command.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat with the agent, or run one prompt with -q.
    Chat(RunArgs),
    /// Configure the model endpoint: provider, base URL, model and key (checked with one request).
    Setup(SetupArgs),
    /// List plugins, show one, grant or revoke capabilities, trust a project's plugins.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Write plugins: start a project, build it into a package.
    #[command(subcommand)]
    Plugin(PluginCommand),
}

/// `talaria plugin …`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Create a buildable tool plugin project (manifest, Cargo.toml, an example tool).
    New {
        /// Plugin name (lowercase letters, digits and '-').
        name: String,
        /// Directory to create (default: ./NAME).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// Build a plugin project into DIR/dist/NAME, ready to drop into a plugin directory.
    Build {
        /// The project directory (default: the working directory).
        dir: Option<std::path::PathBuf>,
    },
}

/// `talaria plugins …`.
#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Every plugin found, with its source, requested and granted capabilities.
    List,
    /// One plugin in full, including its tools (loads it).
    Info {
        /// Plugin name.
        name: String,
    },
    /// Grant a capability the plugin requests: filesystem:PATH[:read-only|read-write],
    /// network:HOST:PORT, env:NAME, exec, kv, session-search, or all.
    Grant {
        /// Plugin name.
        name: String,
        /// Capability.
        capability: String,
    },
    /// Revoke a capability (same forms as grant).
    Revoke {
        /// Plugin name.
        name: String,
        /// Capability.
        capability: String,
    },
    /// Trust a project directory's .talaria/plugins (default: the working directory).
    Trust {
        /// The project directory.
        dir: Option<std::path::PathBuf>,
    },
}

/// Options of a conversation run.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Run one conversation with PROMPT, print the final answer on stdout and exit.
    #[arg(short = 'q', long = "query", value_name = "PROMPT")]
    pub query: Option<String>,
    /// Print events as JSON lines on stdout (deltas, tool calls, results, usage, final).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Skip approval prompts (commands on the hardline list stay blocked).
    #[arg(long)]
    pub yolo: bool,
}

/// Model selection, overriding environment and config.
#[derive(Debug, Args, Default, Clone)]
pub struct ModelArgs {
    /// Wire format of the endpoint: openai or anthropic.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Endpoint base URL (e.g. http://127.0.0.1:11434/v1 for Ollama).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

/// Options of `talaria setup`.
#[derive(Debug, Args, Default, Clone)]
pub struct SetupArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Save without sending the check request.
    #[arg(long)]
    pub no_check: bool,
}
