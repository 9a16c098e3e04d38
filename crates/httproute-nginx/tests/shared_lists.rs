//! Output linear in the input (issue #29): with the preload carrier every run of candidates
//! that locations share is written once and each location's list as includes of those runs.
//! For random route sets (regex paths, deep prefix chains, `/` prefixes with header matches,
//! a few hostnames) every location's list, includes expanded, is the plan's flattened list
//! (the routing did not change), the module's engine compiles the file, and the output is at
//! most `C` times the input (plus the fixed preamble). `SHARED_LISTS_CASES` sets the number
//! of random cases (default 24).

mod common;

use std::collections::HashSet;
use std::path::Path;

use httproute_nginx::conf::Stmt;
use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::plan::Plan;
use httproute_nginx::{BackendMap, Options, Output, conf_reader, emit, plan_for};
use proptest::prelude::*;
use serde_json::Value;

/// Output bytes (nginx.conf + matches.json) per input byte, past [`FIXED`]. The worst shape
/// is a deep chain of short prefixes: a location at depth d includes d runs (~28 bytes each)
/// for a path of ~2d bytes of input (see docs/BENCHMARKS.md, "Output linear in the input").
const C: usize = 32;
/// What any configuration has (preamble, the catch-all server, the rules' locations' frame).
const FIXED: usize = 4096;

fn opts() -> Options {
    common::options()
}

fn backends() -> BackendMap {
    let mut m = BackendMap::new();
    m.insert("default/s:80".into(), "127.0.0.1:9".into());
    m
}

const GATEWAY: &str = "kind: Gateway\nmetadata: {name: gw}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\n";

/// One match: (path type, path or pattern, header match, method).
type M = (&'static str, String, Option<(String, String)>, Option<&'static str>);

fn route_yaml(i: usize, hostnames: &[&str], rules: &[Vec<M>]) -> String {
    let mut y = format!(
        "kind: HTTPRoute\nmetadata: {{name: r{i}, creationTimestamp: \"2024-01-01T00:00:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules:\n",
        i % 60,
        hostnames.iter().map(|h| format!("{h:?}")).collect::<Vec<_>>().join(", ")
    );
    for rule in rules {
        y += "  - matches:\n";
        for (kind, value, header, method) in rule {
            y += &format!("    - path: {{type: {kind}, value: {value:?}}}\n");
            if let Some((n, v)) = header {
                y += &format!("      headers: [{{name: {n}, value: {v:?}}}]\n");
            }
            if let Some(m) = method {
                y += &format!("      method: {m}\n");
            }
        }
        y += "    backendRefs: [{name: s, port: 80}]\n";
    }
    y + "---\n"
}

/// The plan and the output of `yaml` (all of it must be accepted).
fn generate(yaml: &str) -> (Plan, Output) {
    let mut inputs = Inputs::default();
    load_text(Path::new("t.yaml"), yaml, &mut inputs).unwrap();
    assert!(inputs.rejected.is_empty(), "{:?}", inputs.rejected);
    let plan = plan_for(&inputs, &backends(), &opts());
    let out = emit::emit(&plan, &opts()).unwrap();
    (plan, out)
}

fn servers(conf: &str) -> Vec<Stmt> {
    let tree = conf_reader::read(conf).unwrap();
    let http = tree.into_iter().find(|s| s.words == ["http"]).unwrap();
    http.block.unwrap().into_iter().filter(|s| s.words == ["server"]).collect()
}

/// Every location's list, includes expanded, is the plan's list for it, entry for entry; and
/// the module's engine compiles the file. Returns the number of lists with includes.
fn check_expansion(plan: &Plan, out: &Output) -> usize {
    let file: serde_json::Map<String, Value> = serde_json::from_str(&out.matches_json).unwrap();
    route_match::compile_file(out.matches_json.as_bytes(), route_match::Syntax::Typed)
        .unwrap_or_else(|e| panic!("the module refuses it: {e}"));
    let flat = route_match::flatten(&file).unwrap();
    let mut composite = 0;
    let conf_servers = servers(&out.nginx_conf);
    let plan_servers: Vec<_> = plan.ports.iter().flat_map(|p| &p.servers).collect();
    assert_eq!(conf_servers.len(), plan_servers.len());
    for (s, ps) in conf_servers.iter().zip(plan_servers) {
        let locations: Vec<&Stmt> =
            s.block.iter().flatten().filter(|d| d.words[0] == "location").collect();
        for (l, lp) in locations.iter().zip(&ps.locations) {
            let path = match &lp.loc {
                httproute_nginx::plan::Loc::Exact(p) | httproute_nginx::plan::Loc::Prefix(p) => p,
            };
            assert_eq!(l.words.last(), Some(path), "{:?}", l.words);
            let body = l.block.as_ref().unwrap();
            let key = body.iter().find(|d| d.words[..2] == ["set", "$match_key"]);
            let Some(key) = key else {
                assert!(lp.is_empty(), "{:?}", l.words);
                continue;
            };
            let key = &key.words[2];
            let want: Vec<Value> =
                lp.candidates().map(|c| serde_json::to_value(&c.entry).unwrap()).collect();
            assert_eq!(flat[key].as_array().unwrap(), &want, "{:?} ({key})", l.words);
            if file[key].as_array().unwrap().iter().any(|e| e.get("include").is_some()) {
                composite += 1;
            }
        }
    }
    composite
}

