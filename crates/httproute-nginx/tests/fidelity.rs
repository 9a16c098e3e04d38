//! Spec fidelity: precedence ties broken by the `"{namespace}/{name}"` string, and a
//! RequestRedirect's Location port derived as the Gateway API says (the filter's port, else the
//! scheme's well-known port when the filter names a scheme, else the listener's; never written
//! when it is the effective scheme's own: http 80, https 443).

mod common;

use common::inputs;

use httproute_nginx::plan::{ConditionType, PlanOptions, Reason, plan};
use httproute_nginx::{BackendMap, Options, generate_from};
use proptest::prelude::*;
use std::collections::BTreeSet;

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
        inputs(&format!("{gw}{}{}", route("a", "b-c"), route("a-b", "c"))),
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
        let p = plan(inputs(&yaml), &PlanOptions::new(&BackendMap::new()));
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

/// A Gateway on port 80 for the conflict-order property: (namespace, name, creation day or
/// none, HTTPS, `*.test` hostname).
type Gw = (String, String, Option<u8>, bool, bool);

fn gateway_doc((ns, name, day, https, wild): &Gw) -> String {
    let ts =
        day.map_or(String::new(), |d| format!(", creationTimestamp: \"2024-01-0{d}T00:00:00Z\""));
    let host = if *wild { ", hostname: \"*.test\"" } else { "" };
    let (protocol, tls) = if *https {
        ("HTTPS", ", tls: {mode: Terminate, certificateRefs: [{name: missing}]}")
    } else {
        ("HTTP", "")
    };
    // A route of its own, for x.test, older than every Gateway (so each attachment's age is
    // its Gateway's): which listener a request for x.test reaches decides which of these
    // routes answers.
    format!(
        "kind: Gateway\nmetadata: {{name: {name}, namespace: {ns}{ts}}}\nspec:\n  listeners: [{{name: l, port: 80, protocol: {protocol}{host}{tls}}}]\n---\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"2023-12-31T00:00:00Z\"}}\nspec:\n  parentRefs: [{{name: {name}}}]\n  hostnames: [x.test]\n  rules: [{{matches: [{{path: {{type: PathPrefix, value: /{ns}-{name}}}}}]}}]\n---\n"
    )
}

/// A Gateway's place in the conflict order: dated before undated, by day, then by the
/// `"{namespace}/{name}"` string.
fn conflict_key(g: &Gw) -> (bool, Option<u8>, String) {
    (g.2.is_none(), g.2, format!("{}/{}", g.0, g.1))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Gateways sharing a port: the oldest (creationTimestamp, none the newest; then the
    /// `"{namespace}/{name}"` string) decides the port's protocol, every listener of the other
    /// protocol is refused with PortUnavailable, and the configuration and the statuses do not
    /// depend on the order of the documents.
    #[test]
    fn a_shared_port_follows_the_conflict_order_not_the_document_order(
        gws in proptest::collection::btree_map(
            ("[a-c](-?[a-c])?", "[a-c](-?[a-c])?"),
            (proptest::option::of(1u8..4), any::<bool>(), any::<bool>()),
            2..5,
        ),
        rotate in 0usize..4,
    ) {
        let gws: Vec<Gw> =
            gws.into_iter().map(|((ns, n), (d, h, w))| (ns, n, d, h, w)).collect();
        let oldest = gws
            .iter()
            .min_by_key(|g| conflict_key(g))
            .unwrap();
        let mut docs: Vec<String> = gws.iter().map(gateway_doc).collect();
        let forward = docs.concat();
        let n = docs.len();
        docs.rotate_left(rotate % n);
        docs.reverse();
        let shuffled = docs.concat();
        let mut outputs = Vec::new();
        for yaml in [&forward, &shuffled] {
            let p = plan(inputs(yaml), &PlanOptions::new(&BackendMap::new()));
            for g in &gws {
                let l = p
                    .status
                    .listeners
                    .iter()
                    .find(|l| l.id.namespace == g.0 && l.id.gateway == g.1)
                    .expect("every listener has a status");
                let refused = l.conditions.iter().any(|c| {
                    c.reason == httproute_nginx::plan::Reason::PortUnavailable && !c.ok
                });
                prop_assert_eq!(refused, g.3 != oldest.3, "{:?} (oldest {:?})", g, oldest);
                // Of the port's protocol, a listener whose hostname (`*.test` or none) an
                // earlier Gateway's listener has would serve nothing: Conflicted, not accepted.
                let order = conflict_key;
                let shadowed = g.3 == oldest.3
                    && gws.iter().any(|o| o.3 == g.3 && o.4 == g.4 && order(o) < order(g));
                let has = |kind: ConditionType, ok: bool| {
                    l.conditions.iter().any(|c| {
                        c.kind == kind && c.ok == ok && c.reason == Reason::HostnameConflict
                    })
                };
                // The most specific listener for x.test (`*.test` over none; of equally specific
                // ones the oldest Gateway's) loses it to the oldest Gateway's route (issue #45):
                // Conflicted, still accepted.
                let mut same: Vec<&Gw> = gws.iter().filter(|o| o.3 == oldest.3).collect();
                same.sort_by_key(|o| conflict_key(o));
                let specific = same.iter().find(|o| o.4).unwrap_or(&same[0]);
                let taken = *specific == g && *specific != same[0];
                prop_assert_eq!(has(ConditionType::Conflicted, true), shadowed || taken, "{:?}", g);
                prop_assert_eq!(has(ConditionType::Accepted, false), shadowed, "{:?}", g);
            }
            // x.test is served by the routes of the oldest accepted Gateway (each has a route
            // for it: the name is that Gateway's), through its listener.
            let accepted: Vec<&Gw> = {
                let mut a: Vec<&Gw> = gws.iter().filter(|g| g.3 == oldest.3).collect();
                a.sort_by_key(|g| conflict_key(g));
                a
            };
            let winner = accepted[0];
            let server = p.ports[0]
                .servers
                .iter()
                .find(|s| s.hostname.as_deref() == Some("x.test"))
                .expect("a server for x.test");
            // (a prefix path has two locations: each route counted once)
            let served: BTreeSet<String> = server
                .locations
                .iter()
                .flat_map(|l| l.candidates())
                .map(|c| c.id.route.to_string())
                .collect();
            prop_assert_eq!(served, BTreeSet::from([format!("{}/{}", winner.0, winner.1)]));
            let (out, _) = generate_from(&inputs(yaml), &BackendMap::new(), &opts()).unwrap();
            outputs.push(out.nginx_conf);
        }
        prop_assert_eq!(&outputs[0], &outputs[1]);
    }
}

/// Gateways on one port: (namespace, day of creation, listener hostnames: `None` none).
type Shared = (&'static str, u8, Vec<Option<&'static str>>);
/// A route: (namespace, the Gateway (its namespace) it names, hostnames).
type SharedRoute = (&'static str, &'static str, Vec<&'static str>);

fn shared_port_doc(gws: &[Shared], routes: &[SharedRoute]) -> String {
    let mut y = String::new();
    for (ns, day, hosts) in gws {
        let listeners: Vec<String> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let host = h.map(|h| format!(", hostname: \"{h}\"")).unwrap_or_default();
                format!(
                    "{{name: l{i}, port: 80, protocol: HTTP{host}, allowedRoutes: {{namespaces: {{from: All}}}}}}"
                )
            })
            .collect();
        y += &format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}, creationTimestamp: \"2024-01-0{day}T00:00:00Z\"}}\nspec:\n  listeners: [{}]\n---\n",
            listeners.join(", ")
        );
    }
    for (i, (ns, gw, hosts)) in routes.iter().enumerate() {
        let hostnames: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
        y += &format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i}, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: {gw}}}]\n  hostnames: [{}]\n  rules: [{{matches: [{{path: {{type: PathPrefix, value: /r{i}}}}}]}}]\n---\n",
            hostnames.join(", ")
        );
    }
    y
}

