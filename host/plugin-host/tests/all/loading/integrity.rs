//! The compile cache's integrity: compiled code runs natively, so a cache file
//! that is not provably this profile's own (tampered, swapped for another
//! component's, forged memo, another key) is compiled again, never loaded; a
//! distribution's prebuilt files load only when they match their digest list.
//! And a plugin file that is not a regular file is refused without hanging.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use talaria_plugin_host::{
    Grants, HostOptions, LoadError, LoadedPlugin, PREBUILT_DIGESTS, PREBUILT_SIGNATURE, PluginHost,
    PluginTools, prebuilt_signed_message,
};

/// The compiled components in a cache directory, by file name.
fn compiled_entries(cache: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
        .collect();
    entries.sort();
    entries
}

/// The one compiled entry in `cache` whose name starts with the SHA-256 of `dir`'s component.
fn entry_of(cache: &Path, dir: &Path) -> PathBuf {
    let digest = sha256_hex(&std::fs::read(dir.join("plugin.wasm")).unwrap());
    compiled_entries(cache)
        .into_iter()
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&digest)
        })
        .expect("a compiled entry for the component")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `noop` still behaves as `noop`: its one tool answers `{}`.
pub(crate) async fn assert_is_noop(plugin: LoadedPlugin, cwd: &Path) {
    assert_eq!(tool_names(&plugin), ["noop"]);
    let tools = PluginTools::new(vec![plugin], cwd).unwrap();
    let out = call(&tools, "s", "noop", serde_json::json!({})).await;
    assert_eq!(
        out,
        Outcome {
            content: "{}".into(),
            is_error: false
        }
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_cache_file_is_recompiled_not_loaded() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    host.load(&noop_dir(), &Grants::none()).await.unwrap();
    let entry = entry_of(&root.path().join("cache"), &noop_dir());
    // Flip bytes in the middle of the compiled code (as a patch of machine code would).
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 16] {
        *byte ^= 0x5a;
    }
    std::fs::write(&entry, &bytes).unwrap();

    let again = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!again.from_cache(), "a tampered file was loaded");
    assert_eq!(host.cache_stats().compiled, 2);
    assert_ne!(
        std::fs::read(&entry).unwrap(),
        bytes,
        "the cache was rewritten"
    );
    assert_is_noop(again, root.path()).await;
    let third = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(third.from_cache(), "the rewritten file verifies");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_components_valid_compiled_file_is_not_loaded_in_its_place() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let cache = root.path().join("cache");
    host.load(&noop_dir(), &Grants::none()).await.unwrap();
    host.load(&hostile_dir(), &Grants::none()).await.unwrap();
    let noop_entry = entry_of(&cache, &noop_dir());
    std::fs::copy(entry_of(&cache, &hostile_dir()), &noop_entry).unwrap();

    let other = PluginHost::new(HostOptions::new(&cache, root.path().join("data2"))).unwrap();
    let noop = other.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!noop.from_cache(), "hostile's code was loaded as noop");
    assert_is_noop(noop, root.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_digest_memo_cannot_point_a_plugin_at_another_component() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let noop = variant(&noop_dir(), &root.path().join("noop"), |m| m);
    let hostile = variant(&hostile_dir(), &root.path().join("hostile"), |m| m);
    host.load(&noop, &Grants::none()).await.unwrap();
    host.load(&hostile, &Grants::none()).await.unwrap();
    let noop_digest = sha256_hex(&std::fs::read(noop.join("plugin.wasm")).unwrap());
    let hostile_digest = sha256_hex(&std::fs::read(hostile.join("plugin.wasm")).unwrap());
    let mut forged = 0;
    for memo in std::fs::read_dir(root.path().join("cache/sources")).unwrap() {
        let memo = memo.unwrap().path();
        let text = std::fs::read_to_string(&memo).unwrap();
        if text.contains(&noop_digest) {
            std::fs::write(&memo, text.replace(&noop_digest, &hostile_digest)).unwrap();
            forged += 1;
        }
    }
    assert_eq!(forged, 1);

    let loaded = host.load(&noop, &Grants::none()).await.unwrap();
    assert_is_noop(loaded, root.path()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_written_under_another_key_is_not_trusted() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let host = host(root.path());
    host.load(&noop_dir(), &Grants::none()).await.unwrap();
    let key = root.path().join("cache.key");
    let original = std::fs::read(&key).unwrap();
    assert_eq!(original.len(), 32, "the default key sits beside the cache");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // Another profile's secret: nothing in this cache verifies under it.
    let other_key = root.path().join("other.key");
    std::fs::write(&other_key, [0x42u8; 32]).unwrap();
    let other = PluginHost::new(
        HostOptions::new(&cache, root.path().join("data2")).with_cache_key_file(&other_key),
    )
    .unwrap();
    let loaded = other.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(
        !loaded.from_cache(),
        "a file sealed under another key loaded"
    );
    assert_eq!(other.cache_stats().compiled, 1);
    assert_is_noop(loaded, root.path()).await;

    // Rewritten under that key, the original key no longer verifies it either.
    let first = PluginHost::new(HostOptions::new(&cache, root.path().join("data3"))).unwrap();
    let loaded = first.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!loaded.from_cache());
    assert_eq!(std::fs::read(&key).unwrap(), original, "the key is kept");

    // Without any key (deleted), the cache is not trusted and a new key is made.
    std::fs::remove_file(&key).unwrap();
    let fresh = PluginHost::new(HostOptions::new(&cache, root.path().join("data4"))).unwrap();
    let loaded = fresh.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!loaded.from_cache());
    assert_ne!(std::fs::read(&key).unwrap(), original);
}

