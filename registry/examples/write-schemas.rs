//! Writes `registry/schema/*.schema.json` from the index types.

fn main() -> std::io::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
    std::fs::create_dir_all(&dir)?;
    for (file, schema) in talaria_registry::schemas() {
        std::fs::write(dir.join(file), schema)?;
    }
    Ok(())
}
