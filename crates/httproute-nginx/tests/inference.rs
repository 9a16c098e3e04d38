//! InferencePool backends (#47 item 3): the pool's endpoints, its picker, NGF's location
//! shape for FailOpen and FailClose, ReferenceGrants and the route's status.

mod common;

use httproute_nginx::{BackendMap, Generated, generate_all};

/// `tests/data/inference`, with the pickers `default/epp:9002` at 127.0.0.1:9002 and
/// `other/other-epp:9002` at 127.0.0.1:9003 (the picker of namespace `fourth` is given no
/// endpoints).
fn run() -> Generated {
    let mut backends = BackendMap::new();
    backends.insert("default/epp:9002".into(), "127.0.0.1:9002".into());
    backends.insert("other/other-epp:9002".into(), "127.0.0.1:9003".into());
    generate_all(&[common::data("inference/inputs.yaml")], &backends, &common::options()).unwrap()
}

/// The whole configuration, status and warnings of the set; `UPDATE_GOLDEN=1` rewrites them.
#[test]
fn inference_golden_files() {
    let g = run();
    let file = common::data("inference/expected/nginx.conf");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&file, &g.output.nginx_conf).unwrap();
    }
    assert_eq!(g.output.nginx_conf, std::fs::read_to_string(file).unwrap());
    common::assert_golden_status("inference", &g);
}

/// The body of `location = PATH { ... }` in `conf` (one line, as the generator writes it).
fn location<'a>(conf: &'a str, path: &str) -> &'a str {
    let head = format!("location = {path} {{ ");
    let line = conf.lines().find_map(|l| l.trim().strip_prefix(head.as_str()));
    line.unwrap_or_else(|| panic!("no location {path} in\n{conf}"))
}

#[test]
fn the_rules_location_asks_the_picker_and_redirects_to_the_pools_proxy() {
    let conf = run().output.nginx_conf;
    // FailClose (rule 0): no endpoint from the picker answers 500.
    assert_eq!(
        location(&conf, "/_httproute-internal/0"),
        "internal; set $epp_internal_path /_httproute-internal/0-inference; \
         http_matches_epp grpc://default_epp_9002; }"
    );
    let inner = location(&conf, "/_httproute-internal/0-inference");
    assert!(
        inner.starts_with("internal; if ($inference_workload_endpoint = \"\") { return 500; }")
    );
    assert!(inner.ends_with("proxy_pass http://$inference_workload_endpoint$request_uri; }"));
    assert!(conf.contains("upstream default_epp_9002 {\n        server 127.0.0.1:9002;"));
    // FailOpen (rule 1): a map whose empty value is the pool's upstream.
    let inner = location(&conf, "/_httproute-internal/1-inference");
    assert!(!inner.contains("return 500"), "{inner}");
    let var = inner.split("proxy_pass http://$").nth(1).unwrap().split('$').next().unwrap();
    let map = format!(
        "map $inference_workload_endpoint ${var} {{\n        \"\" default_vllm-open_pool;\n        \
         default $inference_workload_endpoint;\n    }}"
    );
    assert!(conf.contains(&map), "{map}\nnot in\n{conf}");
    // Two pools in one rule (3:1): split_clients between two picker locations.
    assert!(
        location(&conf, "/_httproute-internal/2").contains("rewrite ^ /_httproute-internal/2-$")
    );
    assert!(location(&conf, "/_httproute-internal/2-b0").contains("grpc://default_epp_9002;"));
    assert!(location(&conf, "/_httproute-internal/2-b1").contains("grpc://other_other-epp_9002;"));
}

/// The pool's endpoints: the ready addresses of the EndpointSlices of its namespace labeled
/// with every selector pair, each with every target port.
#[test]
fn the_pools_endpoints_are_its_labeled_slices_ready_addresses_on_each_target_port() {
    let conf = run().output.nginx_conf;
    let upstream = |name: &str| {
        let start = conf.find(&format!("upstream {name} {{")).unwrap();
        let block = &conf[start..];
        block[..block.find('}').unwrap()]
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        upstream("default_vllm-open_pool"),
        [
            "server 10.1.0.1:8000;",
            "server 10.1.0.1:8001;",
            "server 10.1.0.3:8000;",
            "server 10.1.0.3:8001;",
            "keepalive 16;"
        ]
    );
    // `tier: cpu` is not the selector's: 10.2.0.9 is not the pool's.
    assert_eq!(upstream("other_models_pool"), ["server 10.2.0.1:8000;", "keepalive 16;"]);
}

/// A missing pool is BackendNotFound, one the CRD refuses too, and one whose picker has no
/// known endpoints (never written as a name NGINX resolves when it loads); another
/// namespace's pool needs a ReferenceGrant; their shares answer 500.
#[test]
fn a_missing_or_ungranted_pool_does_not_resolve() {
    let g = run();
    let reasons: Vec<(String, String)> = g
        .status
        .routes
        .iter()
        .flat_map(|r| {
            let id = r.id.to_string();
            r.parents.iter().flat_map(move |(_, cs)| {
                let id = id.clone();
                cs.iter().map(move |c| (id.clone(), format!("{}:{}", c.ok, c.reason.as_str())))
            })
        })
        .filter(|(_, c)| c.starts_with("false"))
        .collect();
    assert_eq!(
        reasons,
        [
            ("default/broken".to_owned(), "false:BackendNotFound".to_owned()),
            ("fourth/blind".to_owned(), "false:BackendNotFound".to_owned()),
            ("third/ungranted".to_owned(), "false:RefNotPermitted".to_owned()),
        ]
    );
    let w = g.warnings.join("\n");
    assert!(w.contains("InferencePool default/no-such-pool does not exist"), "{w}");
    assert!(w.contains("InferencePool default/refused is refused"), "{w}");
    assert!(
        w.contains("endpoint picker Service fourth/nobody-knows has no known endpoints"),
        "{w}"
    );
    assert!(!g.output.nginx_conf.contains("svc.cluster.local"));
}
