//! The Python side of `execute_code`: the generated `talaria_tools` module
//! (one function per whitelisted tool, keyword arguments named as in Hermes)
//! and the small runner that makes it importable under `python3 -I`.

use std::fmt::Write as _;

/// One tool the script may call, as a Python function.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PyTool {
    /// The tool's name (and the function's).
    pub name: &'static str,
    /// Parameters in signature order: the name and, for optional ones, the
    /// default as a Python literal (`None` in Rust = required).
    pub params: &'static [(&'static str, Option<&'static str>)],
    /// The function's docstring.
    pub doc: &'static str,
}

/// The tools a script may call: the file, terminal and web tools. Anything
/// else (memory, skills, delegation, `execute_code` itself…) stays with the
/// model, where the user sees each call.
pub(crate) const PY_TOOLS: &[PyTool] = &[
    PyTool {
        name: "read_file",
        params: &[
            ("path", None),
            ("offset", Some("None")),
            ("limit", Some("None")),
        ],
        doc: "Read a text file; returns a dict whose 'content' holds numbered lines.",
    },
    PyTool {
        name: "write_file",
        params: &[("path", None), ("content", None)],
        doc: "Create or overwrite a text file with `content`.",
    },
    PyTool {
        name: "patch",
        params: &[
            ("path", Some("None")),
            ("old_string", Some("None")),
            ("new_string", Some("None")),
            ("replace_all", Some("None")),
            ("mode", Some("\"replace\"")),
            ("patch", Some("None")),
        ],
        doc: "Edit a file: replace `old_string` by `new_string` in `path` (mode \"replace\"), \
              or apply a unified diff given as `patch` (mode \"patch\").",
    },
    PyTool {
        name: "search_files",
        params: &[
            ("pattern", None),
            ("target", Some("None")),
            ("path", Some("None")),
            ("file_glob", Some("None")),
            ("limit", Some("None")),
            ("offset", Some("None")),
            ("output_mode", Some("None")),
            ("context", Some("None")),
        ],
        doc: "Search file contents for a regex (target \"content\") or file names (target \"files\").",
    },
    PyTool {
        name: "terminal",
        params: &[
            ("command", None),
            ("background", Some("None")),
            ("timeout", Some("None")),
            ("workdir", Some("None")),
            ("pty", Some("None")),
        ],
        doc: "Run a shell command (approval rules apply); returns a dict with 'output' and 'exit_code'.",
    },
    PyTool {
        name: "web_search",
        params: &[("query", None), ("limit", Some("None"))],
        doc: "Search the web.",
    },
    PyTool {
        name: "web_extract",
        params: &[("urls", None), ("char_limit", Some("None"))],
        doc: "Fetch web pages (a list of URLs) as text.",
    },
];

/// Whether a script may call `tool` at all (whether the session offers it is
/// a separate question).
pub(crate) fn whitelisted(tool: &str) -> bool {
    PY_TOOLS.iter().any(|t| t.name == tool)
}

/// The module's fixed part: connection, request/reply, errors.
const MODULE_HEAD: &str = r#""""Talaria's tools for execute_code scripts (generated for this run).

Each function calls the tool of the same name in the running Talaria session
and returns its result: the parsed JSON value (usually a dict) when the result
is JSON, otherwise the text. A failed call raises ToolError with the tool's
message. A script may make at most {MAX_CALLS} calls; calling a tool this
session does not offer raises ToolError too.
"""

import json as _json
import os as _os
import socket as _socket
import threading as _threading


class ToolError(Exception):
    """A tool call failed; str(error) is the tool's message."""


_lock = _threading.Lock()
_state = {"pid": None, "sock": None, "file": None, "id": 0}


def _connection():
    # A forked child must not share its parent's connection.
    if _state["file"] is None or _state["pid"] != _os.getpid():
        path = _os.environ.get("TALARIA_TOOLS_SOCKET")
        if not path:
            raise ToolError("TALARIA_TOOLS_SOCKET is not set: this module only works inside execute_code")
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as error:
            sock.close()
            raise ToolError("cannot reach Talaria's tool socket: %s" % error) from None
        _state.update(pid=_os.getpid(), sock=sock, file=sock.makefile("rwb"))
    return _state["file"]


