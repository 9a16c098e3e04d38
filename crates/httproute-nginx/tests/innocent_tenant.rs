//! The innocent tenant: random CRD-valid values in one tenant's objects (namespace `b`, its
//! own Gateway and port) never change what the other tenant (namespace `a`) gets: its
//! server blocks as NGINX reads them back (numbered generator variables and the other port's
//! `listen` of a server written for both aside) and its match
//! lists. With `NGX_MATCHES_NGINX` and `NGX_MATCHES_MODULE` set, every output also passes
//! `nginx -t`; without them that part is skipped (said once on stderr).
//! `HTTPROUTE_INNOCENT_CASES=N` runs N cases (default 24, a few seconds).

use std::path::PathBuf;

use httproute_nginx::conf::Stmt;
use httproute_nginx::{BackendMap, Carrier, Options, generate_all};
use proptest::prelude::*;

fn opts() -> Options {
    Options {
        module: std::env::var("NGX_MATCHES_MODULE")
            .unwrap_or_else(|_| "modules/ngx_http_matches_module.so".into()),
        carrier: Carrier::Preload,
        listen_address: Some("127.0.0.1".into()),
        certificates: Default::default(),
        resolvers: vec!["127.0.0.1:53".into()],
        experimental: false,
        nginx_version: (1, 28, 0),
        allow_external_name: false,
        global: Default::default(),
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
    ) {
        let base = generate_all(&[dir_with("base", TENANT_A)], &backends(), &opts()).unwrap();
        let yaml = format!("{TENANT_A}{}", tenant_b(hv, hn, redirect, w, allow));
        let g = generate_all(&[dir_with("mutated", &yaml)], &backends(), &opts())
            .map_err(|e| TestCaseError::fail(format!("the run failed: {e}")))?;
        prop_assert_eq!(
            tenant_a_view(&base.output.nginx_conf, &base.output.matches_json),
            tenant_a_view(&g.output.nginx_conf, &g.output.matches_json)
        );
        for (id, _) in &g.output.dropped {
            prop_assert_eq!(id.route.namespace.as_str(), "b");
        }
        nginx_t("case", &g.output);
    }
}
