//! Command-line arguments.

use clap::{Args, Parser, Subcommand};

/// Talaria: a self-improving LLM agent with sandboxed WebAssembly plugins.
#[derive(Debug, Parser)]
#[command(name = "talaria", version, about, long_about = None)]
pub struct Cli {
    /// Use profile NAME (its own config, keys, memory, skills and sessions).
    #[arg(short = 'p', long = "profile", value_name = "NAME", global = true)]
    pub profile: Option<String>,
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
    /// Plugins: list and show them, grant capabilities, install from indexes, write your own.
    // Group names are singular; the old plural spellings stay as hidden aliases for scripts.
    #[command(subcommand, alias = "plugins")]
    Plugin(PluginCommand),
    /// List, show, search, export and delete past sessions.
    #[command(subcommand, alias = "sessions")]
    Session(SessionCommand),
    /// Create, choose, list and delete profiles.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Show, read and change config.yaml.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check what keeps the agent's commands from its controls and keys, and say what to fix.
    Doctor {
        /// One JSON object per check.
        #[arg(long)]
        json: bool,
    },
    /// Bring skills, memory, persona and settings over from another agent.
    #[command(subcommand)]
    Import(ImportCommand),
    /// The slash commands (built-in, from plugins, skills), grouped; --json for menus.
    #[command(name = "command", alias = "commands")]
    SlashCommands(SlashCommandArgs),
    /// List skins or choose one.
    #[command(subcommand)]
    Skin(SkinCommand),
    /// List the skills and check that they load.
    #[command(subcommand, alias = "skills")]
    Skill(SkillCommand),
    /// The MCP servers of `mcp_servers` in config.yaml: list them, test one.
    #[cfg(feature = "mcp")]
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Build slim custom distributions from a dist.toml.
    #[command(subcommand)]
    Dist(DistCommand),
    /// Chat-platform pairings: list the requests and paired users, approve a code, revoke a user.
    #[cfg(feature = "gateway")]
    #[command(subcommand)]
    Pairing(PairingCommand),
    /// Memory: the built-in files, the external provider (status, providers,
    /// use, off) and the local fact store's facts.
    #[command(subcommand)]
    Memory(crate::memory_cmd::MemoryCommand),
    /// Scheduled jobs: add, list, show, pause, resume and remove them.
    #[cfg(feature = "gateway")]
    #[command(subcommand)]
    Cron(crate::cron_cmd::CronCommand),
    /// Run a file of prompts in parallel into trajectories (resumable).
    #[cfg(feature = "batch")]
    #[command(subcommand)]
    Batch(crate::batch_cmd::BatchCommand),
    /// The chat gateway of this profile: its status, stopping it, and a
    /// systemd user unit to run it.
    #[cfg(feature = "gateway")]
    #[command(subcommand)]
    Gateway(GatewayCommand),
    /// Serve an editor's agent panel over the Agent Client Protocol on stdin/stdout.
    #[cfg(feature = "acp")]
    Acp(AcpArgs),
    /// Serve an OpenAI-compatible API (chat completions, responses, models) on
    /// 127.0.0.1:8642; each request runs as a Talaria session.
    #[cfg(feature = "api")]
    Serve(ServeArgs),
}