/// The plan's size, (held, flattened): `held` the runs its locations hold plus the candidates
/// of the blocks those runs are pieces of, each counted once (what the plan allocates);
/// `flattened` every location's list length (what a plan of copied lists would hold).
fn plan_size(plan: &Plan) -> (usize, usize) {
    let mut runs = HashSet::new();
    let (mut refs, mut entries, mut flattened) = (0, 0, 0);
    for l in plan.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.locations) {
        refs += l.segments.len();
        flattened += l.len();
        for s in &l.segments {
            if runs.insert(s.id()) {
                entries += s.candidates().len();
            }
        }
    }
    (refs + entries, flattened)
}

/// Plan size ([`plan_size`]'s `held`) per input byte, at most: a match costs tens of bytes of
/// YAML, and a location holds a run per ancestor prefix (a path of `d` segments is ~2d bytes).
const C_PLAN: usize = 1;

fn output_bytes(out: &Output) -> usize {
    out.nginx_conf.len() + out.matches_json.len()
}

fn paths() -> impl Strategy<Value = M> {
    let prefix = prop::sample::select(vec!["/", "/a", "/a/b", "/a/b/c", "/a/b/c/d", "/x", "/a/x"]);
    let regex = prop::sample::select(vec!["/a/[0-9]+", "/v[0-9]+/.*", "/(x|y)/z", "/a/b/[a-z]+"]);
    let header = prop::option::of(
        (prop::sample::select(vec!["x-a", "x-b"]), prop::sample::select(vec!["1", "2"]))
            .prop_map(|(n, v)| (n.to_owned(), v.to_owned())),
    );
    let method = prop::option::of(prop::sample::select(vec!["GET", "POST"]));
    (
        prop_oneof![
            prefix.clone().prop_map(|p| ("PathPrefix", p.to_owned())),
            prefix.prop_map(|p| ("Exact", p.to_owned())),
            regex.prop_map(|p| ("RegularExpression", p.to_owned())),
        ],
        header,
        method,
    )
        .prop_map(|((k, p), h, m)| (k, p, h, m))
}

