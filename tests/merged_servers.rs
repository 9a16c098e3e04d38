//! Listeners that resolve to the same server share one `server` block with a `listen` per
//! port (httproute-nginx, issue 21): in a real NGINX, each of its ports answers as its own
//! copy would have, and what depends on the port (a redirect to the listener's port, the SNI
//! check of an HTTPS port) still does.

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use common::{Nginx, free_ports};
use httproute_nginx::BackendMap;

const BACKENDS: [&str; 4] = ["api", "beta", "web", "secure"];

fn manifests(http: &[u16], https: &[u16]) -> String {
    let mut listeners = String::new();
    for (i, p) in http.iter().enumerate() {
        listeners.push_str(&format!("  - {{name: http{i}, port: {p}, protocol: HTTP}}\n"));
    }
    for (i, p) in https.iter().enumerate() {
        listeners.push_str(&format!(
            "  - {{name: https{i}, port: {p}, protocol: HTTPS, hostname: \"*.secure.test\", \
             tls: {{certificateRefs: [{{name: secure-cert}}]}}}}\n"
        ));
    }
    common::self_signed_secret("secure-cert", "secure.test", "*.secure.test")
        + &format!(
            r#"
kind: Gateway
metadata: {{name: gw}}
spec:
  listeners:
{listeners}
---
kind: HTTPRoute
metadata: {{name: api}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [merge.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /api}}}}]
    backendRefs: [{{name: api, port: 80}}]
  - matches:
    - path: {{type: PathPrefix, value: /api}}
      headers: [{{name: x-beta, value: "1"}}]
    backendRefs: [{{name: beta, port: 80}}]
  - matches: [{{path: {{type: Exact, value: /elsewhere}}}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {{hostname: other.test, port: 8443}}
---
kind: HTTPRoute
metadata: {{name: moved}}
spec:
  parentRefs: [{{name: gw}}]
  hostnames: [moved.test]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /old}}}}]
    filters:
    - type: RequestRedirect
      requestRedirect: {{hostname: new.test, statusCode: 301}}
  - backendRefs: [{{name: web, port: 80}}]
---
kind: HTTPRoute
metadata: {{name: secure}}
spec:
  parentRefs: [{{name: gw, sectionName: https0}}, {{name: gw, sectionName: https1}}]
  hostnames: [a.secure.test]
  rules:
  - backendRefs: [{{name: secure, port: 80}}]
"#
        )
}

/// A plain NGINX whose servers say their names, and the gateway's ports (all distinct).
fn backends(gateway_ports: usize) -> (Nginx, BackendMap, Vec<u16>) {
    let ports = free_ports(BACKENDS.len() + 1 + gateway_ports);
    let named: Vec<(String, String)> = BACKENDS
        .iter()
        .map(|name| (format!("default/{name}:80"), format!("{name} $request_uri")))
        .collect();
    let (n, map) = common::backend_servers("merged-backends", &named, &ports);
    (n, map, ports[BACKENDS.len() + 1..].to_vec())
}

/// `GET path` on `port` with Host `host`: (status, the backend's name or the Location).
fn get(port: u16, host: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(common::patience())).unwrap();
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    s.write_all(format!("{req}\r\n").as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let location = head.lines().find_map(|l| l.strip_prefix("Location: "));
    let what = match (status, location) {
        (200, _) => body.split(' ').next().unwrap_or("").to_owned(),
        (_, Some(l)) => l.to_owned(),
        _ => String::new(),
    };
    (status, what)
}

/// The `server` blocks of a configuration that name `server_name`, each as its `listen` lines.
fn listens_of(conf: &str, server_name: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut listens = Vec::new();
    for line in conf.lines().map(str::trim) {
        if line == "server {" {
            listens.clear();
        } else if line.starts_with("listen ") {
            listens.push(line.to_owned());
        } else if line == format!("server_name {server_name};") {
            out.push(listens.clone());
        }
    }
    out
}

