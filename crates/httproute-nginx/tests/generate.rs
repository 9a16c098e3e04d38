//! The generator without NGINX: golden files, determinism, precedence order, input errors,
//! and `explain`.

mod common;

use std::path::{Path, PathBuf};

use httproute_nginx::explain::{Request, explain};
use httproute_nginx::model::load;
use httproute_nginx::plan::{Loc, Target};
use httproute_nginx::{BackendMap, Carrier, Options, generate, generate_all};

/// The plan of `inputs` with these backends and the default options.
fn plan(
    inputs: &httproute_nginx::model::Inputs,
    backends: &BackendMap,
) -> httproute_nginx::plan::Plan {
    httproute_nginx::plan::plan(inputs, &httproute_nginx::plan::PlanOptions::new(backends))
}

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

/// tests/data/tls/test.crt and test.key (a self-signed P-256 certificate for 100 years), in
/// base64 as a Secret's `data` has them.
fn test_pem() -> (String, String) {
    use base64::Engine as _;
    let b64 =
        |f: &str| base64::engine::general_purpose::STANDARD.encode(std::fs::read(data(f)).unwrap());
    (b64("tls/test.crt"), b64("tls/test.key"))
}

fn opts(carrier: Carrier) -> Options {
    Options { carrier, ..common::options() }
}

fn backends() -> BackendMap {
    let mut m = BackendMap::new();
    m.insert("default/coffee-v1-svc:80".into(), "10.0.0.1:8080".into());
    m
}

/// `UPDATE_GOLDEN=1 cargo test -p httproute-nginx` rewrites the expected files.
#[test]
fn cafe_golden_files() {
    let g = generate_all(&[data("cafe")], &backends(), &opts(Carrier::Preload)).unwrap();
    let (out, warnings) = (&g.output, &g.warnings);
    let status = httproute_nginx::status::yaml(&g.status);
    assert!(warnings.is_empty(), "{warnings:?}");
    let dir = data("cafe/expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(dir.join("nginx.conf"), &out.nginx_conf).unwrap();
        std::fs::write(dir.join("matches.json"), &out.matches_json).unwrap();
        std::fs::write(dir.join("status.yaml"), &status).unwrap();
    }
    assert_eq!(out.nginx_conf, std::fs::read_to_string(dir.join("nginx.conf")).unwrap());
    assert_eq!(out.matches_json, std::fs::read_to_string(dir.join("matches.json")).unwrap());
    assert_eq!(status, std::fs::read_to_string(dir.join("status.yaml")).unwrap());
}

/// A set with one listener or route per condition reason: its status file, and the
/// configuration it gives loads whatever is missing (tests/cluster_states.rs runs such sets).
#[test]
fn status_golden_files_name_every_reason() {
    let g = generate_all(&[data("reasons")], &BackendMap::new(), &opts(Carrier::Preload)).unwrap();
    let (status, warnings) = (httproute_nginx::status::yaml(&g.status), &g.warnings);
    // File names relative to the set, so the file is the same in every checkout.
    let dir = format!("{}/", data("reasons").display());
    let warnings: Vec<String> = warnings.iter().map(|w| w.replace(&dir, "")).collect();
    let dir = data("reasons/expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(dir.join("status.yaml"), &status).unwrap();
        std::fs::write(dir.join("warnings.txt"), warnings.join("\n") + "\n").unwrap();
    }
    assert_eq!(status, std::fs::read_to_string(dir.join("status.yaml")).unwrap());
    assert_eq!(
        warnings.join("\n") + "\n",
        std::fs::read_to_string(dir.join("warnings.txt")).unwrap()
    );
    for reason in [
        "NotAllowedByListeners",
        "NoMatchingListenerHostname",
        "NoMatchingParent",
        "BackendNotFound",
        "RefNotPermitted",
        "InvalidKind",
        "UnsupportedValue",
        "InvalidCertificateRef",
        "UnsupportedProtocol",
        "PortUnavailable",
    ] {
        assert!(status.contains(&format!("reason: {reason}\n")), "{reason}");
    }
}

#[test]
fn same_input_same_bytes() {
    for carrier in [Carrier::Preload, Carrier::Inline, Carrier::Variable] {
        let a = generate(&[data("cafe")], &backends(), &opts(carrier)).unwrap().0;
        let b = generate(
            &[data("cafe/routes.yaml"), data("cafe/gateway.yaml")],
            &backends(),
            &opts(carrier),
        )
        .unwrap()
        .0;
        assert_eq!(a.nginx_conf, b.nginx_conf);
        assert_eq!(a.matches_json, b.matches_json);
    }
}

/// `load_text`, with a route the CRDs refuse (left out, with a warning) as an error.
fn load_checked(
    file: &str,
    text: &str,
) -> Result<httproute_nginx::model::Inputs, httproute_nginx::model::InputError> {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new(file), text, &mut inputs)?;
    // Objects refused are left out and the run goes on; here the first is the error.
    if !inputs.refused.is_empty() {
        return Err(inputs.refused.remove(0).error);
    }
    match inputs.rejected.pop() {
        Some(r) => Err(r.error),
        None => Ok(inputs),
    }
}

fn yaml_plan(yaml: &str) -> httproute_nginx::plan::Plan {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("test.yaml"), yaml, &mut inputs).unwrap();
    plan(&inputs, &BackendMap::new())
}

const GW: &str = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n";

fn route(name: &str, ts: &str, rules: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: {name}, creationTimestamp: \"{ts}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n{rules}---\n"
    )
}

