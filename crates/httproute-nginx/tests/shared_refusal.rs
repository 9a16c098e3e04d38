//! `generate --nginx`: a refusal of a line that many of the newest tenant's objects bring (an
//! `upstream` that many routes' backendRefs name), whether NGINX names the line or not, leaves
//! out that tenant's objects newer than every other tenant's in one retry, however many they
//! are, each with the refusal as its condition, and nothing of the older tenant. A line NGINX
//! names that is an older tenant's never costs that tenant its object: the newest tenant's
//! objects are left out (they may cause it), and if the refusal stays, the run fails.
//!
//! NGINX here is a fake (a shell script): it refuses, as NGINX names the line it refuses
//! (`[emerg] MESSAGE in FILE:LINE`), the first line of the configuration holding a marker, and
//! takes every other configuration. A real NGINX refuses such a line for a backend address it
//! cannot resolve ("host not found in upstream"); the generator writes names to resolve per
//! request, not in an `upstream`, so the refusal is made here.

mod common;

use std::path::PathBuf;

use httproute_nginx::BackendMap;
use httproute_nginx::emit::{Tree, Unit};
use httproute_nginx::nginx_check::{self, MAX_RETRIES};

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
        "#!/bin/sh\necho run >> '{}/runs'\nline=$(grep -n -F -- '{marker}' \"$4nginx.conf\" | head -n 1 | cut -d: -f1)\nif [ -n \"$line\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: {message} in $4nginx.conf:$line\" >&2; exit 1; fi\nexit 0\n",
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

/// A `nginx` that refuses every configuration holding `marker` naming no line (as NGINX
/// reports a hash it cannot build), takes any other.
fn refusing_nginx(tag: &str, marker: &str) -> PathBuf {
    let dir = scratch(&format!("{tag}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("nginx");
    let script = format!(
        "#!/bin/sh\nif grep -q -F -- '{marker}' \"$4nginx.conf\"; then echo '2026/12/07 10:24:05 [emerg] 1#1: could not build variables_hash, you should increase variables_hash_bucket_size: 64' >&2; exit 1; fi\nexit 0\n"
    );
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// Whether `d` is tenant shared's (a route or its listener).
fn shared_s(d: &httproute_nginx::plan::Dropped) -> bool {
    match &d.unit {
        Unit::Route(r) => r.namespace == "shared",
        Unit::Listener(l) => l.namespace == "shared",
        _ => false,
    }
}

/// A refused line of tenant shared's upstream, named (for 1, 8 and 4 * MAX_RETRIES sharers)
/// or not: tenant shared's objects are all newer than tenant other's (namespace/name order,
/// none dated), so they are left out at once (its n routes, its route apart, its Gateway's
/// listener): two checks, whatever their number, each with the refusal as its condition.
/// Nothing of tenant other is left out.
#[test]
fn a_refusal_of_a_shared_line_leaves_out_the_newest_tenant_in_one_retry() {
    for n in [1, 8, 4 * MAX_RETRIES] {
        let (c, _) = run(n, &format!("n{n}"));
        let c = c.unwrap_or_else(|e| panic!("{n} sharers: {e}"));
        eprintln!("{n} sharers: {} checks, {} left out", c.checks, c.output.dropped.len());
        assert_eq!((c.checks, c.output.dropped.len()), (2, n + 2), "{n} sharers");
        assert_eq!(c.refused.len(), n + 2);
        for d in &c.output.dropped {
            assert!(shared_s(d), "{d}");
            assert!(d.message.contains("host not found in upstream"), "{d}");
            assert!(d.message.contains("a gap in the model"), "{d}");
        }
        assert!(!c.output.nginx_conf.contains(S_ADDRESS), "{}", c.output.nginx_conf);
        assert!(c.output.nginx_conf.contains("server 10.8.0.1:80"), "{}", c.output.nginx_conf);
    }
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
    assert_eq!(c.output.dropped.len(), n + 2, "{:?}", c.output.dropped);
    assert!(c.output.dropped.iter().all(shared_s), "{:?}", c.output.dropped);
}

/// The class #45 names: NGINX names a line of the older tenant (other's upstream), which the
/// newer tenant's object makes it refuse (here: while tenant shared's upstream is written).
/// The older tenant's share is not left out: tenant shared's objects are, and the
/// configuration loads with tenant other's line in it. Before, the line's owner (other's
/// backendRef share) was left out and shared's objects kept.
#[test]
fn a_line_of_the_older_tenant_costs_it_nothing() {
    let inputs = common::inputs(&manifests(3));
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let dir = scratch("older-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let nginx = dir.join("nginx");
    let script = format!(
        "#!/bin/sh\nif grep -q -F -- 'server {S_ADDRESS}' \"$4nginx.conf\"; then line=$(grep -n -F -- 'server 10.8.0.1:80' \"$4nginx.conf\" | head -n 1 | cut -d: -f1); if [ -n \"$line\" ]; then echo \"2026/12/07 10:24:05 [emerg] 1#1: upstream refused in $4nginx.conf:$line\" >&2; exit 1; fi; fi\nexit 0\n"
    );
    std::fs::write(&nginx, script).unwrap();
    std::fs::set_permissions(&nginx, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out_dir = scratch("older-out");
    let c = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir)
        .expect("a configuration that loads");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!c.output.dropped.is_empty());
    assert!(c.output.dropped.iter().all(shared_s), "{:?}", c.output.dropped);
    assert!(c.output.nginx_conf.contains("server 10.8.0.1:80"), "{}", c.output.nginx_conf);
}

/// A refused line of the older tenant that stays when the newest tenant's objects are left out:
/// the run fails, nothing of the older tenant is left out, and NGINX ran twice.
#[test]
fn a_line_of_the_older_tenant_that_stays_fails_the_run() {
    let inputs = common::inputs(&manifests(MAX_RETRIES + 4));
    let opts = common::options();
    let mut plan = httproute_nginx::plan_for(&inputs, &backends(), &opts);
    let nginx = refusing_line_nginx("other", "server 10.8.0.1:80", "host not found in upstream");
    let out_dir = scratch("other-out");
    let e = nginx_check::emit_checked(&mut plan, &opts, Tree::Drop, &nginx, &out_dir)
        .err()
        .expect("the run fails");
    let runs = std::fs::read_to_string(nginx.parent().unwrap().join("runs")).unwrap();
    let _ = std::fs::remove_dir_all(nginx.parent().unwrap());
    assert!(e.contains("it stays with the newest tenant's objects left out"), "{e}");
    assert_eq!(runs.lines().count(), 2, "one check, one decision, one check more");
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
