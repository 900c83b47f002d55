//! Renders Markdown from standard input (or a sample) with a skin, streaming it
//! in small random-sized deltas: `cargo run -p talaria-tui --example markdown_demo [skin] < file.md`.

use std::io::{IsTerminal, Read, Write};

use talaria_tui::{MarkdownStream, SkinCatalog};

fn main() -> std::io::Result<()> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "default".into());
    let (skin, error) = SkinCatalog::builtin().resolve_or_default(&name);
    if let Some(error) = error {
        eprintln!("{error}");
    }
    let mut text = String::new();
    if std::io::stdin().is_terminal() {
        text.push_str("# Demo\n\nSome **bold** and `code`.\n\n```rust\nfn main() {}\n```\n");
    } else {
        std::io::stdin().read_to_string(&mut text)?;
    }
    let color = std::io::stdout().is_terminal() || std::env::var_os("FORCE_COLOR").is_some();
    let mut md = MarkdownStream::new(&skin, color);
    let mut out = std::io::stdout().lock();
    out.write_all(skin.welcome(color).as_bytes())?;
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(7) {
        let delta: String = chunk.iter().collect();
        out.write_all(md.push(&delta).as_bytes())?;
        out.flush()?;
    }
    out.write_all(md.finish().as_bytes())?;
    Ok(())
}
