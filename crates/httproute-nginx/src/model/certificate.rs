//! TLS Secrets checked before they are written: a `tls.crt` NGINX cannot load, or a
//! `tls.key` that is not the certificate's, would fail `nginx -t` for every listener.
//!
//! The PEM structure is checked here; the certificate and key are then parsed by the
//! `openssl` command, which uses the library NGINX loads them with (so what passes here loads
//! there, for every key type it supports), and their public keys compared.

use std::io::Write as _;
use std::process::{Command, Stdio};

use base64::Engine as _;

/// The PEM blocks of `text`: (label, DER bytes). `Err` for a block without its end line or
/// whose body is not base64.
fn pem_blocks(text: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let text = std::str::from_utf8(text).map_err(|_| "is not PEM text (not UTF-8)".to_owned())?;
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(label) =
            line.trim().strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if l.trim() == end {
                closed = true;
                break;
            }
            body.push_str(l.trim());
        }
        if !closed {
            return Err(format!("has a {label} block without its END line"));
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(&body)
            .map_err(|e| format!("has a {label} block that is not base64 ({e})"))?;
        if der.is_empty() {
            return Err(format!("has an empty {label} block"));
        }
        out.push((label.to_owned(), der));
    }
    Ok(out)
}

/// Runs `openssl ARGS` with `input` on stdin: its stdout, `Err` with its complaint, or
/// `Ok(None)` when there is no `openssl` to run.
fn openssl(args: &[&str], input: &[u8]) -> Result<Option<String>, String> {
    let child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("openssl: {e}")),
    };
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&input);
        }
    });
    let out = child.wait_with_output().map_err(|e| format!("openssl: {e}"))?;
    let _ = writer.join();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(first.chars().take(200).collect());
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// `Ok(None)`: usable. `Ok(Some(note))`: the structure is right but it could not be checked
/// further (no `openssl`). `Err(why)`: NGINX could not load it ("tls.crt has no CERTIFICATE
/// block", "tls.key does not match the certificate", ...).
pub fn check(crt: &[u8], key: &[u8]) -> Result<Option<String>, String> {
    let certs = pem_blocks(crt).map_err(|e| format!("tls.crt {e}"))?;
    if !certs.iter().any(|(l, _)| l == "CERTIFICATE") {
        return Err("tls.crt has no CERTIFICATE block".into());
    }
    if let Some((l, _)) =
        certs.iter().find(|(l, _)| !matches!(l.as_str(), "CERTIFICATE" | "TRUSTED CERTIFICATE"))
    {
        return Err(format!("tls.crt has a {l} block besides certificates"));
    }
    let keys = pem_blocks(key).map_err(|e| format!("tls.key {e}"))?;
    let key_blocks: Vec<&String> =
        keys.iter().map(|(l, _)| l).filter(|l| l.ends_with("PRIVATE KEY")).collect();
    match key_blocks[..] {
        [] => return Err("tls.key has no PRIVATE KEY block".into()),
        [l] if l == "ENCRYPTED PRIVATE KEY" => {
            return Err("tls.key is encrypted (NGINX would need its password)".into());
        }
        [_] => {}
        _ => return Err("tls.key has more than one private key".into()),
    }
    let cert_key = match openssl(&["x509", "-noout", "-pubkey"], crt) {
        Ok(Some(k)) => k,
        Ok(None) => return Ok(Some("not checked: no openssl command to parse it".into())),
        Err(e) => return Err(format!("tls.crt: the certificate does not parse ({e})")),
    };
    let key_key = match openssl(&["pkey", "-pubout", "-passin", "pass:"], key) {
        Ok(Some(k)) => k,
        Ok(None) => return Ok(Some("not checked: no openssl command to parse it".into())),
        Err(e) => return Err(format!("tls.key: the key does not parse ({e})")),
    };
    if cert_key.trim() != key_key.trim() {
        return Err("tls.key is not the key of the certificate in tls.crt".into());
    }
    // NGINX reads every block of the chain: each must be a certificate (the first was parsed).
    for (i, (label, der)) in certs.iter().enumerate().skip(1) {
        if let Err(e) = openssl(&["x509", "-noout"], pem(label, der).as_bytes()) {
            return Err(format!("tls.crt: block {} is not a certificate ({e})", i + 1));
        }
    }
    match openssl(&["pkey", "-pubin", "-noout", "-text"], cert_key.as_bytes()) {
        Ok(Some(text)) => too_weak(&text)?,
        Ok(None) => {}
        Err(e) => return Err(format!("tls.crt: its public key does not parse ({e})")),
    }
    Ok(None)
}

