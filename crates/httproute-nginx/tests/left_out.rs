//! What is left out of the configuration (a route, a listener, a backendRef's share: the
//! plan's refusals, which `generate --nginx` adds the newest tenant's routes and listeners
//! to when NGINX refuses) has its condition, and the status of every other object stays.
//!
//! - `each_kind_left_out_has_its_condition`: a share, a route, a listener, each left out.
//! - `a_parent_ref_is_accepted_iff_a_listener_it_attached_to_is_left`: for generated tenants
//!   whose routes name the Gateway, a listener, two, or a listener and a port, every listener
//!   left out alone and a generated set of them: a route parentRef that was Accepted is
//!   Accepted iff a listener it attached to is left; a route accepted through none is not
//!   written; every other condition, and every other tenant's status, stays as it was.
//!
//! The cases are deterministic (proptest's fixed seed and no wall clock);
//! `HTTPROUTE_LEFT_OUT_CASES=N` runs N (default 256).

mod common;

use std::path::Path;

use httproute_nginx::BackendMap;
use httproute_nginx::emit::{Output, Tree, Unit, emit_with};
use httproute_nginx::plan::{ConditionType, Plan, Reason};
use manifest_gen::objects::{self, Set};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct Listener {
    /// 0 or 1: which of the tenant's two ports.
    port: usize,
    hostname: Option<usize>,
}

#[derive(Debug, Clone)]
struct BackendRef {
    service: usize,
    weight: u32,
    /// A filter of its own (a location of its own).
    filter: bool,
}

#[derive(Debug, Clone)]
struct Rule {
    header: bool,
    redirect: bool,
    backends: Vec<BackendRef>,
}

#[derive(Debug, Clone)]
struct Route {
    /// Host names: its own `hI`, the listener's `l1`, a wildcard.
    hosts: Vec<usize>,
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Tenant {
    tls: [bool; 2],
    listeners: Vec<Listener>,
    routes: Vec<Route>,
}

fn tenant() -> impl Strategy<Value = Tenant> {
    let listener = (0usize..2, prop::option::of(0usize..2))
        .prop_map(|(port, hostname)| Listener { port, hostname });
    let backend = (0usize..3, 1u32..4, prop::bool::weighted(0.25))
        .prop_map(|(service, weight, filter)| BackendRef { service, weight, filter });
    let rule = (any::<bool>(), prop::bool::weighted(0.2), prop::collection::vec(backend, 1..4))
        .prop_map(|(header, redirect, backends)| Rule { header, redirect, backends });
    let route = (prop::collection::vec(0usize..3, 0..3), prop::collection::vec(rule, 1..3))
        .prop_map(|(mut hosts, rules)| {
            hosts.sort_unstable();
            hosts.dedup();
            Route { hosts, rules }
        });
    (any::<[bool; 2]>(), prop::collection::vec(listener, 1..3), prop::collection::vec(route, 1..4))
        .prop_map(|(tls, listeners, routes)| Tenant { tls, listeners, routes })
}

fn port(n: usize, k: usize) -> u16 {
    20000 + 100 * n as u16 + k as u16
}

/// Tenant `n`'s manifests, route `i`'s parentRefs `parent_refs(i)`. Two listeners on one port
/// never both lack a host name, nor have the same one.
fn manifests_with(n: usize, t: &Tenant, parent_refs: impl Fn(usize) -> Vec<Value>) -> String {
    let ns = format!("tenant{n}");
    let mut listeners = Vec::new();
    let mut taken: Vec<(usize, Option<usize>)> = Vec::new();
    for (j, l) in t.listeners.iter().enumerate() {
        let mut hostname = l.hostname;
        if taken.contains(&(l.port, hostname)) {
            hostname = Some(hostname.map_or(0, |h| h + 1));
        }
        if taken.contains(&(l.port, hostname)) {
            continue;
        }
        taken.push((l.port, hostname));
        let host = hostname.map(|h| format!("l{h}.{ns}.test"));
        let cert = t.tls[l.port].then_some("cert");
        listeners.push(objects::listener(&format!("l{j}"), port(n, l.port), host.as_deref(), cert));
    }
    let mut docs = vec![objects::gateway(Some(&ns), "gw", listeners)];
    for (i, r) in t.routes.iter().enumerate() {
        let hosts: Vec<String> = r
            .hosts
            .iter()
            .map(|h| match h {
                0 => format!("h{i}.{ns}.test"),
                1 => format!("l1.{ns}.test"),
                _ => format!("*.{ns}.test"),
            })
            .collect();
        let rules =
            r.rules.iter().enumerate().map(|(ri, rule)| tenant_rule(&ns, i, ri, rule)).collect();
        docs.push(objects::http_route(Some(&ns), &format!("r{i}"), parent_refs(i), &hosts, rules));
    }
    objects::file(&docs)
}

/// Rule `ri` of tenant `ns`'s route `i`.
fn tenant_rule(ns: &str, i: usize, ri: usize, rule: &Rule) -> Value {
    let header = rule.header.then(|| vec![objects::header("Exact", "x-t", "1")]);
    let matches = vec![
        objects::path_match("PathPrefix", &format!("/{ns}/r{i}/p{ri}")).set_some("headers", header),
    ];
    if rule.redirect {
        let to = json!({"path": {"type": "ReplaceFullPath", "replaceFullPath": format!("/{ns}/moved")},
            "statusCode": 302});
        return objects::rule(matches, vec![objects::filter("RequestRedirect", to)], vec![]);
    }
    let backends = rule
        .backends
        .iter()
        .map(|b| {
            let filter = b.filter.then(|| {
                let set = json!({"set": [{"name": "x-b", "value": ns}]});
                vec![objects::filter("RequestHeaderModifier", set)]
            });
            objects::backend(&format!("s{}", b.service), 80, Some(b.weight))
                .set_some("filters", filter)
        })
        .collect();
    objects::rule(matches, vec![], backends)
}

/// The manifests `yaml` of `tenants` tenants loaded, with each tenant's backends (s0 and s1
/// have addresses, upstreams; s2 is resolved per request) and certificate files.
fn load(
    yaml: &str,
    tenants: usize,
) -> Result<(httproute_nginx::model::Inputs, BackendMap, httproute_nginx::Options), TestCaseError> {
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("t.yaml"), yaml, &mut inputs)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
    let mut backends = BackendMap::new();
    let mut opts = common::options();
    for n in 0..tenants {
        for k in 0..2 {
            backends.insert(format!("tenant{n}/s{k}:80"), format!("10.{}.{k}.1:80", n + 1));
        }
        opts.certificates.insert(
            format!("tenant{n}/cert"),
            (format!("/c/tenant{n}.crt"), format!("/c/tenant{n}.key")),
        );
    }
    Ok((inputs, backends, opts))
}

