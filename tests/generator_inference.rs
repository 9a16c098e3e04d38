//! InferencePool backends written by httproute-nginx (#47 item 3), run in a real NGINX with
//! the module: the picker is asked, its endpoint serves, and with none FailClose answers 500
//! and FailOpen sends to the pool's own endpoints. The picker is reached through NGF's shim
//! (`--epp-shim`, the fake of `common::epp_shim`) as the module's shim mode does; the gRPC
//! form (`http_matches_epp grpc://PICKER`) is checked by `nginx -t` once the module has it.

mod common;

use common::epp_shim::{Mode, Server};
use common::{Nginx, Prefix};
use httproute_nginx::{BackendMap, Options};

/// A Gateway on `port`; `/close` to a FailClose pool, `/open` to a FailOpen one, both picked by
/// `default/epp:9002`.
fn manifests(port: u16) -> String {
    let pool = |name: &str, mode: &str| {
        format!(
            "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
             metadata: {{name: {name}, namespace: default}}\nspec:\n  \
             selector: {{matchLabels: {{app: vllm}}}}\n  targetPorts: [{{number: 8000}}]\n  \
             endpointPickerRef: {{name: epp, port: {{number: 9002}}, failureMode: {mode}}}\n---\n"
        )
    };
    let rule = |path: &str, pool: &str| {
        format!(
            "  - matches: [{{path: {{type: PathPrefix, value: {path}}}}}]\n    backendRefs:\n    \
             - {{group: inference.networking.k8s.io, kind: InferencePool, name: {pool}}}\n"
        )
    };
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n\
         metadata: {{name: gw, namespace: default}}\nspec:\n  gatewayClassName: nginx\n  \
         listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n{}{}\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
         metadata: {{name: llm, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  \
         rules:\n{}{}",
        pool("closed", "FailClose"),
        pool("opened", "FailOpen"),
        rule("/close", "closed"),
        rule("/open", "opened"),
    )
}

/// The generated configuration on `port` (picker and pool `opened` as `--backend`s), checked by
/// `nginx -t`: (prefix, whether the check passed, its output).
fn generated(port: u16, epp_shim: Option<String>, backends: &BackendMap) -> (Prefix, bool, String) {
    let src = Prefix::scratch("inference-manifests");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), manifests(port)).unwrap();
    let mut opts: Options = common::generator_options();
    opts.global.epp_shim = epp_shim;
    let (g, warnings) = httproute_nginx::generate(&[src], backends, &opts).expect("generate");
    assert!(warnings.is_empty(), "{warnings:?}");
    let out = Prefix::scratch("inference-generated");
    httproute_nginx::write_dir(&out, &g).unwrap();
    let p = Prefix::existing(out, "nginx.conf", port);
    let (ok, text) = p.test();
    (p, ok, format!("{text}\n{}", g.nginx_conf))
}

/// The picker is asked and its endpoint serves; an endpoint it names that is not the pool's
/// (here another server that would answer, as 169.254.169.254 would) is never proxied to:
/// the pool's upstream keeps only its own endpoints of the list (`http_matches_epp_endpoints`),
/// else its round robin; with no endpoint at all FailClose answers 500.
#[test]
fn the_picker_is_asked_and_only_the_pools_endpoints_are_proxied_to() {
    let (pool, outsider) = (Server::echo(), Server::echo());
    let shim = Server::shim(Mode::Endpoint(pool.endpoint()));
    let port = common::free_port();
    let mut backends = BackendMap::new();
    backends.insert("default/epp:9002".into(), "127.0.0.1:9002".into());
    backends.insert("default/opened:8000".into(), pool.endpoint());
    backends.insert("default/closed:8000".into(), pool.endpoint());
    let (p, ok, text) = generated(port, Some(shim.url()), &backends);
    assert!(ok, "nginx -t:\n{text}");
    let n: Nginx = p.start();
    // The picker's endpoint serves, with the client's URI; the shim is told the picker.
    for path in ["/close/v1?x=1", "/open/v1?x=1"] {
        let r = n.get(path, &[]);
        assert_eq!(r.status, 200, "{path}: {r:?}");
        let got = pool.take();
        assert_eq!(got.len(), 1, "{path}");
        assert_eq!(got[0].request_line, format!("GET {path} HTTP/1.1"));
    }
    let asked = shim.take();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].header("X-EPP-Host"), Some("127.0.0.1"));
    assert_eq!(asked[0].header("X-EPP-Port"), Some("9002"));
    // An endpoint not the pool's: never contacted, the pool's round robin serves (both modes).
    shim.set_mode(Mode::Endpoint(outsider.endpoint()));
    for path in ["/close/v1", "/open/v1"] {
        assert_eq!(n.get(path, &[]).status, 200, "{path}");
        let got = pool.take();
        assert_eq!(got.len(), 1, "{path}");
        assert_eq!(got[0].request_line, format!("GET {path} HTTP/1.1"));
    }
    // No endpoint: FailClose answers 500, FailOpen goes to the pool.
    shim.set_mode(Mode::NoEndpoint);
    assert_eq!(n.get("/close/v1", &[]).status, 500);
    assert_eq!(n.get("/open/v1", &[]).status, 200);
    let fallback = pool.take();
    assert_eq!(fallback.len(), 1);
    assert_eq!(fallback[0].request_line, "GET /open/v1 HTTP/1.1");
    assert!(outsider.take().is_empty());
    n.finish();
}

