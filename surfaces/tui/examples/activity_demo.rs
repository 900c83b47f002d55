//! Shows the spinner and tool lines on this terminal:
//! `cargo run -p talaria-tui --example activity_demo [skin]`.

use std::time::Duration;

use talaria_tui::{SkinCatalog, Spinner, format_tool_line, key_argument};

fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "default".into());
    let (skin, _) = SkinCatalog::builtin().resolve_or_default(&name);
    let spinner = Spinner::start(&skin, "calling the model");
    std::thread::sleep(Duration::from_millis(1500));
    {
        let _pause = spinner.pause();
        eprintln!("(paused: an approval prompt would go here)");
        std::thread::sleep(Duration::from_millis(500));
    }
    spinner.set_label("running terminal");
    std::thread::sleep(Duration::from_millis(1200));
    spinner.stop();
    let args = serde_json::json!({"command": "echo hi && ls -la /tmp"});
    let key = key_argument("terminal", &args).unwrap_or_default();
    let emoji = skin.tool_emoji("terminal");
    let line = format_tool_line(&skin, true, emoji, "terminal", &key, 12, true, None);
    println!("{line}");
    let error = Some("No such file or directory (os error 2)");
    let emoji = skin.tool_emoji("read_file");
    let line = format_tool_line(&skin, true, emoji, "read_file", "nope.txt", 3, false, error);
    println!("{line}");
}
