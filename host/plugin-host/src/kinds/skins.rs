//! Skins from plugins: those a `skin-plugin` component lists once at load,
//! then the package's data skins (`skins/*.yaml` next to `plugin.toml`). The
//! YAML is passed through untouched; whoever applies a skin validates it.

use std::io::Read;
use std::path::Path;

use super::commands::{MAX_COMMAND_NAME_LEN, valid_command_name};
use super::{Kind, Slot, Slots};
use crate::bindings::skin_world::SkinPluginPre;
use crate::bindings::talaria::plugin::types::Skin as WitSkin;
use crate::error::{CallError, LoadError};
use crate::invoke::{Invocation, once_at_load};
use crate::loaded::LoadedPlugin;
use crate::state::PluginState;
use talaria_plugin_manifest::PluginKind;

/// The `skin` kind: skins a component lists at load (data skins need no
/// component: [`read_data_skins`]).
pub(crate) struct SkinKind;

impl Kind for SkinKind {
    const KIND: PluginKind = PluginKind::Skin;
    type Pre = SkinPluginPre<PluginState>;
    type Listed = Vec<PluginSkin>;

    fn pre(
        instance: &wasmtime::component::InstancePre<PluginState>,
    ) -> wasmtime::Result<Self::Pre> {
        SkinPluginPre::new(instance.clone())
    }

    async fn list(inv: &Invocation<'_>, pre: &Self::Pre) -> Result<Self::Listed, LoadError> {
        let plugin = &inv.shared.name;
        let listed = invoke_list_skins(inv, pre)
            .await
            .map_err(|e| LoadError::Exports {
                plugin: plugin.clone(),
                message: format!("listing its skins failed: {e}"),
            })?;
        let (skins, dropped) = convert_skins(plugin, listed);
        crate::loaded::note_dropped(&inv.shared.log, &dropped);
        Ok(skins)
    }

    fn slot(slots: &Slots) -> Option<&Slot<Self>> {
        slots.skin.as_ref()
    }

    fn slot_mut(slots: &mut Slots) -> &mut Option<Slot<Self>> {
        &mut slots.skin
    }
}

/// Every skin of the plugins loaded, in load order; a name an earlier plugin
/// provides is dropped and reported. Skins are data read at load, so nothing
/// is placed in a working directory.
#[derive(Debug, Clone, Default)]
pub struct PluginSkins {
    skins: Vec<PluginSkin>,
    clashes: Vec<String>,
}

impl PluginSkins {
    /// The skins of `plugins` (their components' then their data skins).
    pub fn new(plugins: &[LoadedPlugin]) -> Self {
        let mut set = Self::default();
        for skin in plugins.iter().flat_map(LoadedPlugin::skins) {
            match set.skins.iter().find(|s| s.name == skin.name) {
                Some(owner) => set.clashes.push(format!(
                    "skin {} of plugin {} dropped: plugin {} already provides it",
                    skin.name, skin.plugin, owner.plugin
                )),
                None => set.skins.push(skin.clone()),
            }
        }
        set
    }

    /// The skins kept, in load order.
    pub fn skins(&self) -> &[PluginSkin] {
        &self.skins
    }

    /// The skins, for whoever applies them.
    pub fn into_skins(self) -> Vec<PluginSkin> {
        self.skins
    }

    /// One line per skin dropped because an earlier plugin has its name.
    pub fn clashes(&self) -> &[String] {
        &self.clashes
    }
}

/// The directory of data skins inside a plugin package.
pub const SKINS_DIR: &str = "skins";

/// Largest skin, in bytes (a data file or one a component lists).
pub const MAX_SKIN_BYTES: usize = 64 * 1024;

/// A skin a plugin provides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PluginSkin {
    /// The plugin providing it.
    pub plugin: String,
    /// The skin name (a data skin's file stem).
    pub name: String,
    /// The skin, as YAML text (not validated here).
    pub yaml: String,
}

/// Adds one skin to `skins` unless its name is invalid or taken, or it is too
/// large; says why when it is not added.
fn admit(skins: &mut Vec<PluginSkin>, skin: PluginSkin, from: &str) -> Result<(), String> {
    if !valid_command_name(&skin.name) {
        return Err(format!(
            "skin {:?} {from} dropped: a skin name is 1 to {MAX_COMMAND_NAME_LEN} of a-z, 0-9 \
             and - (not first)",
            skin.name
        ));
    }
    if skins.iter().any(|s| s.name == skin.name) {
        return Err(format!(
            "skin {} {from} dropped: the plugin already provides a skin of that name",
            skin.name
        ));
    }
    if skin.yaml.len() > MAX_SKIN_BYTES {
        return Err(format!(
            "skin {} {from} dropped: larger than {} KiB",
            skin.name,
            MAX_SKIN_BYTES / 1024
        ));
    }
    skins.push(skin);
    Ok(())
}

