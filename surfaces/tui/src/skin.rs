//! Skins: the look of the interactive CLI (colours, banner, greeting, spinner,
//! tool emoji), defined in YAML files that may inherit one another.
//!
//! Sources, lowest precedence first: the built-in skins (`tui/skins/*.yaml`),
//! skins contributed by plugins, then the user's own (`$TALARIA_HOME/skins`).
//! A later definition of a name overrides an earlier one; a skin that
//! `inherits` its own name extends the definition it overrides.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml_ng::Value;

use crate::style::{Colour, Palette, Role, Style, paint_lines};
use crate::yaml_lines::KeyLines;

mod check;
use check::parse_skin;

/// The origin reported for built-in skins.
pub const BUILTIN_ORIGIN: &str = "built-in";

/// The skin everything falls back to, and that other skins inherit by default.
pub const DEFAULT_SKIN: &str = "default";

/// The built-in skins, `default` first.
const BUILTIN: [(&str, &str); 5] = [
    ("default", include_str!("../skins/default.yaml")),
    ("mono", include_str!("../skins/mono.yaml")),
    ("ocean", include_str!("../skins/ocean.yaml")),
    ("ember", include_str!("../skins/ember.yaml")),
    ("daylight", include_str!("../skins/daylight.yaml")),
];

/// The keys a skin file may have at its top level.
const TOP_KEYS: [&str; 11] = [
    "name",
    "inherits",
    "description",
    "agent_name",
    "greeting",
    "farewell",
    "prompt_symbol",
    "banner",
    "colors",
    "spinner",
    "tool_emoji",
];

/// The keys of a skin's `spinner:` section.
const SPINNER_KEYS: [&str; 3] = ["faces", "verbs", "interval_ms"];

/// The accepted range of `spinner.interval_ms`.
const INTERVAL_RANGE: std::ops::RangeInclusive<u64> = 20..=5000;

/// The spinner's animation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpinnerStyle {
    /// The frames, shown in turn (never empty).
    pub faces: Vec<String>,
    /// Words for what the agent is doing (`thinking`); may be empty.
    pub verbs: Vec<String>,
    /// Milliseconds between frames.
    pub interval_ms: u64,
}

/// A fully resolved skin: every field has a value after inheritance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skin {
    /// The skin's name.
    pub name: String,
    /// A one-line description (not inherited; may be empty).
    pub description: String,
    /// Where the skin was defined: `built-in`, `plugin NAME`, or a file path.
    pub origin: String,
    /// What the agent calls itself.
    pub agent_name: String,
    /// Shown under the banner at start-up.
    pub greeting: String,
    /// Shown when the session ends.
    pub farewell: String,
    /// The input prompt.
    pub prompt_symbol: String,
    /// Multi-line art shown at start-up (may be empty); no trailing newline.
    pub banner: String,
    /// The colour of each role.
    pub palette: Palette,
    /// The spinner's animation.
    pub spinner: SpinnerStyle,
    /// Tool name → emoji; the `default` entry is used for other tools.
    pub tool_emoji: BTreeMap<String, String>,
}

impl Skin {
    /// `text` in `role`'s colour (ANSI SGR) when `color` is true, unchanged otherwise.
    pub fn paint(&self, role: Role, text: &str, color: bool) -> String {
        self.palette.paint(role, text, color)
    }

    /// The emoji for `tool`: its own entry, else the `default` entry, else `⚙`.
    pub fn tool_emoji(&self, tool: &str) -> &str {
        self.tool_emoji
            .get(tool)
            .or_else(|| self.tool_emoji.get("default"))
            .map_or("⚙", String::as_str)
    }

    /// The start-up text: the banner (bold, accent colour) and the greeting
    /// (dim), each followed by a newline; empty parts are left out.
    pub fn welcome(&self, color: bool) -> String {
        let mut out = String::new();
        if !self.banner.is_empty() {
            if color {
                let style = Style {
                    bold: true,
                    ..Style::fg(self.palette.get(Role::Accent))
                };
                out.push_str(&paint_lines(&style, &self.banner));
            } else {
                out.push_str(&self.banner);
            }
            out.push('\n');
        }
        if !self.greeting.is_empty() {
            out.push_str(&self.paint(Role::Dim, &self.greeting, color));
            out.push('\n');
        }
        out
    }