#[tokio::test(flavor = "multi_thread")]
async fn prebuilt_files_load_only_when_they_match_their_digest_list() {
    let root = tempfile::tempdir().unwrap();
    let builder = host(root.path());
    builder.load(&noop_dir(), &Grants::none()).await.unwrap();
    let prebuilt = root.path().join("dist/.compiled");
    let written = builder.export_prebuilt(&prebuilt).unwrap();
    assert_eq!(written.len(), 1);
    let list = std::fs::read_to_string(prebuilt.join(PREBUILT_DIGESTS)).unwrap();
    assert!(list.ends_with(&format!("  {}\n", written[0])), "{list}");

    let fresh = |n: u32| {
        PluginHost::new(
            HostOptions::new(
                root.path().join(format!("profile{n}/cache")),
                root.path().join("data"),
            )
            .with_prebuilt_dirs(vec![prebuilt.clone()]),
        )
        .unwrap()
    };
    let host = fresh(1);
    let loaded = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(loaded.from_cache(), "the prebuilt file was not used");
    assert_eq!(host.cache_stats().compiled, 0);

    // A damaged prebuilt file is not loaded: compiled into the profile instead.
    let file = prebuilt.join(&written[0]);
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let host = fresh(2);
    let loaded = host.load(&noop_dir(), &Grants::none()).await.unwrap();
    assert!(!loaded.from_cache());
    assert_is_noop(loaded, root.path()).await;

    // Nor is an unlisted one.
    bytes[middle] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    std::fs::remove_file(prebuilt.join(PREBUILT_DIGESTS)).unwrap();
    let host = fresh(3);
    assert!(
        !host
            .load(&noop_dir(), &Grants::none())
            .await
            .unwrap()
            .from_cache()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_distribution_key_prebuilt_files_load_only_under_its_signature() {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use ed25519_dalek::{Signer as _, SigningKey};

    let root = tempfile::tempdir().unwrap();
    let builder = host(root.path());
    builder.load(&noop_dir(), &Grants::none()).await.unwrap();
    let prebuilt = root.path().join("dist/.compiled");
    builder.export_prebuilt(&prebuilt).unwrap();
    let list_path = prebuilt.join(PREBUILT_DIGESTS);
    let list = std::fs::read(&list_path).unwrap();
    let signing = SigningKey::from_bytes(&[7; 32]);
    let sign = |list: &[u8]| BASE64.encode(signing.sign(&prebuilt_signed_message(list)).to_bytes());
    std::fs::write(prebuilt.join(PREBUILT_SIGNATURE), sign(&list)).unwrap();
    let public = |key: &SigningKey| BASE64.encode(key.verifying_key().to_bytes());

    let loads_prebuilt = |n: u32, key: String| {
        let options = HostOptions::new(
            root.path().join(format!("profile{n}/cache")),
            root.path().join("data"),
        )
        .with_prebuilt_dirs(vec![prebuilt.clone()])
        .with_prebuilt_key(Some(key));
        async move {
            let host = PluginHost::new(options).unwrap();
            let loaded = host.load(&noop_dir(), &Grants::none()).await.unwrap();
            loaded.from_cache() && host.cache_stats().compiled == 0
        }
    };
    assert!(loads_prebuilt(1, public(&signing)).await);
    // Another distribution's key: compiled instead, never loaded.
    assert!(!loads_prebuilt(2, public(&SigningKey::from_bytes(&[8; 32]))).await);
    // A key that is not one.
    assert!(!loads_prebuilt(3, "not a key".to_owned()).await);
    // A list changed after signing (a line for a planted file).
    let mut planted = list.clone();
    planted.extend_from_slice(format!("{}  planted.cwasm\n", "0".repeat(64)).as_bytes());
    std::fs::write(&list_path, &planted).unwrap();
    assert!(!loads_prebuilt(4, public(&signing)).await);
    // A signature made for other bytes than this list's message.
    std::fs::write(&list_path, &list).unwrap();
    std::fs::write(
        prebuilt.join(PREBUILT_SIGNATURE),
        BASE64.encode(signing.sign(&list).to_bytes()),
    )
    .unwrap();
    assert!(!loads_prebuilt(5, public(&signing)).await);
    // No signature at all.
    std::fs::remove_file(prebuilt.join(PREBUILT_SIGNATURE)).unwrap();
    assert!(!loads_prebuilt(6, public(&signing)).await);
    // Without a key the digests alone decide, as before.
    let host = PluginHost::new(
        HostOptions::new(root.path().join("profile7/cache"), root.path().join("data"))
            .with_prebuilt_dirs(vec![prebuilt.clone()]),
    )
    .unwrap();
    assert!(
        host.load(&noop_dir(), &Grants::none())
            .await
            .unwrap()
            .from_cache()
    );
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_plugin_file_is_refused_without_hanging() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let dir = variant(&noop_dir(), &root.path().join("fifo"), |m| m);
    std::fs::remove_file(dir.join("plugin.wasm")).unwrap();
    mkfifo(&dir.join("plugin.wasm"));
    // A hang is the failure this guards against: give up (and fail) after a minute.
    let result = tokio::time::timeout(Duration::from_secs(60), host.load(&dir, &Grants::none()))
        .await
        .expect("loading a FIFO plugin.wasm hung");
    let error = result.unwrap_err();
    assert!(matches!(error, LoadError::Wasm { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("plugin.wasm: not a regular file but a FIFO"),
        "{error}"
    );

    let manifest_fifo = root.path().join("manifest-fifo");
    std::fs::create_dir_all(&manifest_fifo).unwrap();
    mkfifo(&manifest_fifo.join("plugin.toml"));
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        host.load(&manifest_fifo, &Grants::none()),
    )
    .await
    .expect("loading a FIFO plugin.toml hung");
    let error = result.unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
}
