//! The innocent tenant: random CRD-valid values in one tenant's objects (namespace `b`, its
//! own Gateway and port) never change what the other tenant (namespace `a`) gets: its
//! server blocks as NGINX reads them back (numbered generator variables and the other port's
//! `listen` of a server written for both aside) and its match
//! lists. With `NGX_MATCHES_NGINX` and `NGX_MATCHES_MODULE` set, every output also passes
//! `nginx -t`; without them that part is skipped (said once on stderr).
//! `HTTPROUTE_INNOCENT_CASES=N` runs N cases (default 24, a few seconds).
//!
//! Tenant b's objects mutated: header names and values, a redirect path, weights, CORS
//! allowHeaders (its route); its TLS Secret's certificate and key bytes (a listener of its
//! own on another port); its backendRefs (names, ports, weights, namespaces); its Service
//! (type, port, externalName), EndpointSlices (address type, addresses, ports, `endpoints:
//! null`) and ReferenceGrants.

mod common;

use std::path::PathBuf;

use base64::Engine as _;
use httproute_nginx::conf::Stmt;
use httproute_nginx::{BackendMap, Options, generate_all};
use proptest::prelude::*;

fn opts() -> Options {
    Options {
        module: std::env::var("NGX_MATCHES_MODULE")
            .unwrap_or_else(|_| "modules/ngx_http_matches_module.so".into()),
        listen_address: Some("127.0.0.1".into()),
        ..common::options()
    }
}

