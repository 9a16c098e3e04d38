//! Certificates for the tests, made with the openssl command: a self-signed one, a CA, and a
//! leaf a CA signs. EC P-256 keys (fast to make), valid two days.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Prefix;

const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/// `openssl ARGS` in `dir`; a failure fails the test with openssl's stderr.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// `openssl req -x509` in `dir`: a self-signed `NAME.crt` / `NAME.key` of common name `cn`,
/// with a subjectAltName of DNS name `san` when given.
fn self_signed_in(dir: &Path, name: &str, cn: &str, san: Option<&str>) {
    let (subj, crt, key) = (format!("/CN={cn}"), format!("{name}.crt"), format!("{name}.key"));
    let mut args = vec!["req", "-x509", "-days", "2", "-subj", &subj];
    args.extend(EC);
    let ext = san.map(|s| format!("subjectAltName=DNS:{s}"));
    if let Some(ext) = &ext {
        args.extend(["-addext", ext]);
    }
    args.extend(["-keyout", &key, "-out", &crt]);
    openssl(dir, &args);
}

/// A self-signed certificate for the DNS name `san` (e.g. `*.secure.test`), with common name
/// `cn`: (certificate, key) paths in a scratch directory.
pub fn self_signed(cn: &str, san: &str) -> (PathBuf, PathBuf) {
    let dir = Prefix::scratch("cert");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    self_signed_in(&dir, "c", cn, Some(san));
    (dir.join("c.crt"), dir.join("c.key"))
}

/// A CA in `dir`: `NAME.crt`, `NAME.key`, common name `NAME`.
pub fn ca(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).expect("scratch dir");
    self_signed_in(dir, name, name, None);
}

/// A leaf in `dir` for the DNS name `host`, signed by the CA `ca` of `dir` ([`ca`]) with the
/// digest `md` (`sha256`; `sha1` makes one OpenSSL 3 refuses: "ca md too weak"):
/// `NAME.crt`, `NAME.key`.
pub fn leaf(dir: &Path, ca: &str, name: &str, host: &str, md: &str) {
    let (subj, key, csr) = (format!("/CN={host}"), format!("{name}.key"), format!("{name}.csr"));
    let mut args = vec!["req", "-subj", &subj, "-keyout", &key, "-out", &csr];
    args.extend(EC);
    openssl(dir, &args);
    let ext = format!("{name}.ext");
    std::fs::write(dir.join(&ext), format!("subjectAltName=DNS:{host}\n")).expect("write ext");
    let (ca_crt, ca_key, crt, md) =
        (format!("{ca}.crt"), format!("{ca}.key"), format!("{name}.crt"), format!("-{md}"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            &md,
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &crt,
        ],
    );
}
