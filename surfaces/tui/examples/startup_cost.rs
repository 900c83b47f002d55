//! Measures what skins cost at start-up: `cargo run --release -p talaria-tui --example startup_cost [dir]`.

use std::time::Instant;

use talaria_tui::SkinCatalog;

fn main() {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from);
    let start = Instant::now();
    let (catalog, warnings) = SkinCatalog::load(dir.as_deref(), Vec::new());
    let loaded = start.elapsed();
    let (skin, _) = catalog.resolve_or_default("ocean");
    let resolved = start.elapsed();
    println!(
        "load {loaded:?}, resolve {:?}, {} skins, {} warnings, skin {}",
        resolved - loaded,
        catalog.names().len(),
        warnings.len(),
        skin.name
    );
}
