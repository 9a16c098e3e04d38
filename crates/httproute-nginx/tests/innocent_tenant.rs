//! The innocent tenant (issue #29): random CRD-valid objects of one tenant (tenant b: a
//! namespace of its own, its own Gateways) never change anything written for the other tenant
//! (namespace `a`, a Gateway with one listener on port 18080 for a.test): its server block as
//! NGINX reads it back, every directive and word (`$match_key`s, variable and upstream names
//! included), the `http`-level `map`, `split_clients`, `geo` and `upstream` blocks it reaches,
//! and every list of matches.json its keys name, through includes, key and list. Only b's
//! objects are dropped. With `NGX_MATCHES_NGINX` and `NGX_MATCHES_MODULE` set, every output
//! also passes `nginx -t`; without them that part is skipped (said once on stderr).
//! `HTTPROUTE_INNOCENT_CASES=N` runs N cases (default 24).
//!
//! Tenant b's objects mutated: header names and values, a redirect path, weights, CORS
//! allowHeaders (its route); its TLS Secret's certificate and key bytes (a listener of its
//! own on another port); its backendRefs (names, ports, weights, namespaces); its Service
//! (type, port, externalName), EndpointSlices (address type, addresses, ports, `endpoints:
//! null`) and ReferenceGrants. And where it is and what it is called: its namespace and object
//! names (before a's and after), its listener's port (before a's and after), a second
//! listener on a's port (HTTP or HTTPS, created after a's Gateway) with another host name,
//! none, a.test itself, or a wildcard covering a.test, its
//! route's host names (a.test among them: on b's own listeners), a copy of a's route (the
//! same rules, so the same list texts), a route naming a's Gateway (which a's listener does
//! not admit), and the order of the documents (b's shuffled, a's before or after them).
//!
//! b's Gateways are always created after a's (`creationTimestamp` later, by a fraction of a
//! second to decades, in other offsets): the API server dates an object when it is created,
//! so a tenant cannot make its Gateway older than one that exists. Which listener serves a
//! host name two Gateways claim on one port is decided by age (Gateway API's conflict rule:
//! the oldest), so a's older listener keeps its port's protocol and host name.
//! Not mutated: a Gateway of b created in the same second as a's (a tie Gateway API breaks
//! by "{namespace}/{name}", which b may win), a listener's `allowedRoutes` (the operator's
//! policy: see docs/RELIABILITY.md, "one tenant's object costs only itself").

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use httproute_nginx::conf::Stmt;
use httproute_nginx::{BackendMap, Options, generate_all};
use manifest_gen::objects::{self, Set};
use proptest::prelude::*;

fn opts() -> Options {
    Options {
        module: std::env::var("NGX_MATCHES_MODULE")
            .unwrap_or_else(|_| "modules/ngx_http_matches_module.so".into()),
        listen_address: Some("127.0.0.1".into()),
        ..common::options()
    }
}

/// A YAML double-quoted scalar of `s`.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Header values, paths and names of the hostile kinds: tabs, control characters, `$`,
/// quotes, U+0085, long runs.
fn value() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\t".to_owned()),
        Just("\n".to_owned()),
        Just("$".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\u{85}".to_owned()),
        Just(";{}#".to_owned()),
        "[a-z]{1,8}",
        (1usize..5000).prop_map(|n| "$".repeat(n)),
        (1usize..5000).prop_map(|n| "x".repeat(n)),
    ];
    prop::collection::vec(piece, 1..6).prop_map(|v| v.concat())
}

fn header_name() -> impl Strategy<Value = String> {
    (1usize..=256).prop_map(|n| format!("x{}", "h".repeat(n - 1)))
}

/// The rules of tenant a's route (a header filter's `add` map, weights' `split_clients`, a
/// redirect, a regex path and a `/` prefix, so that its locations' lists include runs).
const A_RULES: &str = "  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}, headers: [{name: x-a, value: \"1\"}]}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: x-set, value: a}], add: [{name: x-add, value: b}]}\n    backendRefs: [{name: s, port: 80, weight: 3}, {name: t, port: 80, weight: 1}]\n  - matches: [{path: {type: Exact, value: /r}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /elsewhere}}\n  - matches: [{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}, {path: {type: PathPrefix, value: /}}]\n    backendRefs: [{name: s, port: 80}]\n";

/// Tenant a: its Gateway (one listener, port 18080, host a.test, routes of its own namespace
/// only: the default `allowedRoutes`) and route, both created at 2026-01-01T00:00:00Z: older
/// than b's routes (undated: the newest), so a's attachment holds what it serves.
fn tenant_a() -> Vec<String> {
    vec![
        common::gateway(
            "a/gw",
            "2026-01-01T00:00:00Z",
            "{name: http, port: 18080, protocol: HTTP, hostname: a.test}",
        ),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n{A_RULES}"
        ),
    ]
}

/// Tenant b's names and places: its namespace and object names (renamed), the port of its
/// plain listener (before a's or after), a second listener on a's port with another host name
/// (or none, or a wildcard covering a's), the host names of its route, and whether it has a
/// copy of a's route (its rules, host names: none, a's, another) and a route that names a's
/// Gateway (which a's listener does not admit).
#[derive(Debug, Clone)]
struct Names {
    ns: &'static str,
    gw: &'static str,
    route: &'static str,
    port: u16,
    on_a_port: Option<(Option<&'static str>, bool)>,
    /// Its Gateways' `creationTimestamp`: always after a's (an object created later; the API
    /// server sets it, a tenant cannot date an object before another that exists).
    age: &'static str,
    hosts: Option<&'static str>,
    copy: Option<Option<&'static str>>,
    intrude: bool,
}

const NAMESPACES: [&str; 3] = ["b", "0b", "zb"];

fn names() -> impl Strategy<Value = Names> {
    (
        prop::sample::select(NAMESPACES.to_vec()),
        prop::sample::select(vec!["gw", "0", "zz"]),
        prop::sample::select(vec!["r", "0", "a", "zz"]),
        prop::sample::select(vec![18000u16, 18081]),
        prop::option::of((
            prop::option::of(prop::sample::select(vec![
                "0.test", "z.test", "*.test", "b.a.test", "a.test", "*.a.test",
            ])),
            any::<bool>(),
        )),
        prop::sample::select(vec![
            "2026-01-01T00:00:01Z",
            "2026-01-01T00:00:00.5Z",
            "2026-01-01T02:00:00+01:00",
            "2099-12-31T23:59:59Z",
        ]),
        prop::option::of(prop::sample::select(vec!["a.test", "b.test", "*.test"])),
        prop::option::of(prop::option::of(prop::sample::select(vec!["a.test", "c.test"]))),
        any::<bool>(),
    )
        .prop_map(|(ns, gw, route, port, on_a_port, age, hosts, copy, intrude)| Names {
            ns,
            gw,
            route,
            port,
            on_a_port,
            age,
            hosts,
            copy,
            intrude,
        })
}

fn hostnames(h: Option<&str>) -> String {
    h.map(|h| format!("  hostnames: [{}]\n", q(h))).unwrap_or_default()
}

/// Tenant b's Gateway and routes, one document each.
fn tenant_b(
    n: &Names,
    hv: String,
    hn: String,
    redirect: String,
    w: (u32, u32),
    allow: Vec<String>,
) -> Vec<String> {
    let (ns, gw, route) = (n.ns, n.gw, n.route);
    let allow: Vec<String> = allow.iter().map(|a| q(a)).collect();
    // On a's port: HTTP, or HTTPS (with b's certificate), which the older a's HTTP decides
    // against.
    let shared = match n.on_a_port {
        None => String::new(),
        Some((h, https)) => format!(
            ", {{name: shared, port: 18080, protocol: {}{}}}",
            if https { "HTTPS, tls: {certificateRefs: [{name: b-cert}]}" } else { "HTTP" },
            h.map(|h| format!(", hostname: {}", q(h))).unwrap_or_default()
        ),
    };
    let mut docs = vec![
        common::gateway(&format!("{ns}/{gw}"), n.age, &(common::http(n.port) + &shared)),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {route}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: {gw}}}]\n{}  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b}}}}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: {hn}, value: {}}}]}}\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {{set: [{{name: {hn}, value: {}}}]}}\n    backendRefs: [{{name: s, port: 80, weight: {}}}, {{name: t, port: 80, weight: {}}}]\n  - matches: [{{path: {{type: Exact, value: /r}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: {}}}}}\n  - matches: [{{path: {{type: PathPrefix, value: /c}}}}]\n    filters:\n    - type: CORS\n      cors: {{allowOrigins: [\"https://b.test\"], allowHeaders: [{}]}}\n    backendRefs: [{{name: s, port: 80}}]\n",
            hostnames(n.hosts),
            q(&hv),
            q(&hv),
            w.0,
            w.1,
            q(&format!("/{redirect}")),
            allow.join(", ")
        ),
    ];
    if let Some(h) = n.copy {
        // a's rules word for word: where its server holds it as a's server holds a's route,
        // its lists are a's, text for text.
        docs.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: {route}-copy, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: {gw}}}]\n{}{A_RULES}",
            hostnames(h)
        ));
    }
    if n.intrude {
        // No host names: on a listener that admitted it, every host of the listener.
        docs.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: {route}-in, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /a}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n"
        ));
    }
    docs
}

fn tls_file(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls").join(name))
        .unwrap()
}

/// The bytes of tenant b's tls.crt and tls.key: the good pair, a key of another certificate,
/// a cut, a block appended, a byte flipped, bytes of no meaning.
fn secret_bytes() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let (crt, key, other) = (tls_file("test.crt"), tls_file("test.key"), tls_file("other.key"));
    let n = crt.len();
    prop_oneof![
        Just((crt.clone(), key.clone())),
        Just((crt.clone(), other)),
        (0..n).prop_map({
            let (c, k) = (crt.clone(), key.clone());
            move |i| (c[..i].to_vec(), k.clone())
        }),
        prop_oneof![
            Just(b"-----BEGIN CERTIFICATE-----\nY3J0\n-----END CERTIFICATE-----\n".to_vec()),
            Just(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec()),
            Just(crt.clone()),
        ]
        .prop_map({
            let (c, k) = (crt.clone(), key.clone());
            move |extra| ([c.clone(), extra].concat(), k.clone())
        }),
        (0..n, any::<u8>()).prop_map({
            let (c, k) = (crt.clone(), key.clone());
            move |(i, b)| {
                let mut c = c.clone();
                c[i] = b;
                (c, k.clone())
            }
        }),
        (prop::collection::vec(any::<u8>(), 0..200), prop::collection::vec(any::<u8>(), 0..200)),
    ]
}

/// A backendRef of tenant b: (name, port, weight, namespace).
fn backend_ref() -> impl Strategy<Value = (String, u16, u32, Option<String>)> {
    (
        prop_oneof![
            Just("s".to_owned()),
            Just("u".to_owned()),
            Just("nope".to_owned()),
            "[a-z]{1,63}"
        ],
        prop_oneof![Just(80u16), Just(8080), 1u16..=65535],
        0u32..=1_000_000,
        prop_oneof![Just(None), Just(Some("a".to_owned())), Just(Some("b".to_owned()))],
    )
}

/// Tenant b's Service u (type, port, externalName), its EndpointSlices (address type,
/// addresses, port; None: `endpoints: null`) and whether it grants HTTPRoutes of namespace a
/// its Services.
#[derive(Debug, Clone)]
struct Core {
    external: Option<String>,
    port: u16,
    slices: Vec<(&'static str, Option<Vec<String>>, i64)>,
    grant: bool,
}

fn core() -> impl Strategy<Value = Core> {
    let address = prop_oneof![
        Just("10.1.2.3".to_owned()),
        Just("127.0.0.1".to_owned()),
        Just("169.254.169.254".to_owned()),
        Just("224.0.0.1".to_owned()),
        Just("0.0.0.0".to_owned()),
        Just("fd00::1".to_owned()),
        Just("::1".to_owned()),
        Just("a.example".to_owned()),
        "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}",
    ];
    let slice = (
        prop_oneof![Just("IPv4"), Just("IPv6"), Just("FQDN")],
        prop::option::of(prop::collection::vec(address, 1..4)),
        prop_oneof![Just(80i64), Just(0), Just(65536), Just(-1), 1i64..=65535],
    );
    (
        prop::option::of(prop_oneof![
            Just("localhost".to_owned()),
            Just("127.0.0.1".to_owned()),
            Just("s.a.svc.cluster.local".to_owned()),
            "[a-z]{1,20}(\\.[a-z]{1,10}){0,3}",
        ]),
        prop_oneof![Just(80u16), 1u16..=65535],
        prop::collection::vec(slice, 0..3),
        any::<bool>(),
    )
        .prop_map(|(external, port, slices, grant)| Core { external, port, slices, grant })
}

/// Tenant b's TLS listener and Secret, a route with the backendRefs given, and its core
/// objects, one document each.
fn tenant_b_objects(
    n: &Names,
    secret: &(Vec<u8>, Vec<u8>),
    refs: &[(String, u16, u32, Option<String>)],
    core: &Core,
) -> Vec<String> {
    let (ns, gw, route) = (Some(n.ns), n.gw, n.route);
    let tls = format!("{gw}-tls");
    let refs = refs
        .iter()
        .map(|(name, port, weight, to)| {
            objects::backend(name, *port, Some(*weight)).set_some("namespace", to.as_deref())
        })
        .collect();
    let rule = objects::rule(vec![objects::path_match("PathPrefix", "/refs")], vec![], refs);
    let parents = vec![objects::parent(gw, None, None), objects::parent(&tls, None, None)];
    let docs = [
        objects::gateway(
            ns,
            &tls,
            vec![objects::listener("https", 18443, Some("b.test"), Some("b-cert"))],
        )
        .set("metadata.creationTimestamp", n.age),
        objects::tls_secret(ns, "b-cert", &secret.0, &secret.1),
        objects::http_route(ns, &format!("{route}-refs"), parents, &[], vec![rule]),
        objects::service(ns, "u", core.port, core.external.as_deref()),
    ]
    .into_iter()
    .chain(core.slices.iter().enumerate().map(|(i, (kind, addresses, port))| {
        let endpoints = match addresses {
            None => serde_json::Value::Null,
            Some(a) => serde_json::json!([objects::endpoint(a, Some(true))]),
        };
        objects::endpoint_slice(ns, &format!("u-{i}"), "u", kind, endpoints, *port)
    }))
    .chain(core.grant.then(|| objects::service_grant(ns, "to-a", "HTTPRoute", "a", None)));
    docs.map(|d| format!("{d}\n")).collect()
}

/// The variables a word names (`$name`, `${name}`).
fn variables(word: &str, out: &mut Vec<String>) {
    let mut rest = word;
    while let Some(i) = rest.find('$') {
        rest = &rest[i + 1..];
        let r = rest.strip_prefix('{').unwrap_or(rest);
        let n = r.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if n > 0 {
            out.push(r[..n].to_owned());
        }
        rest = &r[n..];
    }
}

/// Whether `word` names upstream `name` (`http://NAME$request_uri`, or a `split_clients`
/// value that is the name).
fn names_upstream(word: &str, name: &str) -> bool {
    let w = word.split_once("://").map_or(word, |(_, w)| w);
    w.strip_prefix(name).is_some_and(|r| r.is_empty() || r.starts_with(['$', '/']))
}

fn all_words<'a>(s: &'a Stmt, out: &mut Vec<&'a str>) {
    out.extend(s.words.iter().map(String::as_str));
    for c in s.block.iter().flatten() {
        all_words(c, out);
    }
}

/// Tenant a's view of a generated configuration, everything written for it: its server (the
/// `server_name a.test` server of port 18080) as NGINX reads it, every directive and word; the
/// `http`-level blocks it uses, as far as they reach (the `map`s, `split_clients` and `geo`s
/// that define a variable it names, the upstreams it names); and the match lists its
/// `$match_key`s name, with the lists those include: key and list.
///
/// Left out, as what the whole configuration shares (docs/RELIABILITY.md, "one tenant's
/// object costs only itself"): the hash sizes (`*_hash_bucket_size`, `*_hash_max_size`: NGINX's hashes hold
/// every name of the configuration, so their sizes depend on all of them), `resolver` (any
/// tenant's DNS-named backend writes it) and `load_module`, `events` and the like (the run's).
#[derive(Debug, PartialEq)]
struct View {
    servers: Vec<Stmt>,
    http: Vec<Stmt>,
    lists: BTreeMap<String, serde_json::Value>,
}