/// A runner of `HTTPROUTE_LEFT_OUT_CASES` cases (default 256) from a fixed seed: the same
/// cases every run.
fn seeded_runner(seed: u8) -> TestRunner {
    let cases =
        std::env::var("HTTPROUTE_LEFT_OUT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]))
}

/// `plan`'s configuration with `us` left out as `generate --nginx` leaves them out (the
/// plan's refusals), each with `why`.
fn without(
    plan: &mut Plan,
    opts: &httproute_nginx::Options,
    us: impl IntoIterator<Item = (Unit, String)>,
) -> Result<Output, String> {
    plan.refused.extend(us);
    emit_with(plan, opts, Tree::Drop)
}

/// Each new kind left out, and the condition on its node: a share's route `ResolvedRefs:
/// False` (still accepted, no `PartiallyInvalid`); a route brought server's route `Accepted:
/// False` with the reason and no server for its name; a listener's `Programmed: False`.
#[test]
fn each_kind_left_out_has_its_condition() {
    let yaml = "kind: Gateway\nmetadata: {name: gw, namespace: n}\nspec:\n  listeners:\n  - {name: a, port: 20000, protocol: HTTP}\n  - {name: b, port: 20001, protocol: HTTP, hostname: b.test}\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: n}\nspec:\n  parentRefs: [{name: gw, sectionName: a}]\n  hostnames: [only-r.test]\n  rules:\n  - backendRefs: [{name: s0, port: 80}, {name: s1, port: 80}]\n---\nkind: HTTPRoute\nmetadata: {name: q, namespace: n}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s0, port: 80}]\n";
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("k.yaml"), yaml, &mut inputs).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("n/s0:80".into(), "10.9.0.1:80".into());
    backends.insert("n/s1:80".into(), "10.9.1.1:80".into());
    let opts = common::options();
    let plan = || httproute_nginx::plan_for(&inputs, &backends, &opts);
    let p = plan();
    let r = p.status.routes.iter().find(|r| r.id.name == "r").unwrap().id.clone();
    let rule = httproute_nginx::plan::RuleId { route: r.clone(), index: 0 };
    let share = Unit::BackendShare { rule, index: 1 };
    let route = Unit::Route(r);
    let b = p.status.listeners.iter().find(|l| l.id.name == "b").unwrap().id.clone();
    let listener = Unit::Listener(b);

    // The plan as served after the drop answers a request as NGINX would (explain).
    let served = std::cell::RefCell::new(plan());
    let conditions = |u: &Unit| {
        let mut p = plan();
        let out = without(&mut p, &opts, [(u.clone(), "nginx -t: no".into())]).unwrap();
        assert_eq!(out.dropped.len(), 1, "{:?}", out.dropped);
        httproute_nginx::plan::dropped_from_configuration(&mut p.status, &out.dropped);
        let mut as_served = plan();
        httproute_nginx::explain::without_dropped(&mut as_served, &out.dropped);
        *served.borrow_mut() = as_served;
        (out, p.status)
    };
    let answer = |port: u16, host: &str| common::explain_get(&served.borrow(), port, host);
    let route_conditions = |s: &httproute_nginx::plan::Status, name: &str| {
        let r = s.routes.iter().find(|r| r.id.name == name).unwrap();
        r.parents.iter().flat_map(|(_, cs)| cs.clone()).collect::<Vec<_>>()
    };

    let (out, status) = conditions(&share);
    assert!(matches!(out.dropped[0].unit, Unit::BackendShare { index: 1, .. }));
    assert!(!out.nginx_conf.contains("10.9.1.1"), "{}", out.nginx_conf);
    assert!(out.nginx_conf.contains("10.9.0.1"), "{}", out.nginx_conf);
    let r = route_conditions(&status, "r");
    let of = |cs: &[httproute_nginx::plan::Condition], k| cs.iter().find(|c| c.kind == k).cloned();
    assert!(of(&r, ConditionType::Accepted).unwrap().ok, "{r:?}");
    let refs = of(&r, ConditionType::ResolvedRefs).unwrap();
    assert!(!refs.ok && refs.message == "rules[0].backendRefs[1]: nginx -t: no", "{refs:?}");
    assert!(of(&r, ConditionType::PartiallyInvalid).is_none(), "{r:?}");
    assert!(route_conditions(&status, "q").iter().all(|c| c.ok), "{status:?}");

    let (out, status) = conditions(&route);
    assert!(!out.nginx_conf.contains("only-r.test"), "{}", out.nginx_conf);
    // Its host is still served by q (no hostnames: every host of the port), now from the
    // catch-all server.
    let (text, code) = answer(20000, "only-r.test");
    assert!(code == 200 && text.contains("n/q"), "{code}: {text}");
    let r = route_conditions(&status, "r");
    let accepted = of(&r, ConditionType::Accepted).unwrap();
    assert!(!accepted.ok && accepted.message == "nginx -t: no", "{accepted:?}");
    assert!(route_conditions(&status, "q").iter().all(|c| c.ok), "{status:?}");

    let (out, status) = conditions(&listener);
    assert!(!out.nginx_conf.contains("20001"), "{}", out.nginx_conf);
    // Its port, with no listener left, is not listened on; the other port still answers.
    assert_eq!(answer(20001, "b.test").1, 0);
    assert_eq!(answer(20000, "x.test").1, 200);
    assert!(out.nginx_conf.contains("listen 20000"), "{}", out.nginx_conf);
    for l in &status.listeners {
        let programmed = l.conditions.iter().find(|c| c.kind == ConditionType::Programmed).unwrap();
        assert_eq!(programmed.ok, l.id.name == "a", "{l:?}");
    }
}