fn route_set() -> impl Strategy<Value = String> {
    let hosts = prop::sample::select(vec![vec![], vec!["a.test"], vec!["*.test"]]);
    let rules = prop::collection::vec(prop::collection::vec(paths(), 1..5), 1..4);
    prop::collection::vec((hosts, rules), 1..6).prop_map(|routes| {
        let mut y = GATEWAY.to_owned();
        for (i, (h, rules)) in routes.iter().enumerate() {
            y += &route_yaml(i, h, rules);
        }
        y
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("SHARED_LISTS_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(24)))]

    #[test]
    fn expanded_lists_are_the_plan_and_output_is_linear(yaml in route_set()) {
        let (plan, out) = generate(&yaml);
        check_expansion(&plan, &out);
        let (i, o) = (yaml.len(), output_bytes(&out));
        prop_assert!(o <= C * i + FIXED, "{o} output bytes for {i} input bytes:\n{yaml}");
        let (held, _) = plan_size(&plan);
        prop_assert!(held <= C_PLAN * i, "a plan of {held} for {i} input bytes:\n{yaml}");
    }
}

/// Adversarial shapes, each doubled three times: the output per input byte must not grow
/// (copying a list per location would grow it with the scale).
#[test]
fn adversarial_shapes_stay_linear() {
    type Shape = fn(usize) -> String;
    let shapes: [(&str, Shape); 3] = [
        // n regex paths and n prefix paths: every location would hold every regex.
        ("regex paths", |n| {
            let re: Vec<M> = (0..n)
                .map(|i| ("RegularExpression", format!("/r{i}/[a-z]+"), None, None))
                .collect();
            let pre: Vec<M> =
                (0..n).map(|i| ("PathPrefix", format!("/p{i}"), None, None)).collect();
            format!("{GATEWAY}{}{}", route_yaml(0, &[], &[re]), route_yaml(1, &[], &[pre]))
        }),
        // A prefix chain n deep: every location would hold every shorter prefix.
        ("deep prefix chain", |n| {
            let chain: Vec<M> =
                (1..=n).map(|d| ("PathPrefix", "/a".repeat(d), None, None)).collect();
            format!("{GATEWAY}{}", route_yaml(0, &[], &[chain]))
        }),
        // n header matches on `/` under n locations.
        ("/ with headers", |n| {
            let root: Vec<M> = (0..n)
                .map(|i| ("PathPrefix", "/".to_owned(), Some((format!("x-{i}"), "1".into())), None))
                .collect();
            let exact: Vec<M> = (0..n).map(|i| ("Exact", format!("/e{i}"), None, None)).collect();
            format!("{GATEWAY}{}{}", route_yaml(0, &[], &[root]), route_yaml(1, &[], &[exact]))
        }),
    ];
    for (name, shape) in shapes {
        let (mut sizes, mut held, mut flat) = (Vec::new(), Vec::new(), Vec::new());
        for n in [8, 16, 32, 64] {
            let yaml = shape(n);
            let (plan, out) = generate(&yaml);
            assert!(check_expansion(&plan, &out) > 0, "{name}: no list with includes");
            let (i, o) = (yaml.len(), output_bytes(&out));
            assert!(o <= C * i + FIXED, "{name} n={n}: {o} bytes out for {i} in");
            let (h, f) = plan_size(&plan);
            assert!(h <= C_PLAN * i, "{name} n={n}: a plan of {h} for {i} bytes in");
            sizes.push((i as f64, o as f64));
            held.push((i as f64, h as f64));
            flat.push((i as f64, f as f64));
        }
        // Output bytes (and plan size) per further input byte, at the smallest and the
        // largest doubling: a list copied per location would multiply it by about 4 (8 -> 16
        // vs 32 -> 64).
        let marginal = |a: (f64, f64), b: (f64, f64)| (b.1 - a.1) / (b.0 - a.0);
        let growth = |s: &[(f64, f64)]| (marginal(s[0], s[1]), marginal(s[2], s[3]));
        let (first, last) = growth(&sizes);
        assert!(last <= 2.0 * first, "{name}: {first:.1} then {last:.1} bytes out per byte in");
        let (hf, hl) = growth(&held);
        assert!(hl <= 2.0 * hf, "{name}: plan {hf:.3} then {hl:.3} per byte in");
        // What the test guards against: the flattened lists of the regex and `/` shapes grow
        // faster than the input (a plan that held them would fail the assertion above); a
        // deep chain's input grows with the square of the depth, as its lists do.
        let (ff, fl) = growth(&flat);
        assert!(
            name == "deep prefix chain" || fl > 3.0 * ff,
            "{name}: flattened lists {ff:.3} then {fl:.3} per byte in"
        );
        eprintln!(
            "{name}: {sizes:?}, marginal {first:.1} -> {last:.1}; plan {hf:.3} -> {hl:.3}, \
             flattened {ff:.3} -> {fl:.3}"
        );
    }
}

/// Routes of a less specific hostname beside many host names (issue #29): each server holds
/// the routes of its own hostname alone and falls back to the next less specific one of its
/// listener (`http_matches_fallback`), so n host-named routes beside n routes of no hostname,
/// or of a wildcard covering every host, write each route once. When every server held a copy
/// of every route that serves it, this wrote about n^2 locations (n = 25, 50, 100, 200: 9,560
/// -> 76,285 bytes in, nginx.conf 312,394 -> 18,779,569 bytes, 2,001 -> 121,001 locations;
/// n = 64 here: 2,015,065 bytes out for 34,017 in). The host-named routes' `/` has a header
/// match, so the other rules are reachable on every host (no pruning of dead candidates
/// makes this pass).
#[test]
fn routes_of_a_less_specific_hostname_beside_many_host_names_stay_linear() {
    for (shape, names) in
        [("no hostname", vec![]), ("*.test", vec!["*.test"]), ("*.w.test", vec!["*.w.test"])]
    {
        for n in [8, 16, 32, 64] {
            let mut yaml = GATEWAY.to_owned();
            for i in 0..n {
                let host =
                    if shape == "*.w.test" { format!("h{i}.w.test") } else { format!("h{i}.test") };
                let root =
                    ("PathPrefix", "/".to_owned(), Some(("x-a".to_owned(), "1".to_owned())), None);
                yaml += &route_yaml(i, &[host.as_str()], &[vec![root]]);
            }
            for j in 0..n {
                let rule = vec![("PathPrefix", format!("/p{j}"), None, None)];
                yaml += &route_yaml(n + j, &names, &[rule]);
            }
            let (_, out) = generate(&yaml);
            let (i, o) = (yaml.len(), output_bytes(&out));
            assert!(o <= C * i + FIXED, "{shape}, n={n}: {o} bytes out for {i} in");
        }
    }
}

/// Routes on many ports: n host-named routes attached to every listener of a Gateway of k
/// ports, beside a route of no hostname on each port alone (so no two ports' catch-alls are
/// the same). Each host's server falls back to its own port's catch-all: the module looks the
/// name up per socket, so the server is written once, with k `listen`s. Written once per
/// port, it was n x k servers for n + k objects (k = 64, n = 128: 4,178,104 bytes out for
/// 52,407 in; now 547,036). What stays is a `listen` per port in each server (NGINX puts a
/// server on each socket), at most 64 per Gateway a route names.
#[test]
fn host_names_on_many_ports_stay_linear() {
    for k in [8u16, 64] {
        for n in [16, 128] {
            let listeners: Vec<String> = (0..k)
                .map(|p| format!("{{name: l{p}, port: {}, protocol: HTTP}}", 8000 + p))
                .collect();
            let mut yaml = format!(
                "kind: Gateway\nmetadata: {{name: gw}}\nspec:\n  listeners: [{}]\n---\n",
                listeners.join(", ")
            );
            for i in 0..n {
                let root =
                    ("PathPrefix", "/".to_owned(), Some(("x-a".to_owned(), "1".to_owned())), None);
                yaml += &route_yaml(i, &[format!("h{i}.test").as_str()], &[vec![root]]);
            }
            for p in 0..k {
                yaml += &format!(
                    "kind: HTTPRoute\nmetadata: {{name: port{p}}}\nspec:\n  parentRefs: [{{name: \
                     gw, sectionName: l{p}}}]\n  rules:\n  - matches: [{{path: {{type: \
                     PathPrefix, value: /p{p}}}}}]\n    backendRefs: [{{name: s, port: 80}}]\n---\n"
                );
            }
            let (plan, out) = generate(&yaml);
            let (i, o) = (yaml.len(), output_bytes(&out));
            eprintln!("host_names_on_many_ports: k={k}, n={n}: {i} bytes in, {o} out");
            assert!(o <= C * i + FIXED, "k={k}, n={n}: {o} bytes out for {i} in");
            // Every host's server is there, once.
            for h in 0..n {
                let name = format!("server_name h{h}.test;");
                assert_eq!(out.nginx_conf.matches(&name).count(), 1, "k={k}, n={n}: {name}");
            }
            assert_eq!(plan.ports.len(), usize::from(k));
        }
    }
}

/// The case: 8 routes (about 505 KiB of YAML: 400 regex paths, 7,792 prefix paths,
/// a third of them with a header match) gave a 176 MB matches.json before lists were shared.
#[test]
fn eight_routes_of_505_kib() {
    let yaml = eight_routes();
    if let Some(to) = std::env::var_os("SHARED_LISTS_DUMP") {
        std::fs::write(to, &yaml).unwrap();
    }
    assert!((500 * 1024..520 * 1024).contains(&yaml.len()), "{} bytes", yaml.len());
    let (_, out) = generate(&yaml);
    let (i, o) = (yaml.len(), output_bytes(&out));
    eprintln!(
        "eight_routes_of_505_kib: {i} bytes in, nginx.conf {} + matches.json {} out",
        out.nginx_conf.len(),
        out.matches_json.len()
    );
    assert!(o <= C * i, "{o} bytes out for {i} in");
    let file =
        route_match::compile_file(out.matches_json.as_bytes(), route_match::Syntax::Typed).unwrap();
    // Locations of prefixes from one rule with the same conditions have the same list: one key.
    assert!(file.len() > 300, "{} keys", file.len());
}

/// 8 routes x 16 rules x 64 matches: the first 400 regex paths, then prefixes, a third of them
/// with a header match of its own value (its locations' lists differ from every other's).
pub fn eight_routes() -> String {
    let mut y = GATEWAY.to_owned();
    for r in 0..8 {
        let rules: Vec<Vec<M>> = (0..16)
            .map(|ri| {
                (0..64)
                    .map(|mi| {
                        let n = (r * 16 + ri) * 64 + mi;
                        if n < 400 {
                            ("RegularExpression", format!("/re{n}/[a-z0-9]+"), None, None)
                        } else {
                            let header = (n % 3 == 0).then(|| ("x-v".to_owned(), n.to_string()));
                            ("PathPrefix", format!("/p{n}"), header, None)
                        }
                    })
                    .collect()
            })
            .collect();
        y += &route_yaml(r, &[], &rules);
    }
    y
}