/// The gRPC form as written by default: `nginx -t` with the module loaded accepts it
/// (the module's `http_matches_epp grpc://ADDRESS`).
#[test]
fn the_grpc_form_loads() {
    let mut backends = BackendMap::new();
    backends.insert("default/epp:9002".into(), "127.0.0.1:9002".into());
    backends.insert("default/opened:8000".into(), "127.0.0.1:8000".into());
    backends.insert("default/closed:8000".into(), "127.0.0.1:8000".into());
    let (_, ok, text) = generated(common::free_port(), None, &backends);
    assert!(text.contains("http_matches_epp grpc://default_epp_9002;"), "{text}");
    assert!(ok, "nginx -t:\n{text}");
}

/// Tenant `blind`'s pool has a picker whose endpoints nobody gave (no EndpointSlice, no
/// `--backend`): it is not written as its cluster DNS name (NGINX resolves that when it loads,
/// and `nginx -t` fails for every tenant) but refused, BackendNotFound, its rule answering 500;
/// tenant `default`'s route beside it loads and serves.
#[test]
fn a_picker_without_known_endpoints_is_refused_and_the_innocent_tenant_loads() {
    let innocent = Server::echo();
    let port = common::free_port();
    let yaml = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n\
         metadata: {{name: gw, namespace: default}}\nspec:\n  gatewayClassName: nginx\n  \
         listeners: [{{name: http, port: {port}, protocol: HTTP, \
         allowedRoutes: {{namespaces: {{from: All}}}}}}]\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
         metadata: {{name: web, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  \
         rules:\n  - matches: [{{path: {{type: PathPrefix, value: /web}}}}]\n    \
         backendRefs: [{{name: web, port: 80}}]\n---\n\
         apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
         metadata: {{name: llm, namespace: blind}}\nspec:\n  \
         selector: {{matchLabels: {{app: vllm}}}}\n  targetPorts: [{{number: 8000}}]\n  \
         endpointPickerRef: {{name: epp, port: {{number: 9002}}, failureMode: FailOpen}}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n\
         metadata: {{name: llm, namespace: blind}}\nspec:\n  \
         parentRefs: [{{name: gw, namespace: default}}]\n  rules:\n  \
         - matches: [{{path: {{type: PathPrefix, value: /llm}}}}]\n    backendRefs:\n    \
         - {{group: inference.networking.k8s.io, kind: InferencePool, name: llm}}\n"
    );
    let src = Prefix::scratch("inference-blind-manifests");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("all.yaml"), yaml).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("default/web:80".into(), innocent.endpoint());
    backends.insert("blind/llm:8000".into(), "127.0.0.1:9".into());
    let g = httproute_nginx::generate_all(&[src], &backends, &common::generator_options())
        .expect("generate");
    let conf = &g.output.nginx_conf;
    assert!(!conf.contains("svc.cluster.local"), "{conf}");
    let refused: Vec<String> = (g.status.routes.iter())
        .flat_map(|r| {
            let id = r.id.to_string();
            let cs = r.parents.iter().flat_map(|(_, cs)| cs);
            cs.filter(|c| !c.ok).map(move |c| format!("{id} {}", c.reason.as_str()))
        })
        .collect();
    assert_eq!(refused, ["blind/llm BackendNotFound"]);
    let w = g.warnings.join("\n");
    assert!(w.contains("endpoint picker Service blind/epp has no known endpoints"), "{w}");
    let out = Prefix::scratch("inference-blind-generated");
    httproute_nginx::write_dir(&out, &g.output).unwrap();
    let p = Prefix::existing(out, "nginx.conf", port);
    let (ok, text) = p.test();
    assert!(ok, "nginx -t:\n{text}\n{conf}");
    let n: Nginx = p.start();
    assert_eq!(n.get("/web/x", &[]).status, 200);
    assert_eq!(innocent.take().len(), 1);
    assert_eq!(n.get("/llm/v1", &[]).status, 500);
    n.finish();
}
