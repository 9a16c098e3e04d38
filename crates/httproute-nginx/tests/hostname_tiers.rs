//! Servers hold the routes of their own hostname alone and fall back to the next less
//! specific hostname of their listener (`http_matches_fallback`). This checks the answers
//! against Gateway API's precedence computed here directly, from the manifests and not from
//! the plan: random routes with exact, nested wildcard and no hostnames, on a listener of no
//! hostname or of `*.test`, and every request of a small vocabulary. And it checks that the
//! output stays linear on the shapes that were quadratic when each server held a copy of
//! every route that serves it.
//!
//! `HOSTNAME_TIERS_CASES` (default 96) sets the number of random cases.

mod common;

use httproute_nginx::explain::{Request, explain_request};
use httproute_nginx::{BackendMap, plan_for};
use manifest_gen::objects::{self, Set};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const NAMES: [&str; 7] =
    ["a.test", "b.a.test", "c.b.a.test", "*.test", "*.a.test", "*.b.a.test", "z.test"];
const PATHS: [(&str, &str); 4] =
    [("PathPrefix", "/"), ("PathPrefix", "/x"), ("PathPrefix", "/x/y"), ("Exact", "/x")];

/// A candidate's precedence: smaller first.
type Key = (usize, usize, u8, usize, bool, usize, usize, usize, usize);

/// A match: (path index, header `x-h` value, method GET).
type M = (usize, Option<u8>, bool);

#[derive(Clone, Debug)]
struct Route {
    /// Indexes into [`NAMES`]; empty: no hostnames.
    hosts: Vec<usize>,
    rules: Vec<Vec<M>>,
}

fn route() -> impl Strategy<Value = Route> {
    let m = (0..PATHS.len(), prop::option::of(1u8..3), any::<bool>());
    (
        prop::collection::btree_set(0..NAMES.len(), 0..3),
        prop::collection::vec(prop::collection::vec(m, 1..3), 1..3),
    )
        .prop_map(|(hosts, rules)| Route { hosts: hosts.into_iter().collect(), rules })
}

fn yaml(listener: Option<&str>, routes: &[Route]) -> String {
    let ns = Some("default");
    let mut docs =
        vec![objects::gateway(ns, "gw", vec![objects::listener("http", 80, listener, None)])];
    for (i, r) in routes.iter().enumerate() {
        let hosts: Vec<String> = r.hosts.iter().map(|&h| NAMES[h].to_owned()).collect();
        let rules = r
            .rules
            .iter()
            .enumerate()
            .map(|(ri, rule)| {
                let matches = rule
                    .iter()
                    .map(|&(p, h, get)| {
                        let (kind, value) = PATHS[p];
                        let header =
                            h.map(|h| vec![objects::header("Exact", "x-h", &h.to_string())]);
                        objects::path_match(kind, value)
                            .set_some("headers", header)
                            .set_some("method", get.then_some("GET"))
                    })
                    .collect();
                objects::rule(
                    matches,
                    vec![],
                    vec![objects::backend(&format!("r{i}-{ri}"), 80, None)],
                )
            })
            .collect();
        let parents = vec![objects::parent("gw", None, None)];
        docs.push(
            objects::http_route(ns, &format!("r{i}"), parents, &hosts, rules)
                .set("metadata.creationTimestamp", format!("2024-01-01T00:{i:02}:00Z")),
        );
    }
    objects::file(&docs)
}

/// Whether `pattern` (a Gateway API hostname) matches request host `host`.
fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        None => pattern == host,
    }
}

/// The intersection of a route hostname with the listener's, as Gateway API defines it: the
/// more specific of the two when one covers the other.
fn intersect(route: &str, listener: Option<&str>) -> Option<String> {
    let Some(l) = listener else { return Some(route.to_owned()) };
    if route == l || host_matches(l, route) {
        Some(route.to_owned())
    } else if host_matches(route, l) {
        Some(l.to_owned())
    } else {
        None
    }
}

