//! Community plugins end to end: a signed index served over HTTP on loopback
//! by the test, and the real binary installing, updating, refusing and
//! reproducing from it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common::{
    Home, assert_code, assert_contains, build_plugins, copy_dir, run, stderr, stdout,
};
use talaria_testkit::StaticServer;

/// A directory index signed with a key made by `talaria plugin keygen`,
/// served over HTTP, with package variants built from the `noop` test plugin.
struct IndexFixture {
    dir: tempfile::TempDir,
    key: PathBuf,
    server: StaticServer,
    /// A home used only to run the maintainer's commands.
    tools: Home,
}

impl IndexFixture {
    fn new() -> Self {
        build_plugins();
        let dir = tempfile::tempdir().unwrap();
        let tools = Home::new();
        let key = dir.path().join("index.key");
        let output = run(tools.talaria(&["plugin", "keygen", "--out", key.to_str().unwrap()]));
        assert_code(&output, 0);
        assert!(stdout(&output).contains("public key main = "));
        std::fs::create_dir(dir.path().join("index")).unwrap();
        let server = StaticServer::spawn(dir.path().join("index")).unwrap();
        Self {
            dir,
            key,
            server,
            tools,
        }
    }

    fn index_dir(&self) -> PathBuf {
        self.dir.path().join("index")
    }

    /// Packs and publishes a variant of the `noop` package.
    fn publish(&self, name: &str, version: &str, api: &str, capabilities: &str) -> PathBuf {
        let package = self.variant(name, version, api, capabilities);
        let archive = self.dir.path().join(format!("{name}-{version}.tar.gz"));
        let output = run(self.tools.talaria(&[
            "plugin",
            "pack",
            package.to_str().unwrap(),
            "--out",
            archive.to_str().unwrap(),
        ]));
        assert_code(&output, 0);
        let sha = talaria_registry::sha256_hex(&std::fs::read(&archive).unwrap());
        assert_contains(&stdout(&output), &format!("sha256 {sha}"));
        let output = run(self.tools.talaria(&[
            "plugin",
            "publish",
            archive.to_str().unwrap(),
            "--index",
            self.index_dir().to_str().unwrap(),
            "--key",
            self.key.to_str().unwrap(),
        ]));
        assert_code(&output, 0);
        archive
    }

    /// A package directory: noop's component under another manifest.
    fn variant(&self, name: &str, version: &str, api: &str, capabilities: &str) -> PathBuf {
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plugins/test/noop");
        let package = self.dir.path().join(format!("src-{name}-{version}"));
        copy_dir(&built, &package);
        std::fs::write(
            package.join("plugin.toml"),
            format!(
                "name = \"{name}\"\nversion = \"{version}\"\napi = \"{api}\"\n\
                 description = \"Test plugin {name}\"\nlicense = \"MIT\"\n\
                 provides = [\"tools\"]\nwasm = \"plugin.wasm\"\n{capabilities}"
            ),
        )
        .unwrap();
        package
    }

    /// Adds the served index to `home` as "main", pinning its key.
    fn add_to(&self, home: &Home, extra: &[&str]) {
        let url = self.server.base_url();
        let mut args = vec!["plugin", "index", "add", "main", url.as_str()];
        args.extend_from_slice(extra);
        let output = run(home.talaria(&args));
        assert_code(&output, 0);
    }

