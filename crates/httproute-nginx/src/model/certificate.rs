//! TLS Secrets checked before they are written: a `tls.crt` NGINX cannot load, or a
//! `tls.key` that is not the certificate's, would fail `nginx -t` for every listener.
//!
//! The PEM structure is checked here; every block of the certificate chain and the key are
//! then parsed in process with OpenSSL, the library NGINX loads them with (so what passes here
//! loads there, for every key type it supports), the certificate's public key compared with
//! the key's, and every key of the chain held to OpenSSL's default security level.

use base64::Engine as _;
use openssl::pkey::{Id, PKey, Public};
use openssl::x509::X509;

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

/// `Ok((crt, key))`: usable, as the PEM text to write for NGINX: the blocks parsed here and
/// nothing else, each line at its start (OpenSSL's PEM reader finds a block only by a
/// `-----BEGIN` at the start of a line, so what this parser trims NGINX would not load).
/// `Err(why)`: NGINX could not load it ("tls.crt has no CERTIFICATE block", "tls.key does not
/// match the certificate", ...).
pub fn check(crt: &[u8], key: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
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
    let key_blocks: Vec<&(String, Vec<u8>)> =
        keys.iter().filter(|(l, _)| l.ends_with("PRIVATE KEY")).collect();
    let key_block = match key_blocks[..] {
        [] => return Err("tls.key has no PRIVATE KEY block".into()),
        [(l, _)] if l == "ENCRYPTED PRIVATE KEY" => {
            return Err("tls.key is encrypted (NGINX would need its password)".into());
        }
        [b] => b,
        _ => return Err("tls.key has more than one private key".into()),
    };
    // NGINX reads the first block as the certificate (PEM_read_bio_X509_AUX) and every other
    // one as a chain certificate (PEM_read_bio_X509, which takes TRUSTED CERTIFICATE blocks
    // too): each must parse.
    let mut chain = Vec::with_capacity(certs.len());
    for (i, (_, der)) in certs.iter().enumerate() {
        match X509::from_der(der) {
            Ok(c) => chain.push(c),
            Err(e) if i == 0 => {
                return Err(format!("tls.crt: the certificate does not parse ({})", first(&e)));
            }
            Err(e) => {
                return Err(format!(
                    "tls.crt: block {} is not a certificate ({})",
                    i + 1,
                    first(&e)
                ));
            }
        }
    }
    let key_pem = pem(&key_block.0, &key_block.1);
    let pkey = PKey::private_key_from_pem(key_pem.as_bytes())
        .map_err(|e| format!("tls.key: the key does not parse ({})", first(&e)))?;
    let leaf = chain[0]
        .public_key()
        .map_err(|e| format!("tls.crt: its public key does not parse ({})", first(&e)))?;
    if !leaf.public_eq(&pkey) {
        return Err("tls.key is not the key of the certificate in tls.crt".into());
    }
    signs_tls(&leaf).map_err(|why| format!("tls.crt: {why}"))?;
    for (i, c) in chain.iter().enumerate() {
        let k = c.public_key().map_err(|e| {
            format!("tls.crt: block {}: its public key does not parse ({})", i + 1, first(&e))
        })?;
        too_weak(&k).and_then(|()| weak_signature(c)).map_err(|why| match i {
            0 => format!("tls.crt: {why}"),
            _ => format!("tls.crt: block {}: {why}", i + 1),
        })?;
    }
    let crt_pem: String = certs.iter().map(|(l, der)| pem(l, der)).collect();
    Ok((crt_pem.into_bytes(), key_pem.into_bytes()))
}

/// The signature digests OpenSSL 3 rates below its lowest security level (SHA-1: 63 bits,
/// MD5 and older): a certificate another one signed with them fails NGINX's
/// `ssl_certificate` ("ca md too weak", `SSL_CTX_use_certificate` and
/// `SSL_CTX_add0_chain_cert` check every certificate they take). A self-issued one (issuer
/// = subject) is not checked there: nothing vouches for it by that signature.
fn weak_signature(cert: &X509) -> Result<(), String> {
    use openssl::nid::Nid;
    use std::cmp::Ordering;
    let self_issued =
        cert.issuer_name().try_cmp(cert.subject_name()).is_ok_and(|o| o == Ordering::Equal);
    if self_issued {
        return Ok(());
    }
    let nid = cert.signature_algorithm().object().nid();
    let Some(algorithms) = nid.signature_algorithms() else { return Ok(()) };
    let weak = [Nid::SHA1, Nid::MD5, Nid::MD5_SHA1, Nid::MD4, Nid::MD2];
    if weak.contains(&algorithms.digest) {
        return Err(format!(
            "it is signed with {}, which OpenSSL refuses at any security level (\"ca md too weak\")",
            algorithms.digest.short_name().unwrap_or("a weak digest")
        ));
    }
    Ok(())
}

