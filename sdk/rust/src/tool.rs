//! The [`Tool`] trait, schema derivation, argument parsing and dispatch.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{CallContext, ToolError, ToolFlags, ToolSpec};

/// One tool the model can call.
///
/// A fresh value is made with [`Default`] for every call (the host also gives
/// the plugin a fresh instance per call, so there is no state to keep).
pub trait Tool: Default {
    /// The name the model calls the tool by (`[a-z0-9_]+` by convention).
    const NAME: &'static str;
    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;
    /// The arguments object. Its JSON Schema (derived with `schemars`) is the
    /// tool's `parameters`; doc comments on fields become descriptions.
    type Args: DeserializeOwned + JsonSchema;

    /// How the scheduler may run calls of this tool; by default none of the
    /// flags is set (may have side effects, touches no particular path).
    fn flags() -> ToolFlags {
        ToolFlags::default()
    }

    /// Runs the tool. The value is returned to the model as JSON text.
    fn call(&self, args: Self::Args, ctx: &CallContext) -> Result<Value, ToolError>;
}

/// Arguments of a tool that takes none: the schema is an empty object.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

impl ToolFlags {
    /// No side effects; may run in parallel with anything read-only.
    pub fn read_only() -> Self {
        Self {
            read_only: true,
            ..Self::default()
        }
    }

    /// Never run alongside another call.
    pub fn never_parallel() -> Self {
        Self {
            never_parallel: true,
            ..Self::default()
        }
    }

    /// Calls touching overlapping values of the argument `name` (a path) never
    /// run in parallel.
    #[must_use]
    pub fn with_path_argument(mut self, name: impl Into<String>) -> Self {
        self.path_argument = Some(name.into());
        self
    }
}

/// The JSON Schema of an arguments type, as a tool's `parameters`: an object
/// schema with `properties` and `required`, subschemas inlined, and without
/// the noise models do not need (`$schema`, the root `title`/`description`,
/// `null` in the types of optional properties, integer `format`s).
pub fn parameters_schema<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        for key in ["$schema", "title", "description"] {
            root.remove(key);
        }
        root.entry("type").or_insert_with(|| "object".into());
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    tidy(&mut value);
    value
}

/// Simplifies a schema in place, recursively (see [`parameters_schema`]).
fn tidy(value: &mut Value) {
    let Value::Object(obj) = value else { return };
    if let Some(Value::String(d)) = obj.get_mut("description") {
        *d = unwrap_lines(d);
    }
    consts_to_enum(obj);
    if obj
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("int") || f.starts_with("uint"))
    {
        obj.remove("format");
    }
    let required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                drop_null(prop);
            }
            tidy(prop);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            tidy(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(subs)) = obj.get_mut(key) {
            subs.iter_mut().for_each(tidy);
        }
    }
}

