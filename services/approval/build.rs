//! Works out the required literals of `patterns.toml` (talaria-rules), so the classifier
//! parses and compiles a pattern only when a command could match it. A bad pattern fails the build.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    talaria_rules::codegen::write_for_build_script("patterns.toml")
}
