//! Issue #46: evaluating a compiled list allocates nothing (the module's hit path per request:
//! the `$http_matches` cache hands out a shared list, the evaluation reads the request in
//! place). This binary uses the module's allocator, so every byte the evaluation allocates is
//! counted: a scope's peak stays 0 over N and 2N evaluations of each carrier's list (the
//! blog example in both syntaxes, the regex one, a 100-entry indexed list) and request kind,
//! queries with escapes and with more than 4 and 16 pairs included (their decoded text goes to
//! a buffer the thread keeps: it allocated per request before).

mod common;

use alloc_meter::Scope;
use common::{Req, list, show};
use pcre2_bounded::Metered;
use route_match::Outcome;

#[global_allocator]
static ALLOCATOR: Metered = Metered;

const TYPED: &str = r#"[{"headers":["version:Exact:v2"],"redirectPath":"/internal/v2"},
 {"params":["TEST=Exact=v2"],"redirectPath":"/internal/v2"},
 {"any":true,"redirectPath":"/internal/v1"}]"#;
const UNTYPED: &str = r#"[{"headers":["version:v2"],"redirectPath":"/internal/v2"},
 {"params":["TEST=v2"],"redirectPath":"/internal/v2"},
 {"any":true,"redirectPath":"/internal/v1"}]"#;
const REGEX: &str = r#"[{"headers":["version:RegularExpression:^v[2-9]$"],"redirectPath":"/internal/v2"},
 {"params":["TEST=RegularExpression=^v[2-9]$"],"redirectPath":"/internal/v2"},
 {"method":"POST","path":"RegularExpression:^/b[a-z]+$","redirectPath":"/internal/p"},
 {"any":true,"redirectPath":"/internal/v1"}]"#;

fn requests() -> Vec<Req> {
    let get = || Req::new("GET").p("/bench").h("host", "bench");
    vec![
        get().h("version", "v2").h("accept", "*/*"),
        get().q("a=1&TEST=v2&b=%20x"),
        get().q("a=1"),
        Req::new("POST").p("/x").q("TEST=v1&TEST=v2"),
        // More than 4 pairs (spilled), then more than 16 (sorted), with escapes.
        get().q("a=1&b=2&c=3&d=4&e=5&TEST=v%32"),
        get().q(&(0..40).map(|i| format!("k{i}=a+b%20c")).collect::<Vec<_>>().join("&")),
    ]
}

/// Bytes the evaluations of `json` over every request, `rounds` times, allocated at their peak
/// (and checks that each evaluation gives an answer).
fn peak_of(json: &str, rounds: usize) -> usize {
    let list = list(json);
    let reqs = requests();
    // Warm: a pattern's first match may JIT-compile it (the configuration's, once).
    for r in &reqs {
        let got = show(list.evaluate(r));
        assert!(!got.starts_with("500"), "{json}: {r:?}: {got}");
    }
    let scope = Scope::open(usize::MAX);
    let mut answered = 0;
    for _ in 0..rounds {
        for r in &reqs {
            let outcome = list.evaluate(r);
            answered += usize::from(!matches!(outcome, Outcome::Error(_)));
        }
    }
    assert_eq!(answered, rounds * reqs.len());
    scope.peak()
}

fn indexed(n: usize) -> String {
    let e: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"method":"GET","headers":["x-tenant:Exact:t{i}"],"params":["TEST=Exact=v{i}"],"redirectPath":"/internal/{i}"}}"#
            )
        })
        .collect();
    format!("[{},{{\"any\":true,\"redirectPath\":\"/internal/v1\"}}]", e.join(","))
}

#[test]
fn evaluating_a_compiled_list_allocates_nothing_at_n_and_2n() {
    let big = indexed(100);
    for json in [TYPED, UNTYPED, REGEX, big.as_str()] {
        for rounds in [50, 100] {
            assert_eq!(peak_of(json, rounds), 0, "{rounds} rounds of {json:.80}");
        }
    }
}
