//! Size and length limits, in one place so docs and errors agree.

/// Longest skill name (agentskills.io).
pub const MAX_NAME_CHARS: usize = 64;

/// Longest description a skill may be written with (agentskills.io).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Longest description a loaded skill may have. Real published skills run a
/// little over the spec (Anthropic's `claude-api` has 1068 characters), so
/// loading tolerates up to this, truncating to [`MAX_DESCRIPTION_CHARS`] with
/// a warning; anything longer is junk and the skill is skipped.
pub const MAX_LOADED_DESCRIPTION_CHARS: usize = 4096;

/// How many category folders may nest above a skill (`<root>/a/b/c/<skill>/`); Hermes uses 2.
pub const MAX_CATEGORY_DEPTH: usize = 3;

/// Largest `SKILL.md` that is read at all (loading and viewing).
pub const MAX_SKILL_MD_READ_BYTES: u64 = 256 * 1024;

/// Largest `SKILL.md` that `skill_manage` writes.
pub const MAX_SKILL_MD_WRITE_BYTES: u64 = 100 * 1024;

/// Largest supporting file that is written, patched or shown at level 2.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;

/// Most files listed for one skill at level 1 (a runaway `assets/` must not
/// flood the result).
pub(crate) const MAX_LISTED_FILES: usize = 500;

/// How deep the level-1 listing descends below the skill directory.
pub(crate) const MAX_LISTING_DEPTH: usize = 6;
