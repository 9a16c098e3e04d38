//! Shared lists in a real NGINX: a configuration generated with includes in its matches.json
//! (the preload carrier's shared runs) routes every request of a request set exactly as the
//! same configuration with every include expanded (NGF's flat format) does: the same backend,
//! or the same status, request by request. Each rule has its own backend, which names itself.

mod common;

use common::{Nginx, Prefix, free_ports};
use httproute_nginx::BackendMap;

const RULES: usize = 14;

/// Routes whose lists are several runs: regex paths (in every list), a prefix chain with
/// header matches, `/` with header and query matches, exact paths, methods, two hostnames.
fn manifests(port: u16) -> String {
    let mut y = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n"
    );
    let route = |name: &str, age: usize, hosts: &str, rules: &[(usize, &str)]| {
        let mut r = format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: default, creationTimestamp: \"2026-01-01T00:00:0{age}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{hosts}]\n  rules:\n"
        );
        for (b, matches) in rules {
            r += &format!("  - matches: {matches}\n    backendRefs: [{{name: b{b}, port: 80}}]\n");
        }
        r + "---\n"
    };
    y += &route(
        "regex",
        0,
        "",
        &[
            (0, "[{path: {type: RegularExpression, value: \"/v[0-9]+\"}}]"),
            (1, "[{path: {type: RegularExpression, value: \"/a/[0-9]+\"}, method: POST}]"),
            (
                2,
                "[{path: {type: RegularExpression, value: \"/(x|y)/.*\"}, headers: [{name: x-a, value: \"1\"}]}]",
            ),
        ],
    );
    y += &route(
        "chain",
        1,
        "",
        &[
            (3, "[{path: {type: PathPrefix, value: /a}}]"),
            (4, "[{path: {type: PathPrefix, value: /a/b}, headers: [{name: x-b, value: \"2\"}]}]"),
            (5, "[{path: {type: PathPrefix, value: /a/b/c}, method: GET}]"),
            (
                6,
                "[{path: {type: PathPrefix, value: /a/b/c/d}, headers: [{name: x-a, value: \"1\"}]}]",
            ),
        ],
    );
    y += &route(
        "root",
        2,
        "",
        &[
            (7, "[{path: {type: PathPrefix, value: /}, headers: [{name: x-a, value: \"1\"}]}]"),
            (8, "[{path: {type: PathPrefix, value: /}, queryParams: [{name: q, value: \"1\"}]}]"),
            (
                9,
                "[{path: {type: Exact, value: /e1}}, {path: {type: Exact, value: /a/b}, method: POST}]",
            ),
        ],
    );
    y += &route(
        "cafe",
        3,
        "cafe.test",
        &[
            (10, "[{path: {type: PathPrefix, value: /a/b}}]"),
            (11, "[{path: {type: RegularExpression, value: \"/a/b/[a-z]+\"}}]"),
            (12, "[{path: {type: PathPrefix, value: /}, method: POST}]"),
            (13, "[{path: {type: Exact, value: /e1}, headers: [{name: x-b, value: \"2\"}]}]"),
        ],
    );
    y
}

/// A plain NGINX whose servers stand in for the backends: each says its name.
fn backends(ports: &[u16]) -> (Nginx, BackendMap) {
    let mut body = String::new();
    let mut map = BackendMap::new();
    for (b, port) in ports.iter().enumerate().take(RULES) {
        body.push_str(&format!("server {{ listen 127.0.0.1:{port}; return 200 \"b{b}\\n\"; }}\n"));
        map.insert(format!("default/b{b}:80"), format!("127.0.0.1:{port}"));
    }
    body.push_str("server { listen 127.0.0.1:{PORT}; return 404; }\n");
    let p = Prefix::new_on("shared-lists-backends", &body, &[], ports[RULES]);
    let (ok, text) = p.test();
    assert!(ok, "{text}");
    (p.start(), map)
}

/// Who answers each request: the backend's name, or the status.
fn answers(n: &Nginx) -> Vec<String> {
    let paths = [
        "/",
        "/a",
        "/a/",
        "/a/7",
        "/a/b",
        "/a/b/",
        "/a/b/zz",
        "/a/b/c",
        "/a/b/c/d/e",
        "/v1",
        "/v22/x",
        "/x/1",
        "/y/",
        "/e1",
        "/e2",
        "/zz",
    ];
    let headers: [&[(&str, &str)]; 4] =
        [&[], &[("x-a", "1")], &[("x-b", "2")], &[("x-a", "1"), ("x-b", "2")]];
    let mut out = Vec::new();
    for host in ["cafe.test", "other.test"] {
        for method in ["GET", "POST"] {
            for path in paths {
                for h in headers {
                    for query in ["", "?q=1"] {
                        let mut req =
                            format!("{method} {path}{query} HTTP/1.0\r\nHost: {host}\r\n");
                        for (k, v) in h {
                            req += &format!("{k}: {v}\r\n");
                        }
                        req += "\r\n";
                        let r = n.raw(req.as_bytes()).expect("request");
                        let who = match r.status {
                            200 => r.body.trim().to_owned(),
                            s => s.to_string(),
                        };
                        out.push(format!("{method} {host}{path}{query} {h:?} -> {who}"));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn includes_route_as_the_flattened_lists_do() {
    let ports = free_ports(RULES + 2);
    let (backend, map) = backends(&ports);
    let port = ports[RULES + 1];
    let src = Prefix::scratch("shared-lists-manifests");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), manifests(port)).unwrap();
    let opts = common::generator_options();
    let (generated, warnings) = httproute_nginx::generate(&[src], &map, &opts).expect("generate");
    assert!(warnings.is_empty(), "{warnings:?}");
    let includes = generated.matches_json.matches("{\"include\":").count();
    assert!(includes >= 10, "{includes} includes:\n{}", generated.matches_json);

    let run = |name: &str, matches_json: &str| -> Vec<String> {
        let dir = Prefix::scratch(name);
        httproute_nginx::write_dir(&dir, &generated).unwrap();
        std::fs::write(dir.join("matches.json"), matches_json).unwrap();
        let p = Prefix::existing(dir, "nginx.conf", port);
        let (ok, text) = p.test();
        assert!(ok, "nginx -t:\n{text}");
        let n = p.start();
        let a = answers(&n);
        n.finish();
        a
    };
    let shared = run("shared-lists-shared", &generated.matches_json);
    let flat = route_match::flatten_text(&generated.matches_json).unwrap();
    assert!(!flat.contains("\"include\""));
    let flattened = run("shared-lists-flat", &flat);
    assert_eq!(shared.len(), flattened.len());
    for (s, f) in shared.iter().zip(&flattened) {
        assert_eq!(s, f);
    }
    // The set reaches most rules, 404 and no 500.
    let who: std::collections::BTreeSet<&str> =
        shared.iter().map(|a| a.rsplit(' ').next().unwrap()).collect();
    assert!(who.len() >= 12, "{who:?}");
    assert!(!who.contains("500"), "{who:?}");
    backend.finish();
}
