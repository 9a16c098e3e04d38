//! Reach policy: what a route may send requests to. ExternalName Services only with
//! `allow_external_name`; FQDN EndpointSlices never read as addresses; endpoint addresses the
//! API server refuses (loopback, link-local, unspecified, link-local multicast) never reach an
//! upstream; ReferenceGrants checked for the route's own kind; a namespace selector without
//! the Namespace object matches nothing. Core objects the API server refuses, or accepts in
//! shapes the generator did not expect, never stop the run.

mod common;

use common::inputs;

use httproute_nginx::BackendMap;
use httproute_nginx::plan::{ConditionType, Plan, PlanOptions, Reason, Target, plan};
use manifest_gen::objects;
use proptest::prelude::*;

const GW: &str = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n";

fn route(kind: &str, ns: &str, backend: &str) -> String {
    format!(
        "kind: {kind}\nmetadata: {{name: r, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: gw, namespace: default}}]\n  rules:\n  - backendRefs: [{backend}]\n---\n"
    )
}

fn plan_of(yaml: &str, allow_external_name: bool) -> Plan {
    let backends = BackendMap::new();
    let opts = PlanOptions { allow_external_name, ..PlanOptions::new(&backends) };
    plan(inputs(yaml), &opts)
}

/// Every backend target of every rule of every server.
fn targets(p: &Plan) -> Vec<Target> {
    let mut out = Vec::new();
    for port in &p.ports {
        for s in &port.servers {
            for r in &s.rules {
                out.extend(r.backends.iter().map(|b| b.target.clone()));
            }
        }
    }
    out
}

/// The ResolvedRefs condition of the only route: (ok, reason, message).
fn resolved(p: &Plan) -> (bool, Reason, String) {
    let r = &p.status.routes[0];
    let c = r.parents[0]
        .1
        .iter()
        .find(|c| c.kind == ConditionType::ResolvedRefs)
        .expect("a ResolvedRefs condition");
    (c.ok, c.reason, c.message.clone())
}

fn service(ns: &str, name: &str, spec: &str) -> String {
    format!("kind: Service\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {spec}\n---\n")
}

fn slice(ns: &str, service: &str, name: &str, body: &str) -> String {
    format!(
        "kind: EndpointSlice\nmetadata: {{name: {name}, namespace: {ns}, labels: {{kubernetes.io/service-name: {service}}}}}\n{body}\n---\n"
    )
}

#[test]
fn external_name_services_are_followed_only_when_the_operator_allows_it() {
    for host in ["127.0.0.1", "localhost", "db.other.svc.cluster.local", "example.com"] {
        let yaml = format!(
            "{GW}{}{}",
            route("HTTPRoute", "default", "{name: ext, port: 80}"),
            service("default", "ext", &format!("{{type: ExternalName, externalName: {host}}}"))
        );
        let p = plan_of(&yaml, false);
        assert_eq!(targets(&p), vec![Target::Status(500)], "{host}");
        let (ok, reason, why) = resolved(&p);
        assert!(!ok && reason == Reason::UnsupportedValue, "{host}: {why}");
        assert!(
            why.contains("which this gateway follows only with --allow-external-name"),
            "{why}"
        );

        let p = plan_of(&yaml, true);
        if host == "127.0.0.1" {
            // Even allowed, an address the API server refuses for endpoints is refused.
            assert_eq!(targets(&p), vec![Target::Status(500)]);
            assert!(resolved(&p).2.contains("loopback"), "{:?}", resolved(&p));
        } else {
            assert_eq!(targets(&p), vec![Target::Resolve(format!("{host}:80"))]);
            assert!(resolved(&p).0);
        }
    }
}

