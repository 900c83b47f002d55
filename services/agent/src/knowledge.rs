//! What the agent knows at session start: the frozen memory snapshot, the
//! skills (level 0 in the prompt, the rest through tools) and the scanned
//! context files of the working directory — as prompt sections, and the
//! stores the native `memory` and skill tools work on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use talaria_kernel::Section;
use talaria_memory::{
    ContextFile, MemorySnapshot, MemoryStore, load_context_files, render_context_files,
};
use talaria_profile::home::ProfileHome;
use talaria_skills::{
    SKILL_GUIDANCE, SKILL_MANAGE, SkillManager, SkillRoots, Visibility, render_index,
};

/// The knowledge of one session.
pub struct Knowledge {
    memory: Option<Arc<MemoryStore>>,
    snapshot: Option<MemorySnapshot>,
    skills: Arc<Mutex<SkillManager>>,
    context_files: Vec<ContextFile>,
    /// Skipped skills, blocked memory entries and context files, unreadable stores.
    pub notices: Vec<String>,
}

/// Skills shipped with the distribution (read-only): next to the executable
/// or in the installed share directory.
/// Where a profile's skills come from: its own `skills/`, then those bundled beside the binary;
/// every `SKILL.md` passes the threat scanner when loaded and when read, whatever wrote it.
pub fn skill_roots(home: &ProfileHome) -> SkillRoots {
    let mut roots = SkillRoots::new(home.skills_dir())
        .with_scan(talaria_skills::ContentScan(crate::tools::threat_scan()));
    for dir in bundled_skill_dirs() {
        roots = roots.with_bundled(dir);
    }
    roots
}

pub(crate) fn bundled_skill_dirs() -> Vec<PathBuf> {
    let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    [
        exe_dir.join("skills"),
        exe_dir.join("../share/talaria/skills"),
    ]
    .into_iter()
    .filter(|dir| dir.is_dir())
    .collect()
}

impl Knowledge {
    /// Reads memory (from `memory_dir`; `None`: the session has none), skills and context
    /// files once, at session start.
    pub fn load(home: &ProfileHome, cwd: &Path, memory_dir: Option<PathBuf>) -> Self {
        let mut notices = Vec::new();
        let opened = memory_dir.map(|dir| {
            // A principal's own memory lives in a directory made on first use.
            if dir != home.memory_dir() {
                let _ = talaria_profile::home_modes::create_private_dir(&dir);
            }
            MemoryStore::open(dir)
        });
        let (memory, snapshot) = match opened {
            None => (None, None),
            Some(opened) => match opened {
                Ok(store) => match store.snapshot() {
                    Ok(snapshot) => {
                        for blocked in &snapshot.blocked {
                            notices.push(format!(
                                "{} entry {} was left out of the prompt: it trips rule '{}' ({})",
                                blocked.target.file_name(),
                                blocked.index,
                                blocked.threat.rule_id,
                                blocked.threat.description
                            ));
                        }
                        (Some(Arc::new(store)), Some(snapshot))
                    }
                    Err(error) => {
                        notices.push(format!("memory is unavailable: {error}"));
                        (Some(Arc::new(store)), None)
                    }
                },
                Err(error) => {
                    notices.push(format!("memory is unavailable: {error}"));
                    (None, None)
                }
            },
        };
        let (manager, issues) = SkillManager::load(skill_roots(home));
        notices.extend(
            issues
                .iter()
                .map(|issue| format!("skill {}: {}", issue.path.display(), issue.reason)),
        );
        let context_files = load_context_files(cwd);
        for file in &context_files {
            if let Some(threat) = &file.blocked {
                notices.push(format!(
                    "{} was left out of the prompt: it trips rule '{}' ({})",
                    file.name, threat.rule_id, threat.description
                ));
            }
        }
        Self {
            memory,
            snapshot,
            skills: Arc::new(Mutex::new(manager)),
            context_files,
            notices,
        }
    }

    /// The memory store, when it could be opened (for the `memory` tool).
    pub(crate) fn memory_store(&self) -> Option<Arc<MemoryStore>> {
        self.memory.clone()
    }

    /// The skills (for the skill tools, which may change them).
    pub(crate) fn skill_manager(&self) -> Arc<Mutex<SkillManager>> {
        self.skills.clone()
    }

    /// The prompt sections, given what the model can call (skills that need
    /// missing tools are not offered).
    pub fn sections(
        &self,
        tools: &BTreeSet<String>,
        toolsets: &BTreeSet<String>,
    ) -> Vec<(Section, String)> {
        let mut sections = Vec::new();
        if let Some(snapshot) = self.snapshot.as_ref().filter(|s| !s.is_empty()) {
            sections.push((Section::Memory, snapshot.render()));
        }
        if let Ok(manager) = self.skills.lock() {
            let visibility = Visibility {
                platform: std::env::consts::OS,
                toolsets,
                tools,
            };
            let mut text = render_index(&manager.index().visible(&visibility));
            if tools.contains(SKILL_MANAGE) {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(SKILL_GUIDANCE);
            }
            if !text.is_empty() {
                sections.push((Section::SkillsIndex, text));
            }
        }
        let context = render_context_files(&self.context_files);
        if !context.trim().is_empty() {
            sections.push((Section::ContextFiles, context));
        }
        sections
    }

    /// The skills the user can invoke as `/<name>`, given what the model can
    /// call (the same visibility as the prompt's index).
    pub fn skills(
        &self,
        tools: &BTreeSet<String>,
        toolsets: &BTreeSet<String>,
    ) -> Vec<SkillSummary> {
        let Ok(manager) = self.skills.lock() else {
            return Vec::new();
        };
        let visibility = Visibility {
            platform: std::env::consts::OS,
            toolsets,
            tools,
        };
        manager
            .index()
            .visible(&visibility)
            .into_iter()
            .map(|skill| SkillSummary {
                name: skill.name().to_owned(),
                description: skill.meta.description.clone(),
                category: skill.category.clone(),
            })
            .collect()
    }

    /// A skill's instructions (its `SKILL.md` body), read when it is invoked.
    pub fn skill_body(&self, name: &str) -> Result<String, String> {
        let manager = self
            .skills
            .lock()
            .map_err(|_| "the skill index is unavailable".to_owned())?;
        match manager.index().view(name, None) {
            Ok(talaria_skills::SkillView::Skill(page)) => Ok(page.content),
            Ok(talaria_skills::SkillView::File(_)) => Err(format!("'{name}' is not a skill")),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// One skill as the user sees it in `/skills` and `/<skill>` completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    /// Its name (also its slash command).
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Its category.
    pub category: String,
}
