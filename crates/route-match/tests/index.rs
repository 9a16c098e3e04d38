//! The index over exact conditions of long lists, and the regex prefilter, never change an
//! outcome: random lists and random requests from a small vocabulary (so that conditions often
//! hold), indexed vs linear.

mod common;

use common::Req;
use proptest::prelude::*;
use route_match::{Syntax, compile_list};

const METHODS: [&str; 3] = ["GET", "POST", "HEAD"];
const NAMES: [&str; 3] = ["x-a", "X-B", "v"];
/// `\u{212A}` (KELVIN SIGN) is what PCRE2's `(?i)k` also matches.
/// The empty value too: an exact condition on it is a malformed entry, an empty header
/// element or param value in a request matches no key.
const VALUES: [&str; 8] = ["1", "2", "a b", "1,2", "a]", "xAy", "\u{212A}y", ""];
/// Regex conditions: with literals the prefilter uses (`^[12]`, `2`, `b$`, `a.b`, `.*,2`,
/// caseless `(?i)A` and `(?i)ky`, whose `k` has a non-ASCII partner), length bounds
/// (`^[12]$`), and ones it must leave alone (a nested class, `.`).
const PATTERNS: [&str; 10] =
    ["^[12]", "2", "b$", "a.b", ".*,2", "(?i)A", "(?i)ky", "[1[a]]", ".", "^[12]$"];
const PATH_CONDS: [&str; 4] =
    ["PathPrefix:/a", "Exact:/a/b", "RegularExpression:^/a", "PathPrefix:/"];
const PATHS: [&str; 4] = ["/a", "/a/b", "/ab", "/"];