/// Route `i` of tenant `n`'s parentRefs for choice `c`: the Gateway; its listener l0; l0 and
/// l1, one parentRef each; l1 and the tenant's second port.
fn parent_refs(n: usize, c: usize) -> Vec<Value> {
    let l = |section| objects::parent("gw", None, Some(section));
    match c {
        0 => vec![objects::parent("gw", None, None)],
        1 => vec![l("l0")],
        2 => vec![l("l0"), l("l1")],
        _ => vec![l("l1"), objects::parent("gw", None, None).set("port", port(n, 1))],
    }
}

/// What the listener property meets: parentRefs left with no listener, parentRefs that lost
/// one listener and keep another.
#[derive(Default)]
struct ListenersMet {
    lost: usize,
    kept: usize,
}

/// For the tenants' manifests (route `i` of tenant `n` with parentRefs `refs[n][i]`), every
/// listener left out alone and the set `mask` picks: each route parentRef that was Accepted
/// is Accepted iff a listener it attached to is left (else `Accepted: False,
/// NoMatchingParent` naming each of its listeners), a route none of whose parentRefs is left
/// has no line in the configuration, and every other condition of every route and listener
/// is as it was; a tenant none of whose listeners is left out has its status unchanged.
fn check_listeners(
    tenants: &[Tenant],
    refs: &[Vec<usize>],
    mask: &[bool],
    met: &mut ListenersMet,
) -> Result<(), TestCaseError> {
    use httproute_nginx::plan::{ListenerId, Status};
    let yaml: String = tenants
        .iter()
        .enumerate()
        .map(|(n, t)| manifests_with(n, t, |i| parent_refs(n, refs[n][i])))
        .collect();
    let (inputs, backends, opts) = load(&yaml, tenants.len())?;
    let run = |gone: &[&ListenerId]| -> Result<(Output, Status), TestCaseError> {
        let mut p = httproute_nginx::plan_for(&inputs, &backends, &opts);
        let drops = gone
            .iter()
            .map(|l| (Unit::Listener((*l).clone()), format!("nginx -t: refused {}", l.name)));
        let out = without(&mut p, &opts, drops).map_err(TestCaseError::fail)?;
        httproute_nginx::plan::dropped_from_configuration(&mut p.status, &out.dropped);
        Ok((out, p.status))
    };
    let (_, base) = run(&[])?;
    // The listeners the configuration has (a server of their own).
    let planned = httproute_nginx::plan_for(&inputs, &backends, &opts);
    let servers: Vec<_> = planned.ports.iter().flat_map(|p| &p.servers).collect();
    let listeners: Vec<&ListenerId> = base
        .listeners
        .iter()
        .map(|l| &l.id)
        .filter(|id| servers.iter().any(|s| s.listener.as_ref() == Some(*id)))
        .collect();
    let mut sets: Vec<Vec<&ListenerId>> = listeners.iter().map(|l| vec![*l]).collect();
    sets.push(listeners.iter().zip(mask).filter(|(_, m)| **m).map(|(l, _)| *l).collect());
    let accepted = |cs: &[httproute_nginx::plan::Condition]| {
        cs.iter().find(|c| c.kind == ConditionType::Accepted).is_some_and(|c| c.ok)
    };
    for gone in sets.iter().filter(|s| !s.is_empty()) {
        let (out, st) = run(gone)?;
        prop_assert_eq!(st.listeners.len(), base.listeners.len());
        for (l, l0) in st.listeners.iter().zip(&base.listeners) {
            if gone.contains(&&l.id) {
                prop_assert!(
                    l.conditions.iter().any(|c| c.kind == ConditionType::Programmed && !c.ok),
                    "{:?}",
                    l
                );
            } else {
                prop_assert_eq!(&l.conditions, &l0.conditions, "listener {} changed", l.id);
            }
        }
        prop_assert_eq!(st.routes.len(), base.routes.len());
        for (r, r0) in st.routes.iter().zip(&base.routes) {
            prop_assert_eq!(&r.id, &r0.id);
            prop_assert_eq!(&r.attached, &r0.attached);
            prop_assert_eq!(r.attached.len(), r.parents.len());
            if !gone.iter().any(|l| l.namespace == r.id.namespace) {
                prop_assert_eq!(format!("{r:?}"), format!("{r0:?}"), "another tenant's route");
                continue;
            }
            for (i, ((_, cs), (_, cs0))) in r.parents.iter().zip(&r0.parents).enumerate() {
                let attached = &r0.attached[i];
                if !accepted(cs0) {
                    prop_assert_eq!(cs, cs0, "{} parentRef {} was not accepted", r.id, i);
                    continue;
                }
                prop_assert!(
                    !attached.is_empty(),
                    "{} parentRef {} accepted, attached nowhere",
                    r.id,
                    i
                );
                let left = attached.iter().any(|l| !gone.contains(&l));
                prop_assert_eq!(
                    accepted(cs),
                    left,
                    "{} parentRef {}: {:?} of {:?} left out",
                    r.id,
                    i,
                    gone,
                    attached
                );
                if left {
                    prop_assert_eq!(cs, cs0, "{} parentRef {} keeps a listener", r.id, i);
                    if attached.iter().any(|l| gone.contains(&l)) {
                        met.kept += 1;
                    }
                    continue;
                }
                met.lost += 1;
                let c = cs.iter().find(|c| c.kind == ConditionType::Accepted).unwrap();
                prop_assert_eq!(c.reason, Reason::NoMatchingParent);
                for l in attached {
                    let named = format!("listener {l}: nginx -t: refused {}", l.name);
                    prop_assert!(c.message.contains(&named), "{:?} does not name {}", c, l);
                }
                let others = |cs: &[httproute_nginx::plan::Condition]| {
                    cs.iter()
                        .filter(|c| c.kind != ConditionType::Accepted)
                        .cloned()
                        .collect::<Vec<_>>()
                };
                prop_assert_eq!(others(cs), others(cs0));
            }
            // A route accepted before and through no parentRef now is not in the
            // configuration: none of its paths (`/NS/rI/...`, its own) or own host name.
            if r0.parents.iter().any(|(_, cs)| accepted(cs))
                && !r.parents.iter().any(|(_, cs)| accepted(cs))
            {
                let path = format!("/{}/{}/", r.id.namespace, r.id.name);
                let host = format!(" h{}.{}.test", &r.id.name[1..], r.id.namespace);
                for l in out.nginx_conf.lines() {
                    prop_assert!(
                        !l.contains(&path) && !l.contains(&host),
                        "{} accepted nowhere, still written: {:?}",
                        r.id,
                        l
                    );
                }
            }
        }
    }
    Ok(())
}