    /// The prompt symbol in the prompt colour.
    pub fn prompt(&self, color: bool) -> String {
        self.paint(Role::Prompt, &self.prompt_symbol, color)
    }

    /// The built-in `default` skin.
    pub fn builtin_default() -> Skin {
        SkinCatalog::builtin()
            .resolve(DEFAULT_SKIN)
            .unwrap_or_else(|_| Partial::default().finish(DEFAULT_SKIN, BUILTIN_ORIGIN, ""))
    }
}

/// A skin definition from outside the built-ins and the user's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkinSource {
    /// Where it comes from, for listings and errors (e.g. `plugin commands-probe`).
    pub origin: String,
    /// Its name unless the YAML sets `name:`.
    pub name: String,
    /// The skin file's text.
    pub yaml: String,
}

impl SkinSource {
    /// A source named `name` from `origin`.
    pub fn new(
        origin: impl Into<String>,
        name: impl Into<String>,
        yaml: impl Into<String>,
    ) -> Self {
        SkinSource {
            origin: origin.into(),
            name: name.into(),
            yaml: yaml.into(),
        }
    }
}

/// One skin in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkinInfo {
    /// The skin's name.
    pub name: String,
    /// Its description (empty when it has none or cannot be read).
    pub description: String,
    /// Where its effective definition comes from.
    pub origin: String,
    /// Why it cannot be used, if it cannot (it then resolves to `default`).
    pub problem: Option<String>,
}

/// A skin that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkinError {
    /// No skin has this name.
    #[error("unknown skin '{name}' (available: {})", .available.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are.
        available: Vec<String>,
    },
    /// A skin definition (or one it inherits) is invalid.
    #[error("{}", located(.origin, *.line, .key.as_deref(), .message))]
    Invalid {
        /// The file path or origin of the definition.
        origin: String,
        /// The 1-based line of the problem, when known.
        line: Option<usize>,
        /// The key path (`colors.accent`, `spinner.faces[2]`), when there is one.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// `origin:line: key: message`, leaving out what is unknown.
fn located(origin: &str, line: Option<usize>, key: Option<&str>, message: &str) -> String {
    let mut s = origin.to_string();
    if let Some(line) = line {
        s.push_str(&format!(":{line}"));
    }
    s.push_str(": ");
    if let Some(key) = key {
        s.push_str(key);
        s.push_str(": ");
    }
    s.push_str(message);
    s
}

/// Something worth telling the user while loading skins; loading went on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkinWarning {
    /// A skin definition is invalid: its name resolves to `default` with this error.
    #[error("{0}")]
    InvalidSkin(SkinError),
    /// The skins directory or a file in it could not be read.
    #[error("{path}: cannot read: {message}")]
    Unreadable {
        /// The path, `~`-abbreviated.
        path: String,
        /// The I/O error.
        message: String,
    },
}

/// The values a skin file sets; unset ones come from the skin it inherits.
#[derive(Debug, Clone, Default)]
struct Partial {
    agent_name: Option<String>,
    greeting: Option<String>,
    farewell: Option<String>,
    prompt_symbol: Option<String>,
    banner: Option<String>,
    colours: [Option<Colour>; Role::ALL.len()],
    faces: Option<Vec<String>>,
    verbs: Option<Vec<String>>,
    interval_ms: Option<u64>,
    tool_emoji: BTreeMap<String, String>,
}

