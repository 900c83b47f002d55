//! `talaria-scripted-server`: serve a JSON script over HTTP until killed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use talaria_testkit::{LineEnding, Script, ScriptedServer, ServerOptions};

/// Scripted OpenAI/Anthropic-compatible model server for testing LLM clients.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Script file: a JSON array of steps (or `{"steps": [...]}`).
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append every request to this file as a JSON line.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Bytes per HTTP chunk of streamed bodies, or `event` for one chunk per SSE event.
    #[arg(long, default_value_t = ServerOptions::default().chunk_size, value_parser = parse_chunk_size)]
    chunk_size: usize,
    /// Use CRLF line endings in SSE bodies.
    #[arg(long)]
    crlf: bool,
    /// Start the script over when it is exhausted.
    #[arg(long = "loop")]
    loop_script: bool,
}

/// A positive number of bytes, or `event` (stored as 0).
fn parse_chunk_size(value: &str) -> Result<usize, String> {
    match value {
        "event" => Ok(0),
        _ => match value.parse::<usize>() {
            Ok(bytes) if bytes > 0 => Ok(bytes),
            _ => Err(format!(
                "expected a positive number of bytes or `event`, got {value:?}"
            )),
        },
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let script = Script::load(&args.script)?;
    let options = ServerOptions {
        port: args.port,
        chunk_size: args.chunk_size,
        line_ending: if args.crlf {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        },
        loop_script: args.loop_script,
        record_path: args.record,
        log_requests: true,
        ..ServerOptions::default()
    };
    let server = ScriptedServer::spawn_with(script, options).context("cannot start the server")?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on {}", server.base_url())?;
    stdout.flush()?;
    // Serve until killed; the server runs on its own thread.
    loop {
        std::thread::park();
    }
}