/// The rule (route, rule) Gateway API's precedence picks for a request, or none (404):
/// among the matches the request satisfies, of the routes one of whose hostnames (after
/// intersection with the listener's) matches the host, the one of the route hostname with the
/// most non-wildcard characters, then the most characters; then Exact before prefix, the
/// longest prefix, a method, more headers; the oldest route; rule and match order.
fn oracle(
    listener: Option<&str>,
    routes: &[Route],
    host: &str,
    path: &str,
    header: Option<u8>,
    get: bool,
) -> Option<(usize, usize)> {
    if listener.is_some_and(|l| !host_matches(l, host)) {
        return None;
    }
    let mut best: Option<(Key, (usize, usize))> = None;
    for (i, r) in routes.iter().enumerate() {
        let names: Vec<Option<String>> = if r.hosts.is_empty() {
            vec![listener.map(str::to_owned)]
        } else {
            r.hosts.iter().filter_map(|&h| intersect(NAMES[h], listener)).map(Some).collect()
        };
        // The most specific of the route's hostnames that match the host.
        let Some(rank) = names
            .iter()
            .filter(|n| n.as_deref().is_none_or(|n| host_matches(n, host)))
            .map(|n| match n.as_deref() {
                None => (0, 0),
                Some(n) if n.starts_with('*') => (0, n.len()),
                Some(n) => (n.len(), n.len()),
            })
            .max()
        else {
            continue;
        };
        for (ri, rule) in r.rules.iter().enumerate() {
            for (mi, &(p, h, m)) in rule.iter().enumerate() {
                let (kind, value) = PATHS[p];
                let path_ok = match kind {
                    "Exact" => path == value,
                    _ => {
                        value == "/"
                            || path == value
                            || path.strip_prefix(value).is_some_and(|r| r.starts_with('/'))
                    }
                };
                if !path_ok || h.is_some_and(|h| Some(h) != header) || (m && !get) {
                    continue;
                }
                let key = (
                    usize::MAX - rank.0,
                    usize::MAX - rank.1,
                    u8::from(kind != "Exact"),
                    usize::MAX - value.len(),
                    !m,
                    usize::from(h.is_none()),
                    i,
                    ri,
                    mi,
                );
                if best.as_ref().is_none_or(|(k, _)| key < *k) {
                    best = Some((key, (i, ri)));
                }
            }
        }
    }
    best.map(|(_, w)| w)
}

const HOSTS: [&str; 8] = [
    "a.test",
    "b.a.test",
    "c.b.a.test",
    "d.c.b.a.test",
    "q.a.test",
    "z.test",
    "y.z.test",
    "other.org",
];
const REQUEST_PATHS: [&str; 6] = ["/", "/x", "/x/", "/x/y", "/x/yz", "/q"];

fn runner() -> TestRunner {
    let cases =
        std::env::var("HOSTNAME_TIERS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]))
}

#[test]
fn every_answer_is_gateway_api_precedence_across_hostname_tiers() {
    let strategy = (prop::option::of(Just("*.test")), prop::collection::vec(route(), 1..6));
    let mut runner = runner();
    let result = runner.run(&strategy, |(listener, routes)| {
        let inputs = common::inputs(&yaml(listener, &routes));
        let plan = plan_for(&inputs, &BackendMap::new(), &common::options());
        for host in HOSTS {
            for path in REQUEST_PATHS {
                for header in [None, Some(1), Some(2)] {
                    for get in [true, false] {
                        let req = Request {
                            port: Some(80),
                            method: if get { "GET" } else { "POST" }.into(),
                            host: host.into(),
                            path: path.into(),
                            headers: header
                                .map(|h| ("x-h".to_owned(), h.to_string()))
                                .into_iter()
                                .collect(),
                            query: String::new(),
                        };
                        let e = explain_request(&plan, &req);
                        let want = oracle(listener, &routes, host, path, header, get);
                        match want {
                            None => prop_assert_eq!(
                                e.status,
                                404,
                                "{:?} {}{}: {}",
                                header,
                                host,
                                path,
                                e.text
                            ),
                            Some((i, ri)) => {
                                let name = format!("r{i}-{ri}.default");
                                prop_assert!(
                                    e.status == 200
                                        && e.backends
                                            .iter()
                                            .any(|b| b.to_string().starts_with(&name)),
                                    "{:?} {} {}{}: want {}, got:\n{}",
                                    header,
                                    req.method,
                                    host,
                                    path,
                                    name,
                                    e.text
                                );
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
