//! Assembling a session's frozen prompt: persona, memory snapshot, a skills
//! index, context files and 40 tool schemas, then serialising the tools as a
//! request would. Prints the median time per build.
// A benchmark measures wall time itself (kernel/clippy.toml is for the kernel's code).
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use talaria_kernel::{PromptBuilder, Section, ToolSpec};

fn tools(count: usize) -> Vec<ToolSpec> {
    (0..count)
        .map(|i| ToolSpec {
            name: format!("tool_{i:02}"),
            description: format!(
                "Tool number {i}: does one thing well. It reads its arguments, checks them and \
                 returns a JSON result the model can read."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A file path"},
                    "limit": {"type": "integer", "minimum": 1},
                    "mode": {"type": "string", "enum": ["fast", "thorough"]}
                },
                "required": ["path"]
            }),
            refunds_iteration: false,
        })
        .collect()
}

fn build(memory: &str, skills: &str, context: &str, specs: &[ToolSpec]) -> usize {
    let prompt = PromptBuilder::new()
        .section(Section::Persona, talaria_kernel::prompt::DEFAULT_PERSONA)
        .section(Section::Memory, memory)
        .section(Section::SkillsIndex, skills)
        .section(Section::ContextFiles, context)
        .section(Section::ToolUseGuidance, "Use tools when they help.")
        .tools(specs.to_vec())
        .build();
    prompt.system().len() + serde_json::to_string(prompt.tools()).map_or(0, |t| t.len())
}

fn main() {
    let memory = "§ The user prefers short answers.\n".repeat(60);
    let skills: String = (0..80)
        .map(|i| format!("- skill-{i}: what skill {i} is for, in one line\n"))
        .collect();
    let context = "# AGENTS.md\nBuild with cargo; run the tests before committing.\n".repeat(40);
    println!(
        "{:<34} {:>8} {:>12} {:>10}",
        "scenario", "tools", "median", "bytes"
    );
    for count in [5usize, 40, 200] {
        let specs = tools(count);
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..200 {
            let started = Instant::now();
            bytes = build(&memory, &skills, &context, &specs);
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "{:<34} {:>8} {:>9.1} µs {:>10}",
            "frozen prompt + tool JSON",
            count,
            times[times.len() / 2].as_secs_f64() * 1e6,
            bytes
        );
    }
}