#[test]
fn fqdn_slices_are_never_read_as_addresses() {
    let svc = service("default", "s", "{ports: [{port: 80}]}");
    for a in ["127.0.0.1", "169.254.169.254", "10.0.0.1", "backend.example.com"] {
        let yaml = format!(
            "{GW}{}{svc}{}",
            route("HTTPRoute", "default", "{name: s, port: 80}"),
            slice(
                "default",
                "s",
                "s-1",
                &format!(
                    "addressType: FQDN\nendpoints: [{{addresses: [\"{a}\"]}}]\nports: [{{port: 8080}}]"
                )
            )
        );
        let p = plan_of(&yaml, false);
        assert_eq!(targets(&p), vec![Target::Status(503)], "{a}");
    }
}

#[test]
fn objects_the_api_server_accepts_never_stop_the_run() {
    let svc = service("default", "s", "{ports: [{port: 80}]}");
    let r = route("HTTPRoute", "default", "{name: s, port: 80}");
    // A Service scaled to 0, null addresses and conditions, null ports: no endpoints.
    for body in [
        "addressType: IPv4\nendpoints: null\nports: [{port: 8080}]",
        "addressType: IPv4\nendpoints: []\nports: null",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1], conditions: null}]\nports: [{port: 0}]",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{port: -1}]",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{port: 70000}]",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{port: 2147483647}]",
        "addressType: IPv4\nendpoints: [{addresses: [239.1.1.1]}]\nports: [{port: 80}]",
    ] {
        let p = plan_of(&format!("{GW}{r}{svc}{}", slice("default", "s", "s-1", body)), false);
        assert_eq!(targets(&p), vec![Target::Status(503)], "{body}");
        assert!(resolved(&p).0, "{body}: {:?}", resolved(&p));
    }
    let ok = slice(
        "default",
        "s",
        "s-1",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{port: 8080}]",
    );
    let p = plan_of(&format!("{GW}{r}{svc}{ok}"), false);
    assert_eq!(
        targets(&p),
        vec![Target::Upstream {
            name: "default_s_80".into(),
            servers: vec!["10.0.0.1:8080".into()].into()
        }]
    );
}

#[test]
fn objects_the_api_server_refuses_are_left_out_with_a_condition() {
    let r = route("HTTPRoute", "default", "{name: s, port: 80}");
    let svc = service("default", "s", "{ports: [{port: 80}]}");
    let good = slice(
        "default",
        "s",
        "good",
        "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1]}]\nports: [{port: 8080}]",
    );
    // A refused slice: the Service's other slices serve, the route says why.
    for body in [
        "addressType: IPv4\nendpoints: [{addresses: [127.0.0.1]}]\nports: [{port: 8080}]",
        "addressType: IPv4\nendpoints: [{addresses: [169.254.169.254]}]\nports: [{port: 8080}]",
        "addressType: IPv6\nendpoints: [{addresses: [\"::1\"]}]\nports: [{port: 8080}]",
        "addressType: IPv6\nendpoints: [{addresses: [\"::ffff:10.0.0.2\"]}]\nports: [{port: 8080}]",
        "addressType: IPv4\nendpoints: [{addresses: [\"fe80::1\"]}]\nports: [{port: 8080}]",
        "addressType: IPv4\nendpoints: [{addresses: []}]\nports: [{port: 8080}]",
        "addressType: Other\nendpoints: []",
        "addressType: IPv4\nendpoints: [{addresses: 7}]",
    ] {
        let bad = slice("default", "s", "bad", body);
        let p = plan_of(&format!("{GW}{r}{svc}{bad}{good}"), false);
        assert_eq!(
            targets(&p),
            vec![Target::Upstream {
                name: "default_s_80".into(),
                servers: vec!["10.0.0.1:8080".into()].into()
            }],
            "{body}"
        );
        let (ok, reason, why) = resolved(&p);
        assert!(!ok && reason == Reason::UnsupportedValue && why.contains("bad"), "{body}: {why}");
        assert!(p.warnings.iter().any(|w| w.contains("EndpointSlice default/bad")), "{body}");
    }
    // A refused Service: its backendRef does not resolve; another route's Service serves.
    for spec in [
        "{ports: [{port: 0}]}",
        "{ports: [{port: 70000}]}",
        "{ports: [{port: 80}, {port: 81}]}",
        "{type: ExternalName}",
        "{type: Nope, ports: [{port: 80}]}",
        "{ports: [{port: 80, targetPort: 0}]}",
        "7",
    ] {
        let p = plan_of(&format!("{GW}{r}{}{good}", service("default", "s", spec)), false);
        assert_eq!(targets(&p), vec![Target::Status(500)], "{spec}");
        let (ok, reason, why) = resolved(&p);
        assert!(!ok && reason == Reason::BackendNotFound, "{spec}: {why}");
    }
}