/// Options of `talaria acp`.
#[cfg(feature = "acp")]
#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Options of `talaria serve` (unset ones come from `api_server` in config.yaml).
#[cfg(feature = "api")]
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (default: api_server.host, else 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    pub host: Option<std::net::IpAddr>,
    /// Port to listen on; 0 picks a free one, printed on stderr (default: api_server.port, else 8642).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Seconds a client has to send a request's body, and its headers (at most 10).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub read_timeout: u64,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `talaria dist …`.
#[derive(Debug, Subcommand)]
pub enum DistCommand {
    /// Build the binary with the manifest's features and lay out a self-contained
    /// directory: the binary plus its plugins, compiled ahead of time.
    Build {
        /// The distribution manifest (dist.toml).
        manifest: std::path::PathBuf,
        /// The directory to create or replace.
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
        /// The Talaria source checkout to build from (default: the one this binary came from).
        #[arg(long, value_name = "DIR")]
        source: Option<std::path::PathBuf>,
    },
    /// Compile a plugin directory's components ahead of time into DIR/.compiled
    /// (run by `dist build` with the distribution's own binary).
    #[command(hide = true)]
    Precompile {
        /// The plugin directory.
        dir: std::path::PathBuf,
    },
}

/// `talaria command`.
#[derive(Debug, Args, Clone)]
pub struct SlashCommandArgs {
    /// Print JSON (name, aliases, usage, arguments, category, surfaces, source).
    #[arg(long)]
    pub json: bool,
    /// The surface whose commands to list: cli, gateway or acp.
    #[arg(long, default_value = "cli")]
    pub surface: String,
}

/// `talaria mcp …`.
#[cfg(feature = "mcp")]
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Every configured server: how it is reached, whether it is enabled, and how many
    /// tools its cache holds.
    List,
    /// Connects to one server, lists its tools, prints the timings and refreshes its cache.
    Test {
        /// The server's name under `mcp_servers`.
        name: String,
    },
    /// Adds a server to `mcp_servers` in config.yaml: the command after `--` for a stdio
    /// server (`talaria mcp add fs -- npx -y @modelcontextprotocol/server-filesystem .`), or
    /// `--url` for a streamable-HTTP one. Values may use `${VAR}`.
    Add {
        /// Its name (letters, digits, `_`, `-`).
        name: String,
        /// The streamable-HTTP endpoint.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// A header sent with every HTTP request (repeatable).
        #[arg(long = "header", value_name = "NAME=VALUE")]
        headers: Vec<String>,
        /// A variable set for a stdio server (repeatable).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// Which calls ask first: writes (default), every-call, trusted.
        #[arg(long, value_name = "MODE")]
        approval: Option<String>,
        /// Run a stdio server in bubblewrap.
        #[arg(long)]
        bwrap: bool,
        /// The stdio server's command and arguments.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Removes a server from `mcp_servers` in config.yaml.
    Remove {
        /// The server's name under `mcp_servers`.
        name: String,
    },
    /// Serve Talaria itself over MCP (stdio, or streamable HTTP with --http): other programs
    /// run prompts as sessions and list, search and read past sessions.
    #[cfg(feature = "mcp-serve")]
    Serve(McpServeArgs),
}

/// Options of `talaria mcp serve`.
#[cfg(feature = "mcp-serve")]
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765; port 0
    /// picks a free one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// The environment variable holding the bearer key HTTP clients must send
    /// (at least 16 characters).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "TALARIA_MCP_KEY",
        requires = "http"
    )]
    pub key_env: String,
    /// Also answer to this Host name (NAME or NAME:PORT; repeatable). Loopback names with
    /// the server's port are always accepted.
    #[arg(long = "allow-host", value_name = "NAME", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// Also accept requests from this browser Origin (SCHEME://HOST[:PORT]; repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// Allow listening on a non-loopback address (put TLS in front of it).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Most MCP sessions open at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_sessions: u64,
    /// Close a session after this many seconds without a request (none in progress).
    #[arg(long, value_name = "SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,
    /// Largest request body, in bytes (larger ones get 413).
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..=64 * 1024 * 1024))]
    pub max_body: u64,
    /// Seconds a client has to send a request's body, and its headers (at most 10).
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub read_timeout: u64,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `talaria skill …`.
#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// Every skill: name, category, source, and whether it is offered (or why not); skills
    /// that cannot load, with the reason.
    List,
    /// Exits non-zero when a skill cannot load, naming each and why.
    Check,
}

/// `talaria skin …`.
#[derive(Debug, Subcommand)]
pub enum SkinCommand {
    /// Every skin (built-in, from plugins, yours); the current one is marked.
    List,
    /// Use skin NAME from now on (saved as display.skin).
    Use {
        /// Skin name.
        name: String,
    },
}

/// `talaria pairing …`.
#[cfg(feature = "gateway")]
#[derive(Debug, Subcommand)]
pub enum PairingCommand {
    /// The pairing requests waiting for approval and the paired users.
    List,
    /// Pair the user who was given CODE on PLATFORM.
    Approve {
        /// The platform (telegram, irc, …).
        platform: String,
        /// The code the user was given.
        code: String,
    },
    /// Unpair USER_ID on PLATFORM.
    Revoke {
        /// The platform.
        platform: String,
        /// The user's id on the platform.
        user_id: String,
    },
}

