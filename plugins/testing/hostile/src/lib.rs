//! Test plugin `hostile`: tools that try to escape the sandbox or break the
//! host, for the host's tests. Each probe returns what happened as JSON
//! (`{"ok": true, …}` or `{"ok": false, "error": …}`) so a test can assert on
//! it; `spin`, `hog` and `panic` never return, and `bad_json` returns a
//! result that is not JSON.
//!
//! The manifest grants only the working directory, read-only, with 32 MB of
//! memory and 2 s per call.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use talaria_plugin_sdk::{
    CallContext, HostError, Json, NoArgs, Tool, ToolError, ToolFlags, ToolProvider, ToolSet,
    ToolSpec, config, exec, kv,
};

/// The outcome of a failed I/O operation.
fn io_outcome(e: &std::io::Error) -> Value {
    json!({
        "ok": false,
        "error": e.to_string(),
        "kind": format!("{:?}", e.kind()),
        "os_error": e.raw_os_error(),
    })
}

/// The outcome of a host import that returned an error.
fn host_outcome(e: &HostError) -> Value {
    let kind = match e {
        HostError::Denied(_) => "denied",
        HostError::NotFound(_) => "not-found",
        HostError::Failed(_) => "failed",
    };
    json!({ "ok": false, "error": { "kind": kind, "message": e.message() } })
}

#[derive(Deserialize, JsonSchema)]
pub struct PathArgs {
    /// Any path: absolute, relative, with `..`, through a symlink.
    pub path: String,
}

/// `read_file_at`: reads any path with `std::fs`.
#[derive(Default)]
pub struct ReadFileAt;

impl Tool for ReadFileAt {
    const NAME: &'static str = "read_file_at";
    const DESCRIPTION: &'static str = "Reads any path as text (at most 64 KB)";
    type Args = PathArgs;

    fn call(&self, args: PathArgs, _: &CallContext) -> Result<Value, ToolError> {
        let file = std::fs::File::open(&args.path);
        let mut text = String::new();
        Ok(
            match file.and_then(|f| f.take(64 * 1024).read_to_string(&mut text)) {
                Ok(_) => json!({ "ok": true, "content": text }),
                Err(e) => io_outcome(&e),
            },
        )
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Any path.
    pub path: String,
    /// What to write.
    pub content: String,
}

/// `write_file_at`: writes any path (the grant is read-only).
#[derive(Default)]
pub struct WriteFileAt;

impl Tool for WriteFileAt {
    const NAME: &'static str = "write_file_at";
    const DESCRIPTION: &'static str = "Writes any path";
    type Args = WriteArgs;

    fn call(&self, args: WriteArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(match std::fs::write(&args.path, args.content) {
            Ok(()) => json!({ "ok": true }),
            Err(e) => io_outcome(&e),
        })
    }
}

/// `list_dir`: lists any directory.
#[derive(Default)]
pub struct ListDir;

impl Tool for ListDir {
    const NAME: &'static str = "list_dir";
    const DESCRIPTION: &'static str = "Lists the names in any directory";
    type Args = PathArgs;