def _call(tool, args):
    """Calls `tool` with the `args` dict; see the module docs for the result."""
    with _lock:
        conn = _connection()
        _state["id"] += 1
        request = {"id": _state["id"], "tool": tool, "args": args}
        try:
            conn.write(_json.dumps(request).encode("utf-8") + b"\n")
            conn.flush()
            line = conn.readline()
        except OSError as error:
            raise ToolError("the connection to Talaria failed: %s" % error) from None
    if not line:
        raise ToolError("the connection to Talaria closed")
    reply = _json.loads(line.decode("utf-8"))
    if not reply.get("ok"):
        raise ToolError(reply.get("error") or "the tool call failed")
    content = reply.get("content", "")
    try:
        return _json.loads(content)
    except ValueError:
        return content


def _args(extra, **named):
    # Unset optional arguments are left out, so the tool applies its defaults.
    args = {name: value for name, value in named.items() if value is not None}
    args.update(extra)
    return args
"#;

/// The `talaria_tools` module source for a script allowed `max_calls` calls.
pub(crate) fn module_source(max_calls: usize) -> String {
    let mut source = MODULE_HEAD.replace("{MAX_CALLS}", &max_calls.to_string());
    let names: Vec<String> = PY_TOOLS.iter().map(|t| format!("{:?}", t.name)).collect();
    let _ = writeln!(source, "\n__all__ = [\"ToolError\", {}]", names.join(", "));
    for tool in PY_TOOLS {
        let mut signature: Vec<String> = tool
            .params
            .iter()
            .map(|(name, default)| match default {
                Some(default) => format!("{name}={default}"),
                None => (*name).to_owned(),
            })
            .collect();
        signature.push("**extra".to_owned());
        let named: Vec<String> = tool
            .params
            .iter()
            .map(|(name, _)| format!("{name}={name}"))
            .collect();
        let _ = write!(
            source,
            "\n\ndef {name}({signature}):\n    \"\"\"{doc}\"\"\"\n    return _call({name:?}, _args(extra, {named}))\n",
            name = tool.name,
            signature = signature.join(", "),
            doc = tool.doc,
            named = named.join(", "),
        );
    }
    source
}

/// The file the model's code is written to, next to the runner.
pub(crate) const SCRIPT_FILE: &str = "script.py";
/// The generated module's file.
pub(crate) const MODULE_FILE: &str = "talaria_tools.py";
/// The runner's file (the program python3 runs).
pub(crate) const RUNNER_FILE: &str = "talaria_run.py";

/// Runs `script.py` as `__main__`. `python3 -I` keeps the working directory,
/// `PYTHONPATH` and user site-packages off `sys.path` (so a `json.py` in the
/// project cannot shadow the stdlib), hence the runner puts its own directory
/// first and the working directory last. Tracebacks start at the script.
pub(crate) const RUNNER_SOURCE: &str = r#"import os
import sys

sys.dont_write_bytecode = True
_dir = os.path.dirname(os.path.abspath(__file__))
_script = os.path.join(_dir, "script.py")
sys.path.insert(0, _dir)
sys.path.append(os.getcwd())
# Keep what was printed before a timeout kills the script.
sys.stdout.reconfigure(line_buffering=True)


def _main():
    import traceback

    scope = {"__name__": "__main__", "__file__": _script, "__builtins__": __builtins__}
    try:
        with open(_script, encoding="utf-8") as f:
            code = compile(f.read(), _script, "exec")
        exec(code, scope)
    except SystemExit:
        raise
    except BaseException as error:
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != _script:
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        sys.stdout.flush()
        sys.exit(1)


_main()
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_whitelisted_tool_is_a_function_with_hermes_argument_names() {
        let source = module_source(7);
        assert!(source.contains("at most 7 calls"));
        assert!(source.contains("def read_file(path, offset=None, limit=None, **extra):"));
        assert!(source.contains("def write_file(path, content, **extra):"));
        assert!(source.contains("return _call(\"terminal\", _args(extra, command=command,"));
        for tool in PY_TOOLS {
            assert!(
                source.contains(&format!("\ndef {}(", tool.name)),
                "{}",
                tool.name
            );
            assert!(whitelisted(tool.name));
        }
        assert!(!whitelisted("memory"));
        assert!(!whitelisted("execute_code"));
    }
}