/// Joins the lines of a paragraph (doc comments wrap at the source's width);
/// blank lines still separate paragraphs.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|para| {
            para.split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `oneOf: [{const: "a", description: …}, …]` (an enum whose variants have
/// doc comments) becomes the plainer `enum: ["a", …]` that every provider
/// accepts; the variants' descriptions are kept in the description when it
/// has none.
fn consts_to_enum(obj: &mut Map<String, Value>) {
    let Some(Value::Array(alternatives)) = obj.get("oneOf").or_else(|| obj.get("anyOf")) else {
        return;
    };
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for alt in alternatives {
        let Some(value) = alt.get("const").or_else(|| {
            alt.get("enum")
                .and_then(Value::as_array)
                .filter(|e| e.len() == 1)
                .and_then(|e| e.first())
        }) else {
            return;
        };
        if let Some(d) = alt.get("description").and_then(Value::as_str) {
            notes.push(format!("{value}: {}", unwrap_lines(d)));
        }
        values.push(value.clone());
    }
    if values.is_empty() {
        return;
    }
    obj.remove("oneOf");
    obj.remove("anyOf");
    if values.iter().all(Value::is_string) {
        obj.insert("type".into(), "string".into());
    }
    obj.insert("enum".into(), Value::Array(values));
    if !obj.contains_key("description") && !notes.is_empty() {
        obj.insert("description".into(), notes.join("; ").into());
    }
}

/// An optional property may be absent; `null` as a value adds nothing but
/// type unions some providers reject. Turns `["T", "null"]` into `"T"`,
/// `anyOf: [S, {type: null}]` into `S`, and drops `"default": null`.
fn drop_null(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    if obj.get("default").is_some_and(Value::is_null) {
        obj.remove("default");
    }
    if let Some(Value::Array(types)) = obj.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() < types.len() {
            let collapsed = match <[Value; 1]>::try_from(rest) {
                Ok([single]) => single,
                Err(rest) => Value::Array(rest),
            };
            obj.insert("type".into(), collapsed);
        }
    }
    let is_null = |v: &Value| v.get("type").is_some_and(|t| t == "null");
    let Some(Value::Array(any)) = obj.get("anyOf") else {
        return;
    };
    if any.len() != 2 || !any.iter().any(is_null) {
        return;
    }
    let Some(Value::Object(inner)) = any.iter().find(|v| !is_null(v)).cloned() else {
        return;
    };
    obj.remove("anyOf");
    for (k, v) in inner {
        obj.entry(k).or_insert(v);
    }
}

/// The [`ToolSpec`] of `T`.
pub fn spec<T: Tool>() -> ToolSpec {
    ToolSpec {
        name: T::NAME.to_string(),
        description: T::DESCRIPTION.to_string(),
        parameters: parameters_schema::<T::Args>().to_string(),
        flags: T::flags(),
    }
}

/// Parses the argument JSON of a call to `T`. Empty text and `null` count as
/// `{}`. A failure is [`ToolError::InvalidArguments`] naming the problem and
/// listing the expected parameters.
pub fn parse_args<T: Tool>(arguments: &str) -> Result<T::Args, ToolError> {
    let text = arguments.trim();
    let text = if text.is_empty() || text == "null" {
        "{}"
    } else {
        text
    };
    serde_json::from_str(text).map_err(|e| {
        let problem = if e.is_syntax() || e.is_eof() {
            format!("the arguments are not valid JSON ({e})")
        } else {
            // serde's message without the position suffix when it is the
            // whole (one-line) text: "missing field `path`".
            let msg = e.to_string();
            match msg.rsplit_once(" at line ") {
                Some((head, _)) if !text.contains('\n') => head.to_string(),
                _ => msg,
            }
        };
        ToolError::InvalidArguments(format!(
            "{problem}. {} expects {}",
            T::NAME,
            describe_parameters(&parameters_schema::<T::Args>())
        ))
    })
}

/// "an object with: path (string, required), limit (integer)".
fn describe_parameters(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "an object".into();
    };
    if props.is_empty() {
        return "no arguments ({})".into();
    }
    let fields: Vec<String> = props
        .iter()
        .map(|(name, prop)| {
            let values = enum_values(prop);
            let kind = if !values.is_empty() {
                let values: Vec<String> = values
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect();
                format!("one of {}", values.join(", "))
            } else {
                match prop.get("type") {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(ts)) => ts
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("|"),
                    _ => "any".into(),
                }
            };
            if required.contains(&name.as_str()) {
                format!("{name} ({kind}, required)")
            } else {
                format!("{name} ({kind})")
            }
        })
        .collect();
    format!("an object with: {}", fields.join(", "))
}

/// The allowed values of an enum schema: `enum`, `const`, or those of the
/// alternatives of a `oneOf`/`anyOf`; empty for other schemas.
fn enum_values(schema: &Value) -> Vec<&Value> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().collect();
    }
    if let Some(value) = schema.get("const") {
        return vec![value];
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .flat_map(enum_values)
        .collect()
}

/// Runs one call of `T`: parses `arguments`, calls the tool and serialises
/// its result to JSON text.
pub fn invoke<T: Tool>(arguments: &str, ctx: &CallContext) -> Result<String, ToolError> {
    let args = parse_args::<T>(arguments)?;
    let value = T::default().call(args, ctx)?;
    Ok(value.to_string())
}