    fn call(&self, args: PathArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(match std::fs::read_dir(&args.path) {
            Ok(entries) => {
                let mut names: Vec<String> = entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect();
                names.sort();
                json!({ "ok": true, "names": names })
            }
            Err(e) => io_outcome(&e),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ConnectArgs {
    /// `host:port` or `ip:port`.
    pub addr: String,
    /// A failed connection fails the call, with words of its own (as
    /// Python's `urllib` does), instead of reporting the I/O error.
    #[serde(default)]
    pub fail: bool,
}

/// `connect`: opens a TCP connection.
#[derive(Default)]
pub struct Connect;

impl Tool for Connect {
    const NAME: &'static str = "connect";
    const DESCRIPTION: &'static str = "Opens a TCP connection to addr";
    type Args = ConnectArgs;

    fn call(&self, args: ConnectArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(match std::net::TcpStream::connect(&args.addr) {
            Ok(s) => json!({ "ok": true, "peer": s.peer_addr().map(|a| a.to_string()).ok() }),
            Err(_) if args.fail => {
                return Err(ToolError::Failed(
                    "ConnectionError: the connection failed".into(),
                ));
            }
            Err(e) => io_outcome(&e),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct HttpGetArgs {
    /// `http://host:port/path`.
    pub url: String,
    /// Request headers (values may name secrets: `{{secret:NAME}}`).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// A failed request fails the call, with words of its own (as the
    /// JavaScript and Python runtimes do), instead of reporting the host's.
    #[serde(default)]
    pub fail: bool,
}

/// `http_get`: an outgoing HTTP request through `wasi:http`.
#[derive(Default)]
pub struct HttpGet;

impl Tool for HttpGet {
    const NAME: &'static str = "http_get";
    const DESCRIPTION: &'static str = "GETs url over wasi:http";
    type Args = HttpGetArgs;

    fn call(&self, args: HttpGetArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(
            match args
                .headers
                .iter()
                .fold(
                    talaria_plugin_sdk::http::Request::get(&args.url),
                    |r, (k, v)| r.header(k, v),
                )
                .timeout_ms(1500)
                .send()
            {
                Ok(r) => json!({ "ok": true, "status": r.status, "body": r.text() }),
                Err(_) if args.fail => {
                    return Err(ToolError::Failed("NetworkError: the fetch failed".into()));
                }
                Err(e) => host_outcome(&e),
            },
        )
    }
}

/// `spin`: loops forever (the host's timeout must stop it).
#[derive(Default)]
pub struct Spin;

impl Tool for Spin {
    const NAME: &'static str = "spin";
    const DESCRIPTION: &'static str = "Loops forever";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

/// `hog`: allocates and touches memory without bound (the host's memory
/// limit must stop it; the failed allocation aborts, which is a trap).
#[derive(Default)]
pub struct Hog;

impl Tool for Hog {
    const NAME: &'static str = "hog";
    const DESCRIPTION: &'static str = "Allocates memory until it fails";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            // `vec![1; n]` writes every byte, so the pages are really used.
            hoard.push(vec![1u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }
}

/// `panic`: panics (a trap for the host).
#[derive(Default)]
pub struct Panic;

impl Tool for Panic {
    const NAME: &'static str = "panic";
    const DESCRIPTION: &'static str = "Panics";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        panic!("the hostile plugin panics on purpose")
    }
}

/// `bad_json`: its result is not JSON. The provider below answers it
/// without the SDK's serialisation; this type only gives its spec.
#[derive(Default)]
pub struct BadJson;

/// What `bad_json` returns.
pub const BAD_JSON: &str = "{\"unterminated\": [1, 2";

impl Tool for BadJson {
    const NAME: &'static str = "bad_json";
    const DESCRIPTION: &'static str = "Returns a result that is not valid JSON";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(Value::String(BAD_JSON.into()))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ExecArgs {
    /// The program to run.
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
}

/// `exec`: runs a program through the exec import (not granted).
#[derive(Default)]
pub struct Exec;

impl Tool for Exec {
    const NAME: &'static str = "exec";
    const DESCRIPTION: &'static str = "Runs a program through the host";
    type Args = ExecArgs;

    fn call(&self, args: ExecArgs, _: &CallContext) -> Result<Value, ToolError> {
        let command = exec::Command::new(args.program).args(args.args);
        Ok(match exec::run(&command) {
            Ok(out) => json!({
                "ok": true,
                "status": out.status,
                "stdout": out.stdout_text(),
                "stderr": out.stderr_text(),
                "timed_out": out.timed_out,
            }),
            Err(e) => host_outcome(&e),
        })
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ConfigArgs {
    /// A config key or an environment variable name.
    pub name: String,
}

/// `config`: reads a config value or environment variable.
#[derive(Default)]
pub struct Config;

impl Tool for Config {
    const NAME: &'static str = "config";
    const DESCRIPTION: &'static str = "Reads a config value or environment variable";
    type Args = ConfigArgs;

    fn call(&self, args: ConfigArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(match config::get(&args.name) {
            Ok(value) => json!({ "ok": true, "value": value }),
            Err(e) => host_outcome(&e),
        })
    }
}

/// `kv_roundtrip`: sets a key and reads it back (kv is not granted).
#[derive(Default)]
pub struct KvRoundtrip;

impl Tool for KvRoundtrip {
    const NAME: &'static str = "kv_roundtrip";
    const DESCRIPTION: &'static str = "Stores a value in the kv store and reads it back";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        if let Err(e) = kv::set("hostile", b"roundtrip") {
            return Ok(host_outcome(&e));
        }
        Ok(match kv::get_string("hostile") {
            Ok(value) => json!({ "ok": true, "value": value }),
            Err(e) => host_outcome(&e),
        })
    }
}

/// `env_vars`: the environment the component sees (should be empty).
#[derive(Default)]
pub struct EnvVars;

impl Tool for EnvVars {
    const NAME: &'static str = "env_vars";
    const DESCRIPTION: &'static str = "Lists the environment variables the component sees";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        let vars: serde_json::Map<String, Value> = std::env::vars()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        Ok(json!({ "ok": true, "vars": vars, "args": std::env::args().collect::<Vec<_>>() }))
    }
}

/// `context`: echoes the call context.
#[derive(Default)]
pub struct Context;

impl Tool for Context {
    const NAME: &'static str = "context";
    const DESCRIPTION: &'static str = "Returns the call context";
    type Args = NoArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only()
    }

    fn call(&self, _: NoArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        Ok(json!({
            "ok": true,
            "session_id": ctx.session_id,
            "call_id": ctx.call_id,
            "cwd": ctx.cwd,
        }))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct AskModelArgs {
    /// The question, sent as the user message.
    pub prompt: String,
}

/// `ask_model`: one request to the session's auxiliary model.
#[derive(Default)]
pub struct AskModel;

impl Tool for AskModel {
    const NAME: &'static str = "ask_model";
    const DESCRIPTION: &'static str = "Asks the auxiliary model";
    type Args = AskModelArgs;

    fn call(&self, args: AskModelArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(
            match talaria_plugin_sdk::auxiliary::complete("Answer briefly.", &args.prompt, 100_000)
            {
                Ok(answer) => json!({ "ok": true, "answer": answer }),
                Err(e) => host_outcome(&e),
            },
        )
    }
}

/// Every tool (`bad_json` last).
pub type Tools = (
    (ReadFileAt, WriteFileAt, ListDir, Connect, Spin, Hog, Panic),
    (
        Exec,
        Config,
        KvRoundtrip,
        EnvVars,
        Context,
        HttpGet,
        AskModel,
        BadJson,
    ),
);

/// The provider, written by hand so `bad_json` can return raw text.
pub struct Hostile;

impl ToolProvider for Hostile {
    fn list_tools() -> Vec<ToolSpec> {
        Tools::specs()
    }

    fn call_tool(name: String, arguments: Json, context: CallContext) -> Result<Json, ToolError> {
        talaria_plugin_sdk::install_panic_hook();
        if name == BadJson::NAME {
            return Ok(BAD_JSON.to_string());
        }
        talaria_plugin_sdk::dispatch::<Tools>(&name, &arguments, &context)
    }
}

talaria_plugin_sdk::export_tool_provider!(Hostile);