fn tenant_a_view(conf: &str, matches: &str) -> View {
    let tree = httproute_nginx::conf_reader::read(conf).unwrap();
    let http = tree.iter().find(|s| s.words == ["http"]).unwrap();
    let body = http.block.as_deref().unwrap_or_default();
    let has = |s: &Stmt, name: &str, arg: &dyn Fn(&str) -> bool| {
        s.block
            .iter()
            .flatten()
            .any(|d| d.words.len() >= 2 && d.words[0] == name && arg(&d.words[1]))
    };
    let servers: Vec<Stmt> = body
        .iter()
        .filter(|s| {
            s.words == ["server"]
                && has(s, "server_name", &|h| h == "a.test")
                && has(s, "listen", &|l| l.ends_with(":18080"))
        })
        .cloned()
        .collect();
    assert_eq!(servers.len(), 1, "{conf}");
    let http = reached(body, &servers);
    // The lists: the keys a's locations set, and what those include.
    let file: serde_json::Map<String, serde_json::Value> = serde_json::from_str(matches).unwrap();
    let mut keys: Vec<String> = Vec::new();
    for s in &servers {
        for l in s.block.iter().flatten() {
            for d in l.block.iter().flatten() {
                if d.words.len() == 3 && d.words[..2] == ["set", "$match_key"] {
                    keys.push(d.words[2].clone());
                }
            }
        }
    }
    assert!(!keys.is_empty(), "{conf}");
    let mut lists = BTreeMap::new();
    while let Some(k) = keys.pop() {
        let list = file.get(&k).unwrap_or_else(|| panic!("no list {k}")).clone();
        for e in list.as_array().unwrap() {
            if let Some(i) = e.get("include").and_then(|i| i.as_str()) {
                keys.push(i.to_owned());
            }
        }
        lists.insert(k, list);
    }
    View { servers, http, lists }
}

/// The http-level blocks of `body` that `servers` reach (maps, split_clients, geo by their
/// variable; upstreams by name), to a fixed point.
fn reached(body: &[Stmt], servers: &[Stmt]) -> Vec<Stmt> {
    let mut words: Vec<&str> = Vec::new();
    for s in servers {
        all_words(s, &mut words);
    }
    let mut taken = vec![false; body.len()];
    loop {
        let mut vars = Vec::new();
        for w in &words {
            variables(w, &mut vars);
        }
        let mut reached = Vec::new();
        for (i, s) in body.iter().enumerate() {
            if taken[i] || s.block.is_none() {
                continue;
            }
            let uses = match s.words.first().map(String::as_str) {
                Some("map" | "split_clients" | "geo") => s
                    .words
                    .last()
                    .and_then(|v| v.strip_prefix('$'))
                    .is_some_and(|v| vars.iter().any(|u| u == v)),
                Some("upstream") => {
                    s.words.get(1).is_some_and(|n| words.iter().any(|w| names_upstream(w, n)))
                }
                _ => false,
            };
            if uses {
                reached.push(i);
            }
        }
        if reached.is_empty() {
            break;
        }
        for i in reached {
            taken[i] = true;
            all_words(&body[i], &mut words);
        }
    }
    body.iter().zip(&taken).filter(|(_, t)| **t).map(|(s, _)| s.clone()).collect()
}

fn dir_with(tag: &str, yaml: &str) -> PathBuf {
    // A directory per call: tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hr-innocent-{tag}-{n}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    dir
}

fn backends() -> BackendMap {
    let mut m = BackendMap::new();
    for ns in std::iter::once("a").chain(NAMESPACES) {
        m.insert(format!("{ns}/s:80"), "127.0.0.1:9".into());
        m.insert(format!("{ns}/t:80"), "127.0.0.1:10".into());
    }
    m
}

/// The documents in one file: tenant b's in the order `order` draws, tenant a's before them
/// or after.
fn file_of(a: &[String], mut b: Vec<String>, order: u64, a_first: bool) -> String {
    // Fisher-Yates with a fixed LCG: the order is the case's.
    let mut x = order;
    for i in (1..b.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        b.swap(i, (x >> 33) as usize % (i + 1));
    }
    let docs: Vec<&String> =
        if a_first { a.iter().chain(&b).collect() } else { b.iter().chain(a).collect() };
    docs.iter().map(|d| format!("{d}---\n")).collect()
}

/// Tenant a's view alone, and with `b`'s documents.
fn views(b: Vec<String>, order: u64, a_first: bool) -> (View, View, httproute_nginx::Generated) {
    views_with(b, order, a_first, &opts())
}

/// [`views`] with options `o`.
fn views_with(
    b: Vec<String>,
    order: u64,
    a_first: bool,
    o: &Options,
) -> (View, View, httproute_nginx::Generated) {
    let a = tenant_a();
    let base =
        generate_all(&[dir_with("base", &file_of(&a, vec![], 0, true))], &backends(), o).unwrap();
    let g = generate_all(&[dir_with("mutated", &file_of(&a, b, order, a_first))], &backends(), o)
        .unwrap();
    (
        tenant_a_view(&base.output.nginx_conf, &base.output.matches_json),
        tenant_a_view(&g.output.nginx_conf, &g.output.matches_json),
        g,
    )
}

/// `nginx -t` of the output, when the binary and the module are given.
fn nginx_t(tag: &str, out: &httproute_nginx::Output) {
    let (Ok(nginx), Ok(_)) =
        (std::env::var("NGX_MATCHES_NGINX"), std::env::var("NGX_MATCHES_MODULE"))
    else {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!(
                "innocent_tenant: NGX_MATCHES_NGINX/NGX_MATCHES_MODULE not set: nginx -t skipped"
            )
        });
        return;
    };
    let dir = std::env::temp_dir().join(format!("hr-innocent-out-{tag}-{}", std::process::id()));
    httproute_nginx::write_dir(&dir, out).unwrap();
    let o = std::process::Command::new(nginx)
        .arg("-t")
        .arg("-p")
        .arg(format!("{}/", dir.display()))
        .arg("-c")
        .arg("nginx.conf")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nginx -t: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        out.nginx_conf
    );
}

fn cases() -> u32 {
    std::env::var("HTTPROUTE_INNOCENT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn another_tenants_objects_never_change_mine(
        n in names(),
        hv in value(),
        hn in header_name(),
        redirect in value(),
        w in (0u32..=1_000_000, 0u32..=1_000_000),
        allow in prop::collection::vec(header_name(), 1..64),
        secret in secret_bytes(),
        refs in prop::collection::vec(backend_ref(), 1..4),
        core in core(),
        order in any::<u64>(),
        a_first in any::<bool>(),
    ) {
        let mut b = tenant_b(&n, hv, hn, redirect, w, allow);
        b.extend(tenant_b_objects(&n, &secret, &refs, &core));
        let (base, mine, g) = views(b, order, a_first);
        prop_assert_eq!(base, mine);
        for d in &g.output.dropped {
            prop_assert_eq!(d.unit.route().map(|r| r.namespace.as_str()), Some(n.ns));
        }
        nginx_t("case", &g.output);
    }
}

/// The case that failed before keys were content-addressed (issue #29, the innocent tenant):
/// tenant b's copy of a's route, on a port written before a's, wrote the same lists first, and
/// a's locations named b's keys (`18000_0_1` for a's `18080_0_1`).
#[test]
fn a_copy_of_my_route_written_first_changes_nothing_of_mine() {
    let n = Names {
        ns: "b",
        gw: "gw",
        route: "r",
        port: 18000,
        on_a_port: None,
        age: "2026-01-01T00:00:01Z",
        hosts: Some("b.test"),
        copy: Some(None),
        intrude: false,
    };
    let b = tenant_b(&n, "v".into(), "x-h".into(), "p".into(), (1, 1), vec!["x-c".into()]);
    let a = tenant_a();
    let alone =
        generate_all(&[dir_with("copy-base", &file_of(&a, vec![], 0, true))], &backends(), &opts())
            .unwrap();
    let (base, mine, g) = views(b, 0, true);
    assert_eq!(base, mine);
    // The copy's lists are a's (its catch-all server on port 18000 holds it in the slots a's
    // server holds a's route), written once: some key of a's is set by b's locations too.
    let uses = |conf: &str, k: &str| conf.matches(&format!("set $match_key {k};")).count();
    assert!(
        base.lists
            .keys()
            .any(|k| uses(&g.output.nginx_conf, k) > uses(&alone.output.nginx_conf, k)),
        "{}",
        g.output.nginx_conf
    );
    nginx_t("copy", &g.output);
}

/// Tenant a's objects with its listener admitting routes of every namespace.
fn tenant_a_admitting_all() -> Vec<String> {
    let all = "hostname: a.test, allowedRoutes: {namespaces: {from: All}}}";
    tenant_a().into_iter().map(|d| d.replace("hostname: a.test}", all)).collect()
}

/// A listener that admits other namespaces' routes (`allowedRoutes.namespaces.from: All`)
/// takes tenant b's route without host names into every host it serves: a's server changes,
/// by the listener owner's choice (docs/RELIABILITY.md). With the default (`Same`), the same
/// route is refused (the property above sets it in about half the cases).
#[test]
fn a_listener_that_admits_other_namespaces_takes_their_routes() {
    let a_all = tenant_a_admitting_all();
    assert!(a_all[0].contains("from: All"));
    let n = Names {
        ns: "b",
        gw: "gw",
        route: "r",
        port: 18081,
        on_a_port: None,
        age: "2026-01-01T00:00:01Z",
        hosts: None,
        copy: None,
        intrude: true,
    };
    let b = tenant_b(&n, "v".into(), "x-h".into(), "p".into(), (1, 1), vec!["x-c".into()]);
    let alone = generate_all(
        &[dir_with("all-base", &file_of(&a_all, vec![], 0, true))],
        &backends(),
        &opts(),
    )
    .unwrap();
    let with_b = generate_all(
        &[dir_with("all-b", &file_of(&a_all, b.clone(), 0, true))],
        &backends(),
        &opts(),
    )
    .unwrap();
    let (x, y) = (
        tenant_a_view(&alone.output.nginx_conf, &alone.output.matches_json),
        tenant_a_view(&with_b.output.nginx_conf, &with_b.output.matches_json),
    );
    assert_ne!(x, y);
    assert!(with_b.output.nginx_conf.contains("# b/r-in rule 0"), "{}", with_b.output.nginx_conf);
    // The default listener refuses it, and a's server is a's alone.
    let (base, mine, g) = views(b, 0, true);
    assert_eq!(base, mine);
    assert!(!g.output.nginx_conf.contains("# b/r-in rule 0"));
}

/// 253-byte host names, `n` of them, with one `ngx_hash_key_lc` (`h * 31 + c`): the 2-byte
/// blocks `c0` and `an` hash alike, so names that differ only in which block sits where
/// collide in every NGINX hash size.
fn colliding_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let blocks: String =
                (0..10).map(|b| if i >> b & 1 == 1 { "c0" } else { "an" }).collect();
            let name = format!(
                "{blocks}{}.{}.{}.{}",
                "x".repeat(43),
                "y".repeat(63),
                "z".repeat(63),
                "w".repeat(61)
            );
            assert_eq!(name.len(), 253);
            name
        })
        .collect()
}

/// The `http`-level value of `directive` in `conf`, if written.
fn http_value(conf: &str, directive: &str) -> Option<usize> {
    conf.lines().find_map(|l| {
        l.trim().strip_prefix(directive)?.trim().trim_end_matches(';').trim().parse().ok()
    })
}

/// Whether NGINX builds its server-name hashes of `conf` (the model of `ngx_hash_init` in
/// `limits`, with the sizes the configuration writes).
fn server_names_build(conf: &str) -> bool {
    let names: Vec<&str> = conf
        .lines()
        .filter_map(|l| l.trim().strip_prefix("server_name "))
        .flat_map(|l| l.trim_end_matches(';').split_whitespace())
        .filter(|n| *n != "\"\"" && *n != "_")
        .collect();
    let sizes = httproute_nginx::limits::HashSizes {
        bucket_size: http_value(conf, "server_names_hash_bucket_size").unwrap_or(64),
        max_size: http_value(conf, "server_names_hash_max_size").unwrap_or(512),
    };
    httproute_nginx::limits::nginx_builds(names, sizes)
}

/// Budget: server names in NGINX's hash (issue #45). Tenant b's 16 routes of 16 host names
/// each (CRD-valid: 253 bytes, 16 per route), all with one hash, on a listener of its own:
/// 256 elements of 264 bytes in one bucket, past the 65,280 bytes NGINX takes in any
/// `server_names_hash_*`. Its newest routes are refused (with a condition naming the budget),
/// its older ones kept, a's configuration is unchanged, and NGINX builds the hash (the model;
/// `nginx -t` when given). Before the budget, the configuration NGINX refused: no hash built.
#[test]
fn names_crafted_to_collide_in_nginx_s_hash_cost_only_their_owner() {
    let names = colliding_names(256);
    let mut b = vec![common::gateway("b/gw", "2026-01-01T00:00:01Z", &common::http(18081))];
    for (i, hosts) in names.chunks(16).enumerate() {
        let hosts: Vec<String> = hosts.iter().map(|h| q(h)).collect();
        b.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i:02}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{i:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            hosts.join(", ")
        ));
    }
    let (base, mine, g) = views(b, 7, true);
    assert_eq!(base, mine);
    assert!(server_names_build(&g.output.nginx_conf), "server names hash not built");
    // 65,256 bytes hold 247 elements of 264: the 16 names of the newest route go.
    let refused: Vec<String> = g
        .status
        .routes
        .iter()
        .filter(|r| {
            r.parents.iter().flat_map(|(_, cs)| cs).any(|c| {
                c.kind == httproute_nginx::plan::ConditionType::Accepted
                    && !c.ok
                    && c.message.contains("budget: server-name hash")
            })
        })
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(refused, ["b/r15"], "{:?}", g.warnings);
    assert!(g.output.dropped.iter().all(|d| d.unit.route().is_some_and(|r| r.namespace == "b")));
    nginx_t("collide", &g.output);
}

/// Budget: HTTP/2 per port (issue #45). Tenant b's listener on a's port (another host name)
/// with a GRPCRoute: before, the port spoke HTTP/2 and every server of it, a's included, got
/// `http2 on` (a's view changed). Now b's GRPCRoute is refused there (newest first: a's
/// Gateway is older and serves no GRPCRoute), with a condition naming the budget; a's view is
/// unchanged. The same GRPCRoute on b's own port is served with `http2 on`.
#[test]
fn a_grpc_route_on_my_port_leaves_my_servers_http1() {
    let b = |port: u16| {
        vec![
            common::gateway("b/gw", "2026-01-01T00:00:01Z", &format!("{{name: http, port: {port}, protocol: HTTP, hostname: b.test}}")),
            "kind: GRPCRoute\nmetadata: {name: g, namespace: b}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s, port: 80}]\n".to_owned(),
        ]
    };
    let (base, mine, g) = views(b(18080), 3, false);
    assert_eq!(base, mine);
    assert!(!g.output.nginx_conf.contains("http2 on"), "{}", g.output.nginx_conf);
    let refused = g.status.routes.iter().any(|r| {
        r.id.to_string() == "b/g"
            && r.parents.iter().flat_map(|(_, cs)| cs).any(|c| {
                c.kind == httproute_nginx::plan::ConditionType::Accepted
                    && !c.ok
                    && c.message.contains("budget: HTTP/2 per port")
            })
    });
    assert!(refused, "{:?}", g.warnings);
    nginx_t("h2", &g.output);
    let (base, mine, g) = views(b(18081), 3, false);
    assert_eq!(base, mine);
    assert!(g.output.nginx_conf.contains("http2 on"), "{}", g.output.nginx_conf);
}

/// Before NGINX 1.25.1 a plain port speaks HTTP/1.1 or HTTP/2 (prior knowledge), not both
/// (red team, issue #45): the oldest route served there decides. Tenant a's older GRPCRoute
/// keeps a's port HTTP/2 when b's newer Gateway on that port brings an HTTPRoute: b's route
/// is refused (`Accepted: False`, naming the port) and a's calls are still served, by the
/// plan and by explain. Before, any HTTPRoute on the port turned it HTTP/1.1 and refused a's
/// GRPCRoute. (b's newer GRPCRoute beside a's HTTP/1.1 is the HTTP/2 budget's, above.)
#[test]
fn a_newer_http_route_never_turns_my_grpc_port_off_before_1_25_1() {
    let old = Options { nginx_version: (1, 22, 1), ..opts() };
    let listener =
        |host: &str| format!("{{name: http, port: 18080, protocol: HTTP, hostname: {host}}}");
    let route = |kind: &str, ns: &str, host: &str, created: &str| {
        format!(
            "kind: {kind}\nmetadata: {{name: r, namespace: {ns}, creationTimestamp: \"{created}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n"
        )
    };
    let a = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", &listener("a.test")),
        route("GRPCRoute", "a", "a.test", "2026-01-01T00:00:01Z"),
    ];
    let b = vec![
        common::gateway("b/gw", "2026-01-02T00:00:00Z", &listener("b.test")),
        route("HTTPRoute", "b", "b.test", "2026-01-02T00:00:01Z"),
    ];
    let call = |plan: &httproute_nginx::plan::Plan, host: &str, grpc: bool| {
        let content_type = if grpc { "application/grpc" } else { "text/plain" };
        ask(plan, (18080, "POST", host, "/a.B/C"), &[("content-type", content_type)])
    };
    for with_b in [false, true] {
        let docs = if with_b { [a.clone(), b.clone()].concat() } else { a.clone() };
        let dir = dir_with("legacy-h2", &file_of(&docs, vec![], 0, true));
        let g = generate_all(std::slice::from_ref(&dir), &backends(), &old).unwrap();
        let conf = &g.output.nginx_conf;
        assert!(conf.contains("listen 127.0.0.1:18080 http2"), "with b: {with_b}\n{conf}");
        let accepted = |id: &str| {
            let r = g.status.routes.iter().find(|r| r.id.to_string() == id).unwrap();
            let conditions = r.parents.iter().flat_map(|(_, cs)| cs);
            let c = conditions
                .clone()
                .find(|c| c.kind == httproute_nginx::plan::ConditionType::Accepted);
            (c.unwrap().ok, conditions.map(|c| c.message.clone()).collect::<Vec<_>>().join("; "))
        };
        assert!(accepted("a/r").0, "{:?}", g.warnings);
        let model = httproute_nginx::model::load(&[dir]).unwrap();
        let plan = httproute_nginx::explain::plan_as_served(&model, &backends(), &old).unwrap();
        let (text, status) = call(&plan, "a.test", true);
        assert_eq!(status, 200, "with b: {with_b}\n{text}");
        if with_b {
            let (ok, why) = accepted("b/r");
            assert!(!ok && why.contains("cannot serve HTTP/1.1 beside cleartext HTTP/2"), "{why}");
            let (text, status) = call(&plan, "b.test", false);
            assert_eq!(status, 0, "{text}");
            assert!(text.contains("not served: an HTTPRoute"), "{text}");
        }
    }
}