/// `talaria gateway …`.
#[cfg(feature = "gateway")]
#[derive(Debug, Subcommand)]
pub enum GatewayCommand {
    /// Run this profile's gateway in the foreground (logs on stderr): one
    /// agent behind the chat platforms under `gateway.platforms`.
    Run {
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Whether this profile's gateway runs, and its pid (exit 1 when not).
    Status,
    /// Stop this profile's gateway (SIGTERM) and wait until it ends.
    Stop,
    /// Write a systemd user unit running this profile's gateway, and print
    /// how to enable it (nothing is enabled or started).
    Install,
    /// Remove the unit `install` wrote.
    Uninstall,
}

/// `talaria session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Recent sessions, newest first.
    List {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Only sessions started in the working directory.
        #[arg(long)]
        here: bool,
    },
    /// One session's messages.
    Show {
        /// Session id (a unique prefix is enough).
        id: String,
    },
    /// Full-text search over every message (words and phrases; substrings and CJK in what was
    /// said, not in tool output).
    Search {
        /// What to look for.
        query: String,
        /// Most hits.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Write a session as JSON lines (a header line, then one line per message).
    Export {
        /// Session id (a unique prefix is enough).
        id: String,
        /// File to write (default: stdout).
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
    },
    /// Delete a session and its messages.
    Delete {
        /// Session id (a unique prefix is enough).
        id: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

/// `talaria profile …`.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Create a profile, empty or with the current profile's setup (--clone).
    Create {
        /// Profile name (a-z, 0-9, '-', '_').
        name: String,
        /// Copy config, keys, persona, skills, plugins and grants (not sessions or memory).
        #[arg(long)]
        clone: bool,
    },
    /// Make NAME the profile used when no -p is given.
    Use {
        /// Profile name (`default` for the Talaria home itself).
        name: String,
    },
    /// Every profile; the active one is marked.
    List,
    /// Delete a profile and everything in it.
    Delete {
        /// Profile name.
        name: String,
        /// Do not ask for confirmation.
        #[arg(long)]
        yes: bool,
    },
}

/// `talaria config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The effective configuration (defaults included, keys masked).
    Show,
    /// One value by dotted key, e.g. model.name.
    Get {
        /// Dotted key.
        key: String,
    },
    /// Set one value by dotted key; the result is validated before it is saved.
    Set {
        /// Dotted key, e.g. budget.max_iterations.
        key: String,
        /// The value (YAML: numbers, booleans, lists like [a, b] are typed).
        value: String,
    },
    /// The path of config.yaml.
    Path,
}

/// `talaria import …`.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import a Hermes Agent home: skills, MEMORY.md/USER.md, SOUL.md and the
    /// config keys that map; reports what could not be mapped.
    Hermes {
        /// The Hermes home (default ~/.hermes).
        #[arg(long = "from", value_name = "DIR")]
        from: Option<std::path::PathBuf>,
        /// Replace files that exist already (default: keep them and report).
        #[arg(long)]
        overwrite: bool,
    },
}

/// `talaria plugin …`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    #[command(flatten)]
    Installed(InstalledCommand),
    /// Create a buildable plugin project from a working example: a tool plugin by
    /// default, or with --kind a command, skin, hooks, memory or chat adapter plugin.
    New {
        /// Plugin name (lowercase letters, digits and '-').
        name: String,
        /// Directory to create (default: ./NAME).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Language of the project: rust (default), js, python or zig.
        #[arg(long, value_name = "LANG")]
        lang: Option<String>,
        /// What the plugin provides: tool (default), command (slash commands), skin,
        /// hooks, memory (a memory provider) or adapter (a chat adapter for `talaria
        /// gateway run`). Other languages than Rust have the tool template (Python
        /// also the adapter).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
    },
    /// Build a plugin project into DIR/dist/NAME, ready to drop into a plugin directory.
    Build {
        /// The project directory (default: the working directory).
        dir: Option<std::path::PathBuf>,
    },
    /// Write this version's Rust SDK into a Rust plugin project
    /// (DIR/vendor/talaria-plugin-sdk), replacing the copy `plugin new` made.
    Sdk {
        /// The project directory (default: the working directory).
        dir: Option<std::path::PathBuf>,
    },
    #[command(flatten)]
    Registry(RegistryCommand),
}

