//! `generate --nginx`: a refused line that several tenant objects bring (an `upstream` that many
//! routes' backendRefs name) leaves out all of them in one retry, each with the refusal as its
//! condition, and nothing else; more sharers than `MAX_RETRIES` no longer fail the run. A
//! refused line of listeners (a port's catch-all `listen`) leaves them out, and the route
//! parentRefs left with no listener are `Accepted: False`.
//!
//! NGINX here is a fake (a shell script): it refuses, as NGINX names the line it refuses
//! (`[emerg] MESSAGE in FILE:LINE`), the first line of the configuration holding a marker, and
//! takes every other configuration. A real NGINX refuses such a line for a backend address it
//! cannot resolve ("host not found in upstream"); the generator writes names to resolve per
//! request, not in an `upstream`, so the refusal is made here.

mod common;

use std::path::{Path, PathBuf};

use httproute_nginx::BackendMap;
use httproute_nginx::emit::{Tree, Unit};
use httproute_nginx::nginx_check::{self, MAX_RETRIES};
use httproute_nginx::plan::{ConditionType, Reason};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hr-shared-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A `nginx` that refuses a configuration holding `marker` with `[emerg] MESSAGE in
/// FILE:LINE` (LINE the first line holding it), takes any other, and counts its runs in
/// `DIR/runs`.
fn refusing_line_nginx(tag: &str, marker: &str, message: &str) -> PathBuf {
    let dir = scratch(&format!("{tag}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("nginx");
    // `-t -q -p PREFIX/ -c nginx.conf`: the prefix is the fourth argument.
    let script = format!(
        "#!/bin/sh\necho run >> '{}/runs'\nline=$(grep -n -F -- '{marker}' \"$4nginx.conf\" | head -n 1 | cut -d: -f1)\nif [ -n \"$line\" ]; then echo \"nginx: [emerg] {message} in $4nginx.conf:$line\" >&2; exit 1; fi\nexit 0\n",
        dir.display()
    );
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// `n` routes of tenant `shared`, each with one rule whose one backendRef is Service s (one
/// `upstream`, which all their shares bring); tenant `other`'s route to Service t and its
/// redirect; both Gateways' one listener each.
fn manifests(n: usize) -> String {
    let mut y = String::new();
    for ns in ["shared", "other"] {
        let port = if ns == "shared" { 20000 } else { 20001 };
        y += &format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: {ns}}}\nspec:\n  listeners: [{{name: http, port: {port}, protocol: HTTP}}]\n---\n"
        );
    }
    for i in 0..n {
        y += &format!(
            "kind: HTTPRoute\nmetadata: {{name: r{i}, namespace: shared}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [h{i}.shared.test]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /r{i}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n---\n"
        );
    }
    // A route of tenant shared that does not name s, and tenant other's.
    y += "kind: HTTPRoute\nmetadata: {name: apart, namespace: shared}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [apart.shared.test]\n  rules:\n  - backendRefs: [{name: u, port: 80}]\n---\n";
    y += "kind: HTTPRoute\nmetadata: {name: o, namespace: other}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /o}}]\n    backendRefs: [{name: t, port: 80}]\n  - matches: [{path: {type: PathPrefix, value: /moved}}]\n    filters:\n    - type: RequestRedirect\n      requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /o}, statusCode: 302}\n---\n";
    y
}

const S_ADDRESS: &str = "10.7.0.1:80";

fn backends() -> BackendMap {
    let mut b = BackendMap::new();
    b.insert("shared/s:80".into(), S_ADDRESS.into());
    b.insert("shared/u:80".into(), "10.7.0.2:80".into());
    b.insert("other/t:80".into(), "10.8.0.1:80".into());
    b
}