/// The same budget when tenant b's routes carry no `creationTimestamp` (which would count as
/// the oldest): a route's names come with the later of the route and its Gateway, so a's
/// older route keeps its 16 colliding names and only b's routes are refused. Before that
/// rule, b's 240 names went in first and a's route was refused.
#[test]
fn undated_routes_of_a_newer_gateway_do_not_evict_my_names() {
    colliding_undated_routes("undated", "b", ", creationTimestamp: \"2026-01-01T00:00:01Z\"");
}

/// Tenant a's dated Gateway (port 18082) and route with 16 of 256 names of one hash; tenant
/// `ns`'s Gateway (port 18081, `gw_meta` added to its metadata) and undated routes with the
/// other 240. Only `ns`'s routes are refused, a's names are written, `nginx -t` passes.
fn colliding_undated_routes(name: &str, ns: &str, gw_meta: &str) {
    let names = colliding_names(256);
    let hosts = |hs: &[String]| hs.iter().map(|h| q(h)).collect::<Vec<_>>().join(", ");
    let mut docs = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", &common::http(18082)),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            hosts(&names[..16])
        ),
        format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}{gw_meta}}}\nspec:\n  listeners: [{{name: http, port: 18081, protocol: HTTP}}]\n"
        ),
    ];
    for (i, hs) in names[16..].chunks(16).enumerate() {
        docs.push(format!("kind: HTTPRoute\nmetadata: {{name: r{i:02}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n", hosts(hs)));
    }
    let yaml: String = docs.iter().map(|d| format!("{d}---\n")).collect();
    let g = generate_all(&[dir_with(name, &yaml)], &backends(), &opts()).unwrap();
    assert!(server_names_build(&g.output.nginx_conf));
    assert!(!g.output.dropped.is_empty());
    for d in &g.output.dropped {
        assert_eq!(d.unit.route().map(|r| r.namespace.as_str()), Some(ns), "{:?}", g.warnings);
    }
    assert!(g.output.nginx_conf.contains(&names[0]));
    nginx_t(name, &g.output);
}

/// The listening sockets of `conf`: its distinct `listen` addresses.
fn listen_sockets(conf: &str) -> std::collections::BTreeSet<&str> {
    conf.lines()
        .filter_map(|l| l.trim().strip_prefix("listen "))
        .filter_map(|l| l.trim_end_matches(';').split_whitespace().next())
        .collect()
}

/// Budget: listening sockets (issue #45). Tenant b's 10 newer Gateways of 60 listeners each,
/// 600 distinct ports, at `worker_connections 1024`: before, every port was listened on (601
/// sockets, `nginx -t` passes, every worker exits at start: "worker_connections are not
/// enough"). Now at most 512 sockets are written, a's included, oldest first: b's newest
/// Gateway's listeners are `Programmed: False` naming the budget, a's view is unchanged.
#[test]
fn many_ports_of_a_newer_tenant_leave_workers_connections() {
    let (base, mine, g) = views(many_ports(), 5, false);
    assert_eq!(base, mine);
    assert_eq!(g.output.nginx_conf.matches("worker_connections 1024;").count(), 1);
    oldest_512_sockets("sockets", &g);
}

/// Review 13: `nginx -t` and the master open every listening socket within their open-file
/// limit, whatever `worker_connections` says. At `worker_connections 4096` (2,048 sockets)
/// b's 600 ports were all written, and a master (or `nginx -t`) with Linux's 1,024 open files
/// fails: "socket() failed (24: Too many open files)". Now half of `--open-files` (1,024 by
/// default) bounds them too; `--open-files 4096` admits all 601.
#[test]
fn many_ports_of_a_newer_tenant_fit_the_master_s_open_files() {
    let mut o = opts();
    o.global.worker_connections = 4096;
    let (base, mine, g) = views_with(many_ports(), 5, false, &o);
    assert_eq!(base, mine);
    assert_eq!(g.output.nginx_conf.matches("worker_connections 4096;").count(), 1);
    oldest_512_sockets("open-files", &g);
    o.global.open_files = 4096;
    let (base, mine, g) = views_with(many_ports(), 5, false, &o);
    assert_eq!(base, mine);
    assert_eq!(listen_sockets(&g.output.nginx_conf).len(), 601);
}

/// Tenant b's 10 Gateways of 60 listeners each, 600 distinct ports, a second apart.
fn many_ports() -> Vec<String> {
    (0..10)
        .map(|g| {
            let ls: Vec<String> = (0..60)
                .map(|i| format!("{{name: l{i:02}, port: {}, protocol: HTTP}}", 20000 + g * 60 + i))
                .collect();
            let created = format!("2026-01-01T00:00:{:02}Z", g + 1);
            common::gateway(&format!("b/gw{g}"), &created, &ls.join(", "))
        })
        .collect()
}

/// 512 sockets written, a's among them; b's newest 89 listeners refused naming the budget.
fn oldest_512_sockets(tag: &str, g: &httproute_nginx::Generated) {
    let sockets = listen_sockets(&g.output.nginx_conf);
    assert_eq!(sockets.len(), 512);
    assert!(sockets.contains("127.0.0.1:18080"));
    let refused = |l: &httproute_nginx::plan::ListenerStatus| {
        l.conditions.iter().any(|c| {
            c.kind == httproute_nginx::plan::ConditionType::Programmed
                && !c.ok
                && c.message.contains("budget: listening sockets")
        })
    };
    let gone: Vec<String> =
        g.status.listeners.iter().filter(|l| refused(l)).map(|l| l.id.to_string()).collect();
    // a's 1 and b's 480 of gw0..gw7 and 31 of gw8 are kept.
    assert_eq!(gone.len(), 89, "{gone:?}");
    assert!(gone.iter().all(|l| l.starts_with("b/gw9/") || l.starts_with("b/gw8/")), "{gone:?}");
    assert!(gone.contains(&"b/gw8/l31".to_owned()) && !gone.contains(&"b/gw8/l30".to_owned()));
    nginx_t(tag, &g.output);
}

/// Conflict order (issue #45): an object without `creationTimestamp` counts as newer than
/// every dated one. Tenant 0b's undated Gateway and routes bring 240 names colliding with a's
/// dated route's 16 (one hash): a's route keeps its names and only 0b's routes are refused.
/// Before, undated counted as the oldest: 0b's names went in first and a's route was refused.
#[test]
fn an_undated_gateway_and_routes_do_not_evict_my_dated_names() {
    colliding_undated_routes("undated-gw", "0b", "");
}

/// Tenant b's routes `r0`..: each `rules` rules of one match with a regex path and 16 regex
/// headers, every pattern distinct, dated one second apart after b's Gateway (port 18081).
fn regex_routes(namespace: &str, routes: usize, rules: usize) -> Vec<String> {
    let gw =
        common::gateway(&format!("{namespace}/gw"), "2026-01-01T00:00:01Z", &common::http(18081));
    let mut b = vec![gw];
    for r in 0..routes {
        let rules: Vec<String> = (0..rules)
            .map(|k| {
                let headers: Vec<String> = (0..16)
                    .map(|h| format!("{{name: x-h{h}, type: RegularExpression, value: \"^v{r}-{k}-{h}-(?:[a-z]{{2}}[0-9]){{50}}$\"}}"))
                    .collect();
                format!(
                    "  - matches: [{{path: {{type: RegularExpression, value: \"/{namespace}{r}/{k}/(?:[a-z][0-9]){{50}}\"}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
                    headers.join(", ")
                )
            })
            .collect();
        b.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: r{r}, namespace: {namespace}, creationTimestamp: \"2026-01-02T00:00:{r:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n{}",
            rules.concat()
        ));
    }
    b
}

/// The routes refused with a condition naming `budget`.
fn refused_for(g: &httproute_nginx::Generated, budget: &str) -> Vec<String> {
    g.status
        .routes
        .iter()
        .filter(|r| {
            r.parents.iter().flat_map(|(_, cs)| cs).any(|c| {
                c.kind == httproute_nginx::plan::ConditionType::Accepted
                    && !c.ok
                    && c.message.contains(budget)
            })
        })
        .map(|r| r.id.to_string())
        .collect()
}

/// The distinct regex patterns of the written match lists whose text contains `mark`.
fn written_patterns<'a>(matches: &'a str, mark: &str) -> std::collections::BTreeSet<&'a str> {
    matches
        .split('"')
        .filter_map(|s| s.split_once("RegularExpression:").map(|(_, p)| p))
        .filter(|p| p.contains(mark))
        .collect()
}

/// Budget: regex memory (issue #45). Tenant b's 8 newer routes of 8 rules, each a regex path
/// and 16 regex headers (1,088 distinct patterns, CRD-valid), each counted at the most it may
/// hold in the module (~70 KiB: `limits::regex_charge`): b's oldest route fits its 16 MiB
/// share, the 7 newer ones are refused naming the budget, a's view is unchanged and the
/// patterns written stay within the share. Before, every pattern was written: 76 MiB of the
/// module's 128 MiB `http_matches_max_memory` from one tenant, whatever the others need.
#[test]
fn many_regex_conditions_of_a_newer_tenant_leave_my_memory() {
    let (base, mine, g) = views(regex_routes("b", 8, 8), 11, true);
    assert_eq!(base, mine);
    let refused = refused_for(&g, "budget: regex memory");
    assert_eq!(refused, (1..8).map(|r| format!("b/r{r}")).collect::<Vec<_>>(), "{:?}", g.warnings);
    let written = written_patterns(&g.output.matches_json, "v0-");
    assert_eq!(written.len(), 8 * 16, "b/r0's header patterns are written");
    let charged: usize = written_patterns(&g.output.matches_json, "")
        .iter()
        .filter(|p| !p.starts_with("^(?:/v[0-9]"))
        .map(|p| httproute_nginx::limits::regex_charge(p.len()))
        .sum();
    assert!(charged <= httproute_nginx::limits::DEFAULT_REGEX_MEMORY_PER_TENANT, "{charged}");
    nginx_t("regex", &g.output);
}

/// The same budget across tenants: 8 newer namespaces of one such route each (9.3 MiB each,
/// within their share): they fill the 64 MiB all tenants' regex conditions may take oldest
/// first, so the newest ones are refused while a's route (older) keeps its regex path.
#[test]
fn many_tenants_regex_conditions_fill_the_total_newest_refused() {
    let mut b = Vec::new();
    for t in 0..8 {
        let ns = format!("b{t}");
        let mut docs = regex_routes(&ns, 1, 8);
        docs[0] = docs[0].replace("port: 18081", &format!("port: {}", 18081 + t));
        docs[1] = docs[1].replace("00:00:00Z", &format!("00:00:{t:02}Z"));
        b.extend(docs);
    }
    let (base, mine, g) = views(b, 13, false);
    assert_eq!(base, mine);
    let refused = refused_for(&g, "budget: regex memory");
    assert_eq!(refused, ["b6/r0", "b7/r0"], "{:?}", g.warnings);
    nginx_t("regex-total", &g.output);
}

/// Server names of owners a budget refuses are not written, and size no hash: tenant b's
/// newer routes, refused by the regex-memory budget, name a host of 189 bytes. Before, the
/// `server_names_hash_bucket_size` of that name was written all the same (a's configuration
/// changed by names no server of which is written).
#[test]
fn names_of_refused_routes_size_no_hash() {
    let long = format!("{0}.{0}.{0}.b.test", "h".repeat(60));
    let mut b = regex_routes("b", 8, 8);
    for d in &mut b[2..] {
        *d = d.replace(
            "  parentRefs: [{name: gw}]\n",
            &format!("  parentRefs: [{{name: gw}}]\n  hostnames: [{long}]\n"),
        );
    }
    let (base, mine, g) = views(b, 5, true);
    assert_eq!(base, mine);
    assert_eq!(refused_for(&g, "budget: regex memory").len(), 7, "{:?}", g.warnings);
    let conf = &g.output.nginx_conf;
    assert!(!conf.contains(&long), "{conf}");
    let alone = generate_all(
        &[dir_with("alone", &file_of(&tenant_a(), vec![], 0, true))],
        &backends(),
        &opts(),
    )
    .unwrap();
    for d in ["server_names_hash_bucket_size", "map_hash_bucket_size"] {
        assert_eq!(http_value(conf, d), http_value(&alone.output.nginx_conf, d), "{d}");
    }
}

