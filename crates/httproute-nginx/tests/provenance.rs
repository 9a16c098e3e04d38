//! Provenance (issue #29, "every node carries its own conditions"): for generated
//! multi-tenant inputs (tenants `tenant0`..`tenant2`, each a namespace with its own Gateway,
//! ports, host names, Services and routes), every line of nginx.conf that comes from a tenant
//! object has the units the writer records for it ([`Output::units_at_line`]): one for most
//! lines, all of those that bring it for a line several share (an `upstream` two backendRefs
//! name, a server name two routes bring, the `listen` of a port's catch-all that every
//! listener left on the port keeps, merged servers' name and certificates).
//!
//! - Leaving one unit out through the public emit API ([`emit_dropping`]) removes its own lines
//!   (it has no line any more, and fewer lines of the tenants carry their text) and leaves
//!   the lines it shares to the others, recorded for them alone.
//! - For every set of units a line is recorded for: all of them left out, the line is gone;
//!   all but one, it is still there, recorded for that one alone (the recorded set is the set
//!   of units whose absence removes the line).
//! - Every line of every other tenant (its servers, locations, upstreams, `split_clients` and
//!   `map` entries) stays exactly as it was.
//!
//! A line comes from a tenant object when it holds one of the tenant's words: its namespace
//! (in host names, paths, upstream names, certificate files), its backend addresses
//! (`10.N.`), its ports. The cases are deterministic (proptest's fixed seed and no wall
//! clock); `HTTPROUTE_PROVENANCE_CASES=N` runs N (default 256). Each case leaves out the
//! first and the last unit of each kind met, one at a time, and every set of sharers (of more
//! than 3, all but the first and all but the last kept).
//!
//! Listeners left out (`a_parent_ref_is_accepted_iff_a_listener_it_attached_to_is_left`): for
//! generated tenants whose routes name the Gateway, a listener, two, or a listener and a port,
//! every listener left out alone and a generated set of them: a route parentRef that was
//! Accepted is Accepted iff a listener it attached to is left; a route accepted through none
//! has no line; every other condition, and every other tenant's status, stays as it was.
//!
//! Only the variants' `Debug` names are read (no variant is matched here; `Unit::Listener` is
//! made, to leave a listener out).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use httproute_nginx::BackendMap;
use httproute_nginx::emit::{Output, Tree, Unit, emit_dropping};
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

/// Tenant `n`'s manifests. Two listeners on one port never both lack a host name, nor have
/// the same one.
fn manifests(n: usize, t: &Tenant) -> String {
    manifests_with(n, t, |_| vec![objects::parent("gw", None, None)])
}

/// [`manifests`], route `i`'s parentRefs `parent_refs(i)`.
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

/// The words of tenant `n` a line of its objects holds.
fn words(n: usize) -> Vec<String> {
    vec![
        format!("tenant{n}"),
        format!("10.{}.", n + 1),
        format!(" {}", port(n, 0)),
        format!(" {}", port(n, 1)),
    ]
}

/// Which tenants' words the line holds.
fn tenants_of(line: &str, tenants: usize) -> Vec<usize> {
    (0..tenants).filter(|&n| words(n).iter().any(|w| line.contains(w.as_str()))).collect()
}

/// The line's text and the units recorded for it ([`Output::units_at_line`]: several for a
/// line they share), for every line of `out` (1-based lines, as NGINX counts).
fn owned(out: &Output) -> Vec<(String, Vec<Unit>)> {
    out.nginx_conf
        .lines()
        .enumerate()
        .map(|(i, l)| (l.to_owned(), out.units_at_line(i + 1).into_iter().cloned().collect()))
        .collect()
}

/// A unit's kind and what it names, as its `Debug` says (no variant is named here: see the
/// module's documentation).
fn kind(u: &Unit) -> String {
    let d = format!("{u:?}");
    d.split(|c: char| !c.is_alphanumeric()).next().unwrap_or_default().to_owned()
}

/// Whether `u` is `dropped` or a part of it (a share of its rule, a rule or share of its
/// route), from their `Debug`.
fn within(u: &Unit, dropped: &Unit) -> bool {
    if u == dropped {
        return true;
    }
    let (du, dd) = (format!("{u:?}"), format!("{dropped:?}"));
    match kind(dropped).as_str() {
        // `Rule(RuleId { route: .., index: N })` is inside the share's `rule: RuleId { .. }`.
        "Rule" => kind(u) == "BackendShare" && du.contains(&dd["Rule(".len()..dd.len() - 1]),
        "Route" => {
            matches!(kind(u).as_str(), "BackendShare" | "Rule")
                && du.contains(&dd["Route(".len()..dd.len() - 1])
        }
        _ => false,
    }
}