/// The checked run of `n` sharers: what it made (or why it failed) and how many times the
/// fake NGINX ran.
fn run(n: usize, tag: &str) -> (Result<nginx_check::Checked, String>, httproute_nginx::plan::Plan) {
    let inputs = common::inputs(&manifests(n));
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let nginx = refusing_line_nginx(
        tag,
        &format!("server {S_ADDRESS}"),
        &format!("host not found in upstream \"{S_ADDRESS}\""),
    );
    let out_dir = scratch(&format!("{tag}-out"));
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir);
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    (c, plan)
}

/// The refused `upstream` line of Service s records every share that names it.
#[test]
fn a_shared_upstream_line_records_all_its_sharers() {
    let n = 5;
    let inputs = common::inputs(&manifests(n));
    let opts = common::options();
    let plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let out = httproute_nginx::emit::emit_with(&plan, &opts, Tree::Drop).unwrap();
    let line = out.nginx_conf.lines().position(|l| l.contains(S_ADDRESS)).unwrap() + 1;
    let units = out.units_at_line(line);
    let mut names: Vec<String> = units
        .iter()
        .map(|u| match u {
            Unit::BackendShare { rule, index: 0 } => rule.route.name.clone(),
            u => panic!("{u:?}"),
        })
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
    want.sort();
    assert_eq!(names, want, "{}", out.nginx_conf);
}

/// More sharers than `MAX_RETRIES`: one retry leaves them all out (two checks in all), each
/// share with the refusal as its condition, and nothing else.
#[test]
fn more_sharers_than_retries_are_left_out_in_one_retry() {
    let n = MAX_RETRIES + 4;
    let (c, mut plan) = run(n, "many");
    let c = c.expect("a configuration that loads");
    assert_eq!(c.checks, 2, "one refused check, one that loads");
    assert_eq!(c.refused.len(), n, "{:?}", c.refused);
    assert_eq!(c.output.dropped.len(), n, "{:?}", c.output.dropped);
    for d in &c.output.dropped {
        assert!(
            matches!(&d.unit, Unit::BackendShare { rule, index: 0 }
                if rule.route.namespace == "shared" && rule.route.name.starts_with('r')),
            "{d}"
        );
        assert_eq!(d.reason, Reason::UnsupportedValue, "{d}");
        assert!(d.message.contains("host not found in upstream"), "{d}");
    }
    assert!(!c.output.nginx_conf.contains(S_ADDRESS), "{}", c.output.nginx_conf);
    // The innocent are written as before: tenant shared's other backend, tenant other's.
    assert!(c.output.nginx_conf.contains("server 10.7.0.2:80"), "{}", c.output.nginx_conf);
    assert!(c.output.nginx_conf.contains("server 10.8.0.1:80"), "{}", c.output.nginx_conf);
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &c.output.dropped);
    let mut refused = 0;
    for route in &plan.status.routes {
        let conditions: Vec<_> = route.parents.iter().flat_map(|(_, cs)| cs).collect();
        let of = |k: ConditionType| conditions.iter().find(|c| c.kind == k).unwrap();
        assert!(of(ConditionType::Accepted).ok, "{}: {conditions:?}", route.id.name);
        let refs = of(ConditionType::ResolvedRefs);
        let sharer = route.id.namespace == "shared" && route.id.name.starts_with('r');
        assert_eq!(!refs.ok, sharer, "{}: {refs:?}", route.id.name);
        if sharer {
            refused += 1;
            assert!(
                refs.message.starts_with("rules[0].backendRefs[0]: nginx -t: host not found"),
                "{refs:?}"
            );
        }
    }
    assert_eq!(refused, n);
}

/// Checks and objects left out for 1, 2, 8, MAX_RETRIES and 4 * MAX_RETRIES sharers: always
/// two checks (one retry), every sharer left out.
#[test]
fn one_retry_whatever_the_number_of_sharers() {
    for n in [1, 2, 8, MAX_RETRIES, 4 * MAX_RETRIES] {
        let (c, _) = run(n, &format!("n{n}"));
        let c = c.unwrap_or_else(|e| panic!("{n} sharers: {e}"));
        eprintln!("{n} sharers: {} checks, {} left out", c.checks, c.output.dropped.len());
        assert_eq!((c.checks, c.output.dropped.len()), (2, n), "{n} sharers");
    }
}