/// Validates the skins a component listed: kept skins and one line per skin
/// dropped.
fn convert_skins(plugin: &str, listed: Vec<WitSkin>) -> (Vec<PluginSkin>, Vec<String>) {
    let mut skins = Vec::new();
    let mut dropped = Vec::new();
    for skin in listed {
        let skin = PluginSkin {
            plugin: plugin.to_owned(),
            name: skin.name,
            yaml: skin.yaml,
        };
        if let Err(why) = admit(&mut skins, skin, "from list-skins") {
            dropped.push(why);
        }
    }
    (skins, dropped)
}

/// Reads `dir/skins/*.yaml` (in name order) into `skins`, after those
/// already there. Files that are not regular (symlinks included), larger than
/// [`MAX_SKIN_BYTES`], not UTF-8, or whose stem is not a valid name or is
/// already taken are skipped; returns one line per file skipped.
pub(crate) fn read_data_skins(
    plugin: &str,
    dir: &Path,
    skins: &mut Vec<PluginSkin>,
) -> Vec<String> {
    let skins_dir = dir.join(SKINS_DIR);
    let mut dropped = Vec::new();
    let entries = match std::fs::read_dir(&skins_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return dropped,
        Err(e) => {
            dropped.push(format!("{}: {e}", skins_dir.display()));
            return dropped;
        }
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let from = format!("from {}", path.display());
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            dropped.push(format!("{}: the file name is not UTF-8", path.display()));
            continue;
        };
        let yaml = match read_capped(&path) {
            Ok(yaml) => yaml,
            Err(why) => {
                dropped.push(format!("skin {name} {from} dropped: {why}"));
                continue;
            }
        };
        let skin = PluginSkin {
            plugin: plugin.to_owned(),
            name: name.to_owned(),
            yaml,
        };
        if let Err(why) = admit(skins, skin, &from) {
            dropped.push(why);
        }
    }
    dropped
}

/// A regular file's text, refused beyond [`MAX_SKIN_BYTES`].
fn read_capped(path: &Path) -> Result<String, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let too_large = || format!("larger than {} KiB", MAX_SKIN_BYTES / 1024);
    if meta.len() > MAX_SKIN_BYTES as u64 {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_SKIN_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > MAX_SKIN_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".into())
}

/// `list-skins` in a fresh instance.
async fn invoke_list_skins(
    inv: &Invocation<'_>,
    pre: &SkinPluginPre<PluginState>,
) -> Result<Vec<WitSkin>, CallError> {
    once_at_load(inv, "list-skins", async |store| {
        let instance = pre.instantiate_async(&mut *store).await?;
        instance
            .talaria_plugin_skin_provider()
            .call_list_skins(store)
            .await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wit(name: &str, yaml: &str) -> WitSkin {
        WitSkin {
            name: name.into(),
            yaml: yaml.into(),
        }
    }

    #[test]
    fn listed_skins_are_validated() {
        let big = "x".repeat(MAX_SKIN_BYTES + 1);
        let (skins, dropped) = convert_skins(
            "p",
            vec![
                wit("dark", "a: 1"),
                wit("Dark", "a: 2"),
                wit("dark", "a: 3"),
                wit("huge", &big),
            ],
        );
        assert_eq!(
            skins,
            [PluginSkin {
                plugin: "p".into(),
                name: "dark".into(),
                yaml: "a: 1".into()
            }]
        );
        assert_eq!(dropped.len(), 3, "{dropped:#?}");
    }

    #[test]
    fn data_skins_come_from_yaml_files() {
        let dir = tempfile::tempdir().unwrap();
        let skins_dir = dir.path().join(SKINS_DIR);
        std::fs::create_dir(&skins_dir).unwrap();
        std::fs::write(skins_dir.join("light.yaml"), "agent_name: L\n").unwrap();
        std::fs::write(skins_dir.join("dark.yaml"), "agent_name: D2\n").unwrap();
        std::fs::write(skins_dir.join("notes.txt"), "not a skin").unwrap();
        std::fs::write(skins_dir.join("Bad.yaml"), "x: 1").unwrap();
        std::fs::write(skins_dir.join("big.yaml"), "#".repeat(MAX_SKIN_BYTES + 1)).unwrap();
        std::fs::write(skins_dir.join("latin1.yaml"), b"name: \xe9").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", skins_dir.join("link.yaml")).unwrap();

        let mut skins = vec![PluginSkin {
            plugin: "p".into(),
            name: "dark".into(),
            yaml: "agent_name: D\n".into(),
        }];
        let dropped = read_data_skins("p", dir.path(), &mut skins);
        let names: Vec<(&str, &str)> = skins
            .iter()
            .map(|s| (s.name.as_str(), s.yaml.as_str()))
            .collect();
        assert_eq!(
            names,
            [("dark", "agent_name: D\n"), ("light", "agent_name: L\n")],
            "the listed skin wins over a data file of the same name"
        );
        let expected = if cfg!(unix) { 5 } else { 4 };
        assert_eq!(dropped.len(), expected, "{dropped:#?}");
        assert!(read_data_skins("p", &dir.path().join("none"), &mut skins).is_empty());
    }
}
