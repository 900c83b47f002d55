//! The `talaria:plugin` API version: the compatibility rule and the check of
//! the versions a component's export and import names carry.

use semver::Version;

use crate::manifest::PluginKind;

/// The `talaria:plugin` version this host implements.
pub const HOST_API: Version = Version::new(0, 1, 3);

const PACKAGE: &str = "talaria:plugin/";

/// Whether two API versions are on the same compatibility line: while the
/// API is 0.x, `0.MINOR` is the line; from 1.0 on, the major.
pub fn compatible(a: &Version, b: &Version) -> bool {
    if a.major == 0 || b.major == 0 {
        a.major == b.major && a.minor == b.minor
    } else {
        a.major == b.major
    }
}

/// One `talaria:plugin/<interface>@<version>` name in a component's exports or imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiName {
    pub interface: String,
    pub version: Option<Version>,
    pub raw: String,
}

pub fn parse_api_name(name: &str) -> Option<ApiName> {
    let rest = name.strip_prefix(PACKAGE)?;
    let (interface, version) = match rest.split_once('@') {
        Some((interface, version)) => (interface, Version::parse(version).ok()),
        None => (rest, None),
    };
    Some(ApiName {
        interface: interface.to_owned(),
        version,
        raw: name.to_owned(),
    })
}

/// The kind an exported interface provides.
pub fn kind_of(interface: &str) -> Option<PluginKind> {
    PluginKind::ALL
        .into_iter()
        .find(|k| k.interface() == interface)
}

/// Checks the API names of a component against the host and the manifest.
/// Returns the version the component's exports target.
pub fn check_names(
    exports: &[ApiName],
    imports: &[ApiName],
    manifest_api: &Version,
) -> Result<Option<Version>, String> {
    let mut exported = None;
    for name in exports.iter().chain(imports) {
        let Some(version) = &name.version else {
            return Err(format!(
                "`{}` carries no version; this host supports talaria:plugin@{HOST_API}",
                name.raw
            ));
        };
        if !compatible(version, &HOST_API) {
            return Err(format!(
                "the component uses `{}` (talaria:plugin@{version}) but this host supports \
                 talaria:plugin@{HOST_API} ({}); rebuild the plugin against a compatible SDK",
                name.raw,
                line(&HOST_API)
            ));
        }
        if !compatible(version, manifest_api) {
            return Err(format!(
                "the component uses `{}` (talaria:plugin@{version}) but its manifest declares \
                 api = \"{manifest_api}\"",
                name.raw
            ));
        }
        if exports.contains(name) {
            exported = Some(version.clone());
        }
    }
    Ok(exported)
}

/// "0.1.x" or "1.x": the compatibility line of a version, for messages.
pub fn line(v: &Version) -> String {
    if v.major == 0 {
        format!("compatible with 0.{}.x", v.minor)
    } else {
        format!("compatible with {}.x", v.major)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_lines() {
        let v = |s: &str| Version::parse(s).unwrap();
        assert!(compatible(&v("0.1.0"), &v("0.1.7")));
        assert!(!compatible(&v("0.1.0"), &v("0.2.0")));
        assert!(!compatible(&v("0.1.0"), &v("1.1.0")));
        assert!(compatible(&v("1.0.0"), &v("1.4.2")));
        assert!(!compatible(&v("1.0.0"), &v("2.0.0")));
    }

    #[test]
    fn parses_names() {
        let n = parse_api_name("talaria:plugin/tool-provider@0.1.0").unwrap();
        assert_eq!(n.interface, "tool-provider");
        assert_eq!(n.version, Some(Version::new(0, 1, 0)));
        assert!(parse_api_name("wasi:cli/environment@0.2.0").is_none());
    }

    #[test]
    fn refuses_other_lines() {
        let export = parse_api_name("talaria:plugin/tool-provider@0.2.0").unwrap();
        let err = check_names(&[export], &[], &Version::new(0, 2, 0)).unwrap_err();
        assert!(err.contains("0.2.0") && err.contains("0.1.3"), "{err}");
        let export = parse_api_name("talaria:plugin/tool-provider@0.1.0").unwrap();
        assert!(check_names(&[export], &[], &Version::new(0, 1, 3)).is_ok());
    }
}