#[test]
fn a_server_on_several_ports_answers_the_same_on_each() {
    let (backend, map, mut ports) = backends(5);
    // The configuration lists a server's ports in order.
    ports[..3].sort_unstable();
    ports[3..].sort_unstable();
    let (http, tls) = (&ports[..3], &ports[3..]);
    let yaml = manifests(http, tls);
    let opts = common::generator_options();
    let (prefix, warnings) = common::generated("merged", &yaml, http[0], &map, &opts);
    assert!(warnings.is_empty(), "{warnings:?}");
    let conf = std::fs::read_to_string(prefix.dir.join("nginx.conf")).unwrap();
    // The catch-alls of the three HTTP ports are one server, and so are the `*.secure.test`
    // servers of the two HTTPS ports. A server of a route's own hostname that falls back
    // (`http_matches_fallback`, looked up on the socket a request came in on) to its
    // listener's less specific one is merged too; one whose redirect keeps the listener's
    // port stays on its port.
    let listen = |p: &u16, extra: &str| format!("listen 127.0.0.1:{p}{extra};");
    let one_each: Vec<Vec<String>> = http.iter().map(|p| vec![listen(p, "")]).collect();
    let all_http: Vec<String> = http.iter().map(|p| listen(p, "")).collect();
    assert_eq!(listens_of(&conf, "merge.test"), vec![all_http], "{conf}");
    assert_eq!(listens_of(&conf, "moved.test"), one_each, "{conf}");
    let both_tls: Vec<String> = tls.iter().map(|p| listen(p, " ssl")).collect();
    assert_eq!(listens_of(&conf, "a.secure.test"), vec![both_tls.clone()], "{conf}");
    assert_eq!(listens_of(&conf, "*.secure.test"), vec![both_tls], "{conf}");
    let catch_all: Vec<String> = http.iter().map(|p| listen(p, " default_server")).collect();
    assert!(listens_of(&conf, "\"\"").contains(&catch_all), "{conf}");

    let n = prefix.start();
    for &p in http {
        assert_eq!(get(p, "merge.test", "/api/x", &[]), (200, "api".into()), "port {p}");
        assert_eq!(get(p, "merge.test", "/api", &[("x-beta", "1")]), (200, "beta".into()));
        assert_eq!(get(p, "merge.test", "/apix", &[]).0, 404, "port {p}");
        // A port the filter names is the same on every port.
        let to = "http://other.test:8443/elsewhere".to_owned();
        assert_eq!(get(p, "merge.test", "/elsewhere", &[]), (302, to), "port {p}");
        // Without a port (or scheme) in the filter, the redirect keeps the listener's port.
        let to = format!("http://new.test:{p}/old/a?q=1");
        assert_eq!(get(p, "moved.test", "/old/a?q=1", &[]), (301, to), "port {p}");
        assert_eq!(get(p, "moved.test", "/", &[]), (200, "web".into()), "port {p}");
        assert_eq!(get(p, "nothing.test", "/api", &[]).0, 404, "port {p}");
    }
    for &p in tls {
        let first_word = |r: (u16, String)| (r.0, r.1.split(' ').next().unwrap_or("").to_owned());
        assert_eq!(
            common::https(p, "a.secure.test", None, "/").map(first_word),
            Some((200, "secure".into())),
            "port {p}"
        );
        // The SNI check still holds on every port: Host names a server of another listener
        // (the catch-all, of none), 421; another name of the SNI's listener is served (its
        // `*.secure.test` server, which has no route for it: 404).
        assert_eq!(
            common::https(p, "a.secure.test", Some("nothing.test"), "/").map(|r| r.0),
            Some(421),
            "port {p}"
        );
        assert_eq!(
            common::https(p, "a.secure.test", Some("b.secure.test"), "/").map(|r| r.0),
            Some(404),
            "port {p}"
        );
        // Another name of the listener: its server, which has no route for it.
        assert_eq!(
            common::https(p, "b.secure.test", None, "/").map(|r| r.0),
            Some(404),
            "port {p}"
        );
    }
    n.finish();
    backend.finish();
}