/// Whether a listener of hostname `l` (`None`: any) admits route hostname `h`.
fn admits(l: Option<&str>, h: &str) -> bool {
    match l {
        None => true,
        Some(l) => {
            l == h || l.strip_prefix('*').is_some_and(|s| h.ends_with(s) && h.len() > s.len())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Nothing unserved goes unsaid: every exact hostname of an accepted route that a
    /// listener it attached to admits is either served by it (a rule of the route in that
    /// hostname's server) or named in the message of that parentRef's `Accepted: True`
    /// condition (another listener of the port, more specific or of an older Gateway, serves
    /// the name), never both, whatever the Gateways, their ages, listeners and routes on the port.
    #[test]
    fn a_route_hostname_another_listener_serves_is_said_on_the_route(
        gws in proptest::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c"]),
            (1u8..4, proptest::collection::vec(
                prop::option::of(prop::sample::select(vec!["a.test", "*.test", "b.a.test", "*.a.test"])),
                1..3,
            )),
            1..4,
        ),
        routes in proptest::collection::vec(
            (
                prop::sample::select(vec!["a", "b", "c"]),
                prop::sample::select(vec!["a", "b", "c"]),
                proptest::collection::vec(prop::sample::select(vec!["a.test", "x.test", "b.a.test"]), 1..3),
            ),
            1..5,
        ),
    ) {
        let gws: Vec<Shared> = gws.into_iter().map(|(ns, (d, h))| (ns, d, h)).collect();
        let p = plan(inputs(&shared_port_doc(&gws, &routes)), &PlanOptions::new(&BackendMap::new()));
        for r in &p.status.routes {
            let i: usize = r.id.name[1..].parse().unwrap();
            for ((_, conditions), attached) in r.parents.iter().zip(&r.attached) {
                let Some(accepted) =
                    conditions.iter().find(|c| c.kind == ConditionType::Accepted && c.ok)
                else {
                    continue;
                };
                for l in attached {
                    let lh = gws
                        .iter()
                        .find(|g| g.0 == l.namespace)
                        .and_then(|g| g.2[l.name[1..].parse::<usize>().unwrap()]);
                    for h in routes[i].2.iter().filter(|h| admits(lh, h)) {
                        let served = p.ports.iter().flat_map(|port| &port.servers).any(|s| {
                            s.hostname.as_deref() == Some(*h)
                                && s.listener.as_ref() == Some(l)
                                && s.rules.iter().any(|rule| rule.id.route == r.id)
                        });
                        let named = accepted.message.split("; ").any(|part| {
                            part.starts_with(&format!("hostname {h} on port 80 is served by listener "))
                                && part.contains(&format!(", not listener {l}: "))
                        });
                        prop_assert!(!(served && named), "{} on {l}: {h} served and said unserved", r.id);
                        prop_assert!(
                            served || named,
                            "{} on {l}: {h} neither served nor said ({:?})\n{}",
                            r.id, accepted.message, shared_port_doc(&gws, &routes)
                        );
                    }
                }
            }
        }
    }
}
