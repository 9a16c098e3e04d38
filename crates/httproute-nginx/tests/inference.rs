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
    // FailClose (rule 0): no list from the picker answers 500; the pool's upstream, whose
    // module balancer keeps only the pool's own endpoints of the picker's list.
    assert_eq!(
        location(&conf, "/_httproute-internal/0"),
        "internal; set $epp_internal_path /_httproute-internal/0-inference; \
         http_matches_epp grpc://default_epp_9002; }"
    );
    let inner = location(&conf, "/_httproute-internal/0-inference");
    assert!(
        inner.starts_with("internal; if ($inference_workload_endpoints = \"\") { return 500; }")
    );
    assert!(inner.ends_with("proxy_pass http://default_vllm-close_pool$request_uri; }"), "{inner}");
    let pool = "upstream default_vllm-close_pool {\n        http_matches_epp_endpoints;\n        \
                server 10.1.0.1:8000;\n        server 10.1.0.3:8000;";
    assert!(conf.contains(pool), "{pool}\nnot in\n{conf}");
    assert!(conf.contains("upstream default_epp_9002 {\n        server 127.0.0.1:9002;"));
    // FailOpen (rule 1, and rule 2's first share): the pool's upstream, no 500; no tenant
    // address is a key of any map.
    let inner = location(&conf, "/_httproute-internal/1-inference");
    assert!(!inner.contains("return 500"), "{inner}");
    assert!(inner.ends_with("proxy_pass http://default_vllm-open_pool$request_uri; }"), "{inner}");
    let b0 = location(&conf, "/_httproute-internal/2-b0-inference");
    assert!(b0.ends_with("proxy_pass http://default_vllm-open_pool$request_uri; }"), "{b0}");
    assert!(!conf.contains("map $inference_workload_endpoint"), "{conf}");
    assert_eq!(conf.matches("upstream default_vllm-open_pool {").count(), 1);
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
            "http_matches_epp_endpoints;",
            "server 10.1.0.1:8000;",
            "server 10.1.0.1:8001;",
            "server 10.1.0.3:8000;",
            "server 10.1.0.3:8001;",
            "keepalive 16;"
        ]
    );
    // `tier: cpu` is not the selector's: 10.2.0.9 is not the pool's.
    let other = upstream("other_models_pool");
    assert_eq!(other, ["http_matches_epp_endpoints;", "server 10.2.0.1:8000;", "keepalive 16;"]);
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

/// `n` routes, each with a rule to InferencePool `vllm` and one to Service `web`, each of
/// which has `e` ready endpoints.
fn many_refs(n: usize, e: usize) -> String {
    let mut yaml = String::from(
        "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  \
         listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n\
         apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
         metadata: {name: vllm, namespace: default}\nspec:\n  \
         selector: {matchLabels: {app: vllm}}\n  targetPorts: [{number: 8000}]\n  \
         endpointPickerRef: {name: epp, port: {number: 9002}}\n---\n\
         kind: Service\nmetadata: {name: web, namespace: default}\nspec:\n  ports: [{port: 80}]\n---\n",
    );
    for (name, labels) in [("pool", "app: vllm"), ("web", "kubernetes.io/service-name: web")] {
        let addrs: Vec<String> = (0..e).map(|i| format!("10.{}.{}.1", i / 250, i % 250)).collect();
        yaml += &format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{name: {name}, namespace: default, labels: {{{labels}}}}}\n\
             addressType: IPv4\nports: [{{name: \"\", port: 8080}}]\n\
             endpoints: [{}]\n---\n",
            addrs.iter().map(|a| format!("{{addresses: [{a}]}}")).collect::<Vec<_>>().join(", ")
        );
    }
    for i in 0..n {
        yaml += &format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i}, namespace: default}}\nspec:\n  \
             parentRefs: [{{name: gw}}]\n  hostnames: [r{i}.example]\n  rules:\n  \
             - matches: [{{path: {{type: PathPrefix, value: /llm}}}}]\n    backendRefs:\n    \
             - {{group: inference.networking.k8s.io, kind: InferencePool, name: vllm}}\n  \
             - backendRefs: [{{name: web, port: 80}}]\n---\n"
        );
    }
    yaml
}