/// `--regex-memory-total`: the operator's total for all namespaces' regex conditions. The 8
/// newer namespaces of `many_tenants_regex_conditions_fill_the_total_newest_refused` (9.3 MiB
/// each) within 32 MiB: the 3 oldest fit, the 5 newest are refused. Checked: at least the
/// per-tenant budget, at most the module's `http_matches_max_memory` (128 MiB unless
/// `--module-max-memory`, then written before the lists are loaded). Before, the total was
/// 64 MiB whatever the operator needed.
#[test]
fn the_operator_sizes_the_regex_total() {
    let mut b = Vec::new();
    for t in 0..8 {
        let ns = format!("b{t}");
        let mut docs = regex_routes(&ns, 1, 8);
        docs[0] = docs[0].replace("port: 18081", &format!("port: {}", 18081 + t));
        docs[1] = docs[1].replace("00:00:00Z", &format!("00:00:{t:02}Z"));
        b.extend(docs);
    }
    let mib = 1024 * 1024;
    let mut o = opts();
    o.global.regex_memory_total = 32 * mib;
    let dir = dir_with("regex-total-32", &file_of(&tenant_a(), b, 13, false));
    let g = generate_all(&[dir], &backends(), &o).unwrap();
    let refused = refused_for(&g, "budget: regex memory");
    assert_eq!(refused, ["b3/r0", "b4/r0", "b5/r0", "b6/r0", "b7/r0"], "{:?}", g.warnings);
    assert!(!g.output.nginx_conf.contains("http_matches_max_memory"));
    let check = |per: usize, total: usize, max: Option<usize>| {
        let mut o = opts();
        (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (per, total);
        o.global.module_max_memory = max;
        httproute_nginx::check_options(&o, &backends()).map(|_| o)
    };
    assert!(check(16 * mib, 8 * mib, None).is_err());
    assert!(check(16 * mib, 129 * mib, None).is_err());
    // The module's memory holds the lists too: at most three quarters of it for the patterns.
    assert!(check(16 * mib, 128 * mib, None).is_err());
    assert!(check(16 * mib, 96 * mib + 1, None).is_err());
    assert!(check(16 * mib, 96 * mib, None).is_ok());
    let o = check(16 * mib, 129 * mib, Some(256 * mib)).unwrap();
    let dir = dir_with("regex-max", &file_of(&tenant_a(), vec![], 0, true));
    let out = generate_all(&[dir], &backends(), &o).unwrap().output;
    let conf = &out.nginx_conf;
    let at = |w: &str| conf.find(w).unwrap_or_else(|| panic!("{w}: {conf}"));
    assert!(at("http_matches_max_memory 268435456;") < at("http_matches_load"), "{conf}");
    nginx_t("regex-max", &out);
}

/// `--carrier inline` compiles a location's list where it is written, so every location of a
/// server holds a copy of its regex conditions. Tenant a's route (its regex path in its 4
/// locations) on a listener that admits every namespace, a per-tenant budget of 6 copies, and
/// tenant b's `n` newer routes, each a plain prefix `/bK` on a.test (2 locations each): b pays
/// for the copies its locations hold (regex conditions only: the lists' bytes are the list
/// budget's), so its 3 oldest fit, at n = 4 and 40, and the rest are refused (their locations
/// not written); a's route stays Accepted whatever n is, and the copies written are the copies
/// charged (4 + 2 x 3). Before, a's route was charged every copy and refused from n = 4
/// (4 + 8 copies past 6): a newer object evicted an older one.
#[test]
fn plain_paths_of_a_newer_tenant_never_evict_my_inline_regex_route() {
    let a_all: Vec<String> = tenant_a_admitting_all()
        .into_iter()
        .map(|d| {
            d.replace(
                "{name: r, namespace: a}",
                "{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}",
            )
        })
        .collect();
    assert!(a_all[1].contains("creationTimestamp"));
    let pattern = "/v[0-9]+/.*";
    let copy = httproute_nginx::limits::regex_charge(format!("^(?:{pattern})").len());
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    // a's 4 copies fit, and 3 of b's routes (2 copies each).
    o.global.regex_memory_per_tenant = 6 * copy;
    for n in [4usize, 40] {
        let b: Vec<String> = (0..n)
            .map(|k| {
                format!(
                    "kind: HTTPRoute\nmetadata: {{name: r{k}, namespace: b, creationTimestamp: \"2026-01-02T00:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b{k}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
                    k / 60,
                    k % 60
                )
            })
            .collect();
        let dir = dir_with(&format!("inline-plain-{n}"), &file_of(&a_all, b, 0, true));
        let g = generate_all(&[dir], &backends(), &o).unwrap();
        let refused: std::collections::BTreeSet<String> =
            refused_for(&g, "budget: regex memory").into_iter().collect();
        // b's oldest m fit, whatever n is; a's route is never refused.
        let m = (0..n).take_while(|k| !refused.contains(&format!("b/r{k}"))).count();
        assert_eq!(m, 3, "n = {n}: {refused:?}");
        let want = (m..n).map(|k| format!("b/r{k}")).collect();
        assert_eq!(refused, want, "n = {n}: {:?}", g.warnings);
        let conf = &g.output.nginx_conf;
        assert_eq!(conf.matches(pattern).count(), 4 + 2 * m, "n = {n}: {conf}");
        let (last, next) = (format!("location = \"/b{}\"", m - 1), format!("/b{m}"));
        assert!(conf.contains(&last) && !conf.contains(&next), "{conf}");
        nginx_t(&format!("inline-plain-{n}"), &g.output);
    }
}

/// `--carrier inline` and `variable` write a location's whole list as one nginx.conf word.
/// Tenant b's newer route on a's listener (which admits every namespace): a rule `/b`, and a
/// rule matching a header value of 4,096 bytes (the CRD's longest) on every path, so its
/// entry is in a's lists too. Its rule is refused in the plan, its status naming NGINX's
/// 4094-byte word; b's other rule is served and a's lists are as without b. Before, the
/// writer met the word and the run failed for every tenant.
#[test]
fn a_match_too_long_for_an_inline_list_costs_only_its_rule() {
    let a_all = tenant_a_admitting_all();
    let long = "v".repeat(4096);
    let b = format!(
        "kind: HTTPRoute\nmetadata: {{name: r, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{headers: [{{name: x-long, value: {long}}}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n"
    );
    for carrier in [httproute_nginx::Carrier::Inline, httproute_nginx::Carrier::Variable] {
        let mut o = opts();
        o.carrier = carrier;
        let tag = format!("long-list-{carrier:?}");
        let alone =
            generate_all(&[dir_with(&tag, &file_of(&a_all, vec![], 0, true))], &backends(), &o)
                .unwrap();
        let dir = dir_with(&tag, &file_of(&a_all, vec![b.clone()], 0, true));
        let g = generate_all(&[dir], &backends(), &o).unwrap();
        let conf = &g.output.nginx_conf;
        let route = g.status.routes.iter().find(|r| r.id.to_string() == "b/r").unwrap();
        let says: Vec<&str> = route
            .parents
            .iter()
            .flat_map(|(_, cs)| cs)
            .map(|c| c.message.as_str())
            .filter(|m| m.contains("rule 1") || m.contains("Rule 1"))
            .collect();
        assert!(says.iter().any(|m| m.contains("4094")), "{carrier:?}: {says:?} {:?}", g.warnings);
        assert!(!conf.contains(&long) && conf.contains("location = \"/b\""), "{conf}");
        let lists = alone
            .output
            .nginx_conf
            .lines()
            .filter(|l| l.contains("http_matches '[") || l.contains("$http_matches '["));
        for line in lists {
            assert!(conf.lines().any(|l| l == line), "{carrier:?}: {line}\n{conf}");
        }
        nginx_t(&tag, &g.output);
    }
}

/// A route: its namespace `tN`, host names (bit 1: a.test, 2: b.test, 4: *.test), paths (kind:
/// regex, prefix, exact; number) and age in seconds.
type SharedRoute = (usize, u8, Vec<(u8, u8)>, u32);

/// Routes of 3 namespaces on one listener that admits every namespace, each with regex,
/// prefix and exact paths on a.test, b.test and/or *.test, dated in any order.
fn shared_listener_routes() -> impl Strategy<Value = Vec<SharedRoute>> {
    let path = (0u8..3, 0u8..6);
    let route = (0usize..3, 1u8..8, prop::collection::vec(path, 1..5), 0u32..1000);
    prop::collection::vec(route, 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// `--carrier inline`: the regex copies written (each path regex of each written
    /// location's list, at `regex_charge`) never pass `--regex-memory-total`, whatever the
    /// routes: the charge model counts every copy a written location compiles.
    #[test]
    fn inline_regex_copies_written_stay_within_the_total(
        routes in shared_listener_routes(),
        copies in 1usize..12,
    ) {
        let mut docs = vec![common::gateway("t0/gw", "2026-01-01T00:00:00Z", "{name: http, port: 18080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}")];
        for (i, (ns, hosts, paths, age)) in routes.iter().enumerate() {
            let hosts: Vec<&str> =
                [(1, "a.test"), (2, "b.test"), (4, "\"*.test\"")].iter().filter(|(b, _)| hosts & b != 0).map(|(_, h)| *h).collect();
            let matches: Vec<String> = paths
                .iter()
                .map(|(kind, k)| match kind {
                    0 => format!("{{path: {{type: RegularExpression, value: \"/r{k}[0-9]+\"}}}}"),
                    1 => format!("{{path: {{type: PathPrefix, value: /p{k}}}}}"),
                    _ => format!("{{path: {{type: Exact, value: /e{k}}}}}"),
                })
                .collect();
            docs.push(format!(
                "kind: HTTPRoute\nmetadata: {{name: r{i}, namespace: t{ns}, creationTimestamp: \"2026-01-02T00:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: t0}}]\n  hostnames: [{}]\n  rules:\n  - matches: [{}]\n    backendRefs: [{{name: s, port: 80}}]\n",
                age / 60 % 60, age % 60, hosts.join(", "), matches.join(", ")
            ));
        }
        let charge = httproute_nginx::limits::regex_charge("^(?:/r0[0-9]+)".len());
        let mut o = opts();
        o.carrier = httproute_nginx::Carrier::Inline;
        o.global.regex_memory_per_tenant = copies * charge;
        o.global.regex_memory_total = copies * charge;
        let dir = dir_with("inline-total", &docs.join("---\n"));
        let g = generate_all(&[dir], &backends(), &o).unwrap();
        let written: usize = g
            .output
            .nginx_conf
            .split("\"path\":\"RegularExpression:")
            .skip(1)
            .map(|p| httproute_nginx::limits::regex_charge(p.split('"').next().unwrap().len()))
            .sum();
        prop_assert!(written <= copies * charge, "{written} > {} x {charge}\n{}", copies, g.output.nginx_conf);
    }
}

/// Tenant a's route R (created after a's Gateway, before b's) with a regex path, attached to
/// a's Gateway and, through a second parentRef, to `listeners` listeners of tenant b's newer
/// Gateway (port 18081, one host name each, `h0` the first's, every namespace admitted);
/// `None`: no b at all.
fn shared_route_docs(listeners: Option<usize>, h0: &str) -> Vec<String> {
    let mut docs = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", "{name: http, port: 18080, protocol: HTTP, hostname: a.test}"),
        "kind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}, {name: gw, namespace: b}]\n  rules:\n  - matches: [{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}, {path: {type: PathPrefix, value: /}}]\n    backendRefs: [{name: s, port: 80}]\n".to_owned(),
    ];
    if let Some(n) = listeners {
        let ls: Vec<String> = (0..n)
            .map(|k| if k == 0 { h0.to_owned() } else { format!("h{k}.b.test") })
            .enumerate()
            .map(|(k, h)| format!("{{name: l{k}, port: 18081, protocol: HTTP, hostname: {h}, allowedRoutes: {{namespaces: {{from: All}}}}}}"))
            .collect();
        docs.push(common::gateway("b/gw", "2026-01-03T00:00:00Z", &ls.join(", ")));
    }
    docs
}

/// The text of the server block of `conf` whose `server_name` is `host`.
fn server_text<'c>(conf: &'c str, host: &str) -> &'c str {
    let name = format!("server_name {host};");
    let at = conf.find(&name).unwrap_or_else(|| panic!("no {host}: {conf}"));
    let start = conf[..at].rfind("server {").unwrap();
    let end = at + conf[at..].find("\n    }\n").unwrap_or_else(|| panic!("{conf}"));
    &conf[start..end]
}

/// `--carrier inline`, review rv-gf HIGH-2: a route is admitted to the regex memory budget per
/// Gateway it attaches to (the unit its copies are made for), at that attachment's age
/// (`Ages::attached`). Tenant a's route R (a regex path, `location /`) is attached to a's
/// Gateway and to tenant b's newer Gateway of 40 listeners, whose 40 servers would hold 40
/// copies of it, against a total of 8 copies: R keeps routing on a's Gateway (a's server
/// block byte for byte the one without b's Gateway), only its attachment to b's Gateway is
/// refused (that parentRef `Accepted: False` naming the budget, a's parentRef accepted) and
/// no copy is written in b's servers; the same when b's first listener is a.test on its port
/// (a server alike a's but for the route refused there, written apart). Before, R was one
/// unit at its oldest attachment's age carrying all 41 copies: refused everywhere, a's server
/// left without it.
#[test]
fn a_newer_gateway_of_many_listeners_refuses_only_my_route_s_attachment_to_it() {
    let pattern = "/v[0-9]+/.*";
    let copy = httproute_nginx::limits::regex_charge(format!("^(?:{pattern})").len());
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (8 * copy, 8 * copy);
    let run = |tag: &str, listeners: Option<usize>, h0: &str| {
        let dir = dir_with(tag, &shared_route_docs(listeners, h0).join("---\n"));
        generate_all(&[dir], &backends(), &o).unwrap()
    };
    let alone = run("attach-alone", None, "");
    for h0 in ["h0.b.test", "a.test"] {
        let g = run("attach-shared", Some(40), h0);
        shared_route_refused_on_b_alone(&alone, &g, h0);
    }
}

fn shared_route_refused_on_b_alone(
    alone: &httproute_nginx::Generated,
    g: &httproute_nginx::Generated,
    h0: &str,
) {
    let pattern = "/v[0-9]+/.*";
    let conf = &g.output.nginx_conf;
    let mine = server_text(conf, "a.test");
    assert!(mine.contains(pattern), "{conf}");
    assert_eq!(mine, server_text(&alone.output.nginx_conf, "a.test"));
    assert_eq!(conf.matches(pattern).count(), 1, "{conf}");
    assert!(server_text(conf, "h1.b.test").contains("return 404"), "{conf}");
    if h0 == "a.test" {
        assert_eq!(conf.matches("server_name a.test;").count(), 2, "{conf}");
    }
    let r = g.status.routes.iter().find(|r| r.id.to_string() == "a/r").unwrap();
    let accepted = |gw_ns: Option<&str>| {
        let (_, cs) = r.parents.iter().find(|(p, _)| p.namespace.as_deref() == gw_ns).unwrap();
        cs.iter().find(|c| c.kind == httproute_nginx::plan::ConditionType::Accepted).unwrap()
    };
    assert!(accepted(None).ok, "{:?}", r.parents);
    let to_b = accepted(Some("b"));
    assert!(!to_b.ok && to_b.message.contains("budget: regex memory"), "{:?}", r.parents);
    nginx_t(&format!("attach-shared-{h0}"), &g.output);
}

/// Tenant a (namespace `a`): a Gateway with a catch-all listener on port 18080 and a route
/// with hostname `host` on it; tenant b: a Gateway two days newer, a listener on that port
/// with hostname `listener`, no route.
fn port_sharing_tenants(host: &str, listener: &str) -> (Vec<String>, Vec<String>) {
    let a = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", &common::http(18080)),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}}\nspec:\n  hostnames: [{}]\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            q(host)
        ),
    ];
    let l = format!("{{name: l, port: 18080, protocol: HTTP, hostname: {}}}", q(listener));
    let b = vec![common::gateway("b/gw", "2026-01-03T00:00:00Z", &l)];
    (a, b)
}

/// The server blocks of `conf` served by a listener of Gateway `gw` (`namespace/name`), as
/// written.
fn servers_of<'c>(conf: &'c str, gw: &str) -> Vec<&'c str> {
    let mark = format!("# listener {gw}/");
    conf.split("\n    server {")
        .skip(1)
        .map(|s| s.split("\n    }").next().unwrap())
        .filter(|s| s.contains(&mark))
        .collect()
}

/// Tenant a's servers alone and with b's Gateway, and the run with b's.
fn with_and_without_b(host: &str, listener: &str) -> (String, httproute_nginx::Generated) {
    let (a, b) = port_sharing_tenants(host, listener);
    let tag = format!("port-share-{}", host.replace('*', "w"));
    let alone =
        generate_all(&[dir_with(&tag, &file_of(&a, vec![], 0, true))], &backends(), &opts())
            .unwrap();
    let g =
        generate_all(&[dir_with(&tag, &file_of(&a, b, 0, false))], &backends(), &opts()).unwrap();
    nginx_t(&tag, &g.output);
    (alone.output.nginx_conf, g)
}

/// b's listener's `Conflicted: True` message, which names a's Gateway and route.
fn conflicted(g: &httproute_nginx::Generated) -> String {
    let l = g.status.listeners.iter().find(|l| l.id.to_string() == "b/gw/l").unwrap();
    let c = l.conditions.iter().find(|c| c.reason.to_string() == "HostnameConflict");
    c.filter(|c| c.ok).map(|c| c.message.clone()).unwrap_or_default()
}

/// Issue #45: tenant b's newer Gateway, with a listener for a.test and no route, does not
/// take a.test from a's older route on the shared port: a's servers are byte-identical with
/// and without b's Gateway, and b's listener is `Conflicted`, naming a's route. Before, b's
/// more specific listener took a.test (listener isolation across Gateways): a.test was 404.
#[test]
fn a_newer_gateway_s_listener_never_takes_my_route_s_hostname() {
    b_s_listener_takes_nothing("a.test");
}

/// A red team's finding (issue #45): an operator's catch-all Gateway, older than a's, admits
/// every namespace; a's Gateway has a listener for foo.a.test, with a's route. b's route for
/// foo.a.test on the catch-all, newer than a's route, does not take foo.a.test: a's servers
/// are byte-identical with and without it, and the catch-all writes no server for the name.
/// Before, a name went to the oldest Gateway with a route serving it, whatever the route's
/// age: b's backend answered foo.a.test.
#[test]
fn a_newer_route_on_an_older_gateway_never_takes_my_hostname() {
    let route = |id: &str, created: &str, parent: &str| {
        let (namespace, name) = id.split_once('/').unwrap();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec:\n  hostnames: [foo.a.test]\n  parentRefs: [{parent}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n"
        )
    };
    let all = "{name: http, port: 18080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}";
    let foo = "{name: http, port: 18080, protocol: HTTP, hostname: foo.a.test}";
    let a = vec![
        common::gateway("infra/gw", "2026-01-01T00:00:00Z", all),
        common::gateway("a/gw", "2026-01-02T00:00:00Z", foo),
        route("a/r", "2026-01-03T00:00:00Z", "{name: gw}"),
    ];
    let b = vec![route("b/r", "2026-06-01T00:00:00Z", "{name: gw, namespace: infra}")];
    let tag = "newer-route-older-gateway";
    let alone = generate_all(&[dir_with(tag, &file_of(&a, vec![], 0, true))], &backends(), &opts())
        .unwrap();
    let g =
        generate_all(&[dir_with(tag, &file_of(&a, b, 0, false))], &backends(), &opts()).unwrap();
    let conf = &g.output.nginx_conf;
    assert_eq!(servers_of(&alone.output.nginx_conf, "a/gw"), servers_of(conf, "a/gw"), "{conf}");
    let taken = servers_of(conf, "infra/gw").iter().any(|s| s.contains("server_name foo.a.test;"));
    assert!(!taken, "{conf}");
    nginx_t(tag, &g.output);
}

/// Which route answers GET `host` `path` on port 18080 of the configuration `docs` make:
/// explain's text and status, from the plan the configuration is written from.
fn answer(tag: &str, docs: &[String], host: &str, path: &str) -> (String, u16) {
    let dir = dir_with(tag, &file_of(docs, vec![], 0, true));
    let model = httproute_nginx::model::load(&[dir]).unwrap();
    let plan = httproute_nginx::explain::plan_as_served(&model, &backends(), &opts()).unwrap();
    ask(&plan, (18080, "GET", host, path), &[])
}

/// Explain's answer from `plan` to `method host path` on `port` with `headers`.
fn ask(
    plan: &httproute_nginx::plan::Plan,
    (port, method, host, path): (u16, &str, &str, &str),
    headers: &[(&str, &str)],
) -> (String, u16) {
    let req = httproute_nginx::explain::Request {
        port: Some(port),
        method: method.into(),
        host: host.into(),
        path: path.into(),
        headers: headers.iter().map(|&(n, v)| (n.into(), v.into())).collect(),
        query: String::new(),
    };
    httproute_nginx::explain::explain(plan, &req)
}

