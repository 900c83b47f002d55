//! A stand-in for Chromium's DevTools pipe, for the browser tools' light
//! tests (the real browser takes minutes to install and runs in the heavy
//! group): a loopback socket speaking the pipe's framing (JSON messages ended
//! by a NUL byte), answering the commands the tools send with one fixed page
//! and recording each command, and a program that takes Chromium's place at
//! launch — it notes its pid and joins its fds 3 and 4 (the pipe Chromium is
//! given) to this socket until it is killed.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::static_files::ThreadServer;

/// The page the endpoint pretends to show after any navigation.
#[derive(Debug, Clone)]
pub struct FakePage {
    /// Its title.
    pub title: String,
    /// What `Accessibility.getFullAXTree` answers (its `nodes`).
    pub ax_nodes: Value,
    /// A command never answered (a hung browser), if any.
    pub hang_on: Option<String>,
}

/// A command the endpoint received.
#[derive(Debug, Clone, PartialEq)]
pub struct DevToolsCall {
    /// `Page.navigate`…
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

/// Serves until dropped.
#[derive(Debug)]
pub struct FakeDevTools {
    server: ThreadServer,
    calls: Arc<Mutex<Vec<DevToolsCall>>>,
}

impl FakeDevTools {
    /// Starts the endpoint on 127.0.0.1.
    pub fn spawn(page: FakePage) -> io::Result<Self> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        let page = Arc::new(page);
        let server = ThreadServer::spawn("devtools", move |stream| {
            let _ = serve(stream, &page, &seen);
        })?;
        Ok(Self { server, calls })
    }

    /// The commands so far, in order.
    pub fn calls(&self) -> Vec<DevToolsCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Writes, into `dir`, a program to configure as the browser: it writes
    /// its pid to `pid_file`, its arguments to `<pid_file>.args` and what it
    /// reads of `peek` to `<pid_file>.peek` (what the browser could see there),
    /// then carries what the agent writes on its fd 3 to this endpoint and the
    /// endpoint's answers to its fd 4, until killed.
    pub fn fake_chromium(&self, dir: &Path, pid_file: &Path, peek: &Path) -> io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-chromium");
        let script = format!(
            "#!/bin/bash\n\
             echo $$ > '{pid}'\n\
             printf '%s\\n' \"$@\" > '{pid}.args'\n\
             cat '{peek}' > '{pid}.peek' 2>&1\n\
             exec 5<>/dev/tcp/127.0.0.1/{port}\n\
             cat <&3 >&5 &\n\
             exec cat <&5 >&4\n",
            pid = pid_file.display(),
            peek = peek.display(),
            port = self.server.addr().port(),
        );
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }
}

fn serve(stream: TcpStream, page: &FakePage, seen: &Mutex<Vec<DevToolsCall>>) -> io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut send = |value: Value| -> io::Result<()> {
        let mut bytes = value.to_string().into_bytes();
        bytes.push(0);
        writer.write_all(&bytes)
    };
    let mut url = "about:blank".to_owned();
    loop {
        let mut message = Vec::new();
        if reader.read_until(0, &mut message)? == 0 {
            return Ok(());
        }
        message.pop_if(|b| *b == 0);
        let Ok(command) = serde_json::from_slice::<Value>(&message) else {
            continue;
        };
        let method = command["method"].as_str().unwrap_or_default().to_owned();
        let params = command["params"].clone();
        if let Ok(mut calls) = seen.lock() {
            calls.push(DevToolsCall {
                method: method.clone(),
                params: params.clone(),
            });
        }
        if page.hang_on.as_deref() == Some(method.as_str()) {
            continue;
        }
        let title = if url == "about:blank" {
            ""
        } else {
            page.title.as_str()
        };
        let result = match method.as_str() {
            "Browser.getVersion" => json!({"product": "FakeChrome/1.0"}),
            "Target.getTargets" => {
                json!({"targetInfos": [{"targetId": "T1", "type": "page", "url": url}]})
            }
            "Target.attachToTarget" => json!({"sessionId": "S1"}),
            "Page.navigate" => {
                url = params["url"].as_str().unwrap_or_default().to_owned();
                json!({"frameId": "F1", "loaderId": "L1"})
            }
            "Runtime.evaluate" if command_mentions(&params, "location.href") => {
                let value = json!([url, title]).to_string();
                json!({"result": {"type": "string", "value": value}})
            }
            "Runtime.evaluate" => json!({"result": {"type": "undefined"}}),
            "Accessibility.getFullAXTree" => json!({"nodes": page.ax_nodes}),
            _ => json!({}),
        };
        send(json!({"id": command["id"], "result": result, "sessionId": command["sessionId"]}))?;
        if method == "Page.navigate" {
            for (event, params) in [
                (
                    "Page.frameNavigated",
                    json!({"frame": {"id": "F1", "url": url}}),
                ),
                ("Page.loadEventFired", json!({"timestamp": 1.0})),
            ] {
                send(json!({"method": event, "params": params, "sessionId": "S1"}))?;
            }
        }
    }
}

fn command_mentions(params: &Value, needle: &str) -> bool {
    params["expression"]
        .as_str()
        .is_some_and(|expression| expression.contains(needle))
}
