//! The per-request cost model (issue #30), checked through the deterministic work counter
//! (`MatchList::evaluate_work`): per-request state follows the list, not the store; regex
//! steps are charged as used; one attempt per distinct (pattern, subject); and the work of any
//! request is linear in its bytes plus the budget.

mod common;

use common::{Req, list, show, tenant_file};
use proptest::prelude::*;
use route_match::{DEFAULT_REGEX_BUDGET, MatchList};

#[test]
fn per_request_state_is_sized_by_the_list_not_the_store() {
    // Many literal hits (more than the inline set holds): every line names another tenant.
    let mut req = Req::new("GET");
    for i in 0..20 {
        req = req.h("x-tenant", &format!("tenant-0-{i}x"));
    }
    let req = req.h("x-tenant", "tenant-0-19");
    let mut seen = Vec::new();
    for n in [1, 10, 10_000] {
        let file = tenant_file(n);
        let l = file.get(b"k0").expect("k0");
        assert!(l.is_indexed());
        let (outcome, work) = l.evaluate_work(&req);
        assert_eq!(show(outcome), "-> /r19");
        assert!(work.state_bytes > 0, "the test must reach the heap sets: {work:?}");
        seen.push(work);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "work differs with the store's size: {seen:?}");
}

#[test]
fn one_step_attempts_are_charged_as_used_and_routing_is_unchanged() {
    // 17 entries whose patterns take a step or two on each of 1,001 distinct subjects (the
    // line and its comma elements), then the entry that matches: 17,017 attempts. Charged 64
    // each (the old first probe) that is over the default budget, and the fallback answered.
    let mut entries: Vec<String> = (0..17)
        .map(|i| {
            format!(
                r#"{{"headers":["x:RegularExpression:^[a-d]-[0-9]+[x-z]{{{}}}"],"redirectPath":"/r{i}"}}"#,
                i + 1
            )
        })
        .collect();
    entries.push(r#"{"headers":["x:RegularExpression:^a-999$"],"redirectPath":"/win"}"#.into());
    let l = list(&format!("[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]", entries.join(",")));
    let value: Vec<String> = (0..1_000).map(|i| format!("a-{i}")).collect();
    let req = Req::new("GET").h("x", &value.join(","));
    let (outcome, work) = l.evaluate_work(&req);
    assert_eq!(show(outcome), "-> /win");
    assert!(work.attempts > 17 * 1_001, "{work:?}");
    assert!(work.units <= DEFAULT_REGEX_BUDGET, "{work:?}");
    assert!(req.regex_failures.borrow().is_empty());
    // The same request with its budget just under the work it needs takes the fallback: the
    // budget still bounds it.
    let mut tight = Req::new("GET").h("x", &value.join(","));
    tight.budget = Some(Some(work.units / 2));
    assert_eq!(show(l.evaluate(&tight)), "-> /any");
}

#[test]
fn repeated_values_and_elements_are_attempted_once() {
    // HTTP/2 HPACK: 7 references to one 4 KB `va,va,...` value.
    let l = list(
        r#"[{"headers":["x:RegularExpression:^v[0-9]+$"],"redirectPath":"/v"},
            {"headers":["x:RegularExpression:^w[0-9]+$"],"redirectPath":"/w"},
            {"any":true,"redirectPath":"/any"}]"#,
    );
    let value = vec!["va"; 1365].join(",");
    let req = (0..7).fold(Req::new("GET"), |r, _| r.h("x", &value));
    let (outcome, work) = l.evaluate_work(&req);
    assert_eq!(show(outcome), "-> /any");
    // Per pattern: the line (the first few by address) and `va`: a handful, not 9,562.
    assert!(work.attempts <= 2 * 10, "{work:?}");
    // The answer is the one every attempt would give.
    let single = Req::new("GET").h("x", "va");
    assert_eq!(show(l.evaluate(&single)), "-> /any");
    let hit = (0..7).fold(Req::new("GET"), |r, _| r.h("x", &value)).h("x", "va,w7");
    assert_eq!(show(l.evaluate(&hit)), "-> /w");
}

#[test]
fn header_names_are_looked_up_not_compared_one_by_one() {
    // 100 indexed header names; 1,700 other lines, then the one that wins, spelled in capitals.
    let entries: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"headers":["x-name-{i}:v{i}"],"redirectPath":"/r{i}"}}"#))
        .collect();
    let l = list(&format!("[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]", entries.join(",")));
    assert!(l.is_indexed());
    let mut req = Req::new("GET");
    for i in 0..1_700 {
        req = req.h(&format!("x-other-{i}"), "v");
    }
    let long = "x".repeat(100);
    let req = req.h(&long, "v1").h("X-Name-99", "v99");
    let (outcome, work) = l.evaluate_work(&req);
    assert_eq!(show(outcome), "-> /r99");
    // A few units per line (visit, name lookup, value lookup), not one per indexed name.
    assert!(work.units <= 4 * 1_702, "{work:?}");
    assert_eq!(show(l.evaluate_linear(&req)), "-> /r99");
}