impl Partial {
    /// Applies `child`'s values over these.
    fn overlay(&mut self, child: &Partial) {
        fn over<T: Clone>(base: &mut Option<T>, child: &Option<T>) {
            if child.is_some() {
                base.clone_from(child);
            }
        }
        over(&mut self.agent_name, &child.agent_name);
        over(&mut self.greeting, &child.greeting);
        over(&mut self.farewell, &child.farewell);
        over(&mut self.prompt_symbol, &child.prompt_symbol);
        over(&mut self.banner, &child.banner);
        for (base, child) in self.colours.iter_mut().zip(&child.colours) {
            over(base, child);
        }
        over(&mut self.faces, &child.faces);
        over(&mut self.verbs, &child.verbs);
        over(&mut self.interval_ms, &child.interval_ms);
        for (tool, emoji) in &child.tool_emoji {
            self.tool_emoji.insert(tool.clone(), emoji.clone());
        }
    }

    /// The resolved skin; anything still unset gets a plain fallback.
    fn finish(self, name: &str, origin: &str, description: &str) -> Skin {
        let mut palette = Palette::default();
        for (role, colour) in Role::ALL.into_iter().zip(self.colours) {
            palette.set(role, colour.unwrap_or_default());
        }
        Skin {
            name: name.to_string(),
            description: description.to_string(),
            origin: origin.to_string(),
            agent_name: self.agent_name.unwrap_or_else(|| "Talaria".into()),
            greeting: self.greeting.unwrap_or_default(),
            farewell: self.farewell.unwrap_or_default(),
            prompt_symbol: self.prompt_symbol.unwrap_or_else(|| "> ".into()),
            banner: self.banner.unwrap_or_default(),
            palette,
            spinner: SpinnerStyle {
                faces: self
                    .faces
                    .unwrap_or_else(|| ["|", "/", "-", "\\"].map(String::from).to_vec()),
                verbs: self.verbs.unwrap_or_default(),
                interval_ms: self.interval_ms.unwrap_or(100),
            },
            tool_emoji: self.tool_emoji,
        }
    }
}

/// A parsed skin file.
#[derive(Debug, Clone)]
struct SkinFile {
    inherits: Option<String>,
    inherits_line: Option<usize>,
    description: String,
    fields: Partial,
}

/// One definition in the catalog.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    origin: String,
    file: Result<SkinFile, SkinError>,
}

/// Every known skin definition, in precedence order.
#[derive(Debug, Clone)]
pub struct SkinCatalog {
    entries: Vec<Entry>,
}

impl SkinCatalog {
    /// The built-in skins only.
    pub fn builtin() -> SkinCatalog {
        let mut catalog = SkinCatalog {
            entries: Vec::new(),
        };
        for (name, yaml) in BUILTIN {
            catalog.add(BUILTIN_ORIGIN, name, yaml);
        }
        catalog
    }

    /// The built-ins, then `plugin_skins` in order, then the `*.yaml`/`*.yml`
    /// files of `user_dir` (in file-name order; a missing directory is fine).
    /// Invalid definitions are kept (their name resolves to an error) and
    /// reported as warnings, as are unreadable files.
    pub fn load(
        user_dir: Option<&Path>,
        plugin_skins: Vec<SkinSource>,
    ) -> (SkinCatalog, Vec<SkinWarning>) {
        let mut catalog = SkinCatalog::builtin();
        let mut warnings = Vec::new();
        for source in plugin_skins {
            catalog.add(&source.origin, &source.name, &source.yaml);
        }
        if let Some(dir) = user_dir {
            catalog.load_dir(dir, &mut warnings);
        }
        catalog.check(&mut warnings);
        (catalog, warnings)
    }

    /// Adds plugin skins to a loaded catalog where [`SkinCatalog::load`]
    /// would have put them (above the built-ins, below the user's files),
    /// without reading the user's directory again; returns every warning.
    pub fn with_plugin_skins(
        mut self,
        plugin_skins: Vec<SkinSource>,
    ) -> (SkinCatalog, Vec<SkinWarning>) {
        let at = self
            .entries
            .iter()
            .take_while(|e| e.origin == BUILTIN_ORIGIN)
            .count();
        let added = plugin_skins.into_iter().map(|source| {
            let (name, file) = parse_skin(&source.origin, &source.name, &source.yaml);
            Entry {
                name,
                origin: source.origin,
                file,
            }
        });
        self.entries.splice(at..at, added);
        let mut warnings = Vec::new();
        self.check(&mut warnings);
        (self, warnings)
    }