/// Listeners left out of the configuration (a refused `listen`, certificate or own server
/// name): see [`check_listeners`]. `HTTPROUTE_LEFT_OUT_CASES=N` runs N cases (default 256).
#[test]
fn a_parent_ref_is_accepted_iff_a_listener_it_attached_to_is_left() {
    let mut runner = seeded_runner(30);
    let met = std::cell::RefCell::new(ListenersMet::default());
    let strategy = (
        prop::collection::vec(tenant(), 2..4),
        prop::collection::vec(prop::collection::vec(0usize..4, 3), 3),
        prop::collection::vec(any::<bool>(), 8),
    );
    let result = runner.run(&strategy, |(tenants, refs, mask)| {
        check_listeners(&tenants, &refs, &mask, &mut met.borrow_mut())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let met = met.into_inner();
    assert!(met.lost > 0 && met.kept > 0, "lost {}, kept {}", met.lost, met.kept);
    eprintln!("parentRefs left with no listener: {}; keeping one: {}", met.lost, met.kept);
}

/// Tenant a's Gateway: listeners x and y on port 20010 (host names x.a.test, y.a.test), z on
/// 20011; its routes attach to x alone (rx), to port 20010's two (rxy), to all three (rall),
/// to x and to z through one parentRef each (two). Tenant b's Gateway and route o.
const LISTENERS: &str = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners:\n  - {name: x, port: 20010, protocol: HTTP, hostname: x.a.test}\n  - {name: y, port: 20010, protocol: HTTP, hostname: y.a.test}\n  - {name: z, port: 20011, protocol: HTTP}\n---\nkind: Gateway\nmetadata: {name: gw, namespace: b}\nspec:\n  listeners: [{name: http, port: 20012, protocol: HTTP}]\n---\nkind: HTTPRoute\nmetadata: {name: rx, namespace: a}\nspec:\n  parentRefs: [{name: gw, sectionName: x}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: rxy, namespace: a}\nspec:\n  parentRefs: [{name: gw, port: 20010}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: rall, namespace: a}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: two, namespace: a}\nspec:\n  parentRefs: [{name: gw, sectionName: x}, {name: gw, sectionName: z}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: o, namespace: b}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: t, port: 80}]}]\n";

