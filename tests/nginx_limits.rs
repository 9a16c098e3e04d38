//! What NGINX refuses that the generator once wrote from CRD-valid values, against a real
//! NGINX: each configuration passes `nginx -t`, the object past the limit is left out (its
//! path answers 404) and the rest is served (its backend, closed here, gives 502).

mod common;

use common::{Prefix, free_port};
use httproute_nginx::BackendMap;

fn gateway(port: u16) -> String {
    format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n"
    )
}

fn route(kind: &str, name: &str, rest: &str) -> String {
    format!(
        "kind: {kind}\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n{rest}---\n"
    )
}

/// Generates from `yaml`, runs `nginx -t` on the output and starts NGINX; `(dropped rules,
/// NGINX)`.
fn load(tag: &str, yaml: &str, port: u16) -> (Vec<String>, common::Nginx) {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(std::path::Path::new("a.yaml"), yaml, &mut inputs).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("default/s:80".into(), "127.0.0.1:9".into());
    let opts = common::generator_options();
    let plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
    let out = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    let dropped = out.dropped.iter().map(ToString::to_string).collect();
    let dir = Prefix::scratch(&format!("limits-{tag}"));
    httproute_nginx::write_dir(&dir, &out).unwrap();
    let p = Prefix::existing(dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "{tag}: nginx -t:\n{text}\n{}", out.nginx_conf);
    (dropped, p.start())
}

#[test]
fn split_clients_weights_1_and_20001_load() {
    let port = free_port();
    let rules = "  rules:\n  - matches: [{path: {type: PathPrefix, value: /w}}]\n    backendRefs: [{name: s, port: 80, weight: 1}, {name: s, port: 80, weight: 20001}]\n  - matches: [{path: {type: PathPrefix, value: /v}}]\n    backendRefs: [{name: s, port: 80, weight: 20001}, {name: s, port: 80, weight: 1}]\n";
    let yaml = format!("{}{}", gateway(port), route("HTTPRoute", "r", rules));
    let (dropped, n) = load("split", &yaml, port);
    assert!(dropped.is_empty(), "{dropped:?}");
    assert_eq!(n.get("/w", &[]).status, 502);
    assert_eq!(n.get("/v", &[]).status, 502);
    n.finish();
}

#[test]
fn long_header_names_load_and_words_past_nginx_s_limit_drop_their_rule() {
    let port = free_port();
    let name = format!("x-{}", "n".repeat(48));
    let dollars = format!("/{}", "$".repeat(300));
    let grpc = format!(
        "  rules:\n  - matches: [{{method: {{service: a.B}}}}]\n    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {{set: [{{name: {name}, value: v}}]}}\n    backendRefs: [{{name: s, port: 80}}]\n"
    );
    let http = format!(
        "  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /h}}}}]\n    filters:\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {{set: [{{name: {name}, value: v}}], remove: [{name}-r]}}\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{path: {{type: PathPrefix, value: /dollars}}}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: \"{dollars}\"}}}}\n"
    );
    let yaml = format!(
        "{}{}{}",
        gateway(port),
        route("GRPCRoute", "g", &format!("  hostnames: [g.test]\n{grpc}")),
        // The HTTPRoute is the older: before NGINX 1.25.1 a plain port speaks its oldest
        // route's protocol (`servers::Speaks`), and this test is about words, not protocols.
        route(
            "HTTPRoute",
            "h, creationTimestamp: '2020-01-01T00:00:00Z'",
            &format!("  hostnames: [h.test]\n{http}")
        )
    );
    let (dropped, n) = load("headers", &yaml, port);
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("default/g rule 0: header name")), "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("default/h rule 1: ")), "{dropped:?}");
    let get = |path: &str| {
        n.raw(format!("GET {path} HTTP/1.0\r\nHost: h.test\r\n\r\n").as_bytes())
            .expect("request")
            .status
    };
    assert_eq!(get("/h"), 502, "the long response header name is served");
    assert_eq!(get("/dollars"), 404, "the redirect past 4,094 bytes is left out");
    n.finish();
}

