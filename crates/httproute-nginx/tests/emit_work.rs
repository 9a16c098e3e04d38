//! The writer's work is linear in what a tenant leaves out: a tenant whose paths and rules
//! NGINX cannot take costs work in proportion to its objects (one pass writes the rest, what
//! is left out decided before it), at 1x and at 2x its size. Work is counted (`emit::Work`:
//! candidates looked at), never timed.

mod common;

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::plan::{Loc, PlanOptions, Unit, plan};
use httproute_nginx::{BackendMap, Options};

fn opts() -> Options {
    common::options()
}

/// Tenant `a`'s one route, and tenant `b`'s `n` routes of two rules: one with two Exact
/// paths (made unwritable below), one a redirect whose `$` signs pass NGINX's word.
fn manifests(n: usize) -> String {
    let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n".to_owned();
    y += "kind: HTTPRoute\nmetadata: {name: a, namespace: a}\nspec:\n  parentRefs: [{name: gw, namespace: default}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}}]\n    backendRefs: [{name: s, port: 80}]\n---\n";
    let dollars = "$".repeat(300);
    for i in 0..n {
        y += &format!(
            "kind: HTTPRoute\nmetadata: {{name: b{i}, namespace: b}}\nspec:\n  parentRefs: [{{name: gw, namespace: default}}]\n  rules:\n  - matches: [{{path: {{type: Exact, value: /bad{i}-x}}}}, {{path: {{type: Exact, value: /bad{i}-y}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n  - matches: [{{path: {{type: PathPrefix, value: /r{i}}}}}]\n    filters: [{{type: RequestRedirect, requestRedirect: {{path: {{type: ReplaceFullPath, replaceFullPath: \"/{dollars}\"}}}}}}]\n---\n"
        );
    }
    y
}

/// The output for `n` routes of tenant b, its Exact paths given a newline (the CRD refuses
/// one; the plan is changed here, as a path NGINX cannot take would come from it).
fn emitted(n: usize) -> httproute_nginx::Output {
    let mut inputs = Inputs::default();
    load_text(Path::new("a.yaml"), &manifests(n), &mut inputs).unwrap();
    let mut backends = BackendMap::new();
    backends.insert("a/s:80".into(), "127.0.0.1:9".into());
    backends.insert("b/s:80".into(), "127.0.0.1:9".into());
    let mut plan = plan(&inputs, &PlanOptions::new(&backends));
    let mut bad = 0;
    for server in &mut plan.ports[0].servers {
        for l in &mut server.locations {
            if let Loc::Exact(p) = &mut l.loc
                && p.starts_with("/bad")
            {
                p.push('\n');
                bad += 1;
                l.edit_candidates(|c| {
                    if c.path.starts_with("/bad") {
                        c.path.push('\n');
                    }
                });
            }
        }
    }
    assert_eq!(bad, 2 * n);
    // The plan changed: its words are judged again.
    plan.refused = httproute_nginx::plan::word_refusals(&plan.ports);
    httproute_nginx::emit::emit(&plan, &opts()).unwrap()
}

#[test]
fn dropped_paths_and_rules_cost_work_linear_in_the_tenant() {
    let (one, two) = (emitted(40), emitted(80));
    for (out, n) in [(&one, 40), (&two, 80)] {
        // Every bad path's match and every redirect rule left out, once each.
        let matches = out.dropped.iter().filter(|d| matches!(d.unit, Unit::Match { .. })).count();
        let rules = out.dropped.len() - matches;
        assert_eq!((matches, rules), (2 * n, n), "{:?}", out.dropped);
        assert!(out.dropped.iter().all(|d| d.unit.route().unwrap().namespace == "b"));
        // Tenant a is served.
        assert!(out.nginx_conf.contains("location \"/a/\""), "{}", out.nginx_conf);
    }
    eprintln!("work: 1x {:?}, 2x {:?}", one.work, two.work);
    let ratio = |f: fn(&httproute_nginx::emit::Work) -> usize| {
        f(&two.work) as f64 / f(&one.work).max(1) as f64
    };
    let r = ratio(|w| w.candidates);
    assert!(r <= 2.2, "candidates: {:?} -> {:?}", one.work, two.work);
    // The candidates looked at are those of the left-out locations: one each.
    assert_eq!(two.work.candidates, 2 * 80);
}

/// (candidates the inline lists' writing looked at, candidates the lists hold) for `n` routes
/// of a regex path and `n` of a plain prefix on one hostless listener, `--carrier inline`:
/// every location's list holds every regex candidate (n x 2n in all), about 100 of which fit
/// one list word (`words::lists` refuses the newer rules).
fn inline_listed(n: usize) -> (usize, usize) {
    let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
    for k in 0..n {
        y += &format!(
            "---\nkind: HTTPRoute\nmetadata: {{name: p{k}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /p{k}}}}}]\n---\nkind: HTTPRoute\nmetadata: {{name: q{k}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - matches: [{{path: {{type: RegularExpression, value: \"/q{k}/[a-z]+\"}}}}]\n"
        );
    }
    let mut inputs = Inputs::default();
    load_text(Path::new("a.yaml"), &y, &mut inputs).unwrap();
    let backends = BackendMap::new();
    let mut o = Options { carrier: httproute_nginx::Carrier::Inline, ..opts() };
    (o.global.regex_memory_per_tenant, o.global.regex_memory_total) = (usize::MAX, usize::MAX);
    let plan = plan(&inputs, &httproute_nginx::plan_options(&o, &backends));
    assert!(plan.refused.len() > n / 2, "{n}: {} refused", plan.refused.len());
    let out = httproute_nginx::emit::emit(&plan, &o).unwrap();
    let locations = plan.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations);
    (out.work.listed, locations.map(|l| l.len()).sum())
}

/// `--carrier inline` writes each location's list in place: each run of candidates is looked
/// at in full once, then only for what it kept (`plan::Kept`), so at 2n routes about twice the
/// work at n, while the candidates of all lists (what the walk looked at before: each
/// location's in full) are about 4x.
#[test]
fn inline_lists_are_written_in_work_linear_in_the_routes() {
    let ((w1, all1), (w2, all2)) = (inline_listed(100), inline_listed(200));
    eprintln!("listed {w1} -> {w2}, lists {all1} -> {all2}");
    assert!(all2 > 3 * all1, "{all1} -> {all2}");
    assert!(w2 <= 2 * w1 + w1 / 10, "{w1} -> {w2} (lists: {all1} -> {all2})");
}
