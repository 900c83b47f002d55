//! A throwaway PKI for TLS peers in tests: a CA and a server certificate it
//! signed for `localhost` and `127.0.0.1`, made with the `openssl` CLI (no
//! certificate crate in the tree).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The files [`make_test_pki`] wrote.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// The CA certificate (PEM): what clients trust.
    pub ca: PathBuf,
    /// The server certificate (PEM), valid for `localhost` and `127.0.0.1`.
    pub cert: PathBuf,
    /// The server's private key (PEM).
    pub key: PathBuf,
}

/// Writes `ca.pem`, `ca.key`, `server.crt` and `server.key` into `dir`.
pub fn make_test_pki(dir: &Path) -> std::io::Result<TestPki> {
    let ec_key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let ca = [
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=Talaria test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ];
    openssl(dir, &[&["req", "-x509"][..], &ec_key, &ca].concat())?;
    let request = [
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ];
    openssl(dir, &[&["req"][..], &ec_key, &request].concat())?;
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n\
         basicConstraints = CA:FALSE\n\
         keyUsage = digitalSignature\n\
         extendedKeyUsage = serverAuth\n",
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    )?;
    Ok(TestPki {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
    })
}

/// Runs `openssl ARGS` in `dir`; a failure carries openssl's message.
pub(crate) fn openssl(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "openssl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}