/// A CRD-valid host name of 253 bytes, the `i`th.
fn long_host(i: usize) -> String {
    let h = format!("h{i:05}.{}.{}.{}.", "a".repeat(63), "b".repeat(63), "c".repeat(63));
    let rest = 253 - h.len() - ".test".len();
    format!("{h}{}.test", "d".repeat(rest))
}

/// Many host names, long (253 bytes) and short, exact and wildcard: NGINX builds its server
/// names hash without "could not build" (neither the refusal nor the "optimal" warning), and
/// a long host and a wildcard host are served.
#[test]
fn many_and_long_host_names_build_nginx_s_hashes() {
    let port = free_port();
    let mut yaml = gateway(port);
    let rule = "  rules:\n  - matches: [{path: {type: PathPrefix, value: /}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /to}, statusCode: 302}\n";
    // 1,600 long names, 16 to a route (the CRD's maxItems), 1,000 short and 400 wildcards.
    let mut hosts: Vec<String> = (0..1600).map(long_host).collect();
    hosts.extend((0..1000).map(|i| format!("s{i}.example")));
    hosts.extend((0..400).map(|i| format!("*.w{i}.example")));
    for (k, chunk) in hosts.chunks(16).enumerate() {
        let list = chunk.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ");
        yaml += &route("HTTPRoute", &format!("r{k}"), &format!("  hostnames: [{list}]\n{rule}"));
    }
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(std::path::Path::new("a.yaml"), &yaml, &mut inputs).unwrap();
    let opts = common::generator_options();
    let plan = httproute_nginx::plan_for(&inputs, &BackendMap::new(), &opts);
    let out = httproute_nginx::emit::emit(&plan, &opts).expect("written");
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
    assert!(out.nginx_conf.contains("server_names_hash_max_size"), "the defaults do not hold them");
    let dir = Prefix::scratch("limits-hosts");
    httproute_nginx::write_dir(&dir, &out).unwrap();
    let p = Prefix::existing(dir, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "nginx -t:\n{text}");
    assert!(!text.contains("could not build"), "nginx -t:\n{text}");
    let n = p.start();
    for host in [long_host(0), long_host(1599), "s999.example".into(), "x.w399.example".into()] {
        let r =
            n.raw(format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes()).expect("request");
        assert_eq!(r.status, 302, "{host}");
    }
    n.finish();
}

/// Budget: list memory (issue #45), against the module. Tenant `default`'s route on a.test,
/// and tenant b's 120 newer routes on b.test (a newer Gateway on the same port), each one
/// match on `/x` of 16 headers with 4,096-byte values (CRD-valid): one list of 7.9 MB of
/// JSON, which the module may take 142 MB to parse (18 per byte, issue #46; 10 such routes
/// were past it at 192), past its 128 MiB. Before, `nginx -t` refused the whole
/// configuration ("the compiled lists need more memory than allowed"), a's route with it;
/// now b's newer routes past the one-list budget are left out, NGINX loads and a's route is
/// served.
#[test]
fn a_newer_tenant_s_long_list_leaves_nginx_loading() {
    let port = free_port();
    let mut yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw, namespace: default, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP, hostname: a.test}}]\n---\nkind: HTTPRoute\nmetadata: {{name: r, namespace: default, creationTimestamp: \"2026-01-01T00:00:01Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /a}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n---\nkind: Gateway\nmetadata: {{name: gw, namespace: b, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP, hostname: b.test}}]\n---\n"
    );
    for r in 0..120 {
        let headers: Vec<String> = (0..16)
            .map(|h| format!("{{name: x-h{h}, value: \"{r}-{h}-{}\"}}", "v".repeat(4090)))
            .collect();
        yaml += &format!(
            "kind: HTTPRoute\nmetadata: {{name: r{r}, namespace: b, creationTimestamp: \"2026-01-02T00:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /x}}, headers: [{}]}}]\n    backendRefs: [{{name: s, port: 80}}]\n---\n",
            (r + 1) / 60,
            (r + 1) % 60,
            headers.join(", ")
        );
    }
    let (_, n) = load("list-memory", &yaml, port);
    let get = |host: &str, path: &str| {
        let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
        n.raw(req.as_bytes()).expect("request").status
    };
    assert_eq!(get("a.test", "/a"), 502, "a's route is served");
    assert_eq!(get("b.test", "/x"), 404, "b's entries need their headers");
    n.finish();
}