/// Port 20010's two listeners left out (as a refusal of `nginx -t` leaves out the newest
/// tenant's listeners): each route parentRef every listener of which is among them is
/// `Accepted: False, NoMatchingParent`, naming them and NGINX's complaint; a parentRef that
/// keeps a listener (z) stays accepted, and so does everything of listener z and of tenant b.
#[test]
fn routes_left_with_no_listener_are_not_accepted() {
    use httproute_nginx::plan::Status;
    let inputs = common::inputs(LISTENERS);
    let mut b = BackendMap::new();
    b.insert("a/s:80".into(), "10.7.0.1:80".into());
    b.insert("b/t:80".into(), "10.8.0.1:80".into());
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &b, &opts);
    // The status as it is when NGINX refuses nothing.
    let before = |status: &Status, name: &str| {
        let r = status.routes.iter().find(|r| r.id.name == name).unwrap();
        format!("{:?}", r.parents)
    };
    let mut unrefused = httproute_nginx::plan_for(&inputs, &b, &opts);
    let out = httproute_nginx::emit::emit_with(&unrefused, &opts, Tree::Drop).unwrap();
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
    httproute_nginx::plan::dropped_from_configuration(&mut unrefused.status, &out.dropped);
    assert!(out.nginx_conf.contains("listen 20010 default_server"), "{}", out.nginx_conf);
    let complaint = "nginx -t: bind() to 0.0.0.0:20010 failed";
    let x_y = plan.status.listeners.iter().filter(|l| l.id.namespace == "a" && l.id.name != "z");
    let x_y: Vec<(Unit, String)> =
        x_y.map(|l| (Unit::Listener(l.id.clone()), complaint.to_owned())).collect();
    let out = without(&mut plan, &opts, x_y).unwrap();
    let gone: Vec<String> = out
        .dropped
        .iter()
        .map(|d| match &d.unit {
            Unit::Listener(l) => l.to_string(),
            u => panic!("{u:?}"),
        })
        .collect();
    assert_eq!(gone, ["a/gw/x", "a/gw/y"]);
    assert!(!out.nginx_conf.contains("listen 20010"), "{}", out.nginx_conf);
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &out.dropped);
    let accepted = |name: &str| -> Vec<(bool, Reason, String)> {
        let r = plan.status.routes.iter().find(|r| r.id.name == name).unwrap();
        r.parents
            .iter()
            .map(|(_, cs)| {
                let c = cs.iter().find(|c| c.kind == ConditionType::Accepted).unwrap();
                (c.ok, c.reason, c.message.clone())
            })
            .collect()
    };
    let lost = |listeners: &[&str]| {
        let why: Vec<String> =
            listeners.iter().map(|l| format!("listener {l}: {complaint}")).collect();
        (
            false,
            Reason::NoMatchingParent,
            format!("no listener it attached to is in the configuration: {}", why.join("; ")),
        )
    };
    let kept = (true, Reason::Accepted, String::new());
    assert_eq!(accepted("rx"), [lost(&["a/gw/x"])]);
    assert_eq!(accepted("rxy"), [lost(&["a/gw/x", "a/gw/y"])]);
    assert_eq!(accepted("rall"), std::slice::from_ref(&kept));
    assert_eq!(accepted("two"), [lost(&["a/gw/x"]), kept]);
    // Everything else as it was: the routes that keep a listener, tenant b's route, the
    // listeners left, and every condition but the lost parentRefs' `Accepted`.
    for name in ["rall", "o"] {
        assert_eq!(before(&plan.status, name), before(&unrefused.status, name), "{name}");
    }
    for (l, l0) in plan.status.listeners.iter().zip(&unrefused.status.listeners) {
        let programmed = l.conditions.iter().find(|c| c.kind == ConditionType::Programmed).unwrap();
        if ["x", "y"].contains(&l.id.name.as_str()) && l.id.namespace == "a" {
            assert!(!programmed.ok && programmed.message == complaint, "{programmed:?}");
        } else {
            assert_eq!(l.conditions, l0.conditions, "{}", l.id);
        }
    }
    for (r, r0) in plan.status.routes.iter().zip(&unrefused.status.routes) {
        for ((_, cs), (_, cs0)) in r.parents.iter().zip(&r0.parents) {
            let rest = |cs: &[httproute_nginx::plan::Condition]| {
                cs.iter().filter(|c| c.kind != ConditionType::Accepted).cloned().collect::<Vec<_>>()
            };
            assert_eq!(rest(cs), rest(cs0), "{}", r.id);
        }
    }
    // explain answers as the configuration written: port 20010 is not listened on (rx's host
    // is not answered from its old server), port 20011 still serves rall and two.
    let answer = common::explain_get;
    let mut served = httproute_nginx::plan_for(&inputs, &b, &opts);
    assert_eq!(answer(&served, 20010, "x.a.test").1, 200, "before: rx's host is served");
    httproute_nginx::explain::without_dropped(&mut served, &out.dropped);
    let (text, code) = answer(&served, 20010, "x.a.test");
    assert_eq!(code, 0, "{text}");
    let (text, code) = answer(&served, 20011, "z.test");
    assert!(code == 200 && text.contains("a/rall"), "{code}: {text}");
    // The status file carries it.
    let yaml = httproute_nginx::status::yaml(&plan.status);
    assert!(
        yaml.contains("message: 'no listener it attached to is in the configuration: listener a/gw/x: nginx -t: bind()"),
        "{yaml}"
    );
    // A complaint's control characters are written as escapes there, as every message's.
    let mut p = httproute_nginx::plan_for(&inputs, &b, &opts);
    let id = p.status.listeners.iter().find(|l| l.id.name == "x").unwrap().id.clone();
    let d = httproute_nginx::plan::Dropped {
        unit: Unit::Listener(id),
        reason: Reason::Invalid,
        message: "nginx -t: a\nb\u{2028}c".into(),
    };
    httproute_nginx::plan::dropped_from_configuration(&mut p.status, &[d]);
    let yaml = httproute_nginx::status::yaml(&p.status);
    assert!(yaml.contains("configuration: listener a/gw/x: nginx -t: a\\nb\\u{2028}c'"), "{yaml}");
}