/// The `talaria plugin` subcommands about community plugins and indexes.
#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Find plugins in the configured indexes by name or description.
    Search {
        /// Text to look for.
        term: String,
    },
    /// Install plugins: NAME[@REQ] from an index (REQ a semver requirement such as ^1.2),
    /// or PATH to a package archive or directory.
    Install(InstallArgs),
    /// Update installed plugins (all, or the named ones) within their requirement.
    Update {
        /// Plugins to update (default: every plugin installed from an index).
        names: Vec<String>,
        /// Grants for capabilities an update newly asks for: all, none, or CAP,CAP,...
        #[arg(long, value_name = "GRANTS")]
        grant: Option<String>,
    },
    /// Uninstall a plugin: its package, lockfile entry and grants.
    Remove {
        /// Plugin name.
        name: String,
    },
    /// Pack a package directory (plugin.toml + wasm) into NAME-VERSION.tar.gz and print its checksum.
    Pack {
        /// The package directory (default: the working directory).
        dir: Option<std::path::PathBuf>,
        /// Where to write the archive (default: ./NAME-VERSION.tar.gz).
        #[arg(long, short)]
        out: Option<std::path::PathBuf>,
    },
    /// Add a package archive to a directory index, signed (what an index maintainer runs).
    Publish {
        /// The archive made by `talaria plugin pack`.
        archive: std::path::PathBuf,
        /// The index directory (created when missing).
        #[arg(long, value_name = "DIR")]
        index: std::path::PathBuf,
        /// The signing key file (from `talaria plugin keygen`).
        #[arg(long, value_name = "FILE")]
        key: std::path::PathBuf,
        /// Base URL the archive will be served from, when not next to the index.
        #[arg(long, value_name = "URL")]
        url_base: Option<String>,
    },
    /// Create an index signing key; prints the public key for index.json.
    Keygen {
        /// The key file to write (never overwritten).
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
        /// The key id signatures will name.
        #[arg(long, default_value = "main")]
        id: String,
    },
    /// Configure the plugin indexes this profile uses.
    #[command(subcommand)]
    Index(IndexCommand),
}

/// `talaria plugin install`.
#[derive(Debug, Args, Clone)]
pub struct InstallArgs {
    /// NAME[@REQ] or PATH (none with --locked: everything in the lockfile).
    pub specs: Vec<String>,
    /// Look only in this index.
    #[arg(long)]
    pub index: Option<String>,
    /// Install exactly the versions and checksums recorded in the lockfile.
    #[arg(long)]
    pub locked: bool,
    /// Capabilities to grant without asking: all, none, or CAP,CAP,... (as in `plugin grant`).
    #[arg(long, value_name = "GRANTS")]
    pub grant: Option<String>,
    /// Allow replacing an installed version with an older one.
    #[arg(long)]
    pub allow_downgrade: bool,
}

/// `talaria plugin index …`.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Add an index; its keys are fetched and pinned now unless --key is given.
    Add {
        /// A name for it.
        name: String,
        /// Directory, file://, http:// or https:// location of its index.json.
        url: String,
        /// Higher is consulted first (default 0).
        #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
        priority: i32,
        /// Trust exactly this key (ID=BASE64, or BASE64 for the id "main").
        #[arg(long, value_name = "KEY")]
        key: Option<String>,
        /// Accept unsigned entries from this index.
        #[arg(long)]
        allow_unsigned: bool,
        /// Replace an index of the same name.
        #[arg(long)]
        replace: bool,
    },
    /// Remove an index.
    Remove {
        /// Its name.
        name: String,
    },
    /// The configured indexes, in the order they are consulted.
    List,
}

/// The `talaria plugin` subcommands about the plugins found here and what they may do.
#[derive(Debug, Subcommand)]
pub enum InstalledCommand {
    /// Every plugin found: version, what it provides, where it comes from (and, when
    /// installed, from which index or package), requested and granted capabilities.
    List {
        /// Only plugins installed from an index that has a newer version.
        #[arg(long)]
        outdated: bool,
    },
    /// One plugin in full: as found here (its tools, whether it loads) and as the
    /// indexes list it (versions, API ranges, capabilities, signatures).
    Info {
        /// Plugin name.
        name: String,
        /// Look only in this index.
        #[arg(long)]
        index: Option<String>,
    },
    /// Grant a capability the plugin requests: filesystem:PATH[:read-only|read-write],
    /// network:HOST:PORT, env:NAME, exec, kv, session-search, or all; and, for a
    /// native plugin (unsandboxed code), trust-native, which `all` never includes.
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
    /// Attach an image (PNG, JPEG, GIF or WebP) to the prompt; repeat for several. Larger
    /// images are scaled down to fit the model's limits.
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<std::path::PathBuf>,
    /// Print events as JSON lines on stdout (deltas, tool calls, results, usage, final).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Skip approval prompts (commands on the hardline list stay blocked).
    #[arg(long)]
    pub yolo: bool,
    /// Continue the latest session started in this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Resume the session with this id (a unique prefix is enough).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
}