type Lines = [(String, Vec<Unit>)];

/// The tenants units are of: those their `Debug` names, else those whose words the lines
/// recorded for them hold.
fn unit_tenants(us: &[Unit], lines: &Lines, tenants: usize) -> Vec<usize> {
    let mut of: Vec<usize> = Vec::new();
    for u in us {
        let d = format!("{u:?}");
        let named: Vec<usize> =
            (0..tenants).filter(|n| d.contains(&format!("\"tenant{n}\""))).collect();
        if !named.is_empty() {
            of.extend(named);
            continue;
        }
        of.extend(
            lines.iter().filter(|(_, o)| o.contains(u)).flat_map(|(l, _)| tenants_of(l, tenants)),
        );
    }
    of.sort_unstable();
    of.dedup();
    of
}

/// Tenant `n`'s lines, in order: those with its words or recorded for a unit of its.
fn lines_of(lines: &Lines, n: usize, tenants: usize) -> Vec<String> {
    lines
        .iter()
        .filter(|(l, o)| {
            tenants_of(l, tenants).contains(&n)
                || o.iter().any(|u| format!("{u:?}").contains(&format!("\"tenant{n}\"")))
        })
        .map(|(l, _)| l.clone())
        .collect()
}

/// How many lines of `ls` have the text `text` and some unit.
fn tenant_count(ls: &Lines, text: &str) -> usize {
    ls.iter().filter(|(l, o)| l == text && !o.is_empty()).count()
}

/// What is met, for the check that the cases reach every kind.
#[derive(Default)]
struct Met {
    /// Units left out alone, by kind.
    kinds: BTreeMap<String, usize>,
    /// Lines several units share, by the kind of their units.
    shared: BTreeMap<String, usize>,
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

fn check(tenants: &[Tenant], met: &mut Met) -> Result<(), TestCaseError> {
    let yaml: String = tenants.iter().enumerate().map(|(n, t)| manifests(n, t)).collect();
    let (inputs, backends, opts) = load(&yaml, tenants.len())?;
    let plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
    let out = emit_dropping(&plan, &opts, Tree::Drop, &[]).map_err(TestCaseError::fail)?;
    let lines = owned(&out);
    let t = tenants.len();
    let emit_without = |us: &[Unit]| -> Result<Vec<(String, Vec<Unit>)>, TestCaseError> {
        let drops: Vec<(Unit, String)> =
            us.iter().map(|u| (u.clone(), "left out".into())).collect();
        let after = emit_dropping(&plan, &opts, Tree::Drop, &drops)
            .map_err(|e| TestCaseError::fail(format!("{us:?}: {e}")))?;
        Ok(owned(&after))
    };
    // The other tenants' lines are as they were.
    let others_unchanged = |us: &[Unit], after: &Lines| -> Result<(), TestCaseError> {
        let of = unit_tenants(us, &lines, t);
        for m in (0..t).filter(|m| !of.contains(m)) {
            prop_assert_eq!(
                lines_of(&lines, m, t),
                lines_of(after, m, t),
                "{:?} (tenants {:?}) left out changed tenant{}'s lines",
                us,
                of,
                m
            );
        }
        Ok(())
    };

    // Every line with a tenant's words has a unit; a line's units are all of one tenant.
    for (i, (l, o)) in lines.iter().enumerate() {
        let text = l.trim();
        if text.starts_with('#') || text.is_empty() || tenants_of(l, t).is_empty() {
            continue;
        }
        prop_assert!(!o.is_empty(), "line {}: {l:?} has no unit\n{}", i + 1, out.nginx_conf);
        prop_assert!(unit_tenants(o, &lines, t).len() <= 1, "line {}: {l:?}: {o:?}", i + 1);
    }

    // The distinct units recorded for lines, in the order met.
    let mut units: Vec<Unit> = Vec::new();
    for u in lines.iter().flat_map(|(_, o)| o) {
        if !units.contains(u) {
            units.push(u.clone());
        }
    }
    // Of each kind, the first and the last met (short in CI: every kind, not every unit).
    let mut picked: Vec<&Unit> = Vec::new();
    for k in units.iter().map(kind) {
        let of_kind = || units.iter().filter(|u| kind(u) == k);
        for u in [of_kind().next(), of_kind().next_back()].into_iter().flatten() {
            if !picked.contains(&u) {
                picked.push(u);
            }
        }
    }
    for u in picked {
        *met.kinds.entry(kind(u)).or_default() += 1;
        let after = emit_without(std::slice::from_ref(u))?;
        // The unit (and what is inside it) has no line any more.
        for (l, o) in &after {
            prop_assert!(!o.iter().any(|o| within(o, u)), "{u:?} left out still has {l:?}");
        }
        // Its own lines are gone; the lines it shares stay, for the others that bring them.
        for (l, o) in lines.iter().filter(|(_, o)| o.contains(u)) {
            if o.len() == 1 {
                prop_assert!(
                    tenant_count(&after, l) < tenant_count(&lines, l),
                    "{u:?} left out: its line {l:?} stays"
                );
            } else {
                let rest: Vec<Unit> = o.iter().filter(|o| *o != u).cloned().collect();
                prop_assert!(
                    after.iter().any(|(al, ao)| al == l && *ao == rest),
                    "{u:?} left out: its shared line {l:?} is not the others' ({rest:?})"
                );
            }
        }
        others_unchanged(std::slice::from_ref(u), &after)?;
    }

    // Every line several units share: the units recorded are those whose absence removes it.
    // All of them left out, it is gone; all but one, it stays, that one's alone. Each set of
    // sharers once; of more than 3, all but the first and all but the last.
    let mut sets: Vec<&Vec<Unit>> = Vec::new();
    for (_, o) in &lines {
        if o.len() > 1 && !sets.contains(&o) {
            sets.push(o);
        }
    }
    for set in sets {
        *met.shared.entry(kind(&set[0])).or_default() += 1;
        let texts: Vec<&String> = lines.iter().filter(|(_, o)| o == set).map(|(l, _)| l).collect();
        let after = emit_without(set)?;
        for l in &texts {
            prop_assert!(
                tenant_count(&after, l) < tenant_count(&lines, l),
                "{set:?} all left out: their line {l:?} stays"
            );
        }
        for (l, o) in &after {
            prop_assert!(
                !o.iter().any(|o| set.iter().any(|u| within(o, u))),
                "{set:?} left out: {o:?} still has {l:?}"
            );
        }
        others_unchanged(set, &after)?;
        let kept: Vec<usize> =
            if set.len() <= 3 { (0..set.len()).collect() } else { vec![0, set.len() - 1] };
        for k in kept {
            let rest: Vec<Unit> =
                set.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, u)| u.clone()).collect();
            let after = emit_without(&rest)?;
            for l in &texts {
                prop_assert!(
                    after.iter().any(|(al, ao)| al == *l && *ao == [set[k].clone()]),
                    "{set:?} but {:?} left out: their line {l:?} is not its alone",
                    set[k]
                );
            }
            others_unchanged(&rest, &after)?;
        }
    }
    Ok(())
}