/// A left-out location says left out only the matches that make it (`plan::makes`, as the
/// plan makes locations), and takes no match out of another location's list: r2's `Exact /p/`
/// makes `location = /p/`, which also lists r1's `PathPrefix /p` (a request for `/p/` matches
/// it); with that location left out (as a budget leaves out a location whose routes are all
/// refused), r2's match is said not served and r1's is neither said nor taken out of `= /p` and
/// `/p/`. A trimmed-path comparison took r1's `/p` for the location's own and (skipped by
/// rule) out of every list: another tenant's route unserved.
#[test]
fn a_left_out_location_says_only_the_matches_that_make_it() {
    let yaml = "kind: Gateway\nmetadata: {name: gw, namespace: n}\nspec:\n  listeners: [{name: a, port: 20000, protocol: HTTP}]\n---\nkind: HTTPRoute\nmetadata: {name: r1, namespace: n}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /p}, headers: [{name: x-r1, value: 'yes'}]}]\n    backendRefs: [{name: s0, port: 80}]\n---\nkind: HTTPRoute\nmetadata: {name: r2, namespace: n}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: Exact, value: /p/}, headers: [{name: x-r2, value: 'yes'}]}]\n    backendRefs: [{name: s0, port: 80}]\n";
    let inputs = common::inputs(yaml);
    let mut backends = BackendMap::new();
    backends.insert("n/s0:80".into(), "10.9.0.1:80".into());
    for carrier in [httproute_nginx::Carrier::Preload, httproute_nginx::Carrier::Inline] {
        let opts = httproute_nginx::Options { carrier, ..common::options() };
        let mut plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
        let mut refused = Vec::new();
        for (pi, port) in plan.ports.iter().enumerate() {
            for (si, s) in port.servers.iter().enumerate() {
                for (li, l) in s.locations.iter().enumerate() {
                    if l.loc == httproute_nginx::plan::Loc::Exact("/p/".into()) {
                        refused.push((Unit::Location((pi, si), li), "left out".to_owned()));
                    }
                }
            }
        }
        assert_eq!(refused.len(), 1, "{carrier:?}");
        let listed = |o: &Output, h: &str| o.nginx_conf.contains(h) || o.matches_json.contains(h);
        let out = without(&mut plan, &opts, refused).unwrap();
        let said: Vec<String> = out.dropped.iter().map(ToString::to_string).collect();
        assert!(
            matches!(&out.dropped[..], [d] if matches!(&d.unit, Unit::Match { rule, index: 0 }
                if rule.route.name == "r2")),
            "{carrier:?}: {said:?}"
        );
        assert!(listed(&out, "x-r1"), "{carrier:?}: r1's match unlisted\n{}", out.nginx_conf);
    }
}
