//! Works out the required literals of `threats.toml` (talaria-rules), so the threat scanner
//! parses and compiles a pattern only when a text could match it. A bad pattern fails the build.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    talaria_rules::codegen::write_for_build_script("threats.toml")
}