/// Each pool's and Service port's endpoints are resolved once and shared by every reference:
/// the addresses resolved do not grow with the routes (n, 2n), grow with the endpoints (e,
/// 2e), and every reference holds the one list.
#[test]
fn endpoints_are_resolved_once_per_pool_and_service_however_many_references() {
    use httproute_nginx::plan::{PlanOptions, Target, plan};
    let mut backends = BackendMap::new();
    backends.insert("default/epp:9002".into(), "127.0.0.1:9002".into());
    let work = |n: usize, e: usize| {
        let p = plan(common::inputs(&many_refs(n, e)), &PlanOptions::new(&backends));
        let targets: Vec<Target> = (p.ports.iter())
            .flat_map(|p| &p.servers)
            .flat_map(|s| &s.rules)
            .flat_map(|r| r.backends.iter().map(|b| b.target.clone()))
            .collect();
        let (mut pools, mut webs) = (Vec::new(), Vec::new());
        for t in targets {
            match t {
                Target::Inference(p) => pools.push(p.servers.clone()),
                Target::Upstream { servers, .. } => webs.push(servers),
                t => panic!("{t}"),
            }
        }
        assert_eq!((pools.len(), webs.len()), (n, n));
        for list in [&pools, &webs] {
            assert_eq!(list[0].len(), e);
            assert!(list.iter().all(|l| std::sync::Arc::ptr_eq(l, &list[0])));
        }
        eprintln!("n {n} e {e}: {:?}", p.work);
        p.work.endpoints
    };
    let one = work(20, 50);
    assert_eq!(one, 1 + 2 * 50, "the picker's, the pool's and the Service's");
    assert_eq!(work(40, 50), one);
    assert_eq!(work(20, 100), 1 + 2 * 100);
}

/// Tenant `a`'s pool, then tenant `b`'s `n` pools that all select one label over `n`
/// EndpointSlices of one address each, newer, each the backend of a route of `b`.
fn shared_selector(n: usize) -> String {
    let mut yaml = String::from(
        "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  \
         listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n",
    );
    let pool = |ns: &str, name: &str, t: &str| {
        format!(
            "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
             metadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"{t}\"}}\nspec:\n  \
             selector: {{matchLabels: {{app: x}}}}\n  targetPorts: [{{number: 8000}}]\n  \
             endpointPickerRef: {{name: epp, port: {{number: 9002}}}}\n---\n"
        )
    };
    let slice = |ns: &str, i: usize| {
        format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{name: s{i}, namespace: {ns}, labels: {{app: x}}}}\n\
             addressType: IPv4\nports: [{{name: \"\", port: 8080}}]\n\
             endpoints: [{{addresses: [10.{}.{}.1]}}]\n---\n",
            i / 250,
            i % 250
        )
    };
    let route = |ns: &str, i: usize, pool: &str| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i}, namespace: {ns}}}\nspec:\n  \
             parentRefs: [{{name: gw, namespace: default}}]\n  hostnames: [{ns}{i}.example]\n  \
             rules:\n  - backendRefs:\n    \
             - {{group: inference.networking.k8s.io, kind: InferencePool, name: {pool}}}\n---\n"
        )
    };
    yaml += &(pool("a", "mine", "2026-01-01T00:00:00Z") + &slice("a", 0) + &route("a", 0, "mine"));
    for i in 0..n {
        yaml += &(pool("b", &format!("p{i}"), "2026-02-01T00:00:00Z") + &slice("b", i));
        yaml += &route("b", i, &format!("p{i}"));
    }
    yaml
}

/// InferencePools that share a selector cost their namespace what they write, within its
/// budget (`limits::POOL_UNITS_PER_TENANT`, here 2,000 units): a red team's `n` pools over `n`
/// slices wrote n x n addresses (400: 5.3 MB of nginx.conf, 800: 20.8 MB). The addresses
/// resolved stay within the budget at n and 2n, the newer pools past it are refused with the
/// budget named, and the older tenant's pool is written as it was alone.
#[test]
fn pools_sharing_a_selector_cost_their_namespace_its_budget_at_most() {
    use httproute_nginx::plan::{PlanOptions, Target, plan};
    let mut backends = BackendMap::new();
    backends.insert("a/epp:9002".into(), "127.0.0.1:9002".into());
    backends.insert("b/epp:9002".into(), "127.0.0.1:9003".into());
    let budget = 2_000;
    let run = |n: usize| {
        let opts = PlanOptions { pool_units_per_tenant: budget, ..PlanOptions::new(&backends) };
        let p = plan(common::inputs(&shared_selector(n)), &opts);
        let mut written = std::collections::BTreeMap::new();
        for r in p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.rules) {
            for b in &r.backends {
                if let Target::Inference(pool) = &b.target {
                    written.insert(pool.id.clone(), pool.servers.len());
                }
            }
        }
        let refused = p.warnings.iter().filter(|w| w.contains("budget: pool endpoints")).count();
        (p.work.endpoints, written, refused)
    };
    // A pool over n one-address slices takes 3n units (a slice, its address, the address
    // taken): the budget admits 2,000 / 3n of tenant b's pools, the oldest (here: equal
    // timestamps, then namespace/name), and refuses the others with it named.
    for (n, admitted) in [
        (100, ["b/p0", "b/p1", "b/p10", "b/p11", "b/p12", "b/p13"].as_slice()),
        (200, &["b/p0", "b/p1", "b/p10"]),
    ] {
        let (addresses, written, refused) = run(n);
        assert_eq!(written.get("a/mine"), Some(&1), "tenant a's pool, as alone");
        let b: Vec<&str> =
            written.keys().filter(|id| id.starts_with("b/")).map(String::as_str).collect();
        assert_eq!(b, admitted, "n = {n}");
        assert!(written.iter().filter(|(id, _)| id.starts_with("b/")).all(|(_, &s)| s == n));
        assert_eq!(refused, n - admitted.len(), "n = {n}");
        assert!(addresses <= budget + 3, "{addresses} addresses resolved at n = {n}");
    }
    // Within the budget the shape is what it was: n x n addresses.
    let (_, written, _) = run(10);
    assert_eq!(
        written.iter().filter(|(id, _)| id.starts_with("b/")).map(|(_, s)| s).sum::<usize>(),
        100
    );
}