/// The red team's second HIGH (issue #45): an operator's catch-all Gateway, older than a's,
/// admits every namespace; a's Gateway has a `*.a.test` listener with a's route. b's route
/// for bar.a.test, newer than a's route, on the catch-all (or on b's own newer Gateway with a
/// `bar.a.test` listener, with or without that route) does not take bar.a.test: a's route
/// still answers it, no other Gateway writes a server for it, and b's attachment is refused
/// naming a's route. Before, the holder was looked up by the exact name alone: b's route was
/// the only one naming bar.a.test, so its Gateway served it (b's backend answered a's host).
#[test]
fn a_newer_route_never_takes_a_name_under_my_older_wildcard() {
    let route = |id: &str, created: &str, host: &str, parent: &str| {
        let (namespace, name) = id.split_once('/').unwrap();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec:\n  hostnames: [{}]\n  parentRefs: [{parent}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            q(host)
        )
    };
    let all = "{name: http, port: 18080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}";
    let wild = "{name: http, port: 18080, protocol: HTTP, hostname: \"*.a.test\"}";
    let bar = "{name: l, port: 18080, protocol: HTTP, hostname: bar.a.test}";
    let a = vec![
        common::gateway("infra/gw", "2026-01-01T00:00:00Z", all),
        common::gateway("a/gw", "2026-01-02T00:00:00Z", wild),
        route("a/r", "2026-01-03T00:00:00Z", "*.a.test", "{name: gw}"),
    ];
    let b_gateway = common::gateway("b/gw", "2026-06-01T00:00:00Z", bar);
    let b_route = |parent: &str| route("b/r", "2026-06-02T00:00:00Z", "bar.a.test", parent);
    let shapes = [
        ("catch-all", vec![b_route("{name: gw, namespace: infra}")]),
        ("own-listener", vec![b_gateway.clone(), b_route("{name: gw}")]),
        ("empty-listener", vec![b_gateway.clone()]),
    ];
    let (alone, status) = answer("wild-alone", &a, "bar.a.test", "/");
    assert!(status == 200 && alone.contains("a/r rule 0"), "{status} {alone}");
    for (tag, b) in shapes {
        let docs: Vec<String> = a.iter().chain(&b).cloned().collect();
        let (text, status) = answer(tag, &docs, "bar.a.test", "/");
        assert!(status == 200 && text.contains("a/r rule 0"), "{tag}: {status} {text}");
        let dir = dir_with(tag, &file_of(&docs, vec![], 0, true));
        let g = generate_all(&[dir], &backends(), &opts()).unwrap();
        let conf = &g.output.nginx_conf;
        for gw in ["infra/gw", "b/gw"] {
            let taken = servers_of(conf, gw).iter().any(|s| s.contains("server_name bar.a.test;"));
            assert!(!taken, "{tag}: {conf}");
        }
        let held = "Gateway a/gw's route a/r serves it there";
        let said = g.warnings.iter().any(|w| w.contains("bar.a.test") && w.contains(held));
        assert!(said, "{tag}: {:?}", g.warnings);
        nginx_t(tag, &g.output);
    }
}

/// A fallback never names a server that is not written (red team, issue #45): a's route for
/// `*.a.test` is left out (over a's own regex budget), so no server of that name is written;
/// a's foo.a.test server fell back to `*.a.test` all the same, and NGINX, which looks a name
/// it does not have up as a host, took b's newer `*.test` server: b's backend answered
/// foo.a.test/y. Now the fallback passes over the server left out to its own (the
/// catch-all of a's listener): 404 as without b, by explain and in the written server.
#[test]
fn a_fallback_never_names_a_server_left_out() {
    let route = |id: &str, created: &str, host: &str, rules: &str| {
        let (namespace, name) = id.split_once('/').unwrap();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec:\n  hostnames: [{}]\n  parentRefs: [{{name: gw}}]\n  rules:\n{rules}",
            q(host)
        )
    };
    let backend = "    backendRefs: [{name: s, port: 80}]\n";
    let regex = |p: &str| format!("{{path: {{type: RegularExpression, value: \"{p}\"}}}}");
    let wild_rules = format!("  - matches: [{}, {}]\n{backend}", regex("/r1.*"), regex("/r2.*"));
    let a = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", "{name: any, port: 18080, protocol: HTTP}"),
        route(
            "a/exact",
            "2026-01-02T00:00:00Z",
            "foo.a.test",
            &format!("  - matches: [{{path: {{type: PathPrefix, value: /x}}}}]\n{backend}"),
        ),
        route("a/wild", "2026-01-03T00:00:00Z", "*.a.test", &wild_rules),
    ];
    let b = vec![
        common::gateway(
            "b/gw",
            "2026-01-04T00:00:00Z",
            "{name: w, port: 18080, protocol: HTTP, hostname: \"*.test\"}",
        ),
        route(
            "b/r",
            "2026-01-05T00:00:00Z",
            "*.test",
            &format!("  - matches: [{{path: {{type: PathPrefix, value: /}}}}]\n{backend}"),
        ),
    ];
    let mut o = opts();
    o.global.regex_memory_per_tenant = 70_000;
    for with_b in [false, true] {
        let docs = if with_b { [a.clone(), b.clone()].concat() } else { a.clone() };
        let dir = dir_with("fallback-left-out", &file_of(&docs, vec![], 0, true));
        let g = generate_all(std::slice::from_ref(&dir), &backends(), &o).unwrap();
        assert!(refused_for(&g, "regex").iter().any(|r| r.contains("a/wild")), "{:?}", g.warnings);
        let conf = &g.output.nginx_conf;
        let foo = server_text(conf, "foo.a.test");
        assert!(foo.contains("http_matches_fallback \"\";"), "with b: {with_b}\n{foo}");
        let model = httproute_nginx::model::load(&[dir]).unwrap();
        let plan = httproute_nginx::explain::plan_as_served(&model, &backends(), &o).unwrap();
        let (text, status) = ask(&plan, (18080, "GET", "foo.a.test", "/y"), &[]);
        assert_eq!(status, 404, "with b: {with_b}\n{text}");
        nginx_t("fallback-left-out", &g.output);
    }
}

/// The same for a server written once for several ports (red team, issue #45): a's foo.a.test
/// route is on two listeners of no hostname (18080, 18081), a's `*.a.test` routes one on each,
/// the one on 18081 left out (a's regex budget); b's newer Gateway has `*.test` on 18081. The
/// server of foo.a.test, the same on both ports, fell back to `*.a.test` on both: on 18081 b's
/// server answered. Now a server is written once per fallback: `*.a.test` on 18080, the
/// catch-all on 18081 (404 there, as explain says).
#[test]
fn a_merged_server_falls_back_on_each_port_as_its_own() {
    let route = |name: &str, created: &str, host: &str, section: &str, rules: &str| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: a, creationTimestamp: \"{created}\"}}\nspec:\n  hostnames: [{}]\n  parentRefs: [{{name: gw{section}}}]\n  rules:\n{rules}",
            q(host)
        )
    };
    let backend = "    backendRefs: [{name: s, port: 80}]\n";
    let regex = |p: &str| format!("{{path: {{type: RegularExpression, value: \"{p}\"}}}}");
    let any = format!("  - matches: [{{path: {{type: PathPrefix, value: /}}}}]\n{backend}");
    let docs = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", "{name: p1, port: 18080, protocol: HTTP}, {name: p2, port: 18081, protocol: HTTP}"),
        route("exact", "2026-01-02T00:00:00Z", "foo.a.test", "", &format!("  - matches: [{{path: {{type: PathPrefix, value: /x}}}}]\n{backend}")),
        route("wild1", "2026-01-02T00:00:01Z", "*.a.test", ", sectionName: p1", &any),
        route("wild2", "2026-01-03T00:00:00Z", "*.a.test", ", sectionName: p2", &format!("  - matches: [{}, {}]\n{backend}", regex("/r1.*"), regex("/r2.*"))),
        common::gateway("b/gw", "2026-01-04T00:00:00Z", "{name: w, port: 18081, protocol: HTTP, hostname: \"*.test\"}"),
        "kind: HTTPRoute\nmetadata: {name: r, namespace: b, creationTimestamp: \"2026-01-05T00:00:00Z\"}\nspec:\n  hostnames: [\"*.test\"]\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s, port: 80}]\n".to_owned(),
    ];
    let mut o = opts();
    o.global.regex_memory_per_tenant = 70_000;
    let dir = dir_with("merged-fallback", &file_of(&docs, vec![], 0, true));
    let g = generate_all(std::slice::from_ref(&dir), &backends(), &o).unwrap();
    assert!(refused_for(&g, "regex").iter().any(|r| r.contains("a/wild2")), "{:?}", g.warnings);
    let conf = &g.output.nginx_conf;
    let foo: Vec<&str> =
        conf.split("server {").filter(|s| s.contains("server_name foo.a.test;")).collect();
    let falls = |port: u16, to: &str| {
        foo.iter().any(|s| {
            s.contains(&format!("listen 127.0.0.1:{port};"))
                && s.contains(&format!("http_matches_fallback {to};"))
        })
    };
    assert!(falls(18080, "*.a.test") && falls(18081, "\"\""), "{conf}");
    let model = httproute_nginx::model::load(&[dir]).unwrap();
    let plan = httproute_nginx::explain::plan_as_served(&model, &backends(), &o).unwrap();
    for (port, want) in [(18080, 200), (18081, 404)] {
        let (text, status) = ask(&plan, (port, "GET", "foo.a.test", "/y"), &[]);
        assert_eq!(status, want, "port {port}\n{text}");
        if want == 200 {
            assert!(text.contains("a/wild1"), "{text}");
        }
    }
    nginx_t("merged-fallback", &g.output);
}

/// The red team's same-age tie (issue #45): a's route attaches to a's own Gateway (a listener
/// for a.test) and to an operator's older catch-all Gateway; the route is newer than both, so
/// both attachments have served a.test as long. The tie goes to the more specific listener,
/// a's own: b's route for a.test on the catch-all (a longer path prefix) does not merge into
/// a's host there. Before, the tie went to the older Gateway, and b's route answered
/// a.test/a/b by precedence on the catch-all.
#[test]
fn my_route_on_my_own_listener_and_a_shared_one_keeps_my_host_mine() {
    let route = |id: &str, created: &str, path: &str, parents: &str| {
        let (namespace, name) = id.split_once('/').unwrap();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec:\n  hostnames: [a.test]\n  parentRefs: [{parents}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n"
        )
    };
    let all = "{name: http, port: 18080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}";
    let own = "{name: http, port: 18080, protocol: HTTP, hostname: a.test}";
    let a = vec![
        common::gateway("infra/gw", "2026-01-01T00:00:00Z", all),
        common::gateway("a/gw", "2026-01-02T00:00:00Z", own),
        route("a/r", "2026-01-03T00:00:00Z", "/a", "{name: gw}, {name: gw, namespace: infra}"),
    ];
    let (alone, status) = answer("tie-alone", &a, "a.test", "/a/b");
    assert!(status == 200 && alone.contains("a/r rule 0"), "{status} {alone}");
    let b = route("b/r", "2026-06-01T00:00:00Z", "/a/b", "{name: gw, namespace: infra}");
    for b_first in [false, true] {
        let docs: Vec<String> = if b_first {
            [vec![b.clone()], a.clone()].concat()
        } else {
            [a.clone(), vec![b.clone()]].concat()
        };
        let (text, status) = answer("tie", &docs, "a.test", "/a/b");
        assert!(
            status == 200 && text.contains("a/r rule 0"),
            "b first: {b_first}: {status} {text}"
        );
        assert!(text.contains("listener a/gw/http"), "{text}");
    }
}

/// The red team of the wildcard holder (issue #45): a's Gateway has one listener of no
/// hostname and a route of none, which answers every host of the port. b's newer Gateway
/// with a bare `*.a.test` listener (or a route of its own there) takes no host from it:
/// x.a.test is a's route's still. Before, a route of no hostname held no name, and b's more
/// specific listener took x.a.test (404, or b's route).
#[test]
fn a_newer_gateway_takes_no_host_from_my_catch_all_route() {
    let a = [
        common::gateway("a/gw", "2026-01-01T00:00:00Z", &common::http(18080)),
        "kind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s, port: 80}]\n".to_owned(),
    ];
    let b_gw = common::gateway(
        "b/gw",
        "2026-06-01T00:00:00Z",
        "{name: l, port: 18080, protocol: HTTP, hostname: \"*.a.test\"}",
    );
    let b_route = "kind: HTTPRoute\nmetadata: {name: r, namespace: b, creationTimestamp: \"2026-06-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s, port: 80}]\n".to_owned();
    for (tag, b) in [("bare", vec![b_gw.clone()]), ("routed", vec![b_gw.clone(), b_route])] {
        let docs: Vec<String> = a.iter().chain(&b).cloned().collect();
        let (text, status) = answer(tag, &docs, "x.a.test", "/");
        assert!(status == 200 && text.contains("a/r rule 0"), "{tag}: {status} {text}");
    }
}

/// The red team of the wildcard holder (issue #45): a's Gateway has a catch-all listener l1
/// with a route of no hostname and a `*.a.test` listener l2 with a route for foo.a.test /foo.
/// b's newer route for `*.a.test` on b's `*.test` listener holds `*.a.test` (a's listener
/// serves no route of that name); a request for foo.a.test that a/r2 does not answer still
/// ends in l2 (404), never in l1's route. Before, foo.a.test fell back past `*.a.test`, to
/// a's catch-all server: l1's route answered a host of l2 (listener isolation broken).
#[test]
fn a_fallback_never_leaves_its_listener() {
    let route = |id: &str, created: &str, host: Option<&str>, parent: &str, path: &str| {
        let (namespace, name) = id.split_once('/').unwrap();
        let hosts = host.map(|h| format!("  hostnames: [{}]\n", q(h))).unwrap_or_default();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \"{created}\"}}\nspec:\n{hosts}  parentRefs: [{parent}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n"
        )
    };
    let a_listeners = "{name: l1, port: 18080, protocol: HTTP}, {name: l2, port: 18080, protocol: HTTP, hostname: \"*.a.test\"}";
    let a = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", a_listeners),
        route("a/r1", "2026-01-01T00:00:01Z", None, "{name: gw, sectionName: l1}", "/"),
        route(
            "a/r2",
            "2026-01-01T00:00:02Z",
            Some("foo.a.test"),
            "{name: gw, sectionName: l2}",
            "/foo",
        ),
    ];
    let b = vec![
        common::gateway(
            "b/gw",
            "2026-06-01T00:00:00Z",
            "{name: l, port: 18080, protocol: HTTP, hostname: \"*.test\"}",
        ),
        route("b/r", "2026-06-01T00:00:01Z", Some("*.a.test"), "{name: gw}", "/"),
    ];
    let all: Vec<String> = a.iter().chain(&b).cloned().collect();
    for (tag, docs) in [("isolation-a", &a), ("isolation", &all)] {
        let (text, status) = answer(tag, docs, "foo.a.test", "/zzz");
        assert!(status == 404 && !text.contains("a/r1"), "{tag}: {status} {text}");
        let (text, status) = answer(tag, docs, "foo.a.test", "/foo");
        assert!(status == 200 && text.contains("a/r2 rule 0"), "{tag}: {status} {text}");
    }
}

/// With b's newer listener for `name` (and no route), a's servers for `name` (its route's
/// hostname) are byte-identical to a run without b, b writes no server, and b's listener is
/// `Conflicted`, naming a's route.
fn b_s_listener_takes_nothing(name: &str) {
    let (alone, g) = with_and_without_b(name, name);
    let conf = &g.output.nginx_conf;
    assert_eq!(servers_of(&alone, "a/gw"), servers_of(conf, "a/gw"), "{conf}");
    assert!(servers_of(conf, "b/gw").is_empty(), "{conf}");
    let held = format!("{name} on port 18080: Gateway a/gw's route a/r");
    assert!(conflicted(&g).contains(&held), "{:?}", g.warnings);
}

/// The wildcard shape: b's newer `*.test` listener does not take `*.test` from a's older
/// route on a's catch-all listener.
#[test]
fn a_newer_gateway_s_wildcard_listener_never_takes_my_wildcard_route() {
    b_s_listener_takes_nothing("*.test");
}

/// b's newer `*.test` listener vs a's route for x.test: x.test stays a's, and a's servers are
/// byte-identical to a run without b: `*.test`, which no route serves, is b's, and a's x.test
/// server falls back to the port's default server, a's, with b as without (before, its
/// `http_matches_fallback` named `*.test` without b, "" with b).
#[test]
fn a_newer_gateway_s_wildcard_listener_never_takes_my_exact_route() {
    let (alone, g) = with_and_without_b("x.test", "*.test");
    let conf = &g.output.nginx_conf;
    assert_eq!(servers_of(&alone, "a/gw"), servers_of(conf, "a/gw"), "{conf}");
    let x = servers_of(conf, "a/gw").into_iter().find(|s| s.contains("server_name x.test;"));
    assert!(x.is_some_and(|x| x.contains("http_matches_fallback \"\";")), "{conf}");
    let b = servers_of(conf, "b/gw");
    assert!(b.len() == 1 && b[0].contains("server_name *.test;"), "{conf}");
    assert!(
        conflicted(&g).contains("x.test on port 18080: Gateway a/gw's route a/r"),
        "{:?}",
        g.warnings
    );
}