/// The first reason of an OpenSSL error stack, for a message.
fn first(e: &openssl::error::ErrorStack) -> String {
    let s = e.errors().first().map_or_else(|| e.to_string(), |e| e.to_string());
    s.chars().take(200).collect()
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

/// Whether a certificate's key is of a type TLS authenticates with: OpenSSL's
/// `SSL_CTX_use_certificate` takes RSA, RSA-PSS, DSA, EC, Ed25519 and Ed448 keys and fails
/// NGINX's `ssl_certificate` on any other ("unknown certificate type"): X25519 and X448 keys
/// only agree on secrets, DH keys too, and a CA may still sign a certificate for one.
fn signs_tls(key: &PKey<Public>) -> Result<(), String> {
    let id = key.id();
    let known = [Id::RSA, Id::RSA_PSS, Id::DSA, Id::EC, Id::ED25519, Id::ED448];
    if known.contains(&id) {
        return Ok(());
    }
    let name = [(Id::X25519, "X25519"), (Id::X448, "X448"), (Id::DH, "DH"), (Id::DHX, "DHX")]
        .into_iter()
        .find(|(k, _)| *k == id)
        .map_or_else(|| format!("OpenSSL key type {}", id.as_raw()), |(_, n)| n.to_owned());
    Err(format!(
        "its key is {name}, which cannot sign a TLS handshake (NGINX's ssl_certificate takes \
         RSA, RSA-PSS, DSA, EC, Ed25519 and Ed448 keys)"
    ))
}

/// The key strength OpenSSL's default security level on Debian and most distributions (level
/// 2, 112 bits) asks of a certificate's key, or NGINX's `ssl_certificate` fails ("ee key too
/// small", "ca key too small" for a chain's): RSA, DSA and DH keys of 2,048 bits and more, EC
/// keys of 224 bits and more (P-256 and up); Ed25519 and Ed448 always pass. Level 1 (RSA
/// 1,024) is not assumed: a distribution at level 2 would refuse what it lets through.
fn too_weak(key: &PKey<Public>) -> Result<(), String> {
    let id = key.id();
    let (kind, least) = if id == Id::EC {
        ("EC", 224)
    } else if [Id::RSA, Id::DSA, Id::DH, Id::RSA_PSS, Id::DHX].contains(&id) {
        ("RSA/DSA/DH", 2048)
    } else {
        return Ok(());
    };
    let bits = key.bits();
    if bits < least {
        return Err(format!(
            "its {kind} key has {bits} bits; OpenSSL's default security level (2) needs {least}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    /// A self-signed certificate and its key, made by openssl: (crt, key) PEM.
    pub(crate) fn self_signed() -> (Vec<u8>, Vec<u8>) {
        self_signed_with(&["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }

    /// The same, with these `openssl req` key options.
    fn self_signed_with(key: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let dir = scratch("self");
        let out =
            ["-nodes", "-days", "2", "-subj", "/CN=t.test", "-keyout", "k.pem", "-out", "c.pem"];
        openssl(&dir, &[&["req", "-x509"][..], key, &out].concat());
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let pair = (read("c.pem"), read("k.pem"));
        let _ = std::fs::remove_dir_all(&dir);
        pair
    }

    /// A scratch directory of this test thread's.
    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "hr-cert-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_certificate_and_its_key_pass_and_bad_ones_say_why() {
        let (crt, key) = self_signed();
        assert!(check(&crt, &key).is_ok());
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
        assert!(check(&chain, &key).is_ok());
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
        assert!(check(&c, &k).is_ok());
        let (c, k) = self_signed_with(&["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-192"]);
        assert!(err(&c, &k).contains("EC key has 192 bits"), "{}", err(&c, &k));
        let (c, k) = self_signed_with(&["-newkey", "ed25519"]);
        assert!(check(&c, &k).is_ok());
        // Every key of the chain is held to the level (NGINX: "ca key too small"); a TRUSTED
        // CERTIFICATE block is read in a chain as NGINX reads it.
        let (weak, _) = self_signed_with(&["-newkey", "rsa:1024"]);
        let chain = [crt.clone(), weak].concat();
        assert!(
            err(&chain, &key).starts_with("tls.crt: block 2: its RSA/DSA/DH key has 1024"),
            "{}",
            err(&chain, &key)
        );
        let trusted =
            String::from_utf8(crt.clone()).unwrap().replace("CERTIFICATE", "TRUSTED CERTIFICATE");
        assert!(check(&[crt.clone(), trusted.into_bytes()].concat(), &key).is_ok());
    }

    /// `openssl ARGS` in `dir`.
    fn openssl(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success(), "openssl {args:?}");
    }

    /// A leaf signed by a CA with the digest `md`: (leaf crt, leaf key, CA crt).
    fn ca_signed(md: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let dir = scratch(&format!("ca-{md}"));
        let rsa = ["-newkey", "rsa:2048", "-nodes"];
        openssl(
            &dir,
            &[
                &["req", "-x509"][..],
                &rsa,
                &["-subj", "/CN=ca", "-keyout", "ca.key", "-out", "ca.crt"],
            ]
            .concat(),
        );
        openssl(
            &dir,
            &[&["req"][..], &rsa, &["-subj", "/CN=t.test", "-keyout", "l.key", "-out", "l.csr"]]
                .concat(),
        );
        let md = format!("-{md}");
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                &md,
                "-in",
                "l.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                "l.crt",
            ],
        );
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let out = (read("l.crt"), read("l.key"), read("ca.crt"));
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    #[test]
    fn a_certificate_for_a_key_that_cannot_sign_is_refused_as_nginx_refuses_it() {
        // An Ed25519 CA signs a certificate for an X25519 key: it parses, and tls.key is its
        // key, but NGINX fails it ("unknown certificate type").
        let dir = scratch("x25519");
        let run = |args: &str| openssl(&dir, &args.split(' ').collect::<Vec<_>>());
        run("genpkey -algorithm ed25519 -out ca.key");
        run("req -x509 -new -key ca.key -subj /CN=ca -days 2 -out ca.crt");
        run("genpkey -algorithm x25519 -out x.key");
        run("pkey -in x.key -pubout -out x.pub");
        run("req -new -key ca.key -subj /CN=t.test -out x.csr");
        run("x509 -req -in x.csr -CA ca.crt -CAkey ca.key -force_pubkey x.pub -days 2 -out x.crt");
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
        let e = check(&read("x.crt"), &read("x.key")).unwrap_err();
        assert!(e.starts_with("tls.crt: its key is X25519, which cannot sign"), "{e}");
        // Ed25519 itself signs: its certificate passes.
        run("req -new -key ca.key -subj /CN=t.test -out e.csr");
        run("x509 -req -in e.csr -CA ca.crt -CAkey ca.key -days 2 -out e.crt");
        assert!(check(&read("e.crt"), &read("ca.key")).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_certificate_signed_with_sha1_is_refused_as_nginx_refuses_it() {
        let (crt, key, ca) = ca_signed("sha1");
        let e = check(&crt, &key).unwrap_err();
        assert!(
            e.starts_with("tls.crt: it is signed with SHA1") && e.contains("ca md too weak"),
            "{e}"
        );
        let (crt, key, ca256) = ca_signed("sha256");
        assert!(check(&crt, &key).is_ok());
        // In a chain too; a self-signed CA's own signature is not looked at.
        assert!(check(&[crt.clone(), ca256].concat(), &key).is_ok());
        let (old_ca, _) = self_signed_with(&["-newkey", "rsa:2048", "-sha1"]);
        assert!(check(&[crt.clone(), old_ca].concat(), &key).is_ok());
        let (sha1_leaf, _, _) = ca_signed("sha1");
        let e = check(&[crt, sha1_leaf, ca].concat(), &key).unwrap_err();
        assert!(e.starts_with("tls.crt: block 2: it is signed with SHA1"), "{e}");
    }
}