/// A PEM block of `der` under `label`.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The key strength OpenSSL's default security level on Debian and most distributions (level
/// 2, 112 bits) asks of a certificate's key, or NGINX's `ssl_certificate` fails ("ee key too
/// small"): RSA, DSA and DH keys of 2,048 bits and more, EC keys of 224 bits and more (P-256
/// and up); Ed25519 and Ed448 always pass. Level 1 (RSA 1,024) is not assumed: a distribution
/// at level 2 would refuse what it lets through. `text` is `openssl pkey -pubin -text`'s.
fn too_weak(text: &str) -> Result<(), String> {
    let bits = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Public-Key: ("))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok());
    let Some(bits) = bits else { return Ok(()) };
    let (kind, least) = if text.contains("ASN1 OID") || text.contains("NIST CURVE") {
        ("EC", 224)
    } else if text.contains("Modulus") || text.contains("prime:") || text.contains("P:") {
        ("RSA/DSA/DH", 2048)
    } else {
        return Ok(());
    };
    if bits < least {
        return Err(format!(
            "tls.crt: its {kind} key has {bits} bits; OpenSSL's default security level (2) needs \
             {least}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate and its key, made by openssl: (crt, key) PEM.
    pub(crate) fn self_signed() -> (Vec<u8>, Vec<u8>) {
        self_signed_with(&["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }

    /// The same, with these `openssl req` key options.
    fn self_signed_with(key: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let dir = std::env::temp_dir().join(format!(
            "hr-cert-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("openssl")
            .args(["req", "-x509"])
            .args(key)
            .args(["-nodes", "-days", "2", "-subj", "/CN=t.test", "-keyout"])
            .arg(dir.join("k.pem"))
            .arg("-out")
            .arg(dir.join("c.pem"))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
        let pair =
            (std::fs::read(dir.join("c.pem")).unwrap(), std::fs::read(dir.join("k.pem")).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
        pair
    }

    #[test]
    fn a_certificate_and_its_key_pass_and_bad_ones_say_why() {
        let (crt, key) = self_signed();
        assert_eq!(check(&crt, &key), Ok(None));
        let (other_crt, other_key) = self_signed();
        let err = |c: &[u8], k: &[u8]| check(c, k).unwrap_err();
        assert_eq!(err(&crt, &other_key), "tls.key is not the key of the certificate in tls.crt");
        assert_eq!(err(&other_crt, &key), "tls.key is not the key of the certificate in tls.crt");
        assert_eq!(err(b"", &key), "tls.crt has no CERTIFICATE block");
        assert_eq!(err(b"garbage\n", &key), "tls.crt has no CERTIFICATE block");
        assert_eq!(err(&crt, b""), "tls.key has no PRIVATE KEY block");
        assert!(
            err(b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n", &key)
                .starts_with("tls.crt has a CERTIFICATE block that is not base64"),
        );
        assert!(
            err(b"-----BEGIN CERTIFICATE-----\nAAAA\n", &key)
                .starts_with("tls.crt has a CERTIFICATE block without its END line"),
        );
        // Well-formed PEM that is not a certificate.
        let fake = b"-----BEGIN CERTIFICATE-----\nY3J0\n-----END CERTIFICATE-----\n";
        assert!(
            err(fake, &key).starts_with("tls.crt: the certificate does not parse"),
            "{}",
            err(fake, &key)
        );
        // A chain: the leaf first, then another certificate.
        let chain = [crt.clone(), other_crt].concat();
        assert_eq!(check(&chain, &key), Ok(None));
        // A second block that is not a certificate: NGINX reads it as one and fails.
        let bad_chain = [crt.clone(), fake.to_vec()].concat();
        assert!(
            err(&bad_chain, &key).starts_with("tls.crt: block 2 is not a certificate"),
            "{}",
            err(&bad_chain, &key)
        );
        // Keys OpenSSL's default security level refuses; those it takes.
        let (c, k) = self_signed_with(&["-newkey", "rsa:1024"]);
        assert!(err(&c, &k).contains("RSA/DSA/DH key has 1024 bits"), "{}", err(&c, &k));
        let (c, k) = self_signed_with(&["-newkey", "rsa:2048"]);
        assert_eq!(check(&c, &k), Ok(None));
        let (c, k) = self_signed_with(&["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-192"]);
        assert!(err(&c, &k).contains("EC key has 192 bits"), "{}", err(&c, &k));
        let (c, k) = self_signed_with(&["-newkey", "ed25519"]);
        assert_eq!(check(&c, &k), Ok(None));
    }
}