/// A tenant on port 18080 for the age property: (listener hostname: 0 none, 1 a.test, 2
/// `*.test`, 3 x.test; route hostname: the same, 0: `*.test`; creation second).
type PortTenant = (u8, u8, u32);

fn port_tenant_docs(ns: &str, (listener, route, age): PortTenant) -> Vec<String> {
    let names = ["*.test", "a.test", "*.test", "x.test"];
    let host = match listener {
        0 => String::new(),
        l => format!(", hostname: {}", q(names[usize::from(l)])),
    };
    let ts = format!("2026-01-01T00:{:02}:{:02}Z", age / 60 % 60, age % 60);
    vec![
        common::gateway(
            &format!("{ns}/gw"),
            &ts,
            &format!("{{name: l, port: 18080, protocol: HTTP{host}}}"),
        ),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: {ns}, creationTimestamp: \"{ts}\"}}\nspec:\n  hostnames: [{}]\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /{ns}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            q(names[usize::from(route)])
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Issue #45, any ages and hostnames: tenant a's Gateway is the oldest on port 18080; b's
    /// and c's newer Gateways (any listener hostname, a route each) never change a server of
    /// a that serves a's route (its `http_matches_fallback` aside), no server of a falls back
    /// to a name another Gateway's listener serves, and every host a's route answered alone it
    /// still answers.
    #[test]
    fn newer_gateways_of_any_age_never_take_my_served_names(
        a in (0u8..4, 0u8..4),
        others in prop::collection::vec((0u8..4, 0u8..4, 1u32..3000), 1..3),
    ) {
        let mine = port_tenant_docs("a", (a.0, a.1, 0));
        let mut theirs = Vec::new();
        for (i, t) in others.iter().enumerate() {
            theirs.extend(port_tenant_docs(["b", "c"][i], *t));
        }
        let alone = generate_all(&[dir_with("ages-a", &file_of(&mine, vec![], 0, true))], &backends(), &opts()).unwrap();
        let g = generate_all(&[dir_with("ages", &file_of(&mine, theirs.clone(), 0, false))], &backends(), &opts()).unwrap();
        let conf = &g.output.nginx_conf;
        // Where a request none of a's routes answers goes (404 either way) may be written
        // differently: the fallback line, and the empty location only a fallback needs (a
        // newer route through a less specific listener takes a name a's listener serves no
        // route of: README, "On a port several Gateways share").
        let strip = |s: &str| {
            let keep = |l: &&str| {
                !l.contains("http_matches_fallback")
                    && !l.ends_with("{ http_matches []; }")
                    && !l.ends_with("{ return 404; }")
            };
            s.lines().filter(keep).collect::<Vec<_>>().join("\n")
        };
        let after: Vec<String> = servers_of(conf, "a/gw").into_iter().map(strip).collect();
        for s in servers_of(&alone.output.nginx_conf, "a/gw").into_iter().filter(|s| s.contains("$match_key")) {
            prop_assert!(after.contains(&strip(s)), "{s}\n{conf}");
        }
        let others_names: Vec<&str> = servers_of(conf, "b/gw").into_iter().chain(servers_of(conf, "c/gw"))
            .filter_map(|s| s.lines().find_map(|l| l.trim().strip_prefix("server_name ")))
            .collect();
        for s in servers_of(conf, "a/gw") {
            if let Some(f) = s.lines().find_map(|l| l.trim().strip_prefix("http_matches_fallback ")) {
                prop_assert!(!others_names.contains(&f), "{f}\n{conf}");
            }
        }
        // And every host a's route answered alone, it answers still (whatever names the newer
        // routes and listeners give: under a's wildcard too).
        let all: Vec<String> = mine.iter().chain(&theirs).cloned().collect();
        for host in ["a.test", "x.test", "y.test"] {
            let (before, _) = answer("ages-a", &mine, host, "/a");
            if before.contains("a/r rule 0") {
                let (after, status) = answer("ages", &all, host, "/a");
                prop_assert!(status == 200 && after.contains("a/r rule 0"), "{host}: {after}\n{conf}");
            }
        }
    }
}

/// Tenant a's route a/r (one rule: PathPrefix /m and a header regex; with `second`, a rule
/// for /n too) on a's Gateway and on b's newer 40-listener Gateway (and through a parentRef
/// to a Gateway b does not have, `gw2`), and b's newer route b/q
/// (PathPrefix /) on b's Gateway.
fn detached_location_docs(second: bool) -> String {
    let mut docs = shared_route_docs(Some(40), "h0.b.test");
    let rules = if second {
        "  - matches: [{path: {type: PathPrefix, value: /n}}]\n    backendRefs: [{name: s, port: 80}]\n"
    } else {
        ""
    };
    docs[1] = format!(
        "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}}\nspec:\n  parentRefs: [{{name: gw}}, {{name: gw, namespace: b}}, {{name: gw2, namespace: b}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /m}}, headers: [{{type: RegularExpression, name: x-v, value: \"v[0-9]+\"}}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n{rules}"
    );
    docs.push("kind: HTTPRoute\nmetadata: {name: q, namespace: b, creationTimestamp: \"2026-01-04T00:00:00Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /}}]\n    backendRefs: [{name: s, port: 80}]\n".to_owned());
    docs.join("---\n")
}

/// Review rv-ga HIGH: a/r's attachment to b's newer Gateway is refused (40 copies over
/// `--regex-memory-per-tenant 600000`), which leaves b's `location /m` (made by a/r alone)
/// refused in b's servers. That location's matches are not a/r's loss: a/r is not served
/// there anyway (its attachment says so). So a.test keeps `location = "/m"` with a/r's list,
/// a/r's parentRef to a's Gateway stays `Accepted: True` with no `PartiallyInvalid` (also
/// with a second rule), explain answers a.test /m with a/r, the parentRef that names no
/// Gateway (`gw2`) keeps `NoMatchingParent`, and b's listeners count b/q
/// alone in `attachedRoutes`. Before: the match recorded as dropped, status `Accepted:
/// False` "no rule is left to serve", explain 404; and b's listeners counting a/r.
#[test]
fn a_location_refused_where_my_attachment_is_refused_is_not_my_loss() {
    use httproute_nginx::plan::{ConditionType, Reason};
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    o.global.regex_memory_per_tenant = 600_000;
    for second in [false, true] {
        let dir = dir_with("detached-location", &detached_location_docs(second));
        let g = generate_all(std::slice::from_ref(&dir), &backends(), &o).unwrap();
        let conf = &g.output.nginx_conf;
        let mine = server_text(conf, "a.test");
        assert!(mine.contains("location = \"/m\"") && mine.contains("x-v"), "{conf}");
        let r = g.status.routes.iter().find(|r| r.id.to_string() == "a/r").unwrap();
        let on = |ns: Option<&str>, section: Option<&str>| {
            let (_, cs) = r
                .parents
                .iter()
                .find(|(p, _)| p.namespace.as_deref() == ns && p.section_name.as_deref() == section)
                .unwrap();
            cs
        };
        let to_b = on(Some("b"), None).iter().find(|c| c.kind == ConditionType::Accepted);
        assert!(to_b.is_some_and(|c| !c.ok && c.message.contains("budget")), "{:?}", r.parents);
        for c in on(None, None) {
            assert!(c.ok && c.kind != ConditionType::PartiallyInvalid, "{:?}", r.parents);
        }
        let gw2 = r
            .parents
            .iter()
            .find(|(p, _)| p.name == "gw2")
            .unwrap()
            .1
            .iter()
            .find(|c| c.kind == ConditionType::Accepted);
        assert!(gw2.is_some_and(|c| c.reason == Reason::NoMatchingParent), "{:?}", r.parents);
        for l in g.status.listeners.iter().filter(|l| l.id.namespace == "b") {
            assert_eq!(l.attached_routes, 1, "{l:?}");
        }
        let model = httproute_nginx::model::load(&[dir]).unwrap();
        let plan = httproute_nginx::explain::plan_as_served(&model, &backends(), &o).unwrap();
        let req = httproute_nginx::explain::Request {
            port: Some(18080),
            method: "GET".into(),
            host: "a.test".into(),
            path: "/m".into(),
            headers: vec![("x-v".into(), "v1".into())],
            query: String::new(),
        };
        let (text, status) = httproute_nginx::explain::explain(&plan, &req);
        assert!(status == 200 && text.contains("a/r rule 0"), "{status} {text}");
    }
}

/// The blocks of `conf` whose `server_name` is `host`.
fn servers_named<'c>(conf: &'c str, host: &str) -> Vec<&'c str> {
    let name = format!("server_name {host};");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = conf[from..].find(&name).map(|k| k + from) {
        let start = conf[..at].rfind("server {").unwrap();
        let end = at + conf[at..].find("\n    }\n").unwrap();
        out.push(&conf[start..end]);
        from = end;
    }
    out
}

/// a's Gateway: l1 (18080) and l2 (18082) both a.test (one server block for both ports), and
/// l3 (18083) b.test admitting every namespace; a/r on a.test; with `b`, b's newer route b/q on
/// l3 with 12 regex paths.
fn shared_gateway_docs(b: bool) -> String {
    let mut docs = vec![
        "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners:\n  - {name: l1, port: 18080, protocol: HTTP, hostname: a.test}\n  - {name: l2, port: 18082, protocol: HTTP, hostname: a.test}\n  - {name: l3, port: 18083, protocol: HTTP, hostname: b.test, allowedRoutes: {namespaces: {from: All}}}\n".to_owned(),
        "kind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [a.test]\n  rules:\n  - matches: [{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}, {path: {type: PathPrefix, value: /}}]\n    backendRefs: [{name: s, port: 80}]\n".to_owned(),
    ];
    if b {
        let matches: Vec<String> = (0..12)
            .map(|k| format!("{{path: {{type: RegularExpression, value: \"/q{k}/[0-9]+\"}}}}"))
            .collect();
        docs.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: q, namespace: b, creationTimestamp: \"2026-01-03T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a, sectionName: l3}}]\n  rules:\n  - matches: [{}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            matches.join(", ")
        ));
    }
    docs.join("---\n")
}

/// Review rv-ga MED: b/q's attachment to a's Gateway is refused (12 regexes over b's own
/// budget of 8): a's a.test server block (one for ports 18080 and 18082) is byte-identical
/// with and without b/q. Before, every server of a Gateway with a refused attachment was kept
/// apart: a's one block became two.
#[test]
fn a_refused_attachment_of_a_newer_tenant_does_not_split_my_server_blocks() {
    let copy = httproute_nginx::limits::regex_charge("^(?:/q0/[0-9]+)".len());
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    o.global.regex_memory_per_tenant = 8 * copy;
    let run = |b: bool| {
        let dir = dir_with("split", &shared_gateway_docs(b));
        generate_all(&[dir], &backends(), &o).unwrap()
    };
    let (alone, with_b) = (run(false), run(true));
    let q = with_b.status.routes.iter().find(|r| r.id.to_string() == "b/q").unwrap();
    assert!(
        q.parents.iter().flat_map(|(_, cs)| cs).any(|c| !c.ok && c.message.contains("budget")),
        "{:?}",
        q.parents
    );
    let mine = servers_named(&alone.output.nginx_conf, "a.test");
    assert_eq!(mine.len(), 1, "{}", alone.output.nginx_conf);
    assert_eq!(servers_named(&with_b.output.nginx_conf, "a.test"), mine);
    nginx_t("split", &with_b.output);
}

/// Review rv-ga MED: a Secret `nginx -t` refuses (`nginx_check::drop_secret`) merges the
/// servers again as planning does (`Plan::remerge`): a's a.test on 18080 and b's a.test
/// listener on 18081, where a/r's attachment is refused, stay two server blocks. Before,
/// `Merged::of` merged them: a/r served through b's Gateway.
#[test]
fn a_refused_secret_keeps_servers_apart_that_leave_out_an_attachment() {
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    let copy = httproute_nginx::limits::regex_charge("^(?:/v[0-9]+/.*)".len());
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (8 * copy, 8 * copy);
    let dir = dir_with("secret-remerge", &shared_route_docs(Some(40), "a.test").join("---\n"));
    let model = httproute_nginx::model::load(&[dir]).unwrap();
    let mut plan = httproute_nginx::plan_for(&model, &backends(), &o);
    let count = |plan: &httproute_nginx::plan::Plan| {
        let out = httproute_nginx::emit::emit(plan, &o).unwrap();
        out.nginx_conf.matches("server_name a.test;").count()
    };
    assert_eq!(count(&plan), 2);
    httproute_nginx::nginx_check::drop_secret(&mut plan, "a/none", "refused");
    assert_eq!(count(&plan), 2);
}

/// Tenant b's routes `r0`..: each one match on `path(r)` with 16 headers of 4,096-byte values
/// (the CRD's longest: 65 KB of JSON an entry), dated one second apart after b's Gateway.
fn long_value_routes(routes: usize, path: impl Fn(usize) -> String) -> Vec<String> {
    let mut b = vec![common::gateway("b/gw", "2026-01-01T00:00:01Z", &common::http(18081))];
    for r in 0..routes {
        let headers: Vec<String> = (0..16)
            .map(|h| format!("{{name: x-h{h}, value: \"{r}-{h}-{}\"}}", "v".repeat(4090)))
            .collect();
        b.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: r{r}, namespace: b, creationTimestamp: \"2026-01-02T00:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: {}}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            r / 60,
            r % 60,
            path(r),
            headers.join(", ")
        ));
    }
    b
}

/// What the module may take for `matches.json` (`plan/list_bytes.rs`'s model): its lists'
/// resident bytes, the parse of its longest list, and the regex conditions' charge; and the
/// longest list's parse.
fn module_memory(matches: &str) -> (usize, usize) {
    let file: serde_json::Map<String, serde_json::Value> = serde_json::from_str(matches).unwrap();
    let longest = file.values().map(|l| httproute_nginx::plan::list_peak(l.to_string().len()));
    let longest = longest.max().unwrap_or(0);
    let regex: usize = written_patterns(matches, "")
        .iter()
        .map(|p| httproute_nginx::limits::regex_charge(p.len()))
        .sum();
    let resident = matches.len() * route_match::LIST_RESIDENT_BYTES_PER_JSON_BYTE
        + route_match::LIST_RESIDENT_BYTES_PER_LIST;
    (resident + longest + regex, longest)
}

/// Budget: list memory, one list (issue #45). Tenant b's 30 newer routes on one path, each a
/// match of 16 headers of 4,096 bytes (CRD-valid): one run of 2 MB of JSON, which the module
/// may take 36 MB to parse and compile (18 per byte, issue #46; it was 192 per byte, when
/// 10 such routes were past its 128 MiB). Now b's 10 oldest routes fit the eighth one list
/// may take (16 MiB; at 192 per byte, its oldest alone), its 20 newer ones are refused naming
/// the budget, a's view is unchanged, and the model of the module's memory is within 128 MiB.
/// Before (#45), none was refused.
#[test]
fn one_long_list_of_a_newer_tenant_is_cut_to_what_one_list_may_take() {
    let (base, mine, g) = views(long_value_routes(30, |_| "/x".into()), 3, true);
    assert_eq!(base, mine);
    let refused = refused_for(&g, "budget: list memory");
    assert_eq!(
        refused,
        (10..30).map(|r| format!("b/r{r}")).collect::<Vec<_>>(),
        "{:?}",
        g.warnings
    );
    let (all, longest) = module_memory(&g.output.matches_json);
    let limits = httproute_nginx::plan::ListLimits::of(
        httproute_nginx::limits::MODULE_MAX_MEMORY,
        httproute_nginx::limits::DEFAULT_REGEX_MEMORY_TOTAL,
        httproute_nginx::limits::DEFAULT_LIST_MEMORY_PER_TENANT,
    );
    assert!(longest <= limits.one_list, "{longest}");
    assert!(all <= httproute_nginx::limits::MODULE_MAX_MEMORY, "{all}");
    assert!(g.output.matches_json.contains(":Exact:0-0-vvv"), "b/r0 is served");
    nginx_t("one-list", &g.output);
}

/// Budget: list memory, per tenant (`--list-memory-per-tenant`, here 1 MiB). Tenant b's 40
/// newer routes, each such a match on a path of its own (2.6 MB of JSON, each byte counted at
/// 2 and each list at 512): its 7 oldest fill its share, the newest are refused (a contiguous
/// newest tail), a's view is unchanged and b's written entries hold at most the share. Before,
/// none was refused.
#[test]
fn many_long_lists_of_a_newer_tenant_stay_within_its_share() {
    let share = 1 << 20;
    let mut o = opts();
    o.global.list_memory_per_tenant = share;
    let a = tenant_a();
    let run = |tag: &str, b: Vec<String>| {
        let dir = dir_with(tag, &file_of(&a, b, 7, false));
        generate_all(&[dir], &backends(), &o).unwrap()
    };
    let base = run("lists-base", vec![]);
    let g = run("lists-share", long_value_routes(40, |r| format!("/p{r}")));
    let view = |g: &httproute_nginx::Generated| {
        tenant_a_view(&g.output.nginx_conf, &g.output.matches_json)
    };
    assert_eq!(view(&base), view(&g));
    let refused: std::collections::BTreeSet<String> =
        refused_for(&g, "budget: list memory").into_iter().collect();
    let m = 40 - refused.len();
    // Each route ~131 KB at 2 per byte of its 65 KB entry (and its key and list): 7 fit
    // the 1 MiB share, an eighth would not.
    assert_eq!(m, 7, "{refused:?}");
    assert_eq!(refused, (m..40).map(|r| format!("b/r{r}")).collect());
    let kept = g.output.matches_json.split("\"x-h0:Exact:").count() - 1;
    assert_eq!(kept, m, "each kept route's entry written once");
    let written = m * 65_000 * route_match::LIST_RESIDENT_BYTES_PER_JSON_BYTE;
    assert!(written <= share, "{m} kept");
    nginx_t("per-tenant-lists", &g.output);
}