    fn load_dir(&mut self, dir: &Path, warnings: &mut Vec<SkinWarning>) {
        let read = match std::fs::read_dir(dir) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                warnings.push(SkinWarning::Unreadable {
                    path: display_path(dir),
                    message: e.to_string(),
                });
                return;
            }
        };
        let mut files: Vec<_> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let hidden = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_none_or(|n| n.starts_with('.'));
                let yaml = p
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| e == "yaml" || e == "yml");
                yaml && !hidden && p.is_file()
            })
            .collect();
        files.sort();
        for path in files {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => self.add(&display_path(&path), &stem, &text),
                Err(e) => warnings.push(SkinWarning::Unreadable {
                    path: display_path(&path),
                    message: e.to_string(),
                }),
            }
        }
    }

    /// Adds a definition above all the present ones.
    fn add(&mut self, origin: &str, default_name: &str, yaml: &str) {
        let (name, file) = parse_skin(origin, default_name, yaml);
        self.entries.push(Entry {
            name,
            origin: origin.to_string(),
            file,
        });
    }

    /// Reports every invalid definition, and every skin that cannot be resolved.
    fn check(&self, warnings: &mut Vec<SkinWarning>) {
        let mut seen: Vec<SkinError> = Vec::new();
        let mut report = |e: SkinError, warnings: &mut Vec<SkinWarning>| {
            if !seen.contains(&e) {
                seen.push(e.clone());
                warnings.push(SkinWarning::InvalidSkin(e));
            }
        };
        for entry in &self.entries {
            if let Err(e) = &entry.file {
                report(e.clone(), warnings);
            }
        }
        for name in self.names() {
            if let Err(e) = self.resolve(&name) {
                report(e, warnings);
            }
        }
    }

    /// The names of all skins, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.entries.iter().map(|e| e.name.clone()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// One line per skin name (its effective definition), sorted by name.
    pub fn list(&self) -> Vec<SkinInfo> {
        self.names()
            .into_iter()
            .filter_map(|name| {
                let entry = &self.entries[self.find(&name, self.entries.len())?];
                Some(SkinInfo {
                    description: entry
                        .file
                        .as_ref()
                        .map(|f| f.description.clone())
                        .unwrap_or_default(),
                    origin: entry.origin.clone(),
                    problem: self.resolve(&name).err().map(|e| e.to_string()),
                    name,
                })
            })
            .collect()
    }

    /// The skin `name`, with everything it inherits applied.
    pub fn resolve(&self, name: &str) -> Result<Skin, SkinError> {
        let index = self
            .find(name, self.entries.len())
            .ok_or_else(|| SkinError::Unknown {
                name: name.to_string(),
                available: self.names(),
            })?;
        let partial = self.resolve_index(index, &mut Vec::new())?;
        let entry = &self.entries[index];
        let description = entry
            .file
            .as_ref()
            .map(|f| f.description.as_str())
            .unwrap_or_default();
        Ok(partial.finish(&entry.name, &entry.origin, description))
    }

    /// The skin `name`, or when it cannot be used the `default` skin (the
    /// built-in one if `default` itself is broken) and the error to show.
    pub fn resolve_or_default(&self, name: &str) -> (Skin, Option<SkinError>) {
        match self.resolve(name) {
            Ok(skin) => (skin, None),
            Err(e) => {
                let fallback = self
                    .resolve(DEFAULT_SKIN)
                    .unwrap_or_else(|_| Skin::builtin_default());
                (fallback, Some(e))
            }
        }
    }

    /// The last definition of `name` before position `below`.
    fn find(&self, name: &str, below: usize) -> Option<usize> {
        self.entries[..below.min(self.entries.len())]
            .iter()
            .rposition(|e| e.name == name)
    }

    fn resolve_index(&self, index: usize, chain: &mut Vec<usize>) -> Result<Partial, SkinError> {
        let entry = &self.entries[index];
        let file = entry.file.as_ref().map_err(Clone::clone)?;
        chain.push(index);
        let explicit = file.inherits.as_deref();
        let parent = explicit.or((entry.name != DEFAULT_SKIN).then_some(DEFAULT_SKIN));
        let mut base = match parent {
            // `default` inherits the definition it overrides, if any.
            None => match self.find(DEFAULT_SKIN, index) {
                Some(p) => self.resolve_index(p, chain)?,
                None => Partial::default(),
            },
            Some(parent) => {
                let inherits_error = |message: String| SkinError::Invalid {
                    origin: entry.origin.clone(),
                    line: file.inherits_line,
                    key: Some("inherits".into()),
                    message,
                };
                let own = parent == entry.name;
                let below = if own { index } else { self.entries.len() };
                let Some(p) = self.find(parent, below) else {
                    return Err(inherits_error(if own {
                        format!("'{parent}' inherits its own name but no earlier skin has it")
                    } else {
                        format!(
                            "unknown skin '{parent}' (available: {})",
                            self.names().join(", ")
                        )
                    }));
                };
                if chain.contains(&p) {
                    let mut names: Vec<&str> = chain
                        .iter()
                        .map(|i| self.entries[*i].name.as_str())
                        .collect();
                    names.push(parent);
                    return Err(inherits_error(format!(
                        "inheritance cycle: {}",
                        names.join(" → ")
                    )));
                }
                self.resolve_index(p, chain)?
            }
        };
        base.overlay(&file.fields);
        Ok(base)
    }
}

