use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::*;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    /// Fast.
    Quick,
    Thorough,
}

/// Arguments (this doc comment must not reach the schema root).
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// File to read.
    path: String,
    /// 1-based
    /// first line.
    offset: Option<u32>,
    limit: Option<usize>,
    mode: Option<Mode>,
    #[serde(default)]
    verbose: bool,
}

#[derive(Default)]
struct Read;

impl Tool for Read {
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str = "Reads";
    type Args = ReadArgs;

    fn flags() -> ToolFlags {
        ToolFlags::read_only().with_path_argument("path")
    }

    fn call(&self, args: ReadArgs, ctx: &CallContext) -> Result<Value, ToolError> {
        if args.path == "boom" {
            return Err(ToolError::failed("boom"));
        }
        Ok(json!({ "path": args.path, "offset": args.offset, "cwd": ctx.cwd }))
    }
}

#[derive(Default)]
struct Ping;

impl Tool for Ping {
    const NAME: &'static str = "ping";
    const DESCRIPTION: &'static str = "Pong";
    type Args = NoArgs;

    fn call(&self, _: NoArgs, _: &CallContext) -> Result<Value, ToolError> {
        Ok(json!("pong"))
    }
}

fn ctx() -> CallContext {
    CallContext {
        session_id: "s1".into(),
        call_id: "c1".into(),
        cwd: Some("/work".into()),
    }
}

#[test]
fn schema_is_a_clean_object_schema() {
    let schema = parameters_schema::<ReadArgs>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["path"]));
    for noise in ["$schema", "title", "description", "$defs"] {
        assert!(schema.get(noise).is_none(), "{noise} in {schema}");
    }
    let props = &schema["properties"];
    assert_eq!(
        props["path"],
        json!({"type": "string", "description": "File to read."})
    );
    // Optional: no null in the type, no integer format, a description kept.
    assert_eq!(props["offset"]["type"], "integer");
    assert_eq!(props["offset"]["description"], "1-based first line.");
    assert!(props["offset"].get("format").is_none());
    assert_eq!(props["limit"]["type"], "integer");
    // An optional enum is inlined as a plain `enum`, without the null
    // alternative; variant docs go to the description.
    let mode = &props["mode"];
    assert_eq!(mode["type"], "string");
    let mut values: Vec<&str> = mode["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    values.sort();
    assert_eq!(values, ["quick", "thorough"]);
    assert_eq!(mode["description"], "\"quick\": Fast.");
    for noise in ["anyOf", "oneOf", "$ref"] {
        assert!(mode.get(noise).is_none(), "{mode}");
    }
    assert_eq!(props["verbose"]["type"], "boolean");
}

#[test]
fn no_args_schema_is_an_empty_object() {
    let schema = parameters_schema::<NoArgs>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"], json!({}));
}

#[test]
fn spec_carries_name_description_schema_and_flags() {
    let read = crate::spec::<Read>();
    assert_eq!(read.name, "read");
    assert_eq!(read.description, "Reads");
    let params: Value = serde_json::from_str(&read.parameters).unwrap();
    assert_eq!(params, parameters_schema::<ReadArgs>());
    assert!(read.flags.read_only && !read.flags.never_parallel);
    assert_eq!(read.flags.path_argument.as_deref(), Some("path"));
    let ping = crate::spec::<Ping>();
    assert!(!ping.flags.read_only && ping.flags.path_argument.is_none());
}

#[test]
fn missing_field_is_invalid_arguments_listing_parameters() {
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Read>(r#"{"offset": 3}"#) else {
        panic!("expected invalid arguments");
    };
    assert!(
        msg.starts_with("missing field `path`. read expects an object with:"),
        "{msg}"
    );
    assert!(msg.contains("path (string, required)"), "{msg}");
    assert!(msg.contains("offset (integer)"), "{msg}");
    assert!(!msg.contains("at line"), "{msg}");
}