/// Bytes of the request as NGINX decoded it: every line's name and value (and its `: ` and
/// CRLF), and the query.
fn decoded_bytes(r: &Req) -> u64 {
    let lines: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
    (lines + r.query.len() + r.method.len()) as u64
}

/// One list with every client-driven loop: exact and regex header conditions (several on one
/// name), comma-element matching, an indexed part, regex params, a cookie regex.
fn mixed_list() -> MatchList {
    let mut entries: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"headers":["x-name-{i}:v{i}"],"redirectPath":"/e{i}"}}"#))
        .collect();
    entries.extend([
        r#"{"headers":["x:RegularExpression:^v[0-9]+$"],"redirectPath":"/v"}"#.to_owned(),
        r#"{"headers":["cookie:RegularExpression:(^|; )s=[0-9a-f]{8}(;|$)"],"redirectPath":"/c"}"#
            .to_owned(),
        r#"{"headers":["x:Exact:zz","y:RegularExpression:^(a+)+$"],"redirectPath":"/xy"}"#
            .to_owned(),
        r#"{"params":["p=RegularExpression=^q[0-9]*$"],"redirectPath":"/p"}"#.to_owned(),
        r#"{"headers":["x:RegularExpression:^tenant-[0-9]{4}$"],"redirectPath":"/t"}"#.to_owned(),
    ]);
    entries.push(r#"{"any":true,"redirectPath":"/any"}"#.to_owned());
    list(&format!("[{}]", entries.join(",")))
}

/// Adversarial requests: many lines, repeated names, comma lists, long values, cookies,
/// repeated identical values, many params.
fn hostile() -> impl Strategy<Value = Req> {
    let name = prop::sample::select(vec!["x", "y", "cookie", "x-name-3", "x-other", "X"]);
    let element = prop::sample::select(vec!["va", "v1", "aaaaaaaaaaaaaaaaaaa!", "s=0", "", " q "]);
    let value = (prop::collection::vec(element, 1..40), 1usize..60)
        .prop_map(|(els, times)| els.join(",").repeat(times));
    let line = (name, value);
    let lines = prop::collection::vec(line, 0..40);
    let repeats = 1usize..20;
    let query =
        prop::collection::vec(prop::sample::select(vec!["p=q1", "p=x", "a=%41", "&"]), 0..50);
    (lines, repeats, query).prop_map(|(lines, repeats, query)| {
        let mut r = Req::new("GET").q(&query.join("&"));
        for _ in 0..repeats {
            for (n, v) in &lines {
                r = r.h(n, v);
            }
        }
        r
    })
}

/// Work units per decoded byte, outside regex steps: the list has 18 entries; the most any one
/// byte can cost is each header condition's pass over its line (12 exact names, 4 conditions
/// on `x`/`y`/`cookie`) plus a comma element's compare, lookup and memo probe, for elements of
/// 2 bytes at least (`a,`): under 16 per byte. Regex steps are bounded by the budget alone.
const A: u64 = 16;

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn work_is_linear_in_the_request_plus_the_budget(mut r in hostile(), budget in 0u64..200_000) {
        let l = mixed_list();
        r.budget = Some(Some(budget));
        let bytes = decoded_bytes(&r);
        let (_, work) = l.evaluate_work(&r);
        prop_assert!(work.regex_steps <= budget, "{:?}, budget {}", work, budget);
        prop_assert!(work.units - work.regex_steps <= A * bytes + 64, "{:?}, {} bytes", work, bytes);
        prop_assert!(work.units <= A * bytes + budget + 64, "{:?}, {} bytes", work, bytes);
        // Per-request state: at most a few times the request's bytes.
        prop_assert!(work.state_bytes as u64 <= 8 * bytes + 4096, "{:?}, {} bytes", work, bytes);
    }
}

/// An exact list of `n` entries keyed by `x-key: vN` (none satisfied: each also needs
/// `x-other: yes`), then `any`.
fn exact_list(n: usize) -> MatchList {
    let entries: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"headers":["x-key:Exact:v{i}","x-other:Exact:yes"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    list(&format!("[{},{{\"any\":true,\"redirectPath\":\"/any\"}}]", entries.join(",")))
}

#[test]
fn repeated_or_many_distinct_keys_cost_the_same_with_100_or_6000_entries() {
    // Issue #46: 33+ keys in one line (repeated, or distinct past the index's merge width)
    // made the evaluation scan every entry: a 6,000-entry list cost 85x a 100-entry one.
    let repeated = vec!["v7"; 40].join(",");
    let distinct: Vec<String> = (0..60).map(|i| format!("v{i}")).collect();
    let lines = (0..40).fold(Req::new("GET"), |r, i| r.h("x-key", &format!("v{}", i % 3)));
    for req in [
        Req::new("GET").h("x-key", &repeated),
        Req::new("GET").h("x-key", &distinct.join(",")),
        lines,
    ] {
        let mut seen = Vec::new();
        for n in [100, 6_000] {
            let l = exact_list(n);
            assert!(l.is_indexed());
            let (outcome, work) = l.evaluate_work(&req);
            assert_eq!(show(outcome), "-> /any");
            seen.push(work.units);
        }
        assert_eq!(seen[0], seen[1], "work differs with the list's size");
    }
}
