//! A stand-in for Chromium's DevTools endpoint, for the browser tools'
//! light tests (the real browser takes minutes to install and runs in the
//! heavy group): a WebSocket on loopback answering the commands the tools
//! send with one fixed page, recording each command, and a program that
//! takes Chromium's place at launch — it writes this endpoint where
//! Chromium writes its DevTools port, notes its pid, and waits to be killed.

use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tungstenite::Message;

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

    /// Writes, into `dir`, a program to configure as the browser: it finds
    /// `--user-data-dir=` among its arguments, writes this endpoint's
    /// address there as `DevToolsActivePort`, writes its pid to `pid_file`,
    /// then sleeps (as the same process) until it is killed.
    pub fn fake_chromium(&self, dir: &Path, pid_file: &Path) -> io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-chromium");
        let script = format!(
            "#!/bin/sh\n\
             for arg in \"$@\"; do case \"$arg\" in --user-data-dir=*) dir=\"${{arg#--user-data-dir=}}\";; esac; done\n\
             echo $$ > '{pid}'\n\
             printf '%s\\n%s\\n' {port} /devtools/browser/fake > \"$dir/DevToolsActivePort\"\n\
             exec sleep 600\n",
            pid = pid_file.display(),
            port = self.server.addr().port(),
        );
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }
}

fn serve(stream: TcpStream, page: &FakePage, seen: &Mutex<Vec<DevToolsCall>>) -> io::Result<()> {
    let mut socket = tungstenite::accept(stream).map_err(io::Error::other)?;
    let mut url = "about:blank".to_owned();
    loop {
        let text = match socket.read() {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(_)) | Err(_) => return Ok(()),
            Ok(_) => continue,
        };
        let Ok(command) = serde_json::from_str::<Value>(text.as_str()) else {
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
        let answer =
            json!({"id": command["id"], "result": result, "sessionId": command["sessionId"]});
        socket
            .send(Message::text(answer.to_string()))
            .map_err(io::Error::other)?;
        if method == "Page.navigate" {
            for (event, params) in [
                (
                    "Page.frameNavigated",
                    json!({"frame": {"id": "F1", "url": url}}),
                ),
                ("Page.loadEventFired", json!({"timestamp": 1.0})),
            ] {
                let event = json!({"method": event, "params": params, "sessionId": "S1"});
                socket
                    .send(Message::text(event.to_string()))
                    .map_err(io::Error::other)?;
            }
        }
    }
}

fn command_mentions(params: &Value, needle: &str) -> bool {
    params["expression"]
        .as_str()
        .is_some_and(|expression| expression.contains(needle))
}
