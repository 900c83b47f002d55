//! The prompt/cache builder: assembles the system prompt once per session in a
//! fixed order, most stable first, so the prefix sent to the model is
//! byte-identical on every turn and provider prompt caches keep hitting.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::message::ToolSpec;

/// The sections of the system prompt. The declaration order IS the prompt order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Who the agent is (SOUL.md or the default persona).
    Persona,
    /// How to behave on this surface (terminal, chat platform, editor...).
    PlatformHints,
    /// The frozen memory snapshot (MEMORY.md, USER.md).
    Memory,
    /// How and when to search past sessions.
    SessionSearchGuidance,
    /// Names and descriptions of available skills (level 0).
    SkillsIndex,
    /// Project context files (AGENTS.md, .talaria.md), already scanned.
    ContextFiles,
    /// How to use tools well with this model family.
    ToolUseGuidance,
}

/// The persona used when the profile has no SOUL.md.
pub const DEFAULT_PERSONA: &str = "You are Talaria, a capable and careful AI agent. You help the user \
get real work done: you think before acting, use the tools available to you when they help, check \
your results, and answer concisely. When you are unsure, say so rather than guess.";

/// Tool-use guidance tuned to a model family, chosen from the model name.
pub fn tool_use_guidance(model: &str) -> &'static str {
    let model = model.to_ascii_lowercase();
    if model.contains("claude") {
        "Use tools when they move the task forward. Call independent tools together in one turn. \
         After tool results arrive, continue from them; do not repeat a call that already succeeded."
    } else if model.contains("gpt") || model.starts_with('o') {
        "Use the provided functions when they help. Arguments must be a JSON object matching the \
         function's schema. Prefer one parallel batch of independent calls over many sequential turns."
    } else {
        "You can call tools. Each call's arguments must be a valid JSON object that matches the \
         tool's schema exactly, with every required field. Call only tools that are listed. When you \
         have what you need, answer in plain text without calling a tool."
    }
}

/// The prompt of one session: frozen at session start, never rebuilt mid-session.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenPrompt {
    system: Arc<str>,
    tools: Arc<[ToolSpec]>,
    prefix_tokens: usize,
}

impl FrozenPrompt {
    /// The estimated tokens of the system prompt and tools (see [`crate::compress`]).
    pub fn prefix_tokens(&self) -> usize {
        self.prefix_tokens
    }

    /// The system prompt text.
    pub fn system(&self) -> &str {
        &self.system
    }

    /// The tool schemas, in their fixed order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }
}

/// Collects sections and tools, then freezes them into a [`FrozenPrompt`].
#[derive(Debug, Default, Clone)]
pub struct PromptBuilder {
    sections: BTreeMap<Section, Vec<String>>,
    tools: Vec<ToolSpec>,
}

impl PromptBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds text to a section; several texts in one section keep their insertion
    /// order. Blank text is ignored so absent context leaves no trace.
    pub fn section(mut self, section: Section, text: impl Into<String>) -> Self {
        let text = text.into();
        let trimmed = text.trim();
        if !trimmed.is_empty() {
            self.sections
                .entry(section)
                .or_default()
                .push(trimmed.to_owned());
        }
        self
    }

    /// Sets the tool schemas.
    pub fn tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Assembles the prompt. Sections follow [`Section`] order; tools are sorted
    /// by name so registration order cannot change the bytes sent.
    pub fn build(mut self) -> FrozenPrompt {
        let mut system = String::new();
        for texts in self.sections.values() {
            for text in texts {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(text);
            }
        }
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self.tools.dedup_by(|a, b| a.name == b.name);
        FrozenPrompt {
            prefix_tokens: crate::compress::prefix_tokens(&system, &self.tools),
            system: system.into(),
            tools: self.tools.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: serde_json::json!({"type": "object"}),
            refunds_iteration: false,
        }
    }

    #[test]
    fn sections_follow_the_fixed_order_whatever_the_insertion_order() {
        let prompt = PromptBuilder::new()
            .section(Section::ToolUseGuidance, "G")
            .section(Section::ContextFiles, "C")
            .section(Section::Memory, "M")
            .section(Section::Persona, "P")
            .section(Section::SkillsIndex, "S")
            .section(Section::SessionSearchGuidance, "Q")
            .section(Section::PlatformHints, "H")
            .build();
        assert_eq!(prompt.system(), "P\n\nH\n\nM\n\nQ\n\nS\n\nC\n\nG");
    }

    #[test]
    fn blank_sections_leave_no_trace_and_tools_are_sorted() {
        let prompt = PromptBuilder::new()
            .section(Section::Persona, "  persona \n")
            .section(Section::Memory, "   ")
            .tools(vec![spec("b"), spec("a"), spec("b")])
            .build();
        assert_eq!(prompt.system(), "persona");
        let names: Vec<_> = prompt.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            prompt.prefix_tokens(),
            crate::compress::estimate_tokens(prompt.system(), prompt.tools(), &[]),
            "the frozen estimate covers the system prompt and the kept tools"
        );
    }

    #[test]
    fn same_inputs_give_byte_identical_prompts() {
        let make = || {
            PromptBuilder::new()
                .section(Section::Persona, DEFAULT_PERSONA)
                .section(Section::ToolUseGuidance, tool_use_guidance("claude-sonnet"))
                .tools(vec![spec("todo")])
                .build()
        };
        assert_eq!(make(), make());
    }
}
