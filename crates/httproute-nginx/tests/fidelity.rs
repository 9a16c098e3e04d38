//! Spec fidelity: precedence ties broken by the `"{namespace}/{name}"` string, and a
//! RequestRedirect's Location port derived as the Gateway API says (the filter's port, else the
//! scheme's well-known port when the filter names a scheme, else the listener's; never written
//! when it is the effective scheme's own: http 80, https 443).

mod common;

use common::inputs;

use httproute_nginx::plan::{PlanOptions, plan};
use httproute_nginx::{BackendMap, Options, generate_from};
use proptest::prelude::*;

fn opts() -> Options {
    common::options()
}

#[test]
fn a_real_pair_where_the_string_and_the_pair_disagree() {
    // ("a", "b-c") < ("a-b", "c") as pairs, but "a-b/c" < "a/b-c" as strings ('-' < '/').
    assert!(("a", "b-c") < ("a-b", "c"));
    assert!("a-b/c" < "a/b-c");
    let gw = "kind: Gateway\nmetadata: {name: gw, namespace: gw}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n";
    let route = |ns: &str, name: &str| {
        format!(
            "kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: gw}}]\n---\n"
        )
    };
    let p = plan(
        &inputs(&format!("{gw}{}{}", route("a", "b-c"), route("a-b", "c"))),
        &PlanOptions::new(&BackendMap::new()),
    );
    let server = &p.ports[0].servers[0];
    let first = &server.locations[0].candidates().next().unwrap().id.route;
    assert_eq!(first.to_string(), "a-b/c");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Routes equal in every other precedence rule: each location's candidates are in the
    /// order of their `"{namespace}/{name}"` strings.
    #[test]
    fn ties_follow_the_namespace_slash_name_string(
        names in proptest::collection::btree_set(
            ("[a-c](-?[a-c]){0,2}", "[a-c]([-.]?[a-c]){0,2}"), 2..6)
    ) {
        let gw = "kind: Gateway\nmetadata: {name: gw, namespace: gw}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n";
        let mut yaml = gw.to_owned();
        for (ns, name) in &names {
            yaml += &format!("kind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"2024-01-01T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: gw}}]\n  rules: [{{matches: [{{path: {{type: PathPrefix, value: /x}}}}]}}]\n---\n");
        }
        let p = plan(&inputs(&yaml), &PlanOptions::new(&BackendMap::new()));
        let mut want: Vec<String> = names.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
        want.sort();
        let server = &p.ports[0].servers[0];
        let served: Vec<_> = server.locations.iter().filter(|l| !l.is_empty()).collect();
        prop_assert!(!served.is_empty());
        for l in served {
            let got: Vec<String> = l.candidates().map(|c| c.id.route.to_string()).collect();
            prop_assert_eq!(&got, &want);
        }
    }
}

/// The Location a redirect writes, for a listener (port, TLS) and a filter (scheme, port).
fn location(listener: u16, tls: bool, scheme: Option<&str>, port: Option<u16>) -> String {
    let protocol = if tls { "HTTPS, tls: {certificateRefs: [{name: c}]}" } else { "HTTP" };
    let mut filter = Vec::new();
    if let Some(s) = scheme {
        filter.push(format!("scheme: {s}"));
    }
    if let Some(p) = port {
        filter.push(format!("port: {p}"));
    }
    let yaml = format!(
        "kind: Gateway\nmetadata: {{name: gw}}\nspec:\n  listeners: [{{name: l, port: {listener}, protocol: {protocol}}}]\n---\nkind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules: [{{filters: [{{type: RequestRedirect, requestRedirect: {{{}}}}}]}}]\n---\n",
        filter.join(", ")
    );
    let mut o = opts();
    o.certificates.insert("default/c".into(), ("c.crt".into(), "c.key".into()));
    let (out, _) = generate_from(&inputs(&yaml), &BackendMap::new(), &o).unwrap();
    let line = out
        .nginx_conf
        .lines()
        .find(|l| l.contains("return 302"))
        .unwrap_or_else(|| panic!("no redirect in {}", out.nginx_conf))
        .to_owned();
    line.split('"').nth(1).unwrap().to_owned()
}

#[test]
fn the_location_port_is_written_only_when_it_is_not_the_schemes_own() {
    for listener in [80, 443, 8080, 8443] {
        for tls in [false, true] {
            for scheme in [None, Some("http"), Some("https")] {
                for port in [None, Some(80), Some(443), Some(8443)] {
                    let effective = scheme.unwrap_or(if tls { "https" } else { "http" });
                    let well_known = if effective == "https" { 443 } else { 80 };
                    let p = port.unwrap_or(if scheme.is_some() { well_known } else { listener });
                    let want = format!(
                        "{}://$host{}$request_uri",
                        scheme.unwrap_or("$scheme"),
                        if p == well_known { String::new() } else { format!(":{p}") }
                    );
                    let got = location(listener, tls, scheme, port);
                    assert_eq!(got, want, "listener {listener} tls {tls} {scheme:?} {port:?}");
                }
            }
        }
    }
}
