//! The `talaria` binary.

fn main() -> std::process::ExitCode {
    talaria_cli::main()
}