#[test]
fn wrong_type_and_bad_json_are_invalid_arguments() {
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Read>(r#"{"path": 7}"#) else {
        panic!("expected invalid arguments");
    };
    assert!(
        msg.contains("invalid type: integer `7`, expected a string"),
        "{msg}"
    );
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Read>(r#"{"path": "#) else {
        panic!("expected invalid arguments");
    };
    assert!(msg.starts_with("the arguments are not valid JSON"), "{msg}");
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Read>(r#"{"path":"a","mode":"x"}"#)
    else {
        panic!("expected invalid arguments");
    };
    assert!(msg.contains("unknown variant `x`"), "{msg}");
    assert!(msg.contains(r#"mode (one of "#), "{msg}");
    assert!(
        msg.contains(r#""quick""#) && msg.contains(r#""thorough""#),
        "{msg}"
    );
}

#[test]
fn empty_or_null_arguments_mean_an_empty_object() {
    for text in ["", "  ", "null", "{}"] {
        assert!(parse_args::<Ping>(text).is_ok(), "{text:?}");
    }
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Read>("") else {
        panic!("expected invalid arguments");
    };
    assert!(msg.contains("missing field `path`"), "{msg}");
    let Err(ToolError::InvalidArguments(msg)) = parse_args::<Ping>("[1]") else {
        panic!("expected invalid arguments");
    };
    assert!(msg.contains("ping expects no arguments"), "{msg}");
}

#[test]
fn dispatch_by_name_and_unknown_names() {
    type Tools = (Read, Ping);
    let out = dispatch::<Tools>("read", r#"{"path":"a.txt","offset":2}"#, &ctx()).unwrap();
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out, json!({"path": "a.txt", "offset": 2, "cwd": "/work"}));
    assert_eq!(
        dispatch::<Tools>("ping", "{}", &ctx()),
        Ok("\"pong\"".into())
    );
    assert_eq!(
        dispatch::<Tools>("read", r#"{"path":"boom"}"#, &ctx()),
        Err(ToolError::Failed("boom".into()))
    );
    assert_eq!(
        dispatch::<Tools>("write", "{}", &ctx()),
        Err(ToolError::InvalidArguments(
            "unknown tool `write`; this plugin provides: read, ping".into()
        ))
    );
    assert_eq!(Tools::names(), ["read", "ping"]);
    let specs: Vec<String> = Tools::specs().into_iter().map(|s| s.name).collect();
    assert_eq!(specs, ["read", "ping"]);
}

#[test]
fn validate_catches_duplicates() {
    assert_eq!(validate::<(Read, Ping)>(), Ok(()));
    let err = validate::<(Read, Ping, Read)>().unwrap_err();
    assert!(err.contains("duplicate tool name `read`"), "{err}");
}

#[test]
fn errors_display_and_convert() {
    assert_eq!(ToolError::invalid("x").to_string(), "invalid arguments: x");
    assert_eq!(ToolError::failed("x").to_string(), "x");
    assert_eq!(ToolError::denied("no").message(), "no");
    let denied: ToolError = HostError::Denied("exec not granted".into()).into();
    assert_eq!(denied, ToolError::Denied("exec not granted".into()));
    let failed: ToolError = HostError::NotFound("k".into()).into();
    assert_eq!(failed, ToolError::Failed("not found: k".into()));
    assert_eq!(
        HostError::Denied("kv".into()).to_string(),
        "denied by the host: kv"
    );
}

#[test]
fn host_imports_fail_cleanly_outside_a_component() {
    log::info("native log goes to stderr");
    assert!(matches!(config::get("x"), Err(HostError::Failed(_))));
    assert!(matches!(kv::set("k", b"v"), Err(HostError::Failed(_))));
    assert!(matches!(kv::list_keys(""), Err(HostError::Failed(_))));
    let cmd = exec::Command::new("git")
        .arg("status")
        .args(["--short", "-b"])
        .env("A", "1")
        .timeout_ms(5);
    assert_eq!(cmd.args, ["status", "--short", "-b"]);
    assert_eq!(cmd.timeout_ms, Some(5));
    assert!(matches!(exec::run(&cmd), Err(HostError::Failed(_))));
    assert!(matches!(
        session_search::search("q", 3),
        Err(HostError::Failed(_))
    ));
}

/// A provider that counts its turns, for `export_memory!`'s glue.
struct Counter {
    turns: usize,
    session: String,
}

impl Memory for Counter {
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
        if scope.session_id.is_empty() {
            return Err("no session".into());
        }
        let options = ProviderOptions {
            write_in_secondary: scope.kind == SessionKind::Cron,
        };
        Ok((
            Counter {
                turns: 0,
                session: scope.session_id,
            },
            options,
        ))
    }

    fn prefetch(&mut self, query: String) -> Result<String, String> {
        Ok(format!(
            "{} turns before {query:?} in {}",
            self.turns, self.session
        ))
    }

    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
        self.turns += turn.len();
        Ok(())
    }
}

crate::export_memory!(Counter);

#[test]
fn export_memory_keeps_the_provider_between_calls() {
    use crate::memory_bindings::exports::talaria::plugin::memory_lifecycle::Guest as Lifecycle;
    use crate::memory_bindings::exports::talaria::plugin::memory_provider::Guest as Provider;
    let info = SessionInfo {
        session_id: "s".into(),
        surface: "cli".into(),
        model: "m".into(),
    };
    assert_eq!(
        <__TalariaMemoryPlugin as Provider>::prefetch(info.clone(), "q".into()),
        Err("the memory provider was not initialized".into()),
        "nothing before initialize"
    );
    let scope = |session: &str| MemoryScope {
        session_id: session.into(),
        kind: SessionKind::Cron,
        platform: "cli".into(),
        profile: "default".into(),
        user_id: None,
        parent_session: None,
        model: "m".into(),
    };
    assert_eq!(
        <__TalariaMemoryPlugin as Lifecycle>::initialize(scope("")).err(),
        Some("no session".into())
    );
    let options = <__TalariaMemoryPlugin as Lifecycle>::initialize(scope("s1")).unwrap();
    assert!(options.write_in_secondary);
    let message = Message {
        role: Role::User,
        content: "hi".into(),
        tool_call_id: None,
        name: None,
    };
    <__TalariaMemoryPlugin as Provider>::sync_turn(info.clone(), vec![message.clone(), message])
        .unwrap();
    assert_eq!(
        <__TalariaMemoryPlugin as Provider>::prefetch(info, "next".into()),
        Ok("2 turns before \"next\" in s1".into())
    );
    assert_eq!(
        <__TalariaMemoryPlugin as Lifecycle>::system_prompt_block(),
        None
    );
}
