//! Work linear in the input: duplicate parentRefs refused as the CRD refuses them (they would
//! multiply the output), and GRPCRoute/HTTPRoute hostname conflicts found by hashing with one
//! warning per route that loses, the same outcome as the spec's pairwise rule.

mod common;

use common::inputs;

use httproute_nginx::BackendMap;
use httproute_nginx::plan::{ConditionType, Plan, PlanOptions, Reason, plan};
use proptest::prelude::*;

#[test]
fn duplicate_parent_refs_are_refused_as_the_crd_refuses_them() {
    let unique = "sectionName or port must be unique";
    let specified = "sectionName or port must be specified";
    for (refs, refused) in [
        ("[{name: gw}, {name: gw}]", Some(unique)),
        ("[{name: gw, sectionName: a}, {name: gw, sectionName: a}]", Some(unique)),
        ("[{name: gw, port: 80}, {name: gw, port: 80}]", Some(unique)),
        ("[{name: gw, kind: Gateway}, {name: gw}]", Some(unique)),
        ("[{name: gw}, {name: gw, sectionName: a}]", Some(specified)),
        ("[{name: gw, sectionName: a}, {name: gw, sectionName: a, port: 80}]", Some(specified)),
        ("[{name: gw, sectionName: a}, {name: gw, sectionName: b}]", None),
        ("[{name: gw, port: 80}, {name: gw, port: 81}]", None),
        ("[{name: gw}, {name: gw2}]", None),
        // The CRD compares the namespace as written: unset and "default" are two parents.
        ("[{name: gw}, {name: gw, namespace: default}]", None),
    ] {
        let yaml = format!(
            "kind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs: {refs}\n---\nkind: GRPCRoute\nmetadata: {{name: g}}\nspec:\n  parentRefs: {refs}\n---\n"
        );
        let i = inputs(&yaml);
        match refused {
            Some(why) => {
                assert_eq!(i.rejected.len(), 2, "{refs}");
                for r in &i.rejected {
                    assert!(r.error.message.starts_with(why), "{refs}: {}", r.error);
                    assert_eq!(r.error.field, "spec.parentRefs");
                }
            }
            None => assert!(i.rejected.is_empty() && i.routes.len() == 2, "{refs}"),
        }
    }
}

fn covers(wild: &str, host: &str) -> bool {
    wild.strip_prefix('*').is_some_and(|s| host.len() > s.len() && host.ends_with(s))
}

/// The spec's rule, pair by pair: a route loses when an older accepted route of the other
/// kind has a hostname in common with it.
fn pairwise(routes: &[(bool, Vec<String>)]) -> Vec<bool> {
    let meet = |a: &[String], b: &[String]| {
        let any = |h: &[String]| h.is_empty();
        any(a)
            || any(b)
            || a.iter().any(|x| b.iter().any(|y| x == y || covers(x, y) || covers(y, x)))
    };
    // Oldest first: a route that lost meets no newer one.
    let mut lost = vec![false; routes.len()];
    for i in 0..routes.len() {
        lost[i] = (0..i)
            .any(|j| !lost[j] && routes[j].0 != routes[i].0 && meet(&routes[i].1, &routes[j].1));
    }
    lost
}

fn plan_routes(routes: &[(bool, Vec<String>)]) -> Plan {
    let mut yaml = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n---\n".to_owned();
    for (i, (grpc, hosts)) in routes.iter().enumerate() {
        let kind = if *grpc { "GRPCRoute" } else { "HTTPRoute" };
        let hosts = hosts.iter().map(|h| format!("{h:?}")).collect::<Vec<_>>().join(", ");
        yaml += &format!(
            "kind: {kind}\nmetadata: {{name: r{i:03}, creationTimestamp: \"2024-01-01T00:{:02}:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{hosts}]\n---\n",
            i / 60,
            i % 60
        );
    }
    plan(inputs(&yaml), &PlanOptions::new(&BackendMap::new()))
}

fn lost(p: &Plan, n: usize) -> Vec<bool> {
    (0..n)
        .map(|i| {
            let name = format!("r{i:03}");
            let r = p.status.routes.iter().find(|r| r.id.name == name).unwrap();
            r.parents[0].1.iter().any(|c| {
                c.kind == ConditionType::Accepted
                    && !c.ok
                    && c.reason == Reason::NotAllowedByListeners
            })
        })
        .collect()
}

fn conflict_warnings(p: &Plan) -> usize {
    p.warnings.iter().filter(|w| w.contains("has hostnames in common")).count()
}

#[test]
fn one_warning_per_route_that_loses_not_per_pair() {
    let n = 40;
    let routes: Vec<(bool, Vec<String>)> =
        (0..2 * n).map(|i| (i % 2 == 1, vec!["a.test".to_owned()])).collect();
    let p = plan_routes(&routes);
    // All share a.test and alternate kinds by age: the oldest (an HTTPRoute) is accepted,
    // so every GRPCRoute meets it and loses, each with one warning (pair by pair it was
    // ~n^2); the HTTPRoutes meet no accepted GRPCRoute.
    let want = pairwise(&routes);
    assert_eq!(lost(&p, routes.len()), want);
    assert_eq!(conflict_warnings(&p), want.iter().filter(|l| **l).count());
    assert_eq!(conflict_warnings(&p), n);
}

fn hostname() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a.test".to_owned()),
        Just("b.a.test".to_owned()),
        Just("*.test".to_owned()),
        Just("*.a.test".to_owned()),
        Just("*.b.a.test".to_owned()),
        Just("c.b.a.test".to_owned()),
        Just("x.other".to_owned()),
        Just("*.other".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The hashed check decides exactly as the pairwise rule, with one warning per loser.
    #[test]
    fn hashing_decides_as_the_pairwise_rule(
        routes in proptest::collection::vec(
            (any::<bool>(), proptest::collection::vec(hostname(), 0..3)), 1..12)
    ) {
        let p = plan_routes(&routes);
        let want = pairwise(&routes);
        prop_assert_eq!(lost(&p, routes.len()), want.clone());
        prop_assert_eq!(conflict_warnings(&p), want.iter().filter(|l| **l).count());
    }
}

/// `--carrier inline` compiles a route's patterns in every location that holds them: the
/// regex budget charges each copy. One regex path in `k` hostnames' servers, a budget of 3
/// copies: inline, k = 2 fits and 2k = 4 is refused; preloaded (one list, compiled once),
/// both fit.
#[test]
fn the_regex_budget_charges_each_inline_copy() {
    let refused = |k: usize, per_location: bool| {
        let hosts: Vec<String> = (0..k).map(|i| format!("h{i}.example")).collect();
        let yaml = format!(
            "kind: Gateway\nmetadata: {{name: gw}}\nspec:\n  \
             listeners: [{{name: l, port: 80, protocol: HTTP}}]\n---\n\
             kind: HTTPRoute\nmetadata: {{name: r}}\nspec:\n  parentRefs: [{{name: gw}}]\n  \
             hostnames: [{}]\n  rules:\n  \
             - matches: [{{path: {{type: RegularExpression, value: \"/v[0-9]+/x\"}}}}]\n",
            hosts.join(", ")
        );
        let backends = BackendMap::new();
        let mut opts = PlanOptions::new(&backends);
        opts.regex_memory_per_tenant = 3 * httproute_nginx::limits::regex_charge(64);
        opts.regex_per_location = per_location;
        let p = plan(inputs(&yaml), &opts);
        !p.refused.is_empty()
    };
    assert!(!refused(2, true));
    assert!(refused(4, true));
    assert!(!refused(2, false) && !refused(4, false));
}
