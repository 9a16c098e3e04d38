//! An HTTPS server's certificates, and the SNI check of listener isolation.

use crate::conf::{Arg, Directive, Node, code, regex_data};
use crate::plan::ServerPlan;

use super::options::Options;
use super::state::{HOSTNAME_FIELD, d, quoted};

/// Certificates of an HTTPS server, and the Gateway API's listener isolation for TLS: a
/// request whose Host selects a server of another listener than its SNI did answers 421
/// (Misdirected Request); one of the same listener (a coalesced HTTP/2 connection) is served.
pub(super) fn tls_server(port: u16, server: &ServerPlan, opts: &Options, out: &mut Vec<Node>) {
    if server.certificates.is_empty() {
        out.push(d("ssl_reject_handshake").code("on").into());
    }
    for c in &server.certificates {
        let (crt, key) =
            opts.certificates.get(c).cloned().unwrap_or_else(|| certificate_files(opts, c));
        out.push(
            d("ssl_certificate")
                .arg(quoted("certificate file (--certificate, Secret)", crt))
                .into(),
        );
        out.push(
            d("ssl_certificate_key").arg(quoted("key file (--certificate, Secret)", key)).into(),
        );
    }
    // This server's listener's tag (its hostname; `-` for one of none, or no listener: the
    // catch-all's, which an unknown SNI gets), or no SNI.
    let own = match &server.listener_hostname {
        Some(h) => regex_data(HOSTNAME_FIELD, h.clone()),
        None => code("-"),
    };
    let re = Arg::parts(vec![code("^(|"), own, code(")$")]).quoted();
    out.push(
        Directive::if_(format!("httproute_sni_{port}"), Some(("!~", re)))
            .inline(vec![d("return").code("421").into()])
            .into(),
    );
}

/// Where a Secret's certificate and key are expected, relative to nginx.conf.
pub fn certificate_files(opts: &Options, secret: &str) -> (String, String) {
    let file = secret.replace('/', "_");
    let at = |ext| crate::emit_global::file(&opts.global, &format!("certs/{file}.{ext}"));
    (at("crt"), at("key"))
}