/// Writes `yaml` into a fresh directory (named after `tag`) and generates from it.
fn generate_yaml(
    tag: &str,
    yaml: &str,
    carrier: Carrier,
) -> Result<httproute_nginx::Output, String> {
    let dir = std::env::temp_dir().join(format!("hr-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    let (out, warnings) = generate(&[dir], &BackendMap::new(), &opts(carrier))?;
    assert!(warnings.is_empty(), "{warnings:?}");
    Ok(out)
}

/// The candidate order of the location `loc` of the catch-all server: "route/rule/match".
fn order(p: &httproute_nginx::plan::Plan, loc: &Loc) -> Vec<String> {
    let server = p.ports[0].servers.iter().find(|s| s.hostname.is_none()).unwrap();
    let l = server.locations.iter().find(|l| l.loc == *loc).unwrap_or_else(|| panic!("{loc:?}"));
    l.candidates()
        .map(|c| {
            format!(
                "{}/{}/{}",
                c.id.route.to_string().trim_start_matches("default/"),
                c.id.index,
                c.match_index
            )
        })
        .collect()
}

#[test]
fn precedence_order_across_routes() {
    let yaml = format!(
        "{GW}{}{}",
        route(
            "a",
            "2026-01-02T00:00:00Z",
            "  - matches:\n    - path: {value: /x}\n    - path: {value: /x}\n      method: GET\n    - path: {value: /x}\n      headers: [{name: h1, value: v}, {name: h2, value: v}]\n    - path: {value: /x}\n      queryParams: [{name: q, value: v}]\n    - path: {type: Exact, value: /x/y}\n    - path: {value: /x/y}\n    - path: {value: /}\n"
        ),
        route(
            "b",
            "2026-01-01T00:00:00Z",
            "  - matches:\n    - path: {value: /x}\n      method: GET\n    - path: {value: /x}\n      headers: [{name: h1, value: v}, {name: H1, value: dup}]\n"
        )
    );
    let p = yaml_plan(&yaml);
    // Exact path, then the longest prefix, then method, header count (duplicates ignored),
    // param count, then the older route, then rule and match order; shorter prefixes last.
    assert_eq!(
        order(&p, &Loc::Exact("/x/y".into())),
        ["a/0/4", "a/0/5", "b/0/0", "a/0/1", "a/0/2", "b/0/1", "a/0/3", "a/0/0", "a/0/6"]
    );
    assert_eq!(
        order(&p, &Loc::Prefix("/x/".into())),
        ["b/0/0", "a/0/1", "a/0/2", "b/0/1", "a/0/3", "a/0/0", "a/0/6"]
    );
    assert_eq!(order(&p, &Loc::Prefix("/".into())), ["a/0/6"]);
    // Names break ties between routes of the same age.
    let yaml = format!(
        "{GW}{}{}",
        route("z", "", "  - matches: [{path: {value: /}}]\n"),
        route("m", "", "  - matches: [{path: {value: /}}]\n")
    );
    assert_eq!(order(&yaml_plan(&yaml), &Loc::Prefix("/".into())), ["m/0/0", "z/0/0"]);
}

#[test]
fn input_errors_name_file_document_and_field() {
    let cases = [
        (
            "kind: HTTPRoute\nmetadata: {name: r}\nspec:\n  rules:\n  - matches:\n    - path: {type: Bogus, value: /}\n",
            "test.yaml, document 0, spec.rules[0].matches[0].path.type: unknown path type \"Bogus\"",
        ),
        (
            "{}\n---\nkind: Gateway\nmetadata: {name: g}\nspec:\n  listeners: [{name: a, port: x, protocol: HTTP}]\n",
            "test.yaml, document 0: object without a kind",
        ),
        (
            "kind: Gateway\nmetadata: {name: g}\nspec:\n  listeners: [{name: a, port: x, protocol: HTTP}]\n",
            "test.yaml, document 0, spec.listeners[0].port: invalid type: string \"x\", expected u16",
        ),
        (
            "kind: HTTPRoute\nmetadata: {name: r}\nspec:\n  rules:\n  - matches:\n    - headers: [{name: a, value: \"\"}]\n",
            "test.yaml, document 0, spec.rules[0].matches[0].headers[0].value: length must be 1-4096",
        ),
        (
            "kind: HTTPRoute\nmetadata: {name: r}\nspec:\n  hostnames: [\"Bad_Host\"]\n",
            "test.yaml, document 0, spec.hostnames[0]: invalid hostname \"Bad_Host\"",
        ),
        ("a: [\n", "test.yaml, document 0: invalid YAML/JSON"),
    ];
    for (text, want) in cases {
        let e = load_checked("test.yaml", text).unwrap_err();
        assert!(e.to_string().starts_with(want), "{e}\nwant: {want}");
    }
    let e = load(&[data("missing.yaml")]).unwrap_err();
    assert!(e.to_string().contains("no such file"), "{e}");
}

#[test]
fn unsupported_fields_are_reported_once() {
    let yaml = format!(
        "{GW}{}{}",
        route(
            "a",
            "",
            "  - filters: [{type: ExtensionRef, extensionRef: {group: x.io, kind: K, name: k}}]\n    matches: [{path: {value: /a}}]\n    sessionPersistence: {sessionName: s}\n"
        ),
        route("b", "", "  - filters: [{type: ExtensionRef}]\n    matches: [{path: {value: /b}}]\n")
    );
    let p = yaml_plan(&yaml);
    // One warning per unsupported field or filter type, however many routes use it.
    let filters: Vec<&String> = p.warnings.iter().filter(|w| w.contains("filters")).collect();
    assert_eq!(filters.len(), 1, "{:?}", p.warnings);
    assert!(
        filters[0].starts_with(
            "HTTPRoute spec.rules[].filters[] of type ExtensionRef is not supported yet"
        ),
        "{filters:?}"
    );
    let sessions =
        p.warnings.iter().filter(|w| w.contains("spec.rules[].sessionPersistence")).count();
    assert_eq!(sessions, 1, "{:?}", p.warnings);
}

#[test]
fn explain_names_the_winner_and_why() {
    let model = load(&[data("cafe")]).unwrap();
    let p = plan(&model, &backends());
    let req = |method: &str, path: &str, headers: Vec<(String, String)>, query: &str| Request {
        port: None,
        method: method.into(),
        host: "cafe.example.com".into(),
        path: path.into(),
        headers,
        query: query.into(),
    };
    let (text, status) =
        explain(&p, &req("GET", "/coffee/mocha", vec![("version".into(), "v2".into())], ""));
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("location /coffee/ with 3 candidate(s)"), "{text}");
    assert!(text.contains("4. winner: [0] default/coffee rule 1 match 0"), "{text}");
    let (text, status) = explain(&p, &req("HEAD", "/tea", vec![], ""));
    assert_eq!(status, 404, "{text}");
    let (text, _) = explain(&p, &req("GET", "/coffee", vec![], "TEST=v2"));
    assert!(text.contains("winner: [1] default/coffee rule 1 match 1"), "{text}");
    assert!(
        text.contains(
            "backend coffee-v2-svc.default.svc.cluster.local:80 (resolved per request), weight 1"
        ),
        "{text}"
    );
}

#[test]
fn long_inline_lists_are_refused_with_advice() {
    let mut rules = String::from("  - matches:\n");
    for i in 0..60 {
        rules.push_str(&format!("    - {{path: {{value: /}}, headers: [{{name: x-tenant, value: tenant-number-{i}}}]}}\n"));
    }
    let dir = std::env::temp_dir().join(format!("hr-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), format!("{GW}{}", route("r", "", &rules))).unwrap();
    // The rule whose entries do not fit one word is refused (in the plan: the run goes on).
    let g =
        generate(std::slice::from_ref(&dir), &BackendMap::new(), &opts(Carrier::Inline)).unwrap();
    let refused = |w: &String| w.contains("rule 0") && w.contains("use --carrier preload");
    assert!(g.0.warnings.iter().chain(&g.1).any(refused), "{:?} {:?}", g.0.warnings, g.1);
    assert!(generate(&[dir], &BackendMap::new(), &opts(Carrier::Preload)).is_ok());
}

#[test]
fn regex_paths_rank_between_exact_and_prefix_in_every_location() {
    let yaml = format!(
        "{GW}{}{}",
        route(
            "a",
            "2026-01-01T00:00:00Z",
            "  - matches:\n    - path: {type: RegularExpression, value: \"/x/[0-9]+\"}\n    - path: {type: PathPrefix, value: /x}\n    - path: {type: Exact, value: /x/1}\n"
        ),
        route(
            "b",
            "2026-01-02T00:00:00Z",
            "  - matches:\n    - path: {type: RegularExpression, value: \"/x/[0-9]+/long\"}\n    - path: {type: RegularExpression, value: \"(\"}\n"
        )
    );
    let p = yaml_plan(&yaml);
    // Exact, then regexes (longer pattern first), then prefixes.
    assert_eq!(order(&p, &Loc::Exact("/x/1".into())), ["a/0/2", "b/0/0", "a/0/0", "a/0/1"]);
    assert_eq!(order(&p, &Loc::Prefix("/x/".into())), ["b/0/0", "a/0/0", "a/0/1"]);
    // No route has PathPrefix /: the catch-all location holds only the regexes.
    assert_eq!(order(&p, &Loc::Prefix("/".into())), ["b/0/0", "a/0/0"]);
    let bad: Vec<&String> = p.warnings.iter().filter(|w| w.contains("does not compile")).collect();
    assert_eq!(bad.len(), 1, "{:?}", p.warnings);
    assert!(
        bad[0]
            .starts_with("HTTPRoute default/b rules[0].matches[1]: path regular expression \"(\"")
    );
}

#[test]
fn regex_paths_carry_an_anchored_path_condition() {
    let yaml = format!(
        "{GW}{}",
        route(
            "r",
            "",
            "  - matches:\n    - path: {type: RegularExpression, value: \"/v[0-9]+|/beta\"}\n      method: GET\n"
        )
    );
    let out = generate_yaml("regex", &yaml, Carrier::Preload).unwrap();
    // The alternation stays inside the anchor; the pattern lives in the JSON, not in nginx.conf.
    assert!(
        out.matches_json.contains(r#""path":"RegularExpression:^(?:/v[0-9]+|/beta)""#),
        "{}",
        out.matches_json
    );
    assert!(!out.nginx_conf.contains("[0-9]"), "{}", out.nginx_conf);
}

#[test]
fn a_dollar_in_a_variable_carrier_list_comes_from_a_geo_variable() {
    let yaml = format!(
        "{GW}{}",
        route("r", "", "  - matches:\n    - path: {type: RegularExpression, value: \"/a$\"}\n")
    );
    let out = generate_yaml("dollar", &yaml, Carrier::Variable).unwrap();
    assert!(out.nginx_conf.contains("geo $httproute_dollar {\n        default \"$\";"));
    assert!(out.nginx_conf.contains(r#"^(?:/a${httproute_dollar})"#), "{}", out.nginx_conf);
}

#[test]
fn explain_shows_regex_candidates() {
    let yaml = format!(
        "{GW}{}",
        route(
            "r",
            "",
            "  - matches:\n    - path: {type: RegularExpression, value: \"/v[0-9]+/\"}\n  - matches:\n    - path: {value: /}\n"
        )
    );
    let p = yaml_plan(&yaml);
    let req = |path: &str| Request {
        port: None,
        method: "GET".into(),
        host: "any".into(),
        path: path.into(),
        headers: vec![],
        query: String::new(),
    };
    let (text, status) = explain(&p, &req("/v2/users"));
    assert_eq!(status, 500, "{text}"); // no backendRefs: the rule has no valid backend
    assert!(text.contains("RegularExpression /v[0-9]+/"), "{text}");
    assert!(text.contains("winner: [0] default/r rule 0 match 0"), "{text}");
    // Anchored at the start: "/x/v2/" is not under the regex, the prefix rule wins.
    let (text, _) = explain(&p, &req("/x/v2/"));
    assert!(text.contains("winner: [1] default/r rule 1 match 0"), "{text}");
}

/// Hostnames served by the plan's servers that have a location other than the catch-all's 404.
fn attached(p: &httproute_nginx::plan::Plan) -> Vec<String> {
    let server = p.ports[0].servers.iter().find(|s| s.hostname.is_none()).unwrap();
    let mut routes: Vec<String> = server
        .locations
        .iter()
        .flat_map(|l| l.candidates().map(|c| c.id.route.to_string()))
        .collect();
    routes.sort();
    routes.dedup();
    routes
}

fn ns_route(ns: &str, gw_ns: &str) -> String {
    format!(
        "kind: HTTPRoute\nmetadata: {{name: r, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: {gw_ns}}}]\n---\n"
    )
}

#[test]
fn allowed_routes_default_to_the_gateways_namespace() {
    let gw = |allowed: &str| {
        format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: infra}}\nspec:\n  listeners: [{{name: http, port: 80, protocol: HTTP{allowed}}}]\n---\n"
        )
    };
    let routes = format!(
        "{}{}{}",
        ns_route("infra", "infra"),
        ns_route("team-a", "infra"),
        ns_route("team-b", "infra")
    );
    let ns_objects = "kind: Namespace\nmetadata: {name: team-a, labels: {shared: \"yes\"}}\n---\nkind: Namespace\nmetadata: {name: team-b}\n---\nkind: Namespace\nmetadata: {name: infra}\n---\n";
    let cases: [(&str, &[&str]); 6] = [
        ("", &["infra/r"]),
        (", allowedRoutes: {namespaces: {from: All}}", &["infra/r", "team-a/r", "team-b/r"]),
        (
            ", allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {shared: \"yes\"}}}}",
            &["team-a/r"],
        ),
        // Every Namespace object carries its own name as a label.
        (
            ", allowedRoutes: {namespaces: {from: Selector, selector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [team-b, infra]}]}}}",
            &["infra/r", "team-b/r"],
        ),
        (
            ", allowedRoutes: {namespaces: {from: Selector, selector: {matchExpressions: [{key: shared, operator: DoesNotExist}]}}}",
            &["infra/r", "team-b/r"],
        ),
        (", allowedRoutes: {namespaces: {from: All}, kinds: [{kind: GRPCRoute}]}", &[]),
    ];
    for (allowed, want) in cases {
        let p = yaml_plan(&format!("{}{routes}{ns_objects}", gw(allowed)));
        assert_eq!(attached(&p), want, "{allowed}");
        let refused = p.warnings.iter().filter(|w| w.contains("does not accept it")).count();
        assert_eq!(refused, 3 - want.len(), "{allowed}: {:?}", p.warnings);
    }
    // The Gateway the CRD refuses is left out (a warning), not the run.
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(
        Path::new("test.yaml"),
        &gw(", allowedRoutes: {namespaces: {from: Selector}}"),
        &mut inputs,
    )
    .unwrap();
    assert!(inputs.gateways.is_empty());
    let e = &inputs.refused[0].error;
    assert_eq!(
        e.to_string(),
        "test.yaml, document 0, spec.listeners[0].allowedRoutes.namespaces.selector: from: Selector needs a selector"
    );
}

#[test]
fn cross_namespace_backends_need_a_reference_grant() {
    let route = "kind: HTTPRoute\nmetadata: {name: r, namespace: default}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: db, namespace: data, port: 80}, {name: cache, namespace: data, port: 80}]\n---\n";
    let grant = |from_ns: &str, to: &str| {
        format!(
            "kind: ReferenceGrant\nmetadata: {{name: g, namespace: data}}\nspec:\n  from: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: {from_ns}}}]\n  to: [{to}]\n---\n"
        )
    };
    let backends_of = |yaml: String| {
        let p = yaml_plan(&yaml);
        let server = p.ports[0].servers.iter().find(|s| s.hostname.is_none()).unwrap();
        let rule = &server.rules[0];
        let mut ups = Vec::new();
        let mut invalid = 0;
        for b in &rule.backends {
            match &b.target {
                Target::Upstream { name, .. } => ups.push(name.clone()),
                Target::Resolve(addr) => ups.push(addr.clone()),
                Target::Inference(p) => ups.push(p.upstream.clone()),
                Target::Status(_) => invalid += b.weight,
            }
        }
        (ups, invalid)
    };
    assert_eq!(backends_of(format!("{GW}{route}")), (vec![], 2));
    assert_eq!(
        backends_of(format!("{GW}{route}{}", grant("default", "{group: \"\", kind: Service}"))),
        (
            vec![
                "db.data.svc.cluster.local:80".to_owned(),
                "cache.data.svc.cluster.local:80".to_owned()
            ],
            0
        )
    );
    assert_eq!(
        backends_of(format!(
            "{GW}{route}{}",
            grant("default", "{group: \"\", kind: Service, name: db}")
        )),
        (vec!["db.data.svc.cluster.local:80".to_owned()], 1)
    );
    // A grant for another namespace, or in the wrong namespace, grants nothing.
    assert_eq!(
        backends_of(format!("{GW}{route}{}", grant("other", "{group: \"\", kind: Service}"))),
        (vec![], 2)
    );
}

#[test]
fn header_filters_become_proxy_and_add_header_directives() {
    let rules = "  - filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        set: [{name: Host, value: \"a$b\"}]\n        add: [{name: X-Tenant, value: t1}]\n        remove: [Cookie]\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {set: [{name: Server, value: gw}]}\n    backendRefs: [{name: s, port: 80}]\n";
    let out = generate_yaml("filters", &format!("{GW}{}", route("r", "", rules)), Carrier::Preload)
        .unwrap();
    let conf = &out.nginx_conf;
    // The route's Host replaces the default one; a `$` in a value stays a dollar sign.
    assert!(conf.contains(r#"proxy_set_header Host "a${httproute_dollar}b";"#), "{conf}");
    assert!(!conf.contains("proxy_set_header Host $host;"), "{conf}");
    let add = var_after(conf, "proxy_set_header X-Tenant $");
    assert!(add.starts_with("httproute_add_"), "{conf}");
    assert!(conf.contains(&format!("map $http_x_tenant ${add} {{\n        \"\" \"t1\";\n        default \"${{http_x_tenant}},t1\";")), "{conf}");
    assert!(conf.contains(r#"proxy_set_header Cookie "";"#), "{conf}");
    assert!(conf.contains(r#"proxy_hide_header Server; add_header Server "gw" always;"#), "{conf}");
    // Bad values are input errors with the field path.
    let bad = format!(
        "{GW}{}",
        route(
            "r",
            "",
            "  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: \"a b\", value: v}]}}]\n"
        )
    );
    let e = load_checked("t.yaml", &bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.yaml, document 1, spec.rules[0].filters[0].requestHeaderModifier.set[0].name: \"a b\" has the character ' '"
    );
}

#[test]
fn redirect_and_rewrite_filters() {
    // GW listens on port 80: a redirect keeping scheme and port writes no port.
    let rules = "  - matches: [{path: {value: /a}}]\n    filters: [{type: RequestRedirect, requestRedirect: {hostname: b.test}}]\n  - matches: [{path: {value: /p}}]\n    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, port: 8443, statusCode: 308}}]\n";
    let out =
        generate_yaml("redirect", &format!("{GW}{}", route("r", "", rules)), Carrier::Preload)
            .unwrap();
    let conf = &out.nginx_conf;
    assert!(conf.contains(r#"return 302 "$scheme://b.test$request_uri";"#), "{conf}");
    assert!(conf.contains(r#"return 308 "https://$host:8443$request_uri";"#), "{conf}");
    let (text, status) = explain(
        &yaml_plan(&format!("{GW}{}", route("r", "", rules))),
        &Request {
            port: None,
            method: "GET".into(),
            host: "h".into(),
            path: "/p/x".into(),
            headers: vec![],
            query: String::new(),
        },
    );
    assert_eq!(status, 308, "{text}");
    assert!(
        text.contains(
            "5. RequestRedirect filter: 308 to https://(request host):8443(request path)"
        ),
        "{text}"
    );

    let load = |rules: &str| {
        let text = format!("{GW}{}", route("r", "", rules));
        load_checked("t.yaml", &text).map(|_| ()).map_err(|e| e.to_string())
    };
    let two_matches = "  - matches: [{path: {value: /a}}, {path: {value: /b}}]\n    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /c}}}]\n";
    assert_eq!(
        load(two_matches).unwrap_err(),
        "t.yaml, document 1, spec.rules[0].filters[0].urlRewrite.path: ReplacePrefixMatch needs exactly one match, of type PathPrefix"
    );
    let both = "  - filters: [{type: URLRewrite, urlRewrite: {hostname: x.test}}, {type: RequestRedirect, requestRedirect: {}}]\n";
    assert!(
        load(both)
            .unwrap_err()
            .ends_with("RequestRedirect and URLRewrite cannot both be used in one rule")
    );
    let status = "  - filters: [{type: RequestRedirect, requestRedirect: {statusCode: 200}}]\n";
    assert!(load(status).unwrap_err().ends_with("statusCode: 200 is not a redirect status"));
    assert!(load("  - filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath}}}]\n").unwrap_err().ends_with("replaceFullPath: required"));
}

#[test]
fn https_listeners() {
    let gw = "kind: Gateway\nmetadata: {name: gw, namespace: infra}\nspec:\n  listeners:\n  - {name: a, port: 443, protocol: HTTPS, hostname: a.test, tls: {certificateRefs: [{name: a-cert}]}}\n  - {name: b, port: 443, protocol: HTTPS, hostname: b.test, tls: {certificateRefs: [{name: b-cert, namespace: certs}]}}\n  - {name: c, port: 443, protocol: HTTP}\n  - {name: d, port: 8443, protocol: HTTPS, tls: {mode: Passthrough}}\n  - {name: e, port: 9443, protocol: HTTPS}\n---\n";
    let secret = |ns: &str, name: &str| {
        format!(
            "kind: Secret\nmetadata: {{name: {name}, namespace: {ns}}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: {}, tls.key: {}}}\n---\n",
            test_pem().0,
            test_pem().1
        )
    };
    // A listener whose Secret is not among the inputs refuses handshakes; the others serve.
    let p = yaml_plan(gw);
    assert!(
        p.warnings.iter().any(|w| w
            == "listener infra/gw/a: tls.certificateRefs[0]: Secret infra/a-cert is not among \
                the inputs; ignored"),
        "{:?}",
        p.warnings
    );
    assert!(p.ports[0].servers.iter().all(|s| s.certificates.is_empty()));
    let gw = format!("{gw}{}{}", secret("infra", "a-cert"), secret("certs", "b-cert"));
    let gw = gw.as_str();
    let p = yaml_plan(gw);
    let has = |needle: &str| p.warnings.iter().any(|w| w.contains(needle));
    assert!(
        has("listener infra/gw/c: port 443 is already HTTPS for listener infra/gw/a; skipped"),
        "{:?}",
        p.warnings
    );
    assert!(has("listener infra/gw/d: TLS mode Passthrough is not supported"), "{:?}", p.warnings);
    assert!(has("listener infra/gw/e: HTTPS without tls; skipped"), "{:?}", p.warnings);
    assert!(
        has("infra/gw/b: tls.certificateRefs[0]: no ReferenceGrant in namespace certs"),
        "{:?}",
        p.warnings
    );
    let port = &p.ports[0];
    assert!(port.tls);
    let certs = |h: Option<&str>| {
        port.servers.iter().find(|s| s.hostname.as_deref() == h).unwrap().certificates.clone()
    };
    assert_eq!(certs(Some("a.test")), ["infra/a-cert"]);
    assert!(certs(Some("b.test")).is_empty());
    assert!(certs(None).is_empty());
    // With the grant, the cross-namespace Secret is used.
    let grant = "kind: ReferenceGrant\nmetadata: {name: g, namespace: certs}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}]\n  to: [{group: \"\", kind: Secret}]\n";
    let p = yaml_plan(&format!("{gw}{grant}"));
    let b = p.ports[0].servers.iter().find(|s| s.hostname.as_deref() == Some("b.test")).unwrap();
    assert_eq!(b.certificates, ["certs/b-cert"]);
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf;
    for want in [
        "listen 443 ssl default_server;",
        "        ssl_reject_handshake on;\n",
        "ssl_certificate \"certs/infra_a-cert.crt\";\n        ssl_certificate_key \"certs/infra_a-cert.key\";",
        "map $ssl_server_name $httproute_sni_name_443 {\n        hostnames;\n        default \"-\";\n        \"\" \"\";\n        a.test \"a.test\";\n        b.test \"b.test\";\n    }",
        // A request that fell back (http_matches_fallback) was checked where it arrived.
        "map $matches_fallback $httproute_sni_443 {\n        volatile;\n        \"\" $httproute_sni_name_443;\n        default \"\";\n    }",
        r#"if ($httproute_sni_443 !~ "^(|a\\.test)$") { return 421; }"#,
        r#"if ($httproute_sni_443 !~ "^(|-)$") { return 421; }"#,
    ] {
        assert!(conf.contains(want), "{want}\n{conf}");
    }
}

#[test]
fn mirrors() {
    let rules = "  - filters:\n    - {type: RequestMirror, requestMirror: {backendRef: {name: m, port: 80}, percent: 25}}\n    - {type: RequestMirror, requestMirror: {backendRef: {name: far, namespace: other, port: 80}}}\n    backendRefs: [{name: s, port: 80}]\n";
    let p = yaml_plan(&format!("{GW}{}", route("r", "", rules)));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("RequestMirror 1: no ReferenceGrant in namespace other")),
        "{:?}",
        p.warnings
    );
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf;
    assert!(conf.contains(" mirror /_httproute-internal/mirror-0-0;"), "{conf}");
    assert!(!conf.contains("mirror-0-1"), "{conf}");
    let split = var_after(&conf, "split_clients \"${request_id}m\" $");
    assert!(split.starts_with("httproute_split_"), "{conf}");
    assert!(conf.contains(&format!("split_clients \"${{request_id}}m\" ${split} {{\n        25.00% 1;\n        * \"\";\n    }}")), "{conf}");
    assert!(conf.contains(&format!("location = /_httproute-internal/mirror-0-0 {{ internal; if (${split} = \"\") {{ return 204; }} ")), "{conf}");
    assert!(
        conf.contains(
            "set $httproute_backend \"m.default.svc.cluster.local:80\"; proxy_http_version 1.1; \
             proxy_set_header Host $host; proxy_set_header Connection \"\"; \
             proxy_pass http://$httproute_backend$request_uri; }"
        ),
        "{conf}"
    );
}

#[test]
fn tls_secrets_in_the_manifests_are_written_next_to_nginx_conf() {
    let gw = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: a, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: s}, {name: t}]}}\n---\n";
    // A real certificate and key; `t` is given on the command line instead.
    let secret = |name: &str| {
        format!(
            "kind: Secret\nmetadata: {{name: {name}}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: {}, tls.key: {}}}\n---\n",
            test_pem().0,
            test_pem().1
        )
    };
    let mut o = opts(Carrier::Preload);
    let (t_crt, t_key) = (data("tls/test.crt"), data("tls/test.key"));
    let (t_crt, t_key) = (t_crt.to_str().unwrap(), t_key.to_str().unwrap());
    o.certificates.insert("default/t".into(), (t_crt.into(), t_key.into()));
    let dir = std::env::temp_dir().join(format!("hr-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), format!("{gw}{}{}", secret("s"), secret("t"))).unwrap();
    let (out, warnings) = generate(std::slice::from_ref(&dir), &BackendMap::new(), &o).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        out.files.keys().collect::<Vec<_>>(),
        ["certs/default_s.crt", "certs/default_s.key"]
    );
    assert_eq!(out.files["certs/default_s.key"], std::fs::read(data("tls/test.key")).unwrap());
    assert!(out.nginx_conf.contains(r#"ssl_certificate "certs/default_s.crt";"#));
    assert!(out.nginx_conf.contains(&format!("ssl_certificate \"{t_crt}\";")));
    let target = dir.join("out");
    httproute_nginx::write_dir(&target, &out).unwrap();
    let key = target.join("certs/default_s.key");
    assert_eq!(std::fs::read(&key).unwrap(), std::fs::read(data("tls/test.key")).unwrap());
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    // Bad base64 refuses the Secret with its field (not the run): a listener that names it
    // says why it cannot use it.
    let bad = "kind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\ndata: {tls.crt: \"%%\", tls.key: a2V5}\n";
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("s.yaml"), bad, &mut inputs).unwrap();
    let e = &inputs.refused[0].error;
    assert!(e.to_string().starts_with("s.yaml, document 0, data.tls.crt: not base64"), "{e}");
    assert!(inputs.secrets.is_empty());
    assert!(inputs.bad_secrets["default/s"].starts_with("data.tls.crt: not base64"));
}

#[test]
fn duplicate_keys_are_input_errors() {
    // Two objects run together without `---`: the second's keys would silently replace the
    // first's.
    let text = "kind: Namespace\nmetadata: {name: a}\nkind: Gateway\nmetadata: {name: gw}\nspec: {listeners: []}\n";
    let mut inputs = httproute_nginx::model::Inputs::default();
    let e = httproute_nginx::model::load_text(Path::new("d.yaml"), text, &mut inputs).unwrap_err();
    assert!(e.to_string().contains("duplicate key \"kind\""), "{e}");
}

#[test]
fn path_values_are_checked_as_the_crd_checks_them_and_matched_decoded() {
    let path = |v: &str| {
        let text = format!(
            "kind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  rules:\n  - matches:\n    - path: {{type: Exact, value: \"{v}\"}}\n"
        );
        load_checked("t.yaml", &text).map(|_| ()).map_err(|e| e.message)
    };
    // Accepted by the CRD (examples/standard/httproute.yaml has the first).
    for ok in ["/my%20path/123", "/a%2e/b", "/caf%C3%A9", "/~user/x;y=1", "/a/b/"] {
        assert_eq!(path(ok), Ok(()), "{ok}");
    }
    for (bad, why) in [
        ("/a%2fb", "has an escaped \"/\" (%2F)"),
        ("/a%2Fb", "has an escaped \"/\" (%2F)"),
        ("/a%zz", "has a \"%\" that is not followed by two hexadecimal digits"),
        ("/a%2", "has a \"%\" that is not followed by two hexadecimal digits"),
        ("/a//b", "has \"//\""),
        ("/a/./b", "has \"/./\""),
        ("/a/../b", "has \"/../\""),
        ("/a/..", "ends with a \".\" or \"..\" segment"),
        ("/a#b", "has the character '#'"),
        ("/a b", "has the character ' '"),
    ] {
        assert_eq!(path(bad), Err(format!("{bad:?} {why}")), "{bad}");
    }
    // NGINX matches locations on the decoded path; a path that decodes to a control byte
    // can never match and is skipped with a warning.
    let rules = "  - matches: [{path: {type: Exact, value: /my%20path/123}}, {path: {type: PathPrefix, value: /caf%C3%A9/}}, {path: {type: Exact, value: /nul%00}}]\n    backendRefs: [{name: s, port: 80}]\n";
    let p = yaml_plan(&format!("{GW}{}", route("r", "", rules)));
    assert!(
        p.warnings.iter().any(|w| w.contains(
            "matches[2]: path \"/nul%00\" decodes to the control character 0x00: no request can match it; match skipped"
        )),
        "{:?}",
        p.warnings
    );
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf;
    assert!(conf.contains("location = \"/my path/123\" {"), "{conf}");
    assert!(conf.contains("location \"/café/\" {"), "{conf}");
    assert!(!conf.contains("nul"), "{conf}");
}

/// Values the CRD bounds only by length: accepted, and made safe to write (a path made a
/// path, a header value with a control character left out) instead of refusing the input.
#[test]
fn values_the_crd_bounds_only_by_length_are_accepted_and_made_safe() {
    let rules = "  - matches: [{path: {type: PathPrefix, value: /a}}]\n    filters:\n    - {type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: \"new place?x=1\"}}}\n    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        set: [{name: x-ok, value: fine}, {name: x-bad, value: \"a\\r\\nInjected: yes\"}]\n    backendRefs: [{name: s, port: 80}]\n";
    let p = yaml_plan(&format!("{GW}{}", route("r", "", rules)));
    assert!(
        p.warnings.iter().any(|w| w.contains(
            "rules[0]: RequestHeaderModifier set x-bad: the value has the control character '\\r'; left out"
        )),
        "{:?}",
        p.warnings
    );
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf;
    assert!(conf.contains("set $httproute_path \"/new%20place%3Fx=1\";"), "{conf}");
    assert!(conf.contains("proxy_set_header x-ok \"fine\";"), "{conf}");
    assert!(!conf.contains("Injected"), "{conf}");
}

#[test]
fn timeouts_bound_every_phase_of_the_backend_exchange() {
    use httproute_nginx::model::duration_ms;
    assert_eq!(duration_ms("1h30m"), Some(5_400_000));
    assert_eq!(duration_ms("500ms"), Some(500));
    assert_eq!(duration_ms("1s500ms"), Some(1_500));
    assert_eq!(duration_ms("0s"), Some(0));
    for bad in ["", "1", "1d", "123456s", "1h1m1s1ms1h", "-1s"] {
        assert_eq!(duration_ms(bad), None, "{bad}");
    }
    let conf = |timeouts: &str| {
        let rules = format!("  - backendRefs: [{{name: s, port: 80}}]\n    timeouts: {timeouts}\n");
        let p = yaml_plan(&format!("{GW}{}", route("r", "", &rules)));
        httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf
    };
    let bounded =
        "proxy_connect_timeout 2000ms; proxy_send_timeout 2000ms; proxy_read_timeout 2000ms;";
    assert!(conf("{request: 5s, backendRequest: 2s}").contains(bounded));
    assert!(conf("{request: 2s}").contains(bounded));
    assert!(conf("{request: 0s, backendRequest: 2s}").contains(bounded));
    assert!(conf("{request: 0s}").contains("proxy_send_timeout 1d; proxy_read_timeout 1d;"));
    let text = format!(
        "{GW}{}",
        route(
            "r",
            "",
            "  - backendRefs: [{name: s, port: 80}]\n    timeouts: {request: 1s, backendRequest: 2s}\n"
        )
    );
    let e = load_checked("t.yaml", &text).unwrap_err();
    assert!(e.to_string().ends_with("must not be greater than timeouts.request"), "{e}");
}

/// A red team's finding (issue #45): HTTPRoute c (x.test), then GRPCRoute b (x.test,
/// y.test), then HTTPRoute a (y.test), on one listener. b loses the listener to the older c;
/// a, which meets only b there, is then accepted: a route detached there takes nothing from a
/// newer one. Before, a lost y.test to b too, and y.test answered 404 for everyone.
#[test]
fn a_route_that_lost_a_kind_conflict_takes_no_hostname_from_a_newer_one() {
    let route = |kind: &str, name: &str, ts: &str, hosts: &str| {
        format!(
            "kind: {kind}\nmetadata: {{name: {name}, creationTimestamp: \"{ts}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{hosts}]\n  rules:\n  - backendRefs: [{{name: h, port: 80}}]\n---\n"
        )
    };
    let yaml = format!(
        "{GW}{}{}{}",
        route("HTTPRoute", "a", "2024-01-03T00:00:00Z", "y.test"),
        route("GRPCRoute", "b", "2024-01-02T00:00:00Z", "x.test, y.test"),
        route("HTTPRoute", "c", "2024-01-01T00:00:00Z", "x.test"),
    );
    let p = yaml_plan(&yaml);
    let routes = |h: &str| -> Vec<String> {
        let s = p.ports[0].servers.iter().find(|s| s.hostname.as_deref() == Some(h));
        let mut r: Vec<String> =
            s.into_iter().flat_map(|s| &s.rules).map(|r| r.id.route.to_string()).collect();
        r.dedup();
        r
    };
    assert_eq!(routes("x.test"), ["default/c"]);
    assert_eq!(routes("y.test"), ["default/a"]);
    let lost = |w: &&String| w.contains("only that one is accepted");
    let losers: Vec<&String> = p.warnings.iter().filter(lost).collect();
    assert_eq!(losers.len(), 1, "{losers:?}");
    assert!(losers[0].starts_with("GRPCRoute default/b"), "{losers:?}");
}

#[test]
fn grpc_routes_become_paths_and_conflicts_with_http_routes_keep_the_older() {
    let grpc = |name: &str, ts: &str, host: &str| {
        format!(
            "kind: GRPCRoute\nmetadata: {{name: {name}, creationTimestamp: \"{ts}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - matches: [{{method: {{service: a.B, method: C}}}}, {{method: {{service: a.B}}}}, {{method: {{method: C}}}}, {{method: {{type: RegularExpression, service: \"a\\\\..*\"}}}}]\n    backendRefs: [{{name: g, port: 80}}]\n---\n"
        )
    };
    let http = |name: &str, ts: &str, host: &str| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, creationTimestamp: \"{ts}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules:\n  - backendRefs: [{{name: h, port: 80}}]\n---\n"
        )
    };
    let yaml = format!(
        "{GW}{}{}{}{}",
        grpc("old-grpc", "2024-01-01T00:00:00Z", "a.test"),
        http("new-http", "2025-01-01T00:00:00Z", "a.test"),
        grpc("new-grpc", "2025-01-01T00:00:00Z", "b.test"),
        http("old-http", "2024-01-01T00:00:00Z", "b.test"),
    );
    let p = yaml_plan(&yaml);
    let server =
        |h: &str| p.ports[0].servers.iter().find(|s| s.hostname.as_deref() == Some(h)).unwrap();
    let routes = |h: &str| {
        let mut r: Vec<String> = server(h).rules.iter().map(|r| r.id.route.to_string()).collect();
        r.dedup();
        r
    };
    assert_eq!(routes("a.test"), ["default/old-grpc"]);
    assert_eq!(routes("b.test"), ["default/old-http"]);
    assert!(server("a.test").rules.iter().all(|r| r.grpc));
    for loser in ["HTTPRoute default/new-http", "GRPCRoute default/new-grpc"] {
        assert!(
            p.warnings
                .iter()
                .any(|w| w.starts_with(loser) && w.contains("only that one is accepted")),
            "{loser}: {:?}",
            p.warnings
        );
    }
    let status = httproute_nginx::status::yaml(&p.status);
    assert!(status.contains("kind: GRPCRoute"), "{status}");
    assert!(status.contains("message: 'HTTPRoute default/new-http has hostnames in common with the older GRPCRoute default/old-grpc"), "{status}");
    // Method matches as paths: exact service and method, a service as a prefix, a method
    // of any service and a regex, both anchored at the end.
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap();
    assert!(conf.nginx_conf.contains("location = \"/a.B/C\""), "{}", conf.nginx_conf);
    assert!(conf.nginx_conf.contains("location \"/a.B/\""), "{}", conf.nginx_conf);
    assert!(
        conf.matches_json.contains(r#""path":"RegularExpression:^(?:/[^/]+/C$)""#),
        "{}",
        conf.matches_json
    );
    assert!(
        conf.matches_json.contains(r#""path":"RegularExpression:^(?:/(?:a\\..*)/[^/]+$)""#),
        "{}",
        conf.matches_json
    );
    assert!(conf.nginx_conf.contains("http2 on;"));
    assert!(
        conf.nginx_conf.contains(
            "rewrite ^ $httproute_raw_path break; set $httproute_backend \"g.default.svc.cluster.local:80\"; \
             grpc_set_header Host $host; grpc_pass grpc://$httproute_backend; }"
        ),
        "{}",
        conf.nginx_conf
    );
}

#[test]
fn app_protocol_of_the_service_port_decides_how_the_backend_is_spoken_to() {
    let svc = |name: &str, proto: &str| {
        format!(
            "kind: Service\nmetadata: {{name: {name}}}\nspec:\n  ports: [{{name: p, port: 80, appProtocol: {proto}}}]\n---\n"
        )
    };
    let rules = "  - name: secure\n    matches: [{path: {value: /s}}]\n    backendRefs: [{name: wss, port: 80}]\n  - name: h2\n    matches: [{path: {value: /h}}]\n    backendRefs: [{name: h2c, port: 80}]\n  - matches: [{path: {value: /m}}]\n    backendRefs: [{name: wss, port: 80}, {name: ws, port: 80}]\n";
    let yaml = format!(
        "{GW}{}{}{}{}",
        route("r", "", rules),
        svc("wss", "kubernetes.io/wss"),
        svc("ws", "kubernetes.io/ws"),
        svc("h2c", "kubernetes.io/h2c")
    );
    let p = yaml_plan(&yaml);
    let conf = httproute_nginx::emit::emit(&p, &opts(Carrier::Preload)).unwrap().nginx_conf;
    // No EndpointSlices: cluster names, resolved per request; wss over TLS.
    assert!(conf.contains("set $httproute_backend \"wss.default.svc.cluster.local:80\"; proxy_http_version 1.1; proxy_set_header Host $host; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $httproute_connection; proxy_pass https://$httproute_backend$request_uri;"), "{conf}");
    // Mixed schemes in one rule: one location per backend.
    let split = var_after(&conf, "rewrite ^ /_httproute-internal/2-$");
    assert!(split.starts_with("httproute_split_"), "{conf}");
    assert!(conf.contains(&format!("rewrite ^ /_httproute-internal/2-${split} last;")), "{conf}");
    assert!(conf.contains("proxy_pass http://$httproute_backend$request_uri; }"), "{conf}");
    // h2c from an HTTPRoute: NGINX cannot; the share answers 500, with the reason.
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("Service default/h2c port 80 speaks kubernetes.io/h2c")),
        "{:?}",
        p.warnings
    );
    let status = httproute_nginx::status::yaml(&p.status);
    assert!(status.contains("reason: UnsupportedProtocol"), "{status}");
    assert!(
        status.contains("rules[1] (h2).backendRefs: Service default/h2c port 80 speaks"),
        "{status}"
    );
}

#[test]
fn grpc_before_nginx_1_25_1_uses_listen_http2_and_never_on_a_port_with_http_routes() {
    // Port 80: GRPCRoute and HTTPRoute; 81: GRPCRoute only; 443: both, over TLS.
    let yaml = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  \
        - {name: mixed, port: 80, protocol: HTTP}\n  \
        - {name: alone, port: 81, protocol: HTTP, hostname: g.test}\n  \
        - {name: tls, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}\n---\n\
        kind: Secret\nmetadata: {name: c}\ntype: kubernetes.io/tls\n\
        data: {tls.crt: Y2VydA==, tls.key: a2V5}\n---\n\
        kind: GRPCRoute\nmetadata: {name: mixed-grpc}\nspec:\n  \
        parentRefs: [{name: gw, sectionName: mixed}]\n  hostnames: [g.test]\n  \
        rules: [{matches: [{method: {service: a.B}}]}]\n---\n\
        kind: GRPCRoute\nmetadata: {name: alone-grpc}\nspec:\n  \
        parentRefs: [{name: gw, sectionName: alone}]\n  hostnames: [g.test]\n  \
        rules: [{matches: [{method: {service: a.B}}]}]\n---\n\
        kind: GRPCRoute\nmetadata: {name: tls-grpc}\nspec:\n  \
        parentRefs: [{name: gw, sectionName: tls}]\n  hostnames: [g.test]\n  \
        rules: [{matches: [{method: {service: a.B}}]}]\n---\n\
        kind: HTTPRoute\nmetadata: {name: web, creationTimestamp: \"2020-01-01T00:00:00Z\"}\nspec:\n  \
        parentRefs: [{name: gw, sectionName: mixed}, {name: gw, sectionName: tls}]\n  \
        hostnames: [w.test]\n  rules: [{backendRefs: []}]\n";
    let dir = std::env::temp_dir().join(format!("hr-legacy-h2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), yaml).unwrap();
    let old = Options { nginx_version: (1, 22, 1), ..opts(Carrier::Preload) };
    let g = generate_all(std::slice::from_ref(&dir), &BackendMap::new(), &old).unwrap();
    let (out, warnings) = (&g.output, &g.warnings);
    let conf = &out.nginx_conf;
    assert!(!conf.contains("http2 on;"), "{conf}");
    assert!(conf.contains("listen 81 http2;") && conf.contains("listen 443 ssl http2"), "{conf}");
    assert!(!conf.contains("listen 80 http2") && conf.contains("listen 80"), "{conf}");
    assert!(
        warnings.iter().any(|w| w.starts_with("port 80: NGINX 1.22.1 cannot serve HTTP/1.1 and")
            && w.contains("default/mixed-grpc")),
        "{warnings:?}"
    );
    // The GRPCRoute served nowhere else is not accepted; the others are.
    let status = &httproute_nginx::status::yaml(&g.status);
    let after = |name: &str| status.split(&format!("name: {name}\n")).nth(1).unwrap().to_owned();
    assert!(after("mixed-grpc").contains("reason: UnsupportedValue"), "{status}");
    assert!(!after("alone-grpc").split("name: ").next().unwrap().contains("UnsupportedValue"));
    // NGINX 1.25.1 and later: `http2 on` everywhere, no warning.
    let (out, warnings) = generate(&[dir], &BackendMap::new(), &opts(Carrier::Preload)).unwrap();
    assert!(out.nginx_conf.contains("http2 on;"), "{}", out.nginx_conf);
    assert!(!out.nginx_conf.contains(" http2;"), "{}", out.nginx_conf);
    assert!(warnings.iter().all(|w| !w.contains("cannot serve HTTP/1.1")), "{warnings:?}");
}

#[test]
fn grpc_precedence_counts_service_then_method_not_path_forms() {
    // Rule order: method only, service only, regex service, service and method.
    let yaml = format!(
        "{GW}kind: GRPCRoute\nmetadata: {{name: g}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  \
         - matches: [{{method: {{method: C}}}}]\n  \
         - matches: [{{method: {{service: a.B}}}}]\n  \
         - matches: [{{method: {{type: RegularExpression, service: \"a\\\\..*\"}}}}]\n  \
         - matches: [{{method: {{service: a.B, method: C}}}}, {{headers: [{{name: x, value: y}}]}}]\n"
    );
    let p = yaml_plan(&yaml);
    // Naming service and method, then the service (exact or regex, in rule order), then the
    // method, then neither (headers only).
    assert_eq!(
        order(&p, &Loc::Exact("/a.B/C".into())),
        ["g/3/0", "g/1/0", "g/2/0", "g/0/0", "g/3/1"]
    );
    assert_eq!(order(&p, &Loc::Prefix("/a.B/".into())), ["g/1/0", "g/2/0", "g/0/0", "g/3/1"]);
}

/// The golden sets, with every carrier: NGINX's tokenizer (conf_reader, written apart from the
/// writer) reads back exactly the directives the writer meant to write.
#[test]
fn generated_configuration_reads_back_as_written() {
    for set in ["cafe", "reasons"] {
        for carrier in [Carrier::Preload, Carrier::Inline, Carrier::Variable] {
            let mut o = opts(carrier);
            o.experimental = true;
            o.listen_address = Some("127.0.0.1".into());
            let (out, _) = generate(&[data(set)], &backends(), &o).unwrap();
            let read = httproute_nginx::conf_reader::read(&out.nginx_conf).unwrap();
            assert_eq!(read, out.tree, "{set} {carrier:?}");
            assert!(!out.tree.is_empty());
        }
    }
    let golden = std::fs::read_to_string(data("cafe/expected/nginx.conf")).unwrap();
    let (out, _) = generate(&[data("cafe")], &backends(), &opts(Carrier::Preload)).unwrap();
    assert_eq!(httproute_nginx::conf_reader::read(&golden).unwrap(), out.tree);
}

/// Values the CRDs allow that nginx.conf must quote or escape: quotes, braces, `;`, `#`, `$`,
/// `${`, backslashes, spaces, Unicode, in header values, CORS lists, redirect and rewrite paths.
const HOSTILE_VALUES: &str = "  - matches: [{path: {type: PathPrefix, value: \"/a$b'c;d\"}}]\n    filters:\n    \
    - type: RequestHeaderModifier\n      requestHeaderModifier:\n        \
    set: [{name: x-a, value: \"v\\\"; } # $host ${x} \\\\ é '\"}]\n        \
    add: [{name: x-b, value: \"{w};$1\"}]\n        remove: [x-c]\n    \
    - type: ResponseHeaderModifier\n      responseHeaderModifier:\n        \
    set: [{name: x-d, value: \"location = /pwned { alias /etc/passwd; }\"}]\n    \
    - type: CORS\n      cors:\n        allowOrigins: [\"https://*.o.test\"]\n        \
    allowHeaders: [\"x-$tenant\", \"$host\"]\n        exposeHeaders: [\"$x\", \"*\"]\n    \
    - type: URLRewrite\n      urlRewrite: {hostname: h.test, path: {type: ReplacePrefixMatch, replacePrefixMatch: \"/n$ew\"}}\n    \
    backendRefs: [{name: s, port: 80}]\n  \
    - matches: [{path: {type: Exact, value: \"/r$\"}}]\n    filters:\n    \
    - type: RequestRedirect\n      requestRedirect: {hostname: r.test, path: {type: ReplaceFullPath, replaceFullPath: \"/x$y\"}}\n";

/// With CONF_TREE_DIR set, writes each configuration (`NAME.conf`) and the tree of words the
/// writer meant (`NAME.json`) for scripts/conf-roundtrip.sh, which reads the text back with
/// crossplane and compares. Always: NGINX's tokenizer (conf_reader) reads back the same tree.
#[test]
fn trees_for_the_crossplane_round_trip() {
    fn json(stmts: &[httproute_nginx::conf::Stmt]) -> serde_json::Value {
        stmts
            .iter()
            .map(|s| {
                let mut o = serde_json::json!({"words": s.words});
                if let Some(b) = &s.block {
                    o["block"] = json(b);
                }
                o
            })
            .collect()
    }
    let hostile = format!("{GW}{}", route("r", "", HOSTILE_VALUES));
    let dir = std::env::temp_dir().join(format!("hr-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.yaml"), hostile).unwrap();
    let out_dir = std::env::var_os("CONF_TREE_DIR").map(PathBuf::from);
    let mut written = 0;
    for (set, input) in [("cafe", data("cafe")), ("reasons", data("reasons")), ("hostile", dir)] {
        for carrier in [Carrier::Preload, Carrier::Inline, Carrier::Variable] {
            let o = Options { experimental: true, ..opts(carrier) };
            let (out, _) = generate(std::slice::from_ref(&input), &backends(), &o).unwrap();
            let read = httproute_nginx::conf_reader::read(&out.nginx_conf).unwrap();
            assert_eq!(read, out.tree, "{set} {carrier:?}\n{}", out.nginx_conf);
            if set == "hostile" {
                assert!(out.nginx_conf.contains("${httproute_dollar}"), "{}", out.nginx_conf);
                assert!(!out.nginx_conf.contains("\nlocation = /pwned"), "{}", out.nginx_conf);
            }
            if let Some(d) = &out_dir {
                let name = format!("{set}-{carrier:?}").to_lowercase();
                std::fs::write(d.join(format!("{name}.conf")), &out.nginx_conf).unwrap();
                std::fs::write(d.join(format!("{name}.json")), json(&out.tree).to_string())
                    .unwrap();
                written += 1;
            }
        }
    }
    assert!(out_dir.is_none() || written == 9);
}

/// The variable name after the first `prefix` of `conf` (`httproute_split_TAG_0`: named by its
/// rule, see emit/state.rs `rule_tag`).
fn var_after(conf: &str, prefix: &str) -> String {
    let at = conf.find(prefix).unwrap_or_else(|| panic!("no {prefix:?} in {conf}")) + prefix.len();
    conf[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// A RequestRedirect with no scheme and no port on an HTTPS listener of port 443 sends the
/// request's scheme and no port (443 is https's own), and on 8443 keeps the port.
#[test]
fn a_redirect_on_port_443_names_no_port() {
    let gw = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners:\n  - {name: a, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}\n  - {name: b, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}\n---\n";
    let secret = format!(
        "kind: Secret\nmetadata: {{name: c}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: {}, tls.key: {}}}\n---\n",
        test_pem().0,
        test_pem().1
    );
    let rules = "  - matches: [{path: {value: /r}}]\n    filters: [{type: RequestRedirect, requestRedirect: {hostname: b.test}}]\n";
    let yaml = format!("{gw}{secret}{}", route("r", "2024-01-01T00:00:00Z", rules));
    let out = generate_yaml("redirect-443", &yaml, Carrier::Preload).unwrap();
    let conf = &out.nginx_conf;
    assert!(conf.contains("return 302 \"$scheme://b.test$request_uri\";"), "{conf}");
    assert!(conf.contains("return 302 \"$scheme://b.test:8443$request_uri\";"), "{conf}");
    assert!(!conf.contains(":443"), "{conf}");
}

/// A GRPCRoute's rule and match warnings name its kind: they said "HTTPRoute" for every route.
#[test]
fn a_grpc_routes_warnings_say_grpc_route() {
    let yaml = format!(
        "{GW}kind: GRPCRoute\nmetadata: {{name: g}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{method: {{type: RegularExpression, service: \"(\"}}}}, {{method: {{service: a.B}}}}]\n    backendRefs: [{{name: no-port}}]\n---\n"
    );
    let p = yaml_plan(&yaml);
    for want in [
        "GRPCRoute default/g rules[0].matches[0]: path regular expression ",
        "GRPCRoute default/g rules[0].backendRefs[0]: a Service reference needs a port",
    ] {
        assert!(p.warnings.iter().any(|w| w.starts_with(want)), "{want}\n{:#?}", p.warnings);
    }
    assert!(!p.warnings.iter().any(|w| w.contains("HTTPRoute")), "{:#?}", p.warnings);
}