/// The pool budget's decisions follow the pools' age, not the documents' order, and a pool is
/// its own namespace's to pay for, whoever refers to it: tenant b's older pool `old` (given
/// last, and last by name) is admitted before its newer ones, and tenant c's routes referring to b's pools (by a
/// ReferenceGrant) change nothing of c's own budget nor of which of b's are admitted.
#[test]
fn the_pool_budget_follows_age_and_the_pool_s_own_namespace() {
    use httproute_nginx::plan::{PlanOptions, Target, plan};
    let mut backends = BackendMap::new();
    backends.insert("a/epp:9002".into(), "127.0.0.1:9002".into());
    backends.insert("b/epp:9002".into(), "127.0.0.1:9003".into());
    // b's pools p0..p9 (2026-02), then b's `zold` (2026-01-15) last in the file: each takes
    // 3 x 10 = 30 units, so a budget of 100 admits three.
    let mut yaml = shared_selector(10);
    yaml += "apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n\
             metadata: {name: zold, namespace: b, creationTimestamp: \"2026-01-15T00:00:00Z\"}\n\
             spec:\n  selector: {matchLabels: {app: x}}\n  targetPorts: [{number: 8000}]\n  \
             endpointPickerRef: {name: epp, port: {number: 9002}}\n---\n\
             kind: HTTPRoute\nmetadata: {name: rold, namespace: b}\nspec:\n  \
             parentRefs: [{name: gw, namespace: default}]\n  hostnames: [bold.example]\n  \
             rules:\n  - backendRefs:\n    \
             - {group: inference.networking.k8s.io, kind: InferencePool, name: zold}\n---\n";
    let admitted = |yaml: &str| {
        let opts = PlanOptions { pool_units_per_tenant: 100, ..PlanOptions::new(&backends) };
        let p = plan(common::inputs(yaml), &opts);
        let mut ids = std::collections::BTreeSet::new();
        for r in p.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.rules) {
            for b in &r.backends {
                if let Target::Inference(pool) = &b.target {
                    ids.insert(pool.id.clone());
                }
            }
        }
        ids
    };
    let want: std::collections::BTreeSet<String> =
        ["a/mine", "b/p0", "b/p1", "b/zold"].iter().map(|s| s.to_string()).collect();
    assert_eq!(admitted(&yaml), want);
    // The documents in reverse order: the same decisions.
    let mut reversed: Vec<&str> = yaml.split("---\n").filter(|d| !d.trim().is_empty()).collect();
    reversed.reverse();
    assert_eq!(admitted(&(reversed.join("---\n") + "---\n")), want);
    // Tenant c refers to every pool of b (granted): b's admissions and a's are unchanged, and
    // c's references to b's refused pools are refused with b's budget named.
    let mut with_c = yaml.clone();
    with_c += "kind: ReferenceGrant\napiVersion: gateway.networking.k8s.io/v1beta1\n\
               metadata: {name: c-uses-pools, namespace: b}\nspec:\n  \
               from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: c}]\n  \
               to: [{group: inference.networking.k8s.io, kind: InferencePool}]\n---\n";
    for i in 0..10 {
        with_c += &format!(
            "kind: HTTPRoute\nmetadata: {{name: c{i}, namespace: c}}\nspec:\n  \
             parentRefs: [{{name: gw, namespace: default}}]\n  hostnames: [c{i}.example]\n  \
             rules:\n  - backendRefs:\n    \
             - {{group: inference.networking.k8s.io, kind: InferencePool, name: p{i}, namespace: b}}\n---\n"
        );
    }
    assert_eq!(admitted(&with_c), want);
}

/// `--epp-shim` is checked when the arguments are read: a URL the module's `http_matches_epp`
/// takes (scheme, host, port), never a word that would break or add to nginx.conf.
#[test]
fn the_epp_shim_url_is_checked_at_argument_parse() {
    use httproute_nginx::emit_global::parse_epp_shim;
    for ok in ["http://127.0.0.1:54800", "https://shim.example", "http://[::1]:54800"] {
        assert_eq!(parse_epp_shim(ok).as_deref(), Ok(ok));
    }
    for bad in [
        "127.0.0.1:54800",
        "http://",
        "http://127.0.0.1:54800/path",
        "http://127.0.0.1:0",
        "http://127.0.0.1:99999",
        "http://$host:54800",
        "http://a b",
        "http://x;return 200",
        "grpc://127.0.0.1:9002",
    ] {
        let e = parse_epp_shim(bad).expect_err(bad);
        assert!(e.starts_with("--epp-shim"), "{e}");
    }
}
