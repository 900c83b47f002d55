//! Skins as data: a type implementing [`Skins`] and one
//! [`export_skins!`](crate::export_skins).
//!
//! ```
//! use talaria_plugin_sdk::{Skin, Skins};
//!
//! struct Themes;
//!
//! impl Skins for Themes {
//!     fn skins() -> Vec<Skin> {
//!         vec![Skin::new("midnight", "agent_name: Midnight\nprompt_symbol: \"☾ \"\n")]
//!     }
//! }
//!
//! talaria_plugin_sdk::export_skins!(Themes);
//! # fn main() {
//! #     assert_eq!(Themes::skins()[0].name, "midnight");
//! # }
//! ```
//!
//! A skin needs no component at all: any plugin package may ship
//! `skins/<name>.yaml` files next to its `plugin.toml`. A component is for
//! skins computed from configuration.

pub use crate::hooks_bindings::talaria::plugin::types::Skin;

impl Skin {
    /// The skin `name` (`[a-z0-9][a-z0-9-]*`, at most 32 characters) with its
    /// YAML text (the skin file format; at most 64 KiB).
    pub fn new(name: impl Into<String>, yaml: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            yaml: yaml.into(),
        }
    }
}

/// A skin plugin. The host lists [`Skins::skins`] once at load; the YAML is
/// validated by whoever applies the skin.
pub trait Skins {
    /// The skins this plugin provides.
    fn skins() -> Vec<Skin>;
}

/// Exports a type implementing [`Skins`] as the plugin's `skin-provider`.
/// Use it once per plugin crate, at the crate root; it can sit next to the
/// other export macros.
#[macro_export]
macro_rules! export_skins {
    ($skins:ty) => {
        #[doc(hidden)]
        pub struct __TalariaSkinPlugin;

        impl $crate::SkinProvider for __TalariaSkinPlugin {
            fn list_skins() -> ::std::vec::Vec<$crate::Skin> {
                $crate::install_panic_hook();
                <$skins as $crate::Skins>::skins()
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::skin_bindings::__export_skin_plugin!(
            __TalariaSkinPlugin with_types_in $crate::skin_bindings
        );
    };
}