    fn plugin_file(&self, name: &str) -> serde_json::Value {
        let path = self.index_dir().join(format!("plugins/{name}.json"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn write_plugin_file(&self, name: &str, value: &serde_json::Value) {
        let path = self.index_dir().join(format!("plugins/{name}.json"));
        std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    }
}

fn installed_version(home: &Home, name: &str) -> Option<String> {
    let text =
        std::fs::read_to_string(home.path().join("plugins").join(name).join("plugin.toml")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .map(|v| v.trim_end_matches('"').to_owned())
}

const KV_AND_NET: &str = "[capabilities]\nkv = true\nnetwork = [\"api.example.org:443\"]\n";

#[test]
fn install_resolve_update_downgrade_and_remove_over_http() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    index.publish("noop", "1.1.0", "0.1.0", "");
    index.publish("noop", "1.2.0", "0.2.0", "");
    index.publish("noop", "2.0.0", "0.1.1", KV_AND_NET);
    let home = Home::new();
    index.add_to(&home, &[]);

    let output = run(home.talaria(&["plugin", "search", "test plugin"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "noop");

    // ^1 picks 1.1.0: 1.2.0 needs a plugin API this host lacks.
    let output = run(home.talaria(&["plugin", "install", "noop@^1"]));
    assert_code(&output, 0);
    assert!(stdout(&output).contains("installed noop 1.1.0 from index main"));
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("1.1.0"));
    let lock = home.read("plugins.lock");
    assert!(
        lock.contains("name = \"noop\"") && lock.contains("version = \"1.1.0\""),
        "{lock}"
    );
    assert!(lock.contains("requirement = \"^1\""), "{lock}");
    let output = run(home.talaria(&["plugins", "info", "noop"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "status:    loads");

    let output = run(home.talaria(&["plugin", "install", "noop@=1.2.0"]));
    assert_code(&output, 1);
    assert_contains(
        &stderr(&output),
        "1.2.0 needs plugin API ^0.2.0, this Talaria implements 0.1.3",
    );

    let output = run(home.talaria(&["plugin", "install", "noop@=1.0.0"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "--allow-downgrade");
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("1.1.0"));

    let output = run(home.talaria(&["plugin", "list", "--outdated"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "noop 1.1.0 → 2.0.0");
    // The old spelling of the group keeps the flag.
    let output = run(home.talaria(&["plugins", "list", "--outdated"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "noop 1.1.0 → 2.0.0");

    // 2.0.0 asks for capabilities: without a terminal, only --grant decides.
    let output = run(home.talaria(&["plugin", "install", "noop@^2"]));
    assert_code(&output, 2);
    assert!(
        stderr(&output)
            .contains("asks for more than the installed version: network:api.example.org:443, kv"),
        "{}",
        stderr(&output)
    );
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("1.1.0"));
    let output = run(home.talaria(&["plugin", "install", "noop@^2", "--grant", "kv"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "granted: kv");
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("2.0.0"));
    let grants = home.read("plugin-grants.yaml");
    assert!(
        grants.contains("kv: true") && !grants.contains("api.example.org"),
        "{grants}"
    );

    // An update that asks for more asks again; the old version stays meanwhile.
    index.publish(
        "noop",
        "2.1.0",
        "0.1.1",
        &format!("{KV_AND_NET}exec = true\n"),
    );
    let output = run(home.talaria(&["plugin", "update"]));
    assert_code(&output, 1);
    assert_contains(
        &stderr(&output),
        "asks for more than the installed version: exec",
    );
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("2.0.0"));
    let output = run(home.talaria(&["plugin", "update", "--grant", "all"]));
    assert_code(&output, 0);
    assert_eq!(installed_version(&home, "noop").as_deref(), Some("2.1.0"));
    assert!(home.read("plugins.lock").contains("requirement = \"^2\""));

    let output = run(home.talaria(&["plugin", "update"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "noop 2.1.0 is up to date");

    let output = run(home.talaria(&["plugin", "remove", "noop"]));
    assert_code(&output, 0);
    assert!(!home.path().join("plugins/noop").exists());
    assert!(!home.read("plugins.lock").contains("noop"));
    assert!(!home.read("plugin-grants.yaml").contains("noop"));
    assert!(
        index
            .server
            .requested()
            .iter()
            .any(|p| p == "/plugins/noop.json")
    );
}

#[test]
fn tampered_archives_and_bad_signatures_are_refused() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    let home = Home::new();
    index.add_to(&home, &[]);
    let served = index.index_dir().join("packages/noop/noop-1.0.0.tar.gz");
    let original = std::fs::read(&served).unwrap();

    // One flipped byte: the checksum catches it before anything is unpacked.
    let mut tampered = original.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    std::fs::write(&served, &tampered).unwrap();
    let output = run(home.talaria(&["plugin", "install", "noop"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "SHA-256");
    assert!(!home.path().join("plugins/noop").exists());

    // The entry rewritten to match the tampered archive: the signature fails.
    let mut file = index.plugin_file("noop");
    file["versions"][0]["sha256"] = talaria_registry::sha256_hex(&tampered).into();
    index.write_plugin_file("noop", &file);
    let output = run(home.talaria(&["plugin", "install", "noop"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "signature does not verify");
    assert!(!home.path().join("plugins/noop").exists());

    // An unsigned entry is refused unless the user allowed it for this index.
    std::fs::write(&served, &original).unwrap();
    let mut unsigned = index.plugin_file("noop");
    unsigned["versions"][0]["sha256"] = talaria_registry::sha256_hex(&original).into();
    unsigned["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("signature");
    index.write_plugin_file("noop", &unsigned);
    let output = run(home.talaria(&["plugin", "install", "noop"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "not signed");

    // A key the user did not pin signs nothing for this index.
    let stranger = index.dir.path().join("stranger.key");
    let key = talaria_registry::SecretKey::generate("main").unwrap();
    key.save(&stranger).unwrap();
    let mut foreign = unsigned.clone();
    let entry: talaria_registry::VersionEntry =
        serde_json::from_value(foreign["versions"][0].clone()).unwrap();
    foreign["versions"][0]["signature"] = serde_json::to_value(key.sign("noop", &entry)).unwrap();
    index.write_plugin_file("noop", &foreign);
    let output = run(home.talaria(&["plugin", "install", "noop"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "signature does not verify");

    let unsigned_home = Home::new();
    index.write_plugin_file("noop", &unsigned);
    index.add_to(
        &unsigned_home,
        &[
            "--allow-unsigned",
            "--key",
            &talaria_registry::SecretKey::load(&index.key)
                .unwrap()
                .public()
                .ed25519,
        ],
    );
    let output = run(unsigned_home.talaria(&["plugin", "install", "noop"]));
    assert_code(&output, 0);
    assert_eq!(
        installed_version(&unsigned_home, "noop").as_deref(),
        Some("1.0.0")
    );
}

/// A gzip'd tar written header by header, so it can hold what a packer refuses.
fn hostile_archive(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, data, link) in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(*kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&out).unwrap();
    gz.finish().unwrap()
}

#[test]
fn hostile_archives_are_refused_from_an_index_and_from_a_file() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    let home = Home::new();
    index.add_to(&home, &[]);
    let manifest = std::fs::read(
        index
            .variant("noop", "1.0.1", "0.1.1", "")
            .join("plugin.toml"),
    )
    .unwrap();
    let zeros = vec![0u8; 32 * 1024 * 1024];
    use tar::EntryType::{Char, Regular, Symlink};
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            hostile_archive(&[
                ("plugin.toml", Regular, &manifest, None),
                ("../escaped", Regular, b"x", None),
            ]),
            "leaves the package",
        ),
        (
            hostile_archive(&[("/tmp/absolute-escape", Regular, b"x", None)]),
            "absolute path",
        ),
        (
            hostile_archive(&[
                ("plugin.toml", Regular, &manifest, None),
                ("plugin.wasm", Symlink, b"", Some("/etc/passwd")),
            ]),
            "outside the package",
        ),
        (hostile_archive(&[("tty", Char, b"", None)]), "device"),
        (
            hostile_archive(&[
                ("plugin.toml", Regular, &manifest, None),
                ("plugin.wasm", Regular, &zeros, None),
            ]),
            "compression bomb",
        ),
    ];

    // Signed entries pointing at hostile archives: integrity is fine, the content is not.
    let key = talaria_registry::SecretKey::load(&index.key).unwrap();
    let packages = index.index_dir().join("packages/noop");
    for (i, (archive, why)) in cases.iter().enumerate() {
        let relative = format!("packages/noop/hostile-{i}.tar.gz");
        std::fs::write(packages.join(format!("hostile-{i}.tar.gz")), archive).unwrap();
        let mut entry = talaria_registry::VersionEntry {
            version: "1.0.1".parse().unwrap(),
            api: "^0.1.1".parse().unwrap(),
            sha256: talaria_registry::sha256_hex(archive),
            size: archive.len() as u64,
            capabilities: serde_json::json!({"filesystem": [], "network": [], "exec": false, "env": [], "kv": false, "session-search": false}),
            url: relative,
            yanked: false,
            signature: None,
        };
        entry.signature = Some(key.sign("noop", &entry));
        let mut file = index.plugin_file("noop");
        file["versions"] = serde_json::json!([file["versions"][0].clone(), entry]);
        index.write_plugin_file("noop", &file);
        let output = run(home.talaria(&["plugin", "install", "noop@=1.0.1"]));
        assert_code(&output, 1);
        assert_contains(&stderr(&output), why);
        assert!(!home.path().join("plugins/noop").exists(), "case {i}");
        assert!(!home.path().join("plugins/escaped").exists(), "case {i}");
        assert!(!Path::new("/tmp/absolute-escape").exists(), "case {i}");

        let local = index.dir.path().join(format!("hostile-{i}.tar.gz"));
        std::fs::write(&local, archive).unwrap();
        let output = run(home.talaria(&["plugin", "install", local.to_str().unwrap()]));
        assert_code(&output, 1);
        assert_contains(&stderr(&output), why);
    }
    // Staging leftovers never show up as plugins.
    let listed = run(home.talaria(&["plugin", "list"]));
    assert!(
        stdout(&listed).contains("No plugins installed"),
        "{}",
        stdout(&listed)
    );
}

#[test]
fn a_lockfile_reproduces_the_same_bytes_elsewhere() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    let first = Home::new();
    index.add_to(&first, &[]);
    assert_code(&run(first.talaria(&["plugin", "install", "noop@^1"])), 0);
    let locked = first.read("plugins.lock");

    // A newer version within ^1 appears; --locked still installs 1.0.0.
    index.publish("noop", "1.5.0", "0.1.1", "");
    let second = Home::new();
    for file in ["plugins.lock", "plugin-indexes.toml"] {
        std::fs::copy(first.path().join(file), second.path().join(file)).unwrap();
    }
    let output = run(second.talaria(&["plugin", "install", "--locked"]));
    assert_code(&output, 0);
    assert_eq!(installed_version(&second, "noop").as_deref(), Some("1.0.0"));
    assert_eq!(second.read("plugins.lock"), locked);
    let wasm = |home: &Home| std::fs::read(home.path().join("plugins/noop/plugin.wasm")).unwrap();
    assert_eq!(wasm(&first), wasm(&second));
    let output = run(second.talaria(&["plugin", "install", "--locked"]));
    assert!(stdout(&output).contains("noop 1.0.0 is installed as locked"));

    // Republishing 1.0.0 with other bytes is refused by the index tooling, and a
    // hand-edited index is caught by the lockfile.
    let mut file = index.plugin_file("noop");
    file["versions"][0]["sha256"] = "0".repeat(64).into();
    index.write_plugin_file("noop", &file);
    let third = Home::new();
    for name in ["plugins.lock", "plugin-indexes.toml"] {
        std::fs::copy(first.path().join(name), third.path().join(name)).unwrap();
    }
    let output = run(third.talaria(&["plugin", "install", "--locked"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "different archive");
    assert!(!third.path().join("plugins/noop").exists());
}

#[test]
fn concurrent_installs_of_different_plugins_all_land() {
    let index = IndexFixture::new();
    let names = ["alpha", "beta", "gamma", "delta"];
    for name in names {
        index.publish(name, "1.0.0", "0.1.1", "[capabilities]\nkv = true\n");
    }
    let home = Home::new();
    index.add_to(&home, &[]);
    let output = run(home.talaria(&["plugin", "install", "alpha"]));
    assert_code(&output, 2);
    assert_contains(&stderr(&output), "alpha 1.0.0 asks for: kv");
    assert!(!home.path().join("plugins/alpha").exists());
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            home.talaria(&["plugin", "install", name, "--grant", "all"])
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = crate::common::wait(child);
        assert_code(&output, 0);
    }
    let lock = home.read("plugins.lock");
    let grants = home.read("plugin-grants.yaml");
    for name in names {
        assert_eq!(installed_version(&home, name).as_deref(), Some("1.0.0"));
        assert!(lock.contains(&format!("name = \"{name}\"")), "{lock}");
        assert!(grants.contains(&format!("{name}:")), "{grants}");
    }
}

#[test]
fn a_local_package_directory_installs_and_info_lists_versions() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    index.publish("noop", "1.1.0", "0.2.0", "");
    let home = Home::new();
    index.add_to(&home, &[]);
    let output = run(home.talaria(&["plugin", "info", "noop"]));
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(
        text.starts_with(
            "noop is not installed here (installed: facts, fs, irc, mem0, telegram, terminal, web)."
        ),
        "{text}"
    );
    assert!(text.contains("license:   MIT"), "{text}");
    assert!(
        text.contains("1.1.0") && text.contains("needs API ^0.2.0"),
        "{text}"
    );
    assert!(text.contains("signed"), "{text}");

    let package = index.variant("local-tool", "0.3.0", "0.1.1", "");
    let output = run(home.talaria(&["plugin", "install", package.to_str().unwrap()]));
    assert_code(&output, 0);
    assert!(stdout(&output).contains("installed local-tool 0.3.0 from a local package"));
    let output = run(home.talaria(&["plugin", "list"]));
    let list = stdout(&output);
    assert!(list.contains("local-tool 0.3.0 [tools] (user)"), "{list}");
    assert!(
        list.contains(&format!(
            "installed: from the local package {}",
            package.display()
        )),
        "{list}"
    );

    let output = run(home.talaria(&["plugin", "install", "nonexistent"]));
    assert_code(&output, 1);
    assert_contains(&stderr(&output), "no plugin named 'nonexistent'");
    let output = run(home.talaria(&["plugin", "install", "noop@banana"]));
    assert_code(&output, 2);
}

#[test]
fn grants_stay_with_the_source_a_plugin_was_installed_from() {
    let index = IndexFixture::new();
    index.publish("weather", "1.0.0", "0.1.1", KV_AND_NET);
    index.publish("weather", "1.1.0", "0.1.1", KV_AND_NET);
    let home = Home::new();
    index.add_to(&home, &[]);
    let output = run(home.talaria(&["plugin", "install", "weather@=1.0.0", "--grant", "kv"]));
    assert_code(&output, 0);

    // A new version from the same index asking for nothing more keeps the decision.
    let output = run(home.talaria(&["plugin", "install", "weather@^1"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "granted: kv");
    assert_eq!(
        installed_version(&home, "weather").as_deref(),
        Some("1.1.0")
    );

    // The same name from another source (a local package) is asked about afresh: without a
    // terminal that means --grant, and nothing is installed meanwhile.
    let package = index.variant("weather", "1.2.0", "0.1.1", KV_AND_NET);
    let output = run(home.talaria(&["plugin", "install", package.to_str().unwrap()]));
    assert_code(&output, 2);
    assert_contains(
        &stderr(&output),
        "weather 1.2.0 asks for: network:api.example.org:443, kv",
    );
    assert_eq!(
        installed_version(&home, "weather").as_deref(),
        Some("1.1.0")
    );
    let info = run(home.talaria(&["plugins", "info", "weather"]));
    assert_contains(&stdout(&info), "granted:   kv");

    // Decided for the local package, the index's decision is dropped with the index's copy.
    home.install_package(&package, "none");
    let info = run(home.talaria(&["plugins", "info", "weather"]));
    assert_contains(&stdout(&info), "granted:   none");
    let grants = home.read("plugin-grants.yaml");
    assert!(!grants.contains("index:main"), "{grants}");
}

#[test]
fn plugin_info_and_list_show_the_installed_plugin_and_its_index() {
    let index = IndexFixture::new();
    index.publish("noop", "1.0.0", "0.1.1", "");
    index.publish("noop", "1.1.0", "0.1.1", "");
    let home = Home::new();
    index.add_to(&home, &[]);
    let output = run(home.talaria(&["plugin", "install", "noop@=1.0.0"]));
    assert_code(&output, 0);

    let output = run(home.talaria(&["plugin", "list"]));
    assert_code(&output, 0);
    let list = stdout(&output);
    assert!(list.contains("noop 1.0.0 [tools] (user)"), "{list}");
    assert!(
        list.contains("installed: from index main (=1.0.0)"),
        "{list}"
    );
    assert!(list.contains("granted:   none"), "{list}");

    // Both halves: the plugin as found here, then as its index lists it.
    let output = run(home.talaria(&["plugin", "info", "noop"]));
    assert_code(&output, 0);
    let text = stdout(&output);
    let found = text.find("status:    loads").expect(&text);
    let listed = text.find("index:     main").expect(&text);
    assert!(found < listed, "{text}");
    assert!(text.contains("source:    user"), "{text}");
    assert!(text.contains("installed: 1.0.0"), "{text}");
    assert!(text.contains("1.1.0") && text.contains("signed"), "{text}");

    // A plugin the index does not list: the found half, and one line for the other.
    let output = run(home.talaria(&["plugin", "info", "fs"]));
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("status:    loads"), "{text}");
    assert!(
        text.contains("indexes:   no configured index lists fs"),
        "{text}"
    );

    // Known to neither: an error.
    let output = run(home.talaria(&["plugin", "info", "nothing-here"]));
    assert_code(&output, 2);
    assert_contains(
        &stderr(&output),
        "no plugin named 'nothing-here' (installed: facts, fs, irc, mem0, telegram, terminal, web, noop), \
         and no configured index lists it",
    );
}