/// Budget: list memory, merged servers (HIGH-1). Tenant b's 30 routes of long lists on `/x`
/// attached to two Gateways of its own: an older one on port 30001 and a newer one on 30000,
/// whose servers are the same (merged: written once, at port 30000's place). At
/// `worker_connections 4` (two sockets) the newer Gateway's listener is refused, so the
/// server is written for port 30001 alone. Before, the list budget skipped the group (its
/// first member's listener refused, the other member not first): none refused, and `nginx -t`
/// refused the configuration (one list past the module's memory). Now its lists are counted
/// once for the members left: b/r10..r29 refused, as on one Gateway.
#[test]
fn a_merged_server_is_charged_for_the_members_it_is_written_for() {
    let mut b = long_value_routes(30, |_| "/x".into());
    b[0] = common::gateway("b/gw-old", "2026-01-01T00:00:01Z", &common::http(30001));
    b.push(common::gateway("b/gw-new", "2026-01-01T00:00:02Z", &common::http(30000)));
    for r in &mut b[1..] {
        *r = r.replace("parentRefs: [{name: gw}]", "parentRefs: [{name: gw-old}, {name: gw-new}]");
    }
    let mut o = opts();
    o.global.worker_connections = 4;
    let dir = dir_with("merged", &file_of(&tenant_a(), b, 3, true));
    let g = generate_all(&[dir], &backends(), &o).unwrap();
    assert!(g.output.nginx_conf.contains("30001") && !g.output.nginx_conf.contains(":30000"));
    let refused = refused_for(&g, "budget: list memory");
    assert_eq!(
        refused,
        (10..30).map(|r| format!("b/r{r}")).collect::<Vec<_>>(),
        "{:?}",
        g.warnings
    );
    nginx_t("merged", &g.output);
}

/// Tenant b's `n` newer routes on its own Gateway, each a prefix `/pK` with a 200-byte
/// header value (no regex anywhere).
fn plain_header_routes(n: usize) -> Vec<String> {
    (0..n)
        .map(|r| format!(
            "kind: HTTPRoute\nmetadata: {{name: r{r}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /p{r}}}, headers: [{{name: x-v, value: \"{r}-{}\"}}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            r % 60,
            "v".repeat(200)
        ))
        .collect()
}

/// Tenant b's Gateway of [`plain_header_routes`].
fn plain_gateway() -> String {
    common::gateway("b/gw", "2026-01-01T00:00:01Z", &common::http(18081))
}

/// `--carrier inline` with no regex anywhere (MED-2): b's 40 routes against a 16 KiB list
/// share and a 16 KiB regex share. Each list copy is charged once, by the list budget: the
/// newest are refused naming "budget: list memory", none naming the regex budget. Before, the
/// regex budget also charged each copy's list bytes: routes refused "budget: regex memory".
#[test]
fn inline_lists_are_charged_by_the_list_budget_alone() {
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    (o.global.regex_memory_per_tenant, o.global.list_memory_per_tenant) = (16 << 10, 16 << 10);
    let mut b = vec![plain_gateway()];
    b.extend(plain_header_routes(40));
    let dir = dir_with("inline-lists", &file_of(&[], b, 1, true));
    let g = generate_all(&[dir], &backends(), &o).unwrap();
    assert_eq!(refused_for(&g, "budget: regex memory"), Vec::<String>::new());
    let refused = refused_for(&g, "budget: list memory");
    assert!(!refused.is_empty() && refused.len() < 40, "{refused:?}");
    nginx_t("inline-lists", &g.output);
}

/// `--carrier variable` (MED-1): the module compiles a location's list per request (`set
/// $http_matches`), nothing at load and no matches.json, so the list budget does not apply:
/// b's 40 routes all kept at a 4 KiB list share. Before, the preload model refused them.
#[test]
fn variable_lists_are_not_charged_as_loaded() {
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Variable;
    o.global.list_memory_per_tenant = 4 << 10;
    let mut b = vec![plain_gateway()];
    b.extend(plain_header_routes(40));
    let dir = dir_with("variable-lists", &file_of(&tenant_a(), b, 1, true));
    let g = generate_all(&[dir], &backends(), &o).unwrap();
    assert_eq!(refused_for(&g, "budget: list memory"), Vec::<String>::new());
    assert!(g.output.nginx_conf.matches("set $http_matches").count() >= 40);
    nginx_t("variable-lists", &g.output);
}

/// Tenant a's route R (a 1,500-byte header match on `/`) on a's Gateway (a.test, port 18080)
/// and, through a second parentRef, on tenant b's newer Gateway (port 18081, every namespace
/// admitted), where b's route (older than R, so first at b's Gateway's age) holds a 3,000-byte
/// entry on `/`; `b`: whether b's objects are there.
fn shared_list_docs(b: bool) -> String {
    let mut docs = vec![
        common::gateway(
            "a/gw",
            "2026-01-01T00:00:00Z",
            "{name: http, port: 18080, protocol: HTTP, hostname: a.test}",
        ),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}}\nspec:\n  parentRefs: [{{name: gw}}, {{name: gw, namespace: b}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-a, value: {}}}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            "a".repeat(1500)
        ),
    ];
    if b {
        docs.push(common::gateway(
            "b/gw",
            "2026-01-03T00:00:00Z",
            "{name: l, port: 18081, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}",
        ));
        docs.push(format!("kind: HTTPRoute\nmetadata: {{name: big, namespace: b, creationTimestamp: \"2025-12-31T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /}}, headers: [{{name: x-b, value: {}}}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n", "b".repeat(3000)));
    }
    docs.join("---\n")
}

/// The Accepted condition of route `id`'s parentRef to the Gateway in namespace `gw_ns`
/// (`None`: the route's own).
fn accepted<'g>(
    g: &'g httproute_nginx::Generated,
    id: &str,
    gw_ns: Option<&str>,
) -> &'g httproute_nginx::plan::Condition {
    let r = g.status.routes.iter().find(|r| r.id.to_string() == id).unwrap();
    let (_, cs) = r.parents.iter().find(|(p, _)| p.namespace.as_deref() == gw_ns).unwrap();
    cs.iter().find(|c| c.kind == httproute_nginx::plan::ConditionType::Accepted).unwrap()
}

/// Brief gu 1 (#45): an inline list (one nginx.conf word, at most 4,094 bytes) refuses the
/// unit (route, Gateway) as the regex budget does. R's copy does not fit beside b's older
/// route's entry in b's newer Gateway's list: only R's attachment to b's Gateway is refused
/// (that parentRef `Accepted: False` naming the 4,094 bytes), R keeps serving on a's Gateway
/// and a's server block is byte for byte the one without b. Before, R's rule was refused
/// everywhere: a's server lost it.
#[test]
fn a_newer_gateway_s_full_inline_list_refuses_only_my_route_s_attachment_to_it() {
    for carrier in [httproute_nginx::Carrier::Inline, httproute_nginx::Carrier::Variable] {
        let mut o = opts();
        o.carrier = carrier;
        let run = |tag: &str, b: bool| {
            let dir = dir_with(&format!("{tag}-{carrier:?}"), &shared_list_docs(b));
            generate_all(&[dir], &backends(), &o).unwrap()
        };
        let (alone, g) = (run("list-alone", false), run("list-shared", true));
        let (conf, before) = (&g.output.nginx_conf, &alone.output.nginx_conf);
        assert!(server_text(before, "a.test").contains(&"a".repeat(1500)), "{before}");
        assert_eq!(server_text(conf, "a.test"), server_text(before, "a.test"), "{conf}");
        assert_eq!(conf.matches(&"a".repeat(1500)).count(), 1, "{conf}");
        assert!(conf.contains(&"b".repeat(3000)), "{conf}");
        assert!(accepted(&g, "a/r", None).ok, "{:?}", g.status.routes);
        let to_b = accepted(&g, "a/r", Some("b"));
        assert!(!to_b.ok && to_b.message.contains("4094"), "{to_b:?}");
        nginx_t(&format!("list-shared-{carrier:?}"), &g.output);
    }
}

/// Brief gu 1 (#45): the server-name budget refuses the unit (route, Gateway) too. Tenant
/// a's route R (host names a.test and N, a 253-byte name) on a's Gateway (a.test: R brings
/// no name there) and on tenant b's newer catch-all Gateway, where b's 16 older routes fill
/// NGINX's server-name hash with 256 names that hash as N does: only R's attachment to b's
/// Gateway is refused (its parentRef naming the budget), a's server block is byte for byte
/// the one without b. Before, R was refused everywhere.
#[test]
fn a_newer_gateway_s_full_name_hash_refuses_only_my_route_s_attachment_to_it() {
    names_hash_refuses_only_the_attachment("names", 256);
}

/// rv-gu HIGH-1: as above with b's 247 names (15 routes of 16, one of 7), so none of b's
/// own is refused and only R's attachment is: server N (R's name on b's port) is not
/// written, and NGINX builds the hash (the model and `nginx -t`). Before, emit chose servers
/// by refused routes only: `server_name N` was written, 248 names in one bucket.
#[test]
fn a_refused_attachment_s_server_name_is_not_written() {
    names_hash_refuses_only_the_attachment("names-247", 247);
}

/// R of the tests above beside b's `n` older colliding names (16 per route).
fn names_hash_refuses_only_the_attachment(tag: &str, n: usize) {
    let names = colliding_names(n + 1);
    let a = vec![
        common::gateway(
            "a/gw",
            "2026-01-01T00:00:00Z",
            "{name: http, port: 18080, protocol: HTTP, hostname: a.test}",
        ),
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}}\nspec:\n  parentRefs: [{{name: gw}}, {{name: gw, namespace: b}}]\n  hostnames: [a.test, {}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            q(&names[n])
        ),
    ];
    let mut b = vec![common::gateway(
        "b/gw",
        "2026-01-03T00:00:00Z",
        "{name: http, port: 18081, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}",
    )];
    for (i, hosts) in names[..n].chunks(16).enumerate() {
        let hosts: Vec<String> = hosts.iter().map(|h| q(h)).collect();
        b.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i:02}, namespace: b, creationTimestamp: \"2025-12-31T00:00:{i:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            hosts.join(", ")
        ));
    }
    let run = |tag: &str, b: &[String]| {
        let dir = dir_with(tag, &file_of(&a, b.to_vec(), 0, true));
        generate_all(&[dir], &backends(), &opts()).unwrap()
    };
    let (alone, g) = (run(&format!("{tag}-alone"), &[]), run(&format!("{tag}-shared"), &b));
    let (conf, before) = (&g.output.nginx_conf, &alone.output.nginx_conf);
    assert!(server_names_build(conf), "server names hash not built");
    assert!(!conf.contains(&format!("server_name {}", names[n])), "{conf}");
    assert_eq!(server_text(conf, "a.test"), server_text(before, "a.test"), "{conf}");
    assert!(accepted(&g, "a/r", None).ok, "{:?}", g.status.routes);
    let to_b = accepted(&g, "a/r", Some("b"));
    assert!(!to_b.ok && to_b.message.contains("budget: server-name hash"), "{to_b:?}");
    nginx_t(&format!("{tag}-shared"), &g.output);
}

/// rv-ga LOW-5: R of [`shared_route_docs`] with its parentRef to b's Gateway by port 18081
/// and a third, to b's Gateway's port 18082 (no listener there: it attaches nowhere), while the regex budget refuses R's
/// attachment to b's Gateway: that parentRef keeps `NoMatchingParent`, the one attached to
/// b's listeners says the budget. Fails with the check `attached.is_empty()` of
/// `status::parents_refused` taken out (both then say the budget).
#[test]
fn a_parent_ref_attached_nowhere_keeps_no_matching_parent_beside_a_refused_attachment() {
    let copy = httproute_nginx::limits::regex_charge("^(?:/v[0-9]+/.*)".len());
    let mut o = opts();
    o.carrier = httproute_nginx::Carrier::Inline;
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (8 * copy, 8 * copy);
    let refs = "parentRefs: [{name: gw}, {name: gw, namespace: b}]";
    // Two refs to one parent name a sectionName or port each (the CRD's rule).
    let three = "parentRefs: [{name: gw}, {name: gw, namespace: b, port: 18081}, {name: gw, namespace: b, port: 18082}]";
    let docs = shared_route_docs(Some(40), "h0.b.test").join("---\n");
    assert!(docs.contains(refs));
    let dir = dir_with("nowhere", &docs.replace(refs, three));
    let g = generate_all(&[dir], &backends(), &o).unwrap();
    let r = g.status.routes.iter().find(|r| r.id.to_string() == "a/r").unwrap();
    let of = |port: u16| {
        let to_b = |p: &httproute_nginx::model::ParentRef| {
            p.namespace.as_deref() == Some("b") && p.port == Some(port)
        };
        let (_, cs) = r.parents.iter().find(|(p, _)| to_b(p)).unwrap();
        cs.iter().find(|c| c.kind == httproute_nginx::plan::ConditionType::Accepted).unwrap()
    };
    let (refused, nowhere) = (of(18081), of(18082));
    assert!(!refused.ok && refused.message.contains("budget: regex memory"), "{refused:?}");
    let no_parent = httproute_nginx::plan::Reason::NoMatchingParent;
    assert!(!nowhere.ok && nowhere.reason == no_parent, "{nowhere:?}");
    assert!(accepted(&g, "a/r", None).ok, "{:?}", r.parents);
}

/// Any of the three carriers (how a location's list reaches the module).
fn any_carrier() -> impl Strategy<Value = httproute_nginx::Carrier> {
    use httproute_nginx::Carrier::{Inline, Preload, Variable};
    prop::sample::select(vec![Preload, Inline, Variable])
}

/// Options of `carrier` under a module memory of `mib` MiB, the regex budgets a quarter (per
/// tenant) and a half (all tenants) of it.
fn small_memory_opts(carrier: httproute_nginx::Carrier, mib: usize) -> Options {
    let mut o = opts();
    o.carrier = carrier;
    let max = mib << 20;
    o.global.module_max_memory = Some(max);
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (max / 4, max / 2);
    o
}

/// Tenant a's Gateway (every namespace admitted) and GRPCRoute: two regex methods of a.S
/// (two headers, none) and the exact method b.S/M with three headers; `b`: tenant b's newer
/// GRPCRoute on a's listener, four matches of b.S/M with one 4,000-byte header each.
fn cutter_docs(b: bool) -> String {
    let mut docs = vec![
        common::gateway("a/gw", "2026-01-01T00:00:00Z", "{name: http, port: 18080, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}"),
        "kind: GRPCRoute\nmetadata: {name: g, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{method: {type: RegularExpression, service: \"a[.]S\", method: \"M.*\"}, headers: [{name: x, value: \"1\"}, {name: y, value: \"2\"}]}]\n    backendRefs: [{name: s, port: 80}]\n  - matches: [{method: {type: RegularExpression, service: \"a[.]S\", method: \"N.*\"}}]\n    backendRefs: [{name: s, port: 80}]\n  - matches: [{method: {service: b.S, method: M}, headers: [{name: p, value: \"1\"}, {name: q, value: \"1\"}, {name: r, value: \"1\"}]}]\n    backendRefs: [{name: s, port: 80}]\n".to_owned(),
    ];
    if b {
        let m = format!(
            "{{method: {{service: b.S, method: M}}, headers: [{{name: z, value: {}}}]}}",
            q(&"v".repeat(4000))
        );
        docs.push(format!(
            "kind: GRPCRoute\nmetadata: {{name: r, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            [m.as_str(); 4].join(", ")
        ));
    }
    docs.join("---\n")
}

/// Brief gr: b's route cuts a's regex block in `= /b.S/M` (b's candidates come between a's
/// two), and the list budget refuses it (a 16 KiB share; b's entries take more): the cut
/// goes with it, so a's server block (its lists' keys) is byte for byte the one without b,
/// and NGINX loads the output. Before, the pieces b cut stayed (three keys where a's list is
/// one run), uncharged.
#[test]
fn a_refused_cutter_cuts_nothing_of_mine() {
    let o = cutter_opts();
    let run = |tag: &str, b: bool| {
        generate_all(&[dir_with(tag, &cutter_docs(b))], &backends(), &o).unwrap()
    };
    let (alone, g) = (run("cutter-alone", false), run("cutter-refused", true));
    assert_eq!(refused_for(&alone, "budget: list memory"), Vec::<String>::new());
    assert_eq!(refused_for(&g, "budget: list memory"), ["b/r"]);
    a_as_alone("cutter-refused", &alone, &g);
}