/// With `sharers` routes of tenant shared, NGINX refusing the line holding `marker`: one
/// share is left out, of the route `namespace/name`, and tenant shared's upstream stays.
fn one_share_left_out(tag: &str, sharers: usize, marker: &str, namespace: &str, name: &str) {
    let inputs = common::inputs(&manifests(sharers));
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let nginx = refusing_line_nginx(tag, marker, "host not found in upstream");
    let out_dir = scratch(&format!("{tag}-out"));
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir).unwrap();
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    let dropped: Vec<String> = c.output.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(
        matches!(&c.output.dropped[0].unit, Unit::BackendShare { rule, .. }
            if rule.route.namespace == namespace && rule.route.name == name),
        "{dropped:?}"
    );
    assert_eq!(c.checks, 2);
    assert!(c.output.nginx_conf.contains(S_ADDRESS));
    assert!(Path::new(&c.output.matches_file).is_relative());
}

/// A refused line of one share alone (tenant shared's other backend) leaves out that share
/// only, not the sharers of the upstream beside it.
#[test]
fn a_line_of_one_share_leaves_out_no_sharer_of_another() {
    one_share_left_out("one", 6, "server 10.7.0.2:80", "shared", "apart");
}

/// A refused line of another tenant's own upstream leaves out that tenant's share alone: no
/// sharer of tenant shared's upstream.
#[test]
fn another_tenant_s_line_leaves_out_no_sharer() {
    one_share_left_out("other", MAX_RETRIES + 4, "server 10.8.0.1:80", "other", "o");
}

/// A `nginx` that refuses every configuration holding `marker` naming no line (as NGINX
/// reports a hash it cannot build), takes any other.
fn refusing_nginx(tag: &str, marker: &str) -> PathBuf {
    let dir = scratch(&format!("{tag}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("nginx");
    let script = format!(
        "#!/bin/sh\nif grep -q -F -- '{marker}' \"$4nginx.conf\"; then echo 'nginx: [emerg] could not build variables_hash, you should increase variables_hash_bucket_size: 64' >&2; exit 1; fi\nexit 0\n"
    );
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// A refusal naming no line that the shared upstream causes: tenant shared's objects are all
/// newer than tenant other's (namespace/name order, none dated), so they are left out at once
/// (its routes, its Gateway's listener), however many share the line: two checks (before:
/// 1 + log2 n for the bisection, then the sharers' tries). Nothing of
/// tenant other is left out.
#[test]
fn a_line_less_refusal_of_a_shared_line_leaves_out_its_sharers_at_once() {
    let n = MAX_RETRIES + 4;
    let inputs = common::inputs(&manifests(n));
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let nginx = refusing_nginx("gap", &format!("server {S_ADDRESS}"));
    let out_dir = scratch("gap-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir)
        .expect("a configuration that loads");
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    assert_eq!(c.checks, 2, "one decision, one check more");
    // Its n routes, its route apart, its listener.
    assert_eq!(c.output.dropped.len(), n + 2, "{:?}", c.output.dropped);
    for d in &c.output.dropped {
        let shared = match &d.unit {
            Unit::Route(r) => r.namespace == "shared",
            Unit::Listener(l) => l.namespace == "shared",
            _ => false,
        };
        assert!(shared, "{d}");
        assert!(d.message.contains("NGINX names no line"), "{d}");
    }
}

/// A word of the shared upstream the writer cannot write (a control character in its
/// address) leaves out every share that names it in one pass, and nothing else.
#[test]
fn an_unwritable_word_of_a_shared_line_leaves_out_its_sharers_in_one_pass() {
    let n = MAX_RETRIES + 4;
    let inputs = common::inputs(&manifests(n));
    let opts = common::options();
    let mut b = backends();
    b.insert("shared/s:80".into(), "10.7.0.1:80\u{7}".into());
    let plan = httproute_nginx::plan_for(&inputs, &b, &opts);
    let out = httproute_nginx::emit::emit_with(&plan, &opts, Tree::Drop).unwrap();
    assert_eq!(out.dropped.len(), n, "{:?}", out.dropped);
    assert!(out.dropped.iter().all(|d| matches!(&d.unit, Unit::BackendShare { rule, .. }
        if rule.route.name.starts_with('r'))));
    assert!(out.nginx_conf.contains("server 10.7.0.2:80"), "{}", out.nginx_conf);
}

/// Tenant a's Gateway: listeners x and y on port 20010 (host names x.a.test, y.a.test), z on
/// 20011; its routes attach to x alone (rx), to port 20010's two (rxy), to all three (rall),
/// to x and to z through one parentRef each (two). Tenant b's Gateway and route o.
const LISTENERS: &str = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners:\n  - {name: x, port: 20010, protocol: HTTP, hostname: x.a.test}\n  - {name: y, port: 20010, protocol: HTTP, hostname: y.a.test}\n  - {name: z, port: 20011, protocol: HTTP}\n---\nkind: Gateway\nmetadata: {name: gw, namespace: b}\nspec:\n  listeners: [{name: http, port: 20012, protocol: HTTP}]\n---\nkind: HTTPRoute\nmetadata: {name: rx, namespace: a}\nspec:\n  parentRefs: [{name: gw, sectionName: x}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: rxy, namespace: a}\nspec:\n  parentRefs: [{name: gw, port: 20010}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: rall, namespace: a}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: two, namespace: a}\nspec:\n  parentRefs: [{name: gw, sectionName: x}, {name: gw, sectionName: z}]\n  rules: [{backendRefs: [{name: s, port: 80}]}]\n---\nkind: HTTPRoute\nmetadata: {name: o, namespace: b}\nspec:\n  parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: t, port: 80}]}]\n";