/// `path` with the home directory written `~`.
fn display_path(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return Path::new("~").join(rest).display().to_string();
    }
    path.display().to_string()
}

/// Whether `name` may name a skin: letters, digits, `-`, `_`, `.`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn invalid(e: &SkinError) -> (Option<usize>, Option<&str>, &str) {
        match e {
            SkinError::Invalid {
                line, key, message, ..
            } => (*line, key.as_deref(), message.as_str()),
            SkinError::Unknown { .. } => panic!("not an Invalid error: {e}"),
        }
    }

    fn catalog(sources: &[(&str, &str)]) -> (SkinCatalog, Vec<SkinWarning>) {
        let sources = sources
            .iter()
            .map(|(name, yaml)| SkinSource::new(format!("test/{name}.yaml"), *name, *yaml))
            .collect();
        SkinCatalog::load(None, sources)
    }

    #[test]
    fn builtins_resolve_completely() {
        let catalog = SkinCatalog::builtin();
        let names = catalog.names();
        assert!(names.len() >= 4, "{names:?}");
        for name in names {
            let skin = catalog.resolve(&name).unwrap();
            assert_eq!(skin.name, name);
            assert_eq!(skin.origin, BUILTIN_ORIGIN);
            assert!(!skin.description.is_empty(), "{name}");
            assert!(!skin.spinner.faces.is_empty(), "{name}");
            assert!(!skin.prompt_symbol.is_empty(), "{name}");
            assert!(skin.tool_emoji.contains_key("default"), "{name}");
        }
        // The default skin sets every field itself.
        let default = parse_skin(BUILTIN_ORIGIN, "default", BUILTIN[0].1)
            .1
            .unwrap();
        let f = default.fields;
        assert!(f.colours.iter().all(Option::is_some));
        assert!(f.agent_name.is_some() && f.greeting.is_some() && f.farewell.is_some());
        assert!(f.banner.is_some() && f.faces.is_some() && f.verbs.is_some());
        assert!(f.interval_ms.is_some() && f.prompt_symbol.is_some());
    }

    #[test]
    fn mono_has_no_colours() {
        let mono = SkinCatalog::builtin().resolve("mono").unwrap();
        for role in Role::ALL {
            assert_eq!(mono.palette.get(role), Colour::Default, "{role:?}");
            assert_eq!(mono.paint(role, "x", true), "x");
        }
        assert!(mono.welcome(true).is_ascii());
        assert!(mono.spinner.faces.iter().all(|f| f.is_ascii()));
        assert!(mono.tool_emoji.values().all(|e| e.is_ascii()));
    }

    #[test]
    fn inheritance_fills_unset_fields() {
        let ocean = SkinCatalog::builtin().resolve("ocean").unwrap();
        let default = Skin::builtin_default();
        assert_eq!(ocean.agent_name, default.agent_name);
        assert_eq!(ocean.banner, default.banner);
        assert_eq!(ocean.tool_emoji("terminal"), "💻");
        assert_ne!(ocean.palette, default.palette);
        assert_eq!(ocean.farewell, "Fair winds.");
    }

    #[test]
    fn later_sources_override_and_may_extend_their_own_name() {
        let (c, w) = catalog(&[
            (
                "ocean",
                "description: mine\ninherits: ocean\ncolors:\n  accent: red\n",
            ),
            ("extra", "inherits: ocean\nagent_name: Bob\n"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        let ocean = c.resolve("ocean").unwrap();
        assert_eq!(ocean.palette.get(Role::Accent), Colour::Ansi(1));
        assert_eq!(ocean.palette.get(Role::Link), Colour::Rgb(0x48, 0xca, 0xe4));
        assert_eq!(ocean.description, "mine");
        assert_eq!(ocean.origin, "test/ocean.yaml");
        let extra = c.resolve("extra").unwrap();
        assert_eq!(extra.agent_name, "Bob");
        assert_eq!(extra.palette.get(Role::Accent), Colour::Ansi(1));
        assert_eq!(extra.description, "");
        let info = c.list();
        let o = info.iter().find(|i| i.name == "ocean").unwrap();
        assert_eq!(o.origin, "test/ocean.yaml");
        assert_eq!(info.iter().filter(|i| i.name == "ocean").count(), 1);
    }

    #[test]
    fn overriding_default_changes_every_skin() {
        let (c, w) = catalog(&[("default", "agent_name: Hermes\n")]);
        assert!(w.is_empty(), "{w:?}");
        let d = c.resolve("default").unwrap();
        assert_eq!(d.agent_name, "Hermes");
        // Everything else still comes from the built-in default.
        assert_eq!(d.palette, Skin::builtin_default().palette);
        assert_eq!(c.resolve("ember").unwrap().agent_name, "Hermes");
    }

    #[test]
    fn name_key_overrides_file_stem() {
        let (c, _) = catalog(&[("file", "name: other\n")]);
        assert!(c.resolve("other").is_ok());
        assert!(matches!(c.resolve("file"), Err(SkinError::Unknown { .. })));
    }

    #[test]
    fn bad_colour_names_file_line_and_key() {
        let yaml = "description: x\ncolors:\n  text: default\n  accent: blurple\n";
        let (c, w) = catalog(&[("x", yaml)]);
        assert_eq!(w.len(), 1, "{w:?}");
        let e = c.resolve("x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "test/x.yaml:4: colors.accent: unknown colour 'blurple' (expected black, red, \
             green, yellow, blue, magenta, cyan, white, bright-<name>, grey, default or #rrggbb)"
        );
        assert_eq!(w[0].to_string(), e.to_string());
        let (skin, err) = c.resolve_or_default("x");
        assert_eq!(skin.name, "default");
        assert_eq!(err, Some(e));
        let info = c.list().into_iter().find(|i| i.name == "x").unwrap();
        assert!(info.problem.unwrap().contains("blurple"));
    }

    #[test]
    fn structural_errors_are_located() {
        let cases: &[(&str, usize, &str, &str)] = &[
            (
                "name: x\ncolours:\n  accent: red\n",
                2,
                "colours",
                "unknown key",
            ),
            ("colors:\n  acent: red\n", 2, "colors.acent", "unknown key"),
            (
                "greeting: [1]\n",
                1,
                "greeting",
                "expected a string, found a list",
            ),
            (
                "farewell: 3\n",
                1,
                "farewell",
                "expected a string, found a number",
            ),
            (
                "spinner:\n  interval_ms: fast\n",
                2,
                "spinner.interval_ms",
                "expected a number",
            ),
            (
                "spinner:\n  interval_ms: 0\n",
                2,
                "spinner.interval_ms",
                "from 20 to 5000",
            ),
            (
                "spinner:\n  faces: []\n",
                2,
                "spinner.faces",
                "at least one face",
            ),
            (
                "spinner:\n  faces:\n    - a\n    - ''\n",
                4,
                "spinner.faces[1]",
                "non-empty string",
            ),
            (
                "spinner:\n  faces: [a, [b]]\n",
                2,
                "spinner.faces[1]",
                "found a list",
            ),
            ("spinner: fast\n", 1, "spinner", "expected a mapping"),
            (
                "tool_emoji:\n  terminal: {a: 1}\n",
                2,
                "tool_emoji.terminal",
                "found a mapping",
            ),
            ("# c\n\nname: 'bad name'\n", 3, "name", "invalid skin name"),
        ];
        for (yaml, line, key, message) in cases {
            let (c, w) = catalog(&[("x", yaml)]);
            assert_eq!(w.len(), 1, "{yaml}: {w:?}");
            let name = if key == &"name" { "bad name" } else { "x" };
            let e = c.resolve(name).unwrap_err();
            let (l, k, m) = invalid(&e);
            assert_eq!((l, k), (Some(*line), Some(*key)), "{yaml}: {e}");
            assert!(m.contains(message), "{yaml}: {e}");
        }
    }

    #[test]
    fn yaml_syntax_errors_carry_the_line() {
        let (c, w) = catalog(&[("x", "name: x\ncolors:\n  accent: [red\n")]);
        assert_eq!(w.len(), 1);
        let e = c.resolve("x").unwrap_err();
        let (line, key, message) = invalid(&e);
        assert_eq!(line, Some(4), "{e}");
        assert_eq!(key, None);
        assert!(message.starts_with("invalid YAML: "), "{e}");
        assert!(!message.contains(" at line 4 "), "{e}");
        let (c, _) = catalog(&[("x", "- a\n- b\n")]);
        assert!(
            invalid(&c.resolve("x").unwrap_err())
                .2
                .contains("expected a mapping")
        );
    }

    #[test]
    fn duplicate_keys_name_the_second_one() {
        let (c, _) = catalog(&[("x", "greeting: a\ncolors:\n  accent: red\n  accent: blue\n")]);
        let e = c.resolve("x").unwrap_err();
        assert_eq!(e.to_string(), "test/x.yaml:4: colors.accent: duplicate key");
        let (c, _) = catalog(&[("x", "greeting: a\n\ngreeting: b\n")]);
        let e = c.resolve("x").unwrap_err();
        assert_eq!(e.to_string(), "test/x.yaml:3: greeting: duplicate key");
    }

    #[test]
    fn empty_file_is_the_default_look() {
        let (c, w) = catalog(&[("blank", "")]);
        assert!(w.is_empty(), "{w:?}");
        let blank = c.resolve("blank").unwrap();
        assert_eq!(blank.palette, Skin::builtin_default().palette);
    }

    #[test]
    fn unknown_parent_and_cycles() {
        let (c, w) = catalog(&[("x", "description: d\ninherits: nowhere\n")]);
        assert_eq!(w.len(), 1, "{w:?}");
        let e = c.resolve("x").unwrap_err();
        assert_eq!(invalid(&e).0, Some(2));
        assert!(
            e.to_string()
                .starts_with("test/x.yaml:2: inherits: unknown skin 'nowhere'")
        );

        let (c, w) = catalog(&[("a", "inherits: b\n"), ("b", "inherits: a\n")]);
        assert!(!w.is_empty());
        let e = c.resolve("a").unwrap_err();
        assert!(
            e.to_string().contains("inheritance cycle: a → b → a"),
            "{e}"
        );
        assert_eq!(invalid(&e).0, Some(1));
        let (skin, err) = c.resolve_or_default("b");
        assert_eq!(skin.name, "default");
        assert!(err.is_some());

        let (c, _) = catalog(&[("a", "inherits: a\n")]);
        assert!(
            c.resolve("a")
                .unwrap_err()
                .to_string()
                .contains("no earlier skin")
        );
    }

    #[test]
    fn broken_default_falls_back_to_builtin() {
        let (c, w) = catalog(&[("default", "colors:\n  accent: nope\n")]);
        assert_eq!(w.len(), 1, "{w:?}");
        let (skin, err) = c.resolve_or_default("ocean");
        assert!(err.is_some());
        assert_eq!(skin, Skin::builtin_default());
    }

    #[test]
    fn unknown_name_lists_the_available_ones() {
        let e = SkinCatalog::builtin().resolve("nope").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("unknown skin 'nope' (available: "),
            "{text}"
        );
        assert!(text.contains("ocean"), "{text}");
    }

    #[test]
    fn user_directory_loads_and_overrides_plugins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.yaml"), "agent_name: Mine\n").unwrap();
        std::fs::write(dir.path().join("probe.yml"), "agent_name: User\n").unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "colors:\n  bullet: 12\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a skin").unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), "nope: 1").unwrap();
        let plugin = SkinSource::new("plugin commands-probe", "probe", "agent_name: Plugin\n");
        let (c, w) = SkinCatalog::load(Some(dir.path()), vec![plugin]);
        assert_eq!(w.len(), 1, "{w:?}");
        let text = w[0].to_string();
        assert!(
            text.contains("bad.yaml:2: colors.bullet: expected a string"),
            "{text}"
        );
        assert_eq!(c.resolve("mine").unwrap().agent_name, "Mine");
        assert_eq!(c.resolve("probe").unwrap().agent_name, "User");
        assert!(c.resolve("bad").is_err());
        assert!(c.resolve("notes").is_err());
        assert!(c.resolve("ocean").is_ok());

        let (c, w) = SkinCatalog::load(
            Some(&dir.path().join("missing")),
            vec![SkinSource::new(
                "plugin commands-probe",
                "probe",
                "agent_name: Plugin\n",
            )],
        );
        assert!(w.is_empty());
        let probe = c.resolve("probe").unwrap();
        assert_eq!(probe.agent_name, "Plugin");
        assert_eq!(probe.origin, "plugin commands-probe");
    }

    #[test]
    fn plugin_skins_added_later_rank_as_if_loaded_together() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("probe.yaml"), "agent_name: User\n").unwrap();
        let plugins = || {
            vec![
                SkinSource::new("plugin p", "probe", "agent_name: Plugin\n"),
                SkinSource::new("plugin p", "only-plugin", "agent_name: Only\n"),
                SkinSource::new("plugin p", "ocean", "agent_name: PluginOcean\n"),
            ]
        };
        let (together, _) = SkinCatalog::load(Some(dir.path()), plugins());
        let (first, _) = SkinCatalog::load(Some(dir.path()), Vec::new());
        let (later, warnings) = first.with_plugin_skins(plugins());
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(later.list(), together.list());
        assert_eq!(later.resolve("probe").unwrap().agent_name, "User");
        assert_eq!(later.resolve("only-plugin").unwrap().agent_name, "Only");
        assert_eq!(later.resolve("ocean").unwrap().agent_name, "PluginOcean");
    }

    #[test]
    fn tool_emoji_falls_back_to_default() {
        let (c, _) = catalog(&[("x", "tool_emoji:\n  default: '*'\n  mine: '!'\n")]);
        let x = c.resolve("x").unwrap();
        assert_eq!(x.tool_emoji("mine"), "!");
        assert_eq!(x.tool_emoji("terminal"), "💻");
        assert_eq!(x.tool_emoji("other"), "*");
    }

    #[test]
    fn welcome_and_prompt() {
        let d = Skin::builtin_default();
        let plain = d.welcome(false);
        assert!(plain.starts_with(&d.banner));
        assert!(plain.ends_with(&format!("{}\n", d.greeting)));
        assert!(d.welcome(true).contains("\x1b["));
        assert_eq!(d.prompt(false), d.prompt_symbol);
    }
}