#[test]
fn reference_grants_are_checked_for_the_routes_own_kind() {
    let grant = |kind: &str| {
        format!(
            "kind: ReferenceGrant\nmetadata: {{name: g, namespace: data}}\nspec:\n  from: [{{group: gateway.networking.k8s.io, kind: {kind}, namespace: app}}]\n  to: [{{group: \"\", kind: Service}}]\n---\n"
        )
    };
    let backend = "{name: db, namespace: data, port: 80}";
    for (route_kind, grant_kind, ok) in [
        ("HTTPRoute", "HTTPRoute", true),
        ("HTTPRoute", "GRPCRoute", false),
        ("GRPCRoute", "GRPCRoute", true),
        ("GRPCRoute", "HTTPRoute", false),
    ] {
        let yaml = format!("{GW}{}{}", route(route_kind, "app", backend), grant(grant_kind));
        let p = plan_of(&yaml, false);
        let (resolved_ok, reason, why) = resolved(&p);
        assert_eq!(resolved_ok, ok, "{route_kind} with a grant for {grant_kind}: {why}");
        if !ok {
            assert_eq!(reason, Reason::RefNotPermitted);
            assert_eq!(targets(&p), vec![Target::Status(500)]);
        } else {
            assert_eq!(targets(&p), vec![Target::Resolve("db.data.svc.cluster.local:80".into())]);
        }
    }
}

#[test]
fn a_selector_without_the_namespace_object_matches_nothing_with_a_warning() {
    let gw = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: Selector, selector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [app]}]}}}}]\n---\n";
    let r = route("HTTPRoute", "app", "{name: s, port: 80}");
    let p = plan_of(&format!("{gw}{r}"), false);
    assert!(targets(&p).is_empty());
    assert!(p.warnings.iter().any(|w| w.contains("no Namespace object")), "{:?}", p.warnings);
    let ns = "kind: Namespace\nmetadata: {name: app}\n---\n";
    let p = plan_of(&format!("{gw}{r}{ns}"), false);
    assert_eq!(targets(&p).len(), 1);
}