const TENANT_A: &str = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: http, port: 18080, protocol: HTTP, hostname: a.test}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: a}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}, headers: [{name: x-a, value: \"1\"}]}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: x-set, value: a}], add: [{name: x-add, value: b}]}\n    backendRefs: [{name: s, port: 80, weight: 3}, {name: t, port: 80, weight: 1}]\n  - matches: [{path: {type: Exact, value: /r}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /elsewhere}}\n---\n";

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

fn tenant_b(hv: String, hn: String, redirect: String, w: (u32, u32), allow: Vec<String>) -> String {
    let allow: Vec<String> = allow.iter().map(|a| q(a)).collect();
    format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: b}}\nspec:\n  listeners: [{{name: http, port: 18081, protocol: HTTP}}]\n---\nkind: HTTPRoute\nmetadata: {{name: r, namespace: b}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b}}}}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: {hn}, value: {}}}]}}\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {{set: [{{name: {hn}, value: {}}}]}}\n    backendRefs: [{{name: s, port: 80, weight: {}}}, {{name: t, port: 80, weight: {}}}]\n  - matches: [{{path: {{type: Exact, value: /r}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: {}}}}}\n  - matches: [{{path: {{type: PathPrefix, value: /c}}}}]\n    filters:\n    - type: CORS\n      cors: {{allowOrigins: [\"https://b.test\"], allowHeaders: [{}]}}\n    backendRefs: [{{name: s, port: 80}}]\n---\n",
        q(&hv),
        q(&hv),
        w.0,
        w.1,
        q(&format!("/{redirect}")),
        allow.join(", ")
    )
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
/// objects.
fn tenant_b_objects(
    secret: &(Vec<u8>, Vec<u8>),
    refs: &[(String, u16, u32, Option<String>)],
    core: &Core,
) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let refs: Vec<String> = refs
        .iter()
        .map(|(name, port, weight, ns)| {
            let ns = ns.as_ref().map(|n| format!(", namespace: {n}")).unwrap_or_default();
            format!("{{name: {name}, port: {port}, weight: {weight}{ns}}}")
        })
        .collect();
    let mut y = format!(
        "kind: Gateway\nmetadata: {{name: gw-tls, namespace: b}}\nspec:\n  listeners: [{{name: https, port: 18443, protocol: HTTPS, hostname: b.test, tls: {{certificateRefs: [{{name: b-cert}}]}}}}]\n---\nkind: Secret\nmetadata: {{name: b-cert, namespace: b}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: \"{}\", tls.key: \"{}\"}}\n---\nkind: HTTPRoute\nmetadata: {{name: refs, namespace: b}}\nspec:\n  parentRefs: [{{name: gw}}, {{name: gw-tls}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /refs}}}}]\n    backendRefs: [{}]\n---\n",
        b64(&secret.0),
        b64(&secret.1),
        refs.join(", ")
    );
    match &core.external {
        Some(name) => {
            y += &format!(
                "kind: Service\nmetadata: {{name: u, namespace: b}}\nspec: {{type: ExternalName, externalName: {}, ports: [{{port: {}}}]}}\n---\n",
                q(name),
                core.port
            )
        }
        None => {
            y += &format!(
                "kind: Service\nmetadata: {{name: u, namespace: b}}\nspec: {{ports: [{{port: {}}}]}}\n---\n",
                core.port
            )
        }
    }
    for (i, (kind, addresses, port)) in core.slices.iter().enumerate() {
        let endpoints = match addresses {
            None => "null".to_owned(),
            Some(a) => format!(
                "[{{addresses: [{}], conditions: {{ready: true}}}}]",
                a.iter().map(|a| q(a)).collect::<Vec<_>>().join(", ")
            ),
        };
        y += &format!(
            "kind: EndpointSlice\napiVersion: discovery.k8s.io/v1\nmetadata: {{name: u-{i}, namespace: b, labels: {{kubernetes.io/service-name: u}}}}\naddressType: {kind}\nendpoints: {endpoints}\nports: [{{port: {port}}}]\n---\n"
        );
    }
    if core.grant {
        y += "kind: ReferenceGrant\napiVersion: gateway.networking.k8s.io/v1beta1\nmetadata: {name: to-a, namespace: b}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: a}]\n  to: [{group: \"\", kind: Service}]\n---\n";
    }
    y
}

/// Numbered generator variables (`httproute_split_3`) without their numbers: another tenant's
/// objects may shift them.
fn unnumbered(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("httproute_") {
        out.push_str(&rest[..i + "httproute_".len()]);
        rest = &rest[i + "httproute_".len()..];
        let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        out.push_str(&word);
        rest = &rest[word.len()..];
        if let Some(r) = rest.strip_prefix('_') {
            let digits = r.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 {
                out.push_str("_N");
                rest = &r[digits..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn normalized(stmts: &[Stmt]) -> Vec<Stmt> {
    stmts
        .iter()
        .map(|s| Stmt {
            words: s.words.iter().map(|w| unnumbered(w)).collect(),
            block: s.block.as_deref().map(normalized),
        })
        .collect()
}

/// Tenant A's view of a generated configuration: its server (listening on 18080) and the
/// match lists of its keys.
fn tenant_a_view(conf: &str, matches: &str) -> (Vec<Stmt>, Vec<(String, serde_json::Value)>) {
    let tree = httproute_nginx::conf_reader::read(conf).unwrap();
    let http = tree.iter().find(|s| s.words == ["http"]).unwrap();
    let servers: Vec<Stmt> = http
        .block
        .iter()
        .flatten()
        .filter(|s| {
            s.words == ["server"]
                && s.block.iter().flatten().any(|d| {
                    d.words.first().is_some_and(|w| w == "listen")
                        && d.words.get(1).is_some_and(|w| w.ends_with(":18080"))
                })
        })
        .map(|s| {
            // A server the same on both ports is written once with both `listen`s: the other
            // port's is not tenant A's.
            let mut s = s.clone();
            if let Some(b) = s.block.as_mut() {
                b.retain(|d| {
                    d.words.first().is_none_or(|w| w != "listen")
                        || d.words.get(1).is_some_and(|w| w.ends_with(":18080"))
                });
            }
            s
        })
        .collect();
    assert!(!servers.is_empty(), "{conf}");
    let lists: serde_json::Map<String, serde_json::Value> = serde_json::from_str(matches).unwrap();
    let mine = lists.into_iter().filter(|(k, _)| k.starts_with("18080_")).collect();
    (normalized(&servers), mine)
}

fn dir_with(tag: &str, yaml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hr-innocent-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    dir
}

fn backends() -> BackendMap {
    let mut m = BackendMap::new();
    for ns in ["a", "b"] {
        m.insert(format!("{ns}/s:80"), "127.0.0.1:9".into());
        m.insert(format!("{ns}/t:80"), "127.0.0.1:10".into());
    }
    m
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
    fn another_tenants_values_never_change_mine(
        hv in value(),
        hn in header_name(),
        redirect in value(),
        w in (0u32..=1_000_000, 0u32..=1_000_000),
        allow in prop::collection::vec(header_name(), 1..64),
        secret in secret_bytes(),
        refs in prop::collection::vec(backend_ref(), 1..4),
        core in core(),
    ) {
        let base = generate_all(&[dir_with("base", TENANT_A)], &backends(), &opts()).unwrap();
        let yaml = format!(
            "{TENANT_A}{}{}",
            tenant_b(hv, hn, redirect, w, allow),
            tenant_b_objects(&secret, &refs, &core)
        );
        let g = generate_all(&[dir_with("mutated", &yaml)], &backends(), &opts())
            .map_err(|e| TestCaseError::fail(format!("the run failed: {e}")))?;
        prop_assert_eq!(
            tenant_a_view(&base.output.nginx_conf, &base.output.matches_json),
            tenant_a_view(&g.output.nginx_conf, &g.output.matches_json)
        );
        for d in &g.output.dropped {
            prop_assert_eq!(d.unit.route().map(|r| r.namespace.as_str()), Some("b"));
        }
        nginx_t("case", &g.output);
    }
}