/// A set of tools: a [`Tool`] or a tuple of up to 16 of them.
pub trait ToolSet {
    /// The specs, in order.
    fn specs() -> Vec<ToolSpec>;
    /// The tool names, in order.
    fn names() -> Vec<&'static str>;
    /// Runs the tool called `name`; `None` when no tool has that name.
    fn try_call(
        name: &str,
        arguments: &str,
        ctx: &CallContext,
    ) -> Option<Result<String, ToolError>>;
}

impl<T: Tool> ToolSet for T {
    fn specs() -> Vec<ToolSpec> {
        vec![spec::<T>()]
    }

    fn names() -> Vec<&'static str> {
        vec![T::NAME]
    }

    fn try_call(
        name: &str,
        arguments: &str,
        ctx: &CallContext,
    ) -> Option<Result<String, ToolError>> {
        (name == T::NAME).then(|| invoke::<T>(arguments, ctx))
    }
}

macro_rules! tuple_tool_set {
    ($($t:ident),+) => {
        impl<$($t: ToolSet),+> ToolSet for ($($t,)+) {
            fn specs() -> Vec<ToolSpec> {
                let mut all = Vec::new();
                $(all.extend($t::specs());)+
                all
            }

            fn names() -> Vec<&'static str> {
                let mut all = Vec::new();
                $(all.extend($t::names());)+
                all
            }

            fn try_call(
                name: &str,
                arguments: &str,
                ctx: &CallContext,
            ) -> Option<Result<String, ToolError>> {
                $(if let Some(result) = $t::try_call(name, arguments, ctx) {
                    return Some(result);
                })+
                None
            }
        }
    };
}

tuple_tool_set!(A);
tuple_tool_set!(A, B);
tuple_tool_set!(A, B, C);
tuple_tool_set!(A, B, C, D);
tuple_tool_set!(A, B, C, D, E);
tuple_tool_set!(A, B, C, D, E, F);
tuple_tool_set!(A, B, C, D, E, F, G);
tuple_tool_set!(A, B, C, D, E, F, G, H);
tuple_tool_set!(A, B, C, D, E, F, G, H, I);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K, L);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K, L, M);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O);
tuple_tool_set!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P);

/// Runs the tool of `S` called `name`. An unknown name is
/// [`ToolError::InvalidArguments`] listing the known names.
pub fn dispatch<S: ToolSet>(
    name: &str,
    arguments: &str,
    ctx: &CallContext,
) -> Result<String, ToolError> {
    S::try_call(name, arguments, ctx).unwrap_or_else(|| {
        Err(ToolError::InvalidArguments(format!(
            "unknown tool `{name}`; this plugin provides: {}",
            S::names().join(", ")
        )))
    })
}

/// Checks a tool set for mistakes a unit test should catch: duplicate or
/// empty names, empty descriptions, parameters that are not an object schema,
/// and a path argument that is not a property.
pub fn validate<S: ToolSet>() -> Result<(), String> {
    let specs = S::specs();
    let mut seen = std::collections::HashSet::new();
    for spec in &specs {
        if spec.name.is_empty() || !seen.insert(spec.name.as_str()) {
            return Err(format!("empty or duplicate tool name `{}`", spec.name));
        }
        if spec.description.trim().is_empty() {
            return Err(format!("tool `{}` has no description", spec.name));
        }
        let schema: Value = serde_json::from_str(&spec.parameters)
            .map_err(|e| format!("tool `{}`: parameters are not JSON: {e}", spec.name))?;
        if schema.get("type") != Some(&Value::from("object")) {
            return Err(format!(
                "tool `{}`: parameters are not an object schema",
                spec.name
            ));
        }
        if let Some(arg) = &spec.flags.path_argument
            && schema.pointer(&format!("/properties/{arg}")).is_none()
        {
            return Err(format!(
                "tool `{}`: path argument `{arg}` is not a parameter",
                spec.name
            ));
        }
    }
    Ok(())
}