/// A list budget small enough to refuse b's cutter in the tests below.
fn cutter_opts() -> Options {
    let mut o = small_memory_opts(httproute_nginx::Carrier::Preload, 128);
    o.global.list_memory_per_tenant = 16 << 10;
    o
}

/// Tenant a's server text and matches.json in `g` are the ones of the run without b, and NGINX
/// loads `g`'s configuration.
fn a_as_alone(tag: &str, alone: &httproute_nginx::Generated, g: &httproute_nginx::Generated) {
    let (conf, before) = (&g.output.nginx_conf, &alone.output.nginx_conf);
    assert_eq!(server_text(conf, "a.test"), server_text(before, "a.test"));
    assert_eq!(g.output.matches_json, alone.output.matches_json);
    nginx_t(tag, &g.output);
}

/// Review of gr, H1: b's refused GRPCRoute also has a regex candidate inside a's regex block,
/// so the dead pieces it leaves in `= /b.S/M` do not touch (E R E R E R: a's two regex
/// candidates come apart by b's): a's list there is still one run (the block's candidates
/// that are written, one key) and a's server text and matches.json are the ones without b.
#[test]
fn a_refused_cutter_with_a_candidate_inside_my_block_cuts_nothing_of_mine() {
    let o = cutter_opts();
    let v = q(&"v".repeat(4000));
    let h = |n: usize| {
        let hs: Vec<String> = (0..n).map(|i| format!("{{name: z{i}, value: {v}}}")).collect();
        hs.join(", ")
    };
    let b = format!(
        "kind: GRPCRoute\nmetadata: {{name: r, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{method: {{service: b.S, method: M}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{method: {{type: RegularExpression, service: \"b[.]S\", method: \"M.*\"}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{method: {{service: b.S, method: M}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
        h(2),
        h(2),
        h(1)
    );
    let alone = generate_all(&[dir_with("gap-alone", &cutter_docs(false))], &backends(), &o);
    let docs = format!("{}---\n{b}", cutter_docs(false));
    let g = generate_all(&[dir_with("gap-refused", &docs)], &backends(), &o).unwrap();
    let alone = alone.unwrap();
    assert_eq!(refused_for(&g, "budget: list memory"), ["b/r"]);
    a_as_alone("gap-refused", &alone, &g);
}

/// Review of gr, M3: the preloaded regex budget reads what is left out before it (as every
/// budget does). Tenant b's older route r1 (a regex path) attaches only to its newer Gateway,
/// whose listener the socket budget refuses (`worker_connections 2`: one socket), so r1 is
/// written nowhere; b's newer route r2 (another regex) on the older Gateway fits b's regex
/// share alone. Before, r1's regex was charged: r2 refused "budget: regex memory".
#[test]
fn a_route_written_nowhere_takes_no_regex_memory() {
    let pattern = |c: char| format!("/{c}{}", "[0-9]".repeat(20));
    let mut o = opts();
    o.global.worker_connections = 2;
    let one = httproute_nginx::limits::regex_charge(pattern('a').len() + 64);
    o.global.regex_memory_per_tenant = one;
    let route = |name: &str, gw: &str, at: u32, c: char| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: b, creationTimestamp: \"2026-01-01T00:00:{at:02}Z\"}}\nspec:\n  parentRefs: [{{name: {gw}}}]\n  rules:\n  - matches: [{{path: {{type: RegularExpression, value: \"{}\"}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            pattern(c)
        )
    };
    let docs = [
        common::gateway("b/gw-old", "2026-01-01T00:00:01Z", &common::http(30001)),
        common::gateway("b/gw-new", "2026-01-01T00:00:02Z", &common::http(30000)),
        route("r1", "gw-new", 3, 'a'),
        route("r2", "gw-old", 4, 'b'),
    ];
    let g =
        generate_all(&[dir_with("regex-nowhere", &docs.join("---\n"))], &backends(), &o).unwrap();
    assert!(g.output.nginx_conf.contains("30001") && !g.output.nginx_conf.contains(":30000"));
    assert_eq!(refused_for(&g, "budget: regex memory"), Vec::<String>::new(), "{:?}", g.warnings);
    nginx_t("regex-nowhere", &g.output);
}

/// Brief gfold (#45): the module's memory is one walk, oldest route first, that charges a
/// route's regex conditions and its lists together and refuses it whole. Tenant b's older
/// route r1 (a regex path and five 4,000-byte headers) is past b's 16 KiB list share; tenant a's
/// newer route r2 (another regex) fits the regex total (room for one pattern) once r1's
/// regex is not charged: r1 refused "budget: list memory", r2 kept, nothing refused "budget:
/// regex memory". Before (427b80c), the regex walk ran first and kept r1's pattern charged
/// although the list walk refused r1: r2 was refused "budget: regex memory".
#[test]
fn a_route_the_list_budget_refuses_takes_no_regex_memory() {
    let pattern = |c: char| format!("/{c}{}", "[0-9]".repeat(20));
    let mut o = opts();
    let one = httproute_nginx::limits::regex_charge(pattern('a').len() + 64);
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (one, one);
    o.global.list_memory_per_tenant = 16 << 10;
    let route = |ns: &str, at: u32, c: char, headers: usize| {
        let h: Vec<String> =
            (0..headers).map(|i| format!("{{name: x-{i}, value: {}}}", "v".repeat(4000))).collect();
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r{at}, namespace: {ns}, creationTimestamp: \"2026-01-01T00:00:{at:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: RegularExpression, value: \"{}\"}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            pattern(c),
            h.join(", ")
        )
    };
    let docs = [
        common::gateway(
            "a/gw",
            "2026-01-01T00:00:00Z",
            "{name: l, port: 18080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}",
        ),
        route("b", 1, 'a', 5),
        route("a", 2, 'b', 0),
    ];
    let g = generate_all(&[dir_with("regex-list", &docs.join("---\n"))], &backends(), &o).unwrap();
    assert_eq!(refused_for(&g, "budget: list memory"), ["b/r1"], "{:?}", g.warnings);
    assert_eq!(refused_for(&g, "budget: regex memory"), Vec::<String>::new(), "{:?}", g.warnings);
    assert!(g.output.matches_json.contains(&pattern('b')), "{}", g.output.matches_json);
    nginx_t("regex-list", &g.output);
}

/// Review of gr, L1: names brought to servers whose listener is refused are in no hash.
/// Tenant b's older routes bring 240 names of one NGINX hash (`colliding_names`) to its newer
/// Gateway, whose listener the socket budget refuses (`worker_connections 2`: one socket);
/// its newest route brings the other 16 to the older Gateway: they fit (16 of the 247 a
/// bucket holds). Before, the 240 unwritten names were counted: the newest route refused
/// "budget: server-name hash".
#[test]
fn names_of_a_refused_listener_take_no_room_in_the_name_hash() {
    let names = colliding_names(256);
    let mut o = opts();
    o.global.worker_connections = 2;
    let mut docs = vec![
        common::gateway("b/gw-old", "2026-01-01T00:00:01Z", &common::http(30001)),
        common::gateway("b/gw-new", "2026-01-01T00:00:02Z", &common::http(30000)),
    ];
    for (i, hosts) in names.chunks(16).enumerate() {
        let hosts: Vec<String> = hosts.iter().map(|h| q(h)).collect();
        let gw = if i == 15 { "gw-old" } else { "gw-new" };
        docs.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i:02}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{i:02}Z\"}}\nspec:\n  parentRefs: [{{name: {gw}}}]\n  hostnames: [{}]\n  rules:\n  - backendRefs: [{{name: s, port: 80}}]\n",
            hosts.join(", ")
        ));
    }
    let g =
        generate_all(&[dir_with("names-nowhere", &docs.join("---\n"))], &backends(), &o).unwrap();
    assert!(g.output.nginx_conf.contains("30001") && !g.output.nginx_conf.contains(":30000"));
    assert_eq!(
        refused_for(&g, "budget: server-name hash"),
        Vec::<String>::new(),
        "{:?}",
        g.warnings
    );
    assert!(server_names_build(&g.output.nginx_conf), "server names hash not built");
    nginx_t("names-nowhere", &g.output);
}

/// Tenant b's routes of long lists, each (age in seconds, depth of its path `/d/d...`, length
/// of its header values, matches): nested paths make lists of includes, long values long runs.
fn long_list_routes() -> impl Strategy<Value = Vec<(u32, usize, usize, usize)>> {
    prop::collection::vec((0u32..100_000, 1usize..24, 0usize..=4096, 1usize..17), 1..24)
}

/// Tenant b's Gateway (port 18081, newer than a's) and its routes of long lists.
fn long_list_docs(routes: &[(u32, usize, usize, usize)]) -> Vec<String> {
    let mut docs = vec![common::gateway("b/gw", "2026-01-02T00:00:00Z", &common::http(18081))];
    for (k, &(age, depth, len, matches)) in routes.iter().enumerate() {
        let path = "/d".repeat(depth);
        let m: Vec<String> = (0..matches)
            .map(|i| format!("{{path: {{type: PathPrefix, value: {path}}}, headers: [{{name: x-{i}, value: {}}}]}}", q(&"v".repeat(len))))
            .collect();
        let (day, second) = (age / 86_400, age % 86_400);
        docs.push(format!(
            "kind: HTTPRoute\nmetadata: {{name: l{k}, namespace: b, creationTimestamp: \"2025-{:02}-{:02}T{:02}:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            1 + day / 28,
            1 + day % 28,
            second / 3600,
            second / 60 % 60,
            second % 60,
            m.join(", ")
        ));
    }
    docs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Brief gu 4 (#45): the list budget under a small `--module-max-memory` (2 or 4 MiB, the
    /// regex budgets a quarter and a half of it), any carrier: tenant b's routes of long
    /// lists and lists of includes (any number, depth, value length, age) change nothing of
    /// a's, refuse only b's objects, and NGINX loads the output (`nginx -t`, where given:
    /// "no combination of CRD-valid tenant objects makes NGINX refuse the configuration").
    #[test]
    fn long_lists_of_another_tenant_under_a_small_module_memory_leave_nginx_loading(
        routes in long_list_routes(),
        mib in prop::sample::select(vec![2usize, 4]),
        carrier in any_carrier(),
        order in any::<u64>(),
    ) {
        let o = small_memory_opts(carrier, mib);
        let b = long_list_docs(&routes);
        let g = if carrier == httproute_nginx::Carrier::Preload {
            let (base, mine, g) = views_with(b, order, true, &o);
            prop_assert_eq!(base, mine);
            g
        } else {
            // No keys to follow: a's server block is its lists.
            let a = tenant_a();
            let run = |tag: &str, b: Vec<String>| {
                let dir = dir_with(tag, &file_of(&a, b, order, true));
                generate_all(&[dir], &backends(), &o).unwrap()
            };
            let (base, g) = (run("long-base", vec![]), run("long-mutated", b));
            let mine = server_text(&g.output.nginx_conf, "a.test");
            prop_assert_eq!(server_text(&base.output.nginx_conf, "a.test"), mine);
            g
        };
        for d in &g.output.dropped {
            prop_assert_eq!(d.unit.route().map(|r| r.namespace.as_str()), Some("b"));
        }
        nginx_t("long-lists", &g.output);
    }
}

/// A route of tenant b for [`shared_lists_docs`]: (age in seconds after a's, GRPC, depth of
/// its path or regex method, header value length, matches, headers, parents: 0 its own
/// Gateway, 1 a's, 2 both; colliding names (first, count), a.test among them).
type CutRoute = (u32, bool, usize, usize, usize, usize, u8, (usize, usize), bool);

fn cut_routes() -> impl Strategy<Value = Vec<CutRoute>> {
    let route = (
        (0u32..100_000, any::<bool>(), 1usize..24, 0usize..=2048, 1usize..9, 0usize..=16),
        (0u8..3, (0usize..280, 0usize..=16), any::<bool>()),
    );
    let flat = |((a, g, d, l, m, h), (p, n, t)): ((u32, bool, usize, usize, usize, usize), _)| {
        (a, g, d, l, m, h, p, n, t)
    };
    prop::collection::vec(route.prop_map(flat), 1..24)
}

/// Tenant a (its Gateway admitting every namespace, an HTTPRoute on h.a.test and a GRPCRoute
/// on a.test of a regex and an exact method that b's methods cut) and tenant b's newer Gateway and `routes`.
fn shared_lists_docs(routes: &[CutRoute]) -> (Vec<String>, Vec<String>) {
    let mut a = tenant_a_admitting_all();
    // a's HTTPRoute on a listener of its own (h.a.test): a host name is one kind's.
    let h = "{name: h, port: 18080, protocol: HTTP, hostname: h.a.test, allowedRoutes: {namespaces: {from: All}}}";
    a[0] = a[0].replace("}}}]", &format!("}}}}}}, {h}]"));
    a[1] = a[1]
        .replace("namespace: a}", "namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}")
        .replace("[{name: gw}]", "[{name: gw, sectionName: h}]");
    assert!(a[0].contains("h.a.test") && a[1].contains("sectionName: h"), "{a:?}");
    a.push("kind: GRPCRoute\nmetadata: {name: g, namespace: a, creationTimestamp: \"2026-01-01T00:00:02Z\"}\nspec:\n  parentRefs: [{name: gw, sectionName: http}]\n  rules:\n  - matches: [{method: {type: RegularExpression, service: \"a[.]S\", method: \"M.*\"}, headers: [{name: x, value: \"1\"}, {name: y, value: \"2\"}]}]\n    backendRefs: [{name: s, port: 80}]\n  - matches: [{method: {service: a.S, method: M}}]\n    backendRefs: [{name: s, port: 80}]\n".to_owned());
    let names = colliding_names(296);
    let mut b = vec![common::gateway(
        "b/gw",
        "2026-01-02T00:00:00Z",
        "{name: http, port: 18081, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}",
    )];
    for (k, &(age, grpc, depth, len, matches, headers, parents, (first, n), a_test)) in
        routes.iter().enumerate()
    {
        let value = q(&"v".repeat(len));
        let hs: Vec<String> =
            (0..headers).map(|i| format!("{{name: x-{i}, value: {value}}}")).collect();
        let hs = hs.join(", ");
        let m: Vec<String> = (0..matches)
            .map(|i| match (grpc, i % 2) {
                (true, 0) => format!("{{method: {{type: RegularExpression, service: \"s{depth}[.]S\", method: \"M{i}.*\"}}, headers: [{hs}]}}"),
                (true, _) => format!("{{method: {{service: a.S, method: M}}, headers: [{hs}]}}"),
                (false, _) => format!("{{path: {{type: PathPrefix, value: {}}}, headers: [{hs}]}}", "/d".repeat(depth)),
            })
            .collect();
        let mut hosts: Vec<String> = names[first..first + n].iter().map(|h| q(h)).collect();
        if a_test && hosts.len() < 16 {
            hosts.push("a.test".into());
        }
        let hosts = if hosts.is_empty() {
            String::new()
        } else {
            format!("  hostnames: [{}]\n", hosts.join(", "))
        };
        let refs = [
            "[{name: gw}]",
            "[{name: gw, namespace: a}]",
            "[{name: gw}, {name: gw, namespace: a}]",
        ];
        let (day, second) = (2 + age / 86_400, age % 86_400);
        b.push(format!(
            "kind: {}\nmetadata: {{name: l{k}, namespace: b, creationTimestamp: \"2026-01-{day:02}T{:02}:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: {}\n{hosts}  rules:\n  - matches: [{}]\n    backendRefs: [{{name: s, port: 80}}]\n",
            if grpc { "GRPCRoute" } else { "HTTPRoute" },
            second / 3600,
            second / 60 % 60,
            second % 60,
            refs[parents as usize],
            m.join(", ")
        ));
    }
    (a, b)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// rv-gu MED-5: [`long_lists_of_another_tenant_under_a_small_module_memory_leave_nginx_loading`]
    /// where it can hurt: b's routes (HTTP long lists, GRPC regex and exact methods with 0-16
    /// headers that cut a's blocks, colliding 253-byte host names) on a's shared Gateway, on
    /// b's own, or both. a's routes stay accepted, only b's units are refused, NGINX's
    /// server-name hash builds (the generator's own model, always) and `nginx -t` loads it
    /// (where given).
    #[test]
    fn shared_gateways_grpc_cuts_and_colliding_names_of_another_tenant_leave_nginx_loading(
        routes in cut_routes(),
        mib in prop::sample::select(vec![2usize, 4]),
        carrier in any_carrier(),
        order in any::<u64>(),
    ) {
        let o = small_memory_opts(carrier, mib);
        let (a, b) = shared_lists_docs(&routes);
        let dir = dir_with("shared-lists", &file_of(&a, b, order, true));
        let g = generate_all(&[dir], &backends(), &o).unwrap();
        for id in ["a/r", "a/g"] {
            // a's own parentRefs (one each).
            let c = accepted(&g, id, None);
            prop_assert!(c.ok, "{}: {:?}", id, c);
        }
        for d in &g.output.dropped {
            let ns = d.unit.route().map(|r| r.namespace.as_str());
            prop_assert!(ns != Some("a"), "{:?}", d);
        }
        prop_assert!(server_names_build(&g.output.nginx_conf), "server names hash not built");
        nginx_t("shared-lists", &g.output);
    }
}
