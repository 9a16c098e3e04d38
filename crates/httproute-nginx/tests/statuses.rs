//! Status of what is left out: every dropped match or rule has a condition on its route, and
//! a route with nothing left to serve is not accepted (tests/data/dropped: one route per case,
//! golden status and warnings).

mod common;

use common::data;

use httproute_nginx::plan::{ConditionType, Reason};
use httproute_nginx::{BackendMap, generate_all};

#[test]
fn dropped_matches_and_rules_have_conditions_and_a_route_with_none_left_is_not_accepted() {
    let g = generate_all(&[data("dropped")], &BackendMap::new(), &common::options()).unwrap();
    common::assert_golden_status("dropped", &g);

    // What each route's one parentRef says, whatever the golden file holds.
    let conditions = |name: &str| {
        let r = g.status.routes.iter().find(|r| r.id.name == name).expect(name);
        assert_eq!(r.parents.len(), 1, "{name}");
        r.parents[0].1.clone()
    };
    let find =
        |name: &str, kind: ConditionType| conditions(name).into_iter().find(|c| c.kind == kind);
    for (name, left) in [
        ("partial-match", true),
        ("partial-rule", true),
        ("every-match", false),
        ("every-rule", false),
    ] {
        let accepted = find(name, ConditionType::Accepted).expect("Accepted");
        let partial = find(name, ConditionType::PartiallyInvalid);
        assert_eq!(accepted.ok, left, "{name}: {accepted:?}");
        if left {
            let p = partial.expect("PartiallyInvalid");
            assert!(p.ok && p.reason == Reason::UnsupportedValue, "{name}: {p:?}");
            assert!(p.message.starts_with("Dropped Rule "), "{name}: {p:?}");
        } else {
            assert_eq!(partial, None, "{name}: no valid rule is left for PartiallyInvalid");
            assert_eq!(accepted.reason, Reason::UnsupportedValue, "{name}");
            assert!(accepted.message.starts_with("no rule is left to serve: Dropped Rule "));
        }
        // One condition of each type.
        let mut kinds: Vec<&str> = conditions(name).iter().map(|c| c.kind.as_str()).collect();
        let n = kinds.len();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), n, "{name}: {kinds:?}");
    }
    let p = find("partial-match", ConditionType::PartiallyInvalid).unwrap();
    assert!(
        p.message.starts_with("Dropped Rule 0: match 1: headers[0].value: regular expression"),
        "{p:?}"
    );
    let untouched = conditions("untouched");
    assert!(untouched.iter().all(|c| c.ok && c.kind != ConditionType::PartiallyInvalid));
}

/// Objects the API server (or their CRD) refuses cost only themselves: a Gateway with a port
/// 0 listener, a ReferenceGrant without `spec`, a Secret of bad base64, a Namespace whose
/// labels are not a map and an object without a kind are each left out with a warning (the
/// Gateway with `Accepted: False, Invalid`, its route `NoMatchingParent`; the listener naming
/// the Secret `InvalidCertificateRef` with the Secret's error); the other tenant is served.
#[test]
fn objects_the_api_server_refuses_cost_only_themselves() {
    let dir = std::env::temp_dir().join(format!("hr-statuses-refused-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let good = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: http, port: 8080, protocol: HTTP}, {name: https, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: c}]}}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: a}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{matches: [{path: {value: /a}}], backendRefs: [{name: s, port: 80}]}]\n---\n";
    let bad = "kind: Gateway\nmetadata: {name: gw, namespace: b}\nspec:\n  listeners: [{name: http, port: 0, protocol: HTTP}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: b}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{matches: [{path: {value: /b}}], backendRefs: [{name: s, port: 80}]}]\n---\nkind: ReferenceGrant\nmetadata: {name: g, namespace: b}\n---\nkind: Secret\nmetadata: {name: c, namespace: a}\ntype: kubernetes.io/tls\ndata: {tls.crt: \"%%\", tls.key: a2V5}\n---\nkind: Namespace\nmetadata: {name: b, labels: [x]}\n---\nmetadata: {name: nokind}\n";
    std::fs::write(dir.join("all.yaml"), format!("{good}{bad}")).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("a/s:80".into(), "127.0.0.1:9".into());
    backends.insert("b/s:80".into(), "127.0.0.1:10".into());
    let g = generate_all(std::slice::from_ref(&dir), &backends, &common::options())
        .expect("the run goes on");
    let refused: Vec<&String> =
        g.warnings.iter().filter(|w| w.contains("is refused as the API server")).collect();
    for what in
        ["Gateway b/gw ", "ReferenceGrant b/g ", "Secret a/c ", "Namespace b ", "An object "]
    {
        assert_eq!(
            refused.iter().filter(|w| w.starts_with(what)).count(),
            1,
            "{what}: {refused:?}"
        );
    }
    assert_eq!(refused.len(), 5, "{refused:?}");
    // Tenant a is served on its port; b's Gateway writes nothing.
    let conf = &g.output.nginx_conf;
    assert!(conf.contains("listen 8080"), "{conf}");
    assert!(!conf.contains("listen 0"), "{conf}");
    assert!(conf.contains("127.0.0.1:9"), "{conf}");
    assert!(!conf.contains("127.0.0.1:10"), "{conf}");
    // The refused Gateway's status, and its route's.
    let gw = &g.status.refused_gateways;
    assert_eq!(gw.len(), 1, "{gw:?}");
    assert_eq!((gw[0].namespace.as_str(), gw[0].name.as_str()), ("b", "gw"));
    let accepted = &gw[0].conditions[0];
    assert!(!accepted.ok && accepted.reason == Reason::Invalid, "{accepted:?}");
    assert!(accepted.message.starts_with("spec.listeners[0].port: must be 1-65535"));
    let b = g.status.routes.iter().find(|r| r.id.namespace == "b").unwrap();
    assert_eq!(b.parents[0].1[0].reason, Reason::NoMatchingParent, "{b:?}");
    let a = g.status.routes.iter().find(|r| r.id.namespace == "a").unwrap();
    assert!(a.parents[0].1[0].ok, "{a:?}");
    // The HTTPS listener names the refused Secret: why it cannot use it.
    let https = g.status.listeners.iter().find(|l| l.id.name == "https").unwrap();
    let refs = https.conditions.iter().find(|c| c.kind == ConditionType::ResolvedRefs).unwrap();
    assert_eq!(refs.reason, Reason::InvalidCertificateRef, "{refs:?}");
    assert!(refs.message.contains("Secret a/c: data.tls.crt: not base64"), "{refs:?}");
    let yaml = httproute_nginx::status::yaml(&g.status);
    assert!(yaml.contains("name: gw\n    namespace: b"), "{yaml}");
    let _ = std::fs::remove_dir_all(&dir);
}
