//! Skills: procedural memory the agent reads and writes as `SKILL.md` files.
//!
//! Layout: `<root>/<category>/<name>/SKILL.md` (or `<root>/<name>/SKILL.md`,
//! category `general`; categories nest up to three folders, as Hermes's
//! `mlops/evaluation/<name>/`, the category being the path), YAML frontmatter
//! plus a markdown body in the agentskills.io format, so Hermes and Claude
//! skills work unchanged. A frontmatter YAML rejects is read as plain
//! `key: value` lines when that reads cleanly (with a warning).
//!
//! Progressive disclosure:
//! - level 0: [`SkillIndex::load`] reads every frontmatter; [`render_index`]
//!   turns the [visible](Visibility) ones into the system-prompt block.
//! - level 1: [`SkillIndex::view`] with no file returns the body and the
//!   supporting files (`references/`, `templates/`, `scripts/`, `assets/`).
//! - level 2: [`SkillIndex::view`] with a file path returns that file, confined
//!   to the skill's directory.
//!
//! [`SkillManager`] implements `skill_manage` (`create`, `edit`, `patch`, `delete`,
//! `write_file`, `remove_file`) in the writable root only; bundled roots are
//! read-only. Every written text goes through the caller's threat scanner.
//! The `handle_*` functions and `*_schema` functions are the tool glue.

mod args;
mod atomic;
mod discover;
mod error;
mod files;
mod frontmatter;
mod guidance;
mod handlers;
mod index;
mod issue;
mod limits;
mod listing;
mod manage;
mod meta;
mod name;
mod patch;
mod paths;
mod render;
mod schema;
mod view;
mod visibility;

pub use error::SkillError;
pub use guidance::SKILL_GUIDANCE;
pub use handlers::{handle_skill_manage, handle_skill_view, handle_skills_list};
pub use index::{ContentScan, GENERAL_CATEGORY, Skill, SkillIndex, SkillRoots};
pub use issue::{IssueKind, SkillIssue};
pub use limits::{
    MAX_DESCRIPTION_CHARS, MAX_LOADED_DESCRIPTION_CHARS, MAX_NAME_CHARS, MAX_SKILL_FILE_BYTES,
    MAX_SKILL_MD_READ_BYTES, MAX_SKILL_MD_WRITE_BYTES,
};
pub use listing::SupportingFiles;
pub use manage::{ManageOutcome, Scanner, SkillManager};
pub use meta::{Conditions, ParseMode, ParsedSkill, SkillMeta, parse_skill_md};
pub use name::validate_name;
pub use render::render_index;
pub use schema::{
    SKILL_MANAGE, SKILL_MANAGE_DESCRIPTION, SKILL_VIEW, SKILL_VIEW_DESCRIPTION, SKILLS_LIST,
    SKILLS_LIST_DESCRIPTION, skill_manage_schema, skill_view_schema, skills_list_schema,
};
pub use view::{FilePage, SkillPage, SkillView};
pub use visibility::Visibility;