/// Model selection, overriding environment and config.
#[derive(Debug, Args, Default, Clone)]
pub struct ModelArgs {
    /// Wire format of the endpoint: openai, openai-responses or anthropic.
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    fn parse(args: &[&str]) -> Command {
        let cli = Cli::try_parse_from(std::iter::once("talaria").chain(args.iter().copied()));
        cli.expect("parses").command.expect("a subcommand")
    }

    #[test]
    fn mcp_serve_parses_and_its_http_flags_need_http() {
        Cli::command().debug_assert();
        let Command::Mcp(McpCommand::Serve(args)) = parse(&[
            "mcp",
            "serve",
            "--http",
            "127.0.0.1:8765",
            "--allow-host",
            "agent.lan",
            "--key-env",
            "MY_KEY",
        ]) else {
            panic!("mcp serve parses as Serve");
        };
        assert_eq!(args.http, "127.0.0.1:8765".parse().ok());
        assert_eq!(args.allow_hosts, ["agent.lan"]);
        assert_eq!(args.key_env, "MY_KEY");
        assert_eq!((args.max_sessions, args.read_timeout), (16, 10));
        let fails = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("talaria").chain(args.iter().copied())).is_err()
        };
        assert!(fails(&["mcp", "serve", "--allow-remote"]));
        assert!(fails(&["mcp", "serve", "--key-env", "K"]));
        assert!(fails(&["mcp", "serve", "--http", "localhost"]));
        assert!(fails(&[
            "mcp",
            "serve",
            "--http",
            "127.0.0.1:1",
            "--max-sessions",
            "0"
        ]));
    }

    #[test]
    fn group_names_are_singular_and_plurals_are_hidden_aliases() {
        let cli = Cli::command();
        for (name, plural) in [
            ("plugin", "plugins"),
            ("session", "sessions"),
            ("command", "commands"),
        ] {
            let group = cli.find_subcommand(name).expect(name);
            assert_eq!(group.get_all_aliases().collect::<Vec<_>>(), [plural]);
            assert_eq!(group.get_visible_aliases().count(), 0, "{name}");
        }
        let visible: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
        for plural in ["plugins", "sessions", "commands", "profiles", "skins"] {
            assert!(!visible.contains(&plural), "{visible:?}");
        }
    }

    #[test]
    fn the_plural_spellings_parse_as_the_singular_groups() {
        assert!(matches!(
            parse(&["plugins", "list"]),
            Command::Plugin(PluginCommand::Installed(InstalledCommand::List {
                outdated: false
            }))
        ));
        assert!(matches!(
            parse(&["plugins", "grant", "fs", "exec"]),
            Command::Plugin(PluginCommand::Installed(InstalledCommand::Grant { .. }))
        ));
        assert!(matches!(
            parse(&["plugins", "install", "noop"]),
            Command::Plugin(PluginCommand::Registry(RegistryCommand::Install(_)))
        ));
        assert!(matches!(
            parse(&["plugin", "list", "--outdated"]),
            Command::Plugin(PluginCommand::Installed(InstalledCommand::List {
                outdated: true
            }))
        ));
        assert!(matches!(
            parse(&["plugin", "info", "noop", "--index", "main"]),
            Command::Plugin(PluginCommand::Installed(InstalledCommand::Info {
                index: Some(_),
                ..
            }))
        ));
        assert!(matches!(
            parse(&["sessions", "list"]),
            Command::Session(SessionCommand::List { .. })
        ));
        assert!(matches!(
            parse(&["commands", "--json"]),
            Command::SlashCommands(SlashCommandArgs { json: true, .. })
        ));
    }
}