/// An IP address from a mix of the ranges that matter, written the ways it can be written.
fn address() -> impl Strategy<Value = String> {
    let v4 = prop_oneof![
        Just([127u8, 0, 0, 1]),
        Just([169, 254, 169, 254]),
        Just([0, 0, 0, 0]),
        Just([224, 0, 0, 251]),
        Just([239, 1, 2, 3]),
        Just([255, 255, 255, 255]),
        any::<[u8; 4]>(),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| [127, a, b, 1]),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| [169, 254, a, b]),
    ]
    .prop_map(|o| std::net::Ipv4Addr::from(o).to_string());
    let v6 = prop_oneof![
        Just("::1".to_owned()),
        Just("::".to_owned()),
        Just("0:0:0:0:0:0:0:1".to_owned()),
        Just("::ffff:127.0.0.1".to_owned()),
        Just("::ffff:7f00:1".to_owned()),
        any::<u16>().prop_map(|x| format!("fe80::{x:x}")),
        any::<u16>().prop_map(|x| format!("febf:{x:x}::1")),
        any::<u16>().prop_map(|x| format!("ff02::{x:x}")),
        any::<u128>().prop_map(|x| std::net::Ipv6Addr::from(x).to_string()),
    ];
    prop_oneof![v4, v6, "[a-z0-9.:-]{1,20}"]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("REACH_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
    ))]

    /// Whatever the slices hold, no upstream server is an address the API server refuses
    /// or no TCP peer answers on, an IPv6 address in an IPv4 slice or the other way round,
    /// or anything from an FQDN slice; and the run always goes on.
    #[test]
    fn no_upstream_is_an_address_kubernetes_refuses(
        slices in proptest::collection::vec(
            (prop_oneof![Just("IPv4"), Just("IPv6"), Just("FQDN")],
             proptest::collection::vec(address(), 1..4)),
            1..4,
        )
    ) {
        let ns = Some("default");
        let mut docs = vec![objects::service(ns, "s", 80, None)];
        for (i, (kind, addrs)) in slices.iter().enumerate() {
            let endpoints = serde_json::json!([objects::endpoint(addrs, None)]);
            docs.push(objects::endpoint_slice(ns, &format!("s-{i}"), "s", kind, endpoints, 8080));
        }
        let yaml = format!(
            "{GW}{}{}",
            route("HTTPRoute", "default", "{name: s, port: 80}"),
            objects::file(&docs)
        );
        let p = plan_of(&yaml, false);
        for t in targets(&p) {
            let Target::Upstream { servers, .. } = t else { continue };
            for s in servers.iter() {
                let (host, port) = s.rsplit_once(':').unwrap();
                prop_assert_eq!(port, "8080");
                let ip: std::net::IpAddr =
                    host.trim_start_matches('[').trim_end_matches(']').parse().unwrap();
                prop_assert!(httproute_nginx::model::special_ip(ip).is_none(), "{}", s);
                prop_assert!(httproute_nginx::model::unusable_ip(ip).is_none(), "{}", s);
                if let std::net::IpAddr::V6(v6) = ip {
                    prop_assert!(v6.to_ipv4_mapped().is_none(), "{}", s);
                }
                // It came from a slice of its own family.
                let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
                prop_assert!(slices.iter().any(|(k, a)| *k == family
                    && a.iter().any(|a| a.parse::<std::net::IpAddr>().ok() == Some(ip))), "{}", s);
            }
        }
    }
}

/// A backendRef's `group` names the core group as `""` (or leaves it out): `core`, the name
/// some write for it, is no group of the API, and a Service of any group but `""` is not a
/// Service. Such a reference is refused (`ResolvedRefs: False, InvalidKind`) with a message
/// that names the group; it said `kind "Service" is not a Service`.
#[test]
fn a_backend_ref_of_another_group_is_refused_for_its_group() {
    for (backend, want) in [
        ("{name: s, port: 80, group: core}", "group \"core\" is not the core group (\"\")"),
        (
            "{name: s, port: 80, group: apps, kind: Service}",
            "group \"apps\" is not the core group (\"\")",
        ),
        (
            "{name: s, port: 80, group: \"\", kind: ConfigMap}",
            "kind \"ConfigMap\" is not a Service",
        ),
    ] {
        let p = plan_of(&format!("{GW}{}", route("HTTPRoute", "default", backend)), false);
        assert_eq!(targets(&p), vec![Target::Status(500)], "{backend}");
        let (ok, reason, why) = resolved(&p);
        assert!(!ok && reason == Reason::InvalidKind, "{backend}: {reason:?} {why}");
        assert!(why.ends_with(want), "{backend}: {why}");
        let warning = format!("HTTPRoute default/r rules[0].backendRefs[0]: {want};");
        assert!(p.warnings.iter().any(|w| w.starts_with(&warning)), "{warning}\n{:#?}", p.warnings);
    }
    // The core group as "" or left out: the Service is used.
    for backend in ["{name: s, port: 80, group: \"\"}", "{name: s, port: 80}"] {
        let p = plan_of(&format!("{GW}{}", route("HTTPRoute", "default", backend)), false);
        assert!(resolved(&p).0, "{backend}: {:?}", resolved(&p));
    }
}