/// A refused line of listeners (the catch-all `listen` of port 20010, which its two
/// listeners bring) leaves them out in one retry, and each route parentRef every listener of
/// which is among them is `Accepted: False, NoMatchingParent`, naming them and NGINX's
/// complaint; a parentRef that keeps a listener (z) stays accepted, and so does everything of
/// listener z and of tenant b.
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
    let marker = "listen 20010 default_server";
    assert!(out.nginx_conf.contains(marker), "{}", out.nginx_conf);
    let nginx = refusing_line_nginx("listeners", marker, "bind() to 0.0.0.0:20010 failed");
    let out_dir = scratch("listeners-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir)
        .expect("a configuration that loads");
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    assert_eq!(c.checks, 2, "one refusal, its two listeners left out at once");
    let gone: Vec<String> = c
        .output
        .dropped
        .iter()
        .map(|d| match &d.unit {
            Unit::Listener(l) => l.to_string(),
            u => panic!("{u:?}"),
        })
        .collect();
    assert_eq!(gone, ["a/gw/x", "a/gw/y"]);
    assert!(!c.output.nginx_conf.contains("listen 20010"), "{}", c.output.nginx_conf);
    httproute_nginx::plan::dropped_from_configuration(&mut plan.status, &c.output.dropped);
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
    let complaint = "nginx -t: bind() to 0.0.0.0:20010 failed";
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
    httproute_nginx::explain::without_dropped(&mut served, &c.output.dropped);
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

/// Tenant res's routes in every layout of a rule's backends: one backendRef (a), two (b, c),
/// two with filters of their own (d, e), one with a filter of its own (f); Service `x` at
/// 10.9.0.N:80 (N its place in "abcdef", 1-based).
fn layouts_manifests() -> String {
    let mut y = String::from(
        "kind: Gateway\nmetadata: {name: gw, namespace: res}\nspec:\n  listeners: [{name: http, port: 20002, protocol: HTTP}]\n---\n",
    );
    let own = "filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-own, value: v}]}}]";
    for (route, refs) in [
        ("one", "[{name: a, port: 80}]".to_owned()),
        ("two", "[{name: b, port: 80}, {name: c, port: 80}]".to_owned()),
        ("apart", format!("[{{name: d, port: 80, {own}}}, {{name: e, port: 80}}]")),
        ("own", format!("[{{name: f, port: 80, {own}}}]")),
    ] {
        y += &format!(
            "kind: HTTPRoute\nmetadata: {{name: {route}, namespace: res}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /{route}}}}}]\n    backendRefs: {refs}\n---\n"
        );
    }
    y
}

const LAYOUT_SERVICES: &str = "abcdef";

fn layouts_backends() -> BackendMap {
    let mut b = BackendMap::new();
    for (k, s) in LAYOUT_SERVICES.chars().enumerate() {
        b.insert(format!("res/{s}:80"), format!("10.9.0.{}:80", k + 1));
    }
    b
}

/// Invariant: every line that names a backend's address is its backendRef share's, whatever
/// the rule's layout (one backend, a split, locations of their own), so NGINX refusing it
/// costs that share (a 500 for its requests), never the rule or another share.
#[test]
fn every_line_naming_a_backend_is_its_share_s() {
    let inputs = common::inputs(&layouts_manifests());
    let opts = common::options();
    let plan = httproute_nginx::plan_for(&inputs, &layouts_backends(), &opts);
    let out = httproute_nginx::emit::emit_with(&plan, &opts, Tree::Drop).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for (i, l) in out.nginx_conf.lines().enumerate() {
        let Some(at) = l.find("10.9.0.") else { continue };
        let n: usize = l[at + 7..].split(':').next().unwrap().parse().unwrap();
        let (route, index) =
            [("one", 0), ("two", 0), ("two", 1), ("apart", 0), ("apart", 1), ("own", 0)][n - 1];
        let units = out.units_at_line(i + 1);
        assert!(
            units.iter().any(|u| matches!(u, Unit::BackendShare { rule, index: k }
                if rule.route.name == route && *k == index)),
            "line {} ({l:?}) is {units:?}, not {route}'s backendRefs[{index}]\n{}",
            i + 1,
            out.nginx_conf
        );
        seen.insert(n);
    }
    assert_eq!(
        seen.len(),
        LAYOUT_SERVICES.len(),
        "every backend is named: {seen:?}\n{}",
        out.nginx_conf
    );
}

/// NGINX refusing the line of a rule's only backend leaves out that share alone: the rule's
/// location stays and answers 500 (Gateway API: a request to an unusable backend gets a 500),
/// every other backend is written.
#[test]
fn a_refused_line_of_the_only_backend_leaves_the_rule_served() {
    let inputs = common::inputs(&layouts_manifests());
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &layouts_backends(), &opts);
    let marker = "server 10.9.0.1:80";
    let nginx = refusing_line_nginx("only", marker, "host not found in upstream");
    let out_dir = scratch("only-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir)
        .expect("a configuration that loads");
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    let dropped: Vec<String> = c.output.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(
        matches!(&c.output.dropped[0].unit, Unit::BackendShare { rule, index: 0 }
            if rule.route.name == "one"),
        "{dropped:?}"
    );
    let conf = &c.output.nginx_conf;
    assert!(!conf.contains("10.9.0.1:"), "{conf}");
    for n in 2..=LAYOUT_SERVICES.len() {
        assert!(conf.contains(&format!("server 10.9.0.{n}:80")), "{n}: {conf}");
    }
    // Route one's rule location: after its comment, answering 500.
    let at = conf.find("# res/one rule 0\n").expect("route one's rule is written");
    let location = conf[at..].lines().nth(1).unwrap();
    assert!(location.contains("internal; return 500;"), "{location}");
}