/// A runner of `HTTPROUTE_PROVENANCE_CASES` cases (default 256) from a fixed seed: the same
/// cases every run.
fn seeded_runner(seed: u8) -> TestRunner {
    let cases = std::env::var("HTTPROUTE_PROVENANCE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]))
}

#[test]
fn every_tenant_line_has_a_unit_whose_removal_removes_only_it() {
    let mut runner = seeded_runner(29);
    let met = std::cell::RefCell::new(Met::default());
    let result = runner.run(&prop::collection::vec(tenant(), 2..4), |tenants| {
        check(&tenants, &mut met.borrow_mut())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The cases reach every kind of unit, and lines shared by every kind that shares.
    let met = met.into_inner();
    for k in ["BackendShare", "Location", "Rule", "Route", "Listener"] {
        assert!(met.kinds.contains_key(k), "no {k} unit met: {:?}", met.kinds);
    }
    for k in ["BackendShare", "Route", "Listener"] {
        assert!(met.shared.contains_key(k), "no line shared by {k}s met: {:?}", met.shared);
    }
    eprintln!("units left out, by kind: {:?}; shared lines, by kind: {:?}", met.kinds, met.shared);
}

/// Each new kind left out, and the condition on its node: a share's route `ResolvedRefs:
/// False` (still accepted, no `PartiallyInvalid`); a route brought server's route `Accepted:
/// False` with the reason and no server for its name; a listener's `Programmed: False`.
#[test]
fn each_kind_left_out_has_its_condition() {
    use httproute_nginx::plan::ConditionType;
    let yaml = "kind: Gateway\nmetadata: {name: gw, namespace: n}\nspec:\n  listeners:\n  - {name: a, port: 20000, protocol: HTTP}\n  - {name: b, port: 20001, protocol: HTTP, hostname: b.test}\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: n}\nspec:\n  parentRefs: [{name: gw, sectionName: a}]\n  hostnames: [only-r.test]\n  rules:\n  - backendRefs: [{name: s0, port: 80}, {name: s1, port: 80}]\n---\nkind: HTTPRoute\nmetadata: {name: q, namespace: n}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - backendRefs: [{name: s0, port: 80}]\n";
    let mut inputs = httproute_nginx::model::Inputs::default();
    httproute_nginx::model::load_text(Path::new("k.yaml"), yaml, &mut inputs).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("n/s0:80".into(), "10.9.0.1:80".into());
    backends.insert("n/s1:80".into(), "10.9.1.1:80".into());
    let opts = common::options();
    let plan = || httproute_nginx::plan_for(&inputs, &backends, &opts);
    let p = plan();
    let out = emit_dropping(&p, &opts, Tree::Drop, &[]).unwrap();
    // The units of the lines holding these words.
    let unit_of = |out: &Output, word: &str| -> Unit {
        let line = out.nginx_conf.lines().position(|l| l.contains(word)).expect(word);
        out.units_at_line(line + 1)[0].clone()
    };
    let share = unit_of(&out, "server 10.9.1.1:80");
    let route = unit_of(&out, "server_name only-r.test");
    let listener = unit_of(&out, "listen 20001");
    assert_eq!(kind(&share), "BackendShare", "{share:?}");
    assert_eq!(kind(&route), "Route", "{route:?}");
    assert_eq!(kind(&listener), "Listener", "{listener:?}");

    // The plan as served after the drop answers a request as NGINX would (explain).
    let served = std::cell::RefCell::new(plan());
    let conditions = |u: &Unit| {
        let mut p = plan();
        let out =
            emit_dropping(&p, &opts, Tree::Drop, &[(u.clone(), "nginx -t: no".into())]).unwrap();
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
    use httproute_nginx::plan::{ConditionType, ListenerId, Reason, Status};
    let yaml: String = tenants
        .iter()
        .enumerate()
        .map(|(n, t)| manifests_with(n, t, |i| parent_refs(n, refs[n][i])))
        .collect();
    let (inputs, backends, opts) = load(&yaml, tenants.len())?;
    let run = |gone: &[&ListenerId]| -> Result<(Output, Status), TestCaseError> {
        let mut p = httproute_nginx::plan_for(&inputs, &backends, &opts);
        let drops: Vec<(Unit, String)> = gone
            .iter()
            .map(|l| (Unit::Listener((*l).clone()), format!("nginx -t: refused {}", l.name)))
            .collect();
        let out = emit_dropping(&p, &opts, Tree::Drop, &drops).map_err(TestCaseError::fail)?;
        httproute_nginx::plan::dropped_from_configuration(&mut p.status, &out.dropped);
        Ok((out, p.status))
    };
    let (out0, base) = run(&[])?;
    // The listeners the configuration has (a unit of their own).
    let listeners: Vec<&ListenerId> = base
        .listeners
        .iter()
        .map(|l| &l.id)
        .filter(|id| out0.all_units().any(|u| *u == Unit::Listener((*id).clone())))
        .collect();
    let mut sets: Vec<Vec<&ListenerId>> = listeners.iter().map(|l| vec![*l]).collect();
    sets.push(listeners.iter().zip(mask).filter(|(_, m)| **m).map(|(l, _)| *l).collect());
    let accepted = |cs: &[httproute_nginx::plan::Condition]| {
        cs.iter().find(|c| c.kind == ConditionType::Accepted).is_some_and(|c| c.ok)
    };
    for gone in sets.iter().filter(|s| !s.is_empty()) {
        let (out, st) = run(gone)?;
        let lines = owned(&out);
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
            // configuration: no line of its rules, shares or own server name.
            if r0.parents.iter().any(|(_, cs)| accepted(cs))
                && !r.parents.iter().any(|(_, cs)| accepted(cs))
            {
                let me = format!("namespace: {:?}, name: {:?}", r.id.namespace, r.id.name);
                for (l, o) in &lines {
                    prop_assert!(
                        !o.iter().any(|u| format!("{u:?}").contains(&me)),
                        "{} accepted nowhere, still written: {:?} ({:?})",
                        r.id,
                        l,
                        o
                    );
                }
            }
        }
    }
    Ok(())
}

/// Listeners left out of the configuration (a refused `listen`, certificate or own server
/// name): see [`check_listeners`]. `HTTPROUTE_PROVENANCE_CASES=N` runs N cases (default 256).
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