fn condition() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..3usize, 0..VALUES.len())
            .prop_map(|(n, v)| format!(r#"h:"{}:Exact:{}""#, NAMES[n], VALUES[v])),
        (0..3usize, 0..PATTERNS.len())
            .prop_map(|(n, p)| format!(r#"h:"{}:RegularExpression:{}""#, NAMES[n], PATTERNS[p])),
        (0..3usize, 0..VALUES.len())
            .prop_map(|(n, v)| format!(r#"p:"{}=Exact={}""#, NAMES[n], VALUES[v])),
        (0..3usize, 0..PATTERNS.len())
            .prop_map(|(n, p)| format!(r#"p:"{}=RegularExpression={}""#, NAMES[n], PATTERNS[p])),
        (0..3usize).prop_map(|m| format!("m:{}", METHODS[m])),
        (0..4usize).prop_map(|c| format!("c:{}", PATH_CONDS[c])),
    ]
}

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::collection::vec(condition(), 0..4).prop_map(|conds| {
            let mut headers = Vec::new();
            let mut params = Vec::new();
            let mut method = None;
            let mut path = None;
            for c in conds {
                match c.split_once(':') {
                    Some(("h", h)) => headers.push(h.to_owned()),
                    Some(("p", p)) => params.push(p.to_owned()),
                    Some(("m", m)) => method = Some(m.to_owned()),
                    Some(("c", c)) => path = Some(c.to_owned()),
                    _ => {}
                }
            }
            let m = method.map(|m| format!(r#""method":"{m}","#)).unwrap_or_default();
            let c = path.map(|c| format!(r#""path":"{c}","#)).unwrap_or_default();
            format!(r#"{{{m}{c}"headers":[{}],"params":[{}]"#, headers.join(","), params.join(","))
        }),
        1 => Just(r#"{"any":true"#.to_owned()),
        1 => Just(r#"{"headers":["x-a:Bogus:1"]"#.to_owned()),
    ]
}

fn request() -> impl Strategy<Value = Req> {
    (
        0..3usize,
        proptest::collection::vec((0..3usize, 0..VALUES.len(), any::<bool>()), 0..5),
        proptest::collection::vec((0..3usize, 0..VALUES.len()), 0..4),
        0..4usize,
    )
        .prop_map(|(m, hs, ps, path)| {
            let mut r = Req::new(METHODS[m]).p(PATHS[path]);
            for (n, v, upper) in hs {
                let name = if upper { NAMES[n].to_uppercase() } else { NAMES[n].to_owned() };
                r = r.h(&name, VALUES[v]);
            }
            let q: Vec<String> = ps
                .iter()
                .map(|(n, v)| format!("{}={}", NAMES[*n], VALUES[*v].replace(' ', "+")))
                .collect();
            r.q(&q.join("&"))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn index_agrees_with_linear_scan(entries in proptest::collection::vec(entry(), 8..40), reqs in proptest::collection::vec(request(), 1..8)) {
        let body: Vec<String> = entries.iter().enumerate().map(|(i, e)| format!(r#"{e},"redirectPath":"/r{i}"}}"#)).collect();
        let json = format!("[{}]", body.join(","));
        let list = compile_list(json.as_bytes(), Syntax::Typed).unwrap().list;
        prop_assert!(list.is_indexed());
        for req in &reqs {
            prop_assert_eq!(list.evaluate(req), list.evaluate_linear(req), "{}", json);
        }
    }
}

#[test]
fn more_posting_lists_than_the_index_holds_falls_back_to_the_scan() {
    // 40 entries keyed by distinct values of one header; a request with 40 lines hits 40 lists.
    let body: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"headers":["x:Exact:v{i}"],"redirectPath":"/r{i}"}}"#))
        .collect();
    let list =
        compile_list(format!("[{}]", body.join(",")).as_bytes(), Syntax::Typed).unwrap().list;
    let mut req = Req::new("GET");
    for i in (0..40).rev() {
        req = req.h("x", &format!("v{i}"));
    }
    assert_eq!(common::show(list.evaluate(&req)), "-> /r0");
    let req = Req::new("GET").h("x", "v7, v39");
    assert_eq!(common::show(list.evaluate(&req)), "-> /r7");
}

#[test]
fn the_key_the_index_found_a_candidate_by_is_not_tested_again() {
    // 16 entries keyed by `x-tenant` (each value once), each also needing `x-env: prod`. The
    // request's `x-env` line comes first, then `n` other lines, then the winner's key. The
    // index's pass visits every line (a unit for the line, one for the one indexed name it is
    // compared with); the winner's `x-env` costs one line. Testing its key again would visit
    // the n + 2 lines once more: 3 units per other line instead of 2.
    let body: Vec<String> = (0..16)
        .map(|i| {
            format!(
                r#"{{"headers":["x-tenant:Exact:t{i}","x-env:Exact:prod"],"redirectPath":"/r{i}"}}"#
            )
        })
        .collect();
    let list =
        compile_list(format!("[{}]", body.join(",")).as_bytes(), Syntax::Typed).unwrap().list;
    assert!(list.is_indexed());
    let units = |n: usize| {
        let mut req = Req::new("GET").h("x-env", "prod");
        for k in 0..n {
            req = req.h(&format!("x-other-{k}"), "v");
        }
        let req = req.h("X-Tenant", "t15");
        let (outcome, work) = list.evaluate_work(&req);
        assert_eq!(outcome, list.evaluate_linear(&req));
        assert_eq!(common::show(outcome), "-> /r15");
        work.units
    };
    let (n, two_n) = (units(40), units(80));
    assert_eq!(two_n - n, 2 * 40, "units at 40 other lines: {n}, at 80: {two_n}");
}

#[test]
fn a_lone_param_condition_reads_the_raw_query_up_to_its_name() {
    // 16 entries keyed by `x-tenant`, each also needing its one param `v`. The query has the
    // winner's `v` first, then `n` other params: the raw scan stops at `v` (a decode would
    // charge a unit per param). Escapes in the name or value decode the query as before.
    let body: Vec<String> = (0..16)
        .map(|i| {
            format!(r#"{{"headers":["x-tenant:Exact:t{i}"],"params":["v=Exact={i}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    let list =
        compile_list(format!("[{}]", body.join(",")).as_bytes(), Syntax::Typed).unwrap().list;
    assert!(list.is_indexed());
    let run = |query: &str| {
        let req = Req::new("GET").h("x-tenant", "t15").q(query);
        let (outcome, work) = list.evaluate_work(&req);
        assert_eq!(outcome, list.evaluate_linear(&req), "{query}");
        (common::show(outcome), work.units)
    };
    let others = |n: usize| (0..n).map(|k| format!("p{k}=x")).collect::<Vec<_>>().join("&");
    let (n, two_n) = (run(&format!("v=15&{}", others(40))), run(&format!("v=15&{}", others(80))));
    assert_eq!(n.0, "-> /r15");
    assert_eq!(n, two_n, "units at 40 other params: {}, at 80: {}", n.1, two_n.1);
    for (query, want) in [
        ("a=1&v=15", "-> /r15"),
        ("v=1%35", "-> /r15"),
        ("%76=15", "-> /r15"),
        ("a+b=1&v=15", "-> /r15"),
        ("v=&v=15", "404"),
        ("v&v=15", "404"),
        ("&&v=15&", "-> /r15"),
        ("v=15+", "404"),
        ("x=1", "404"),
    ] {
        assert_eq!(run(query).0, want, "{query}");
    }
}
