//! Community plugins: the index format, signatures, semver resolution, the
//! lockfile, safe archives and atomic installs. The CLI (`talaria plugin …`)
//! decides grants and talks to the user; this crate does the rest.
//!
//! See `registry/README.md` for the index format and the flow of an install.

mod archive;
mod client;
mod error;
mod fsutil;
mod index;
mod install;
mod lockfile;
mod publish;
mod resolve;
mod settings;
mod signing;
mod source;

pub use archive::{ArchiveLimits, pack as pack_dir, unpack};
pub use client::{Index, Registry, SearchHit, check_archive};
pub use error::RegistryError;
pub use fsutil::{InstallLock, sha256_hex};
pub use index::{
    CatalogEntry, INDEX_FILE, INDEX_FORMAT, IndexConfig, IndexKey, PLUGINS_DIR, PluginFile,
    Signature, VersionEntry, schemas, valid_plugin_name,
};
pub use install::{Expected, Layout, Prepared, Provenance, capabilities_json};
pub use lockfile::{LockedPlugin, Lockfile, PATH_SOURCE};
pub use publish::{Packed, Published, inspect, pack, publish};
pub use resolve::{parse_spec, resolve};
pub use settings::{IndexList, IndexSettings};
pub use signing::{SecretKey, decode_public, verify};
pub use source::MAX_INDEX_FILE_BYTES;
