//! Patterns compiled the way NGINX's master compiles them (`pcre2_bounded::defer_jit`: no JIT
//! code made at compile, made at the first match in the worker) route the same requests the
//! same way, with the same counted work, as patterns JIT-compiled at compile: the first
//! evaluation (which makes the JIT code) included. One test: the switches are process-wide.

mod common;

use common::{Req, list, show};
use route_match::MatchList;

/// (list, request) pairs: the budget tests' catastrophic patterns on a hostile request, many
/// one-step attempts, and an ordinary list.
fn cases() -> Vec<(String, Req)> {
    let catastrophic = ["^(a+)+$", "^(a|aa)+$", "^(a|a?)+$", "^(a*)*$", "^(\\\\w+a?)*$"];
    let hostile = catastrophic
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect::<Vec<_>>()
        .join(",");
    let hostile = format!(r#"[{hostile},{{"any":true,"redirectPath":"/any"}}]"#);
    let line = "aaaaaaaaaaaaaaaaaaaa!,".repeat(64 * 1024 / 22);
    let hostile_req = (0..4).fold(Req::new("GET"), |r, _| r.h("x", &line));
    let short_req = Req::new("GET").h("x", &format!("{}!", "a".repeat(22)));

    let one_step = (0..17)
        .map(|i| {
            format!(
                r#"{{"headers":["x:RegularExpression:^[a-d]-[0-9]+[x-z]{{{}}}"],"redirectPath":"/r{i}"}}"#,
                i + 1
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let one_step = format!(
        r#"[{one_step},{{"headers":["x:RegularExpression:^a-999$"],"redirectPath":"/win"}},{{"any":true,"redirectPath":"/any"}}]"#
    );
    let value: Vec<String> = (0..1_000).map(|i| format!("a-{i}")).collect();
    let one_step_req = Req::new("GET").h("x", &value.join(","));

    let ordinary =
        r#"[{"headers":["x-version:RegularExpression:^v[0-9]+\\.[0-9]+$"],"redirectPath":"/v"},
        {"params":["q=RegularExpression=(?i)^eu-west-[0-9]+$"],"redirectPath":"/eu"},
        {"any":true,"redirectPath":"/any"}]"#
            .to_owned();
    vec![
        (hostile.clone(), hostile_req.quiet()),
        (hostile, short_req.quiet()),
        (one_step, one_step_req),
        (ordinary.clone(), Req::new("GET").h("x-version", "v12.3")),
        (ordinary, Req::new("GET").q("q=EU-WEST-1")),
    ]
}

fn compiled(json: &str, deferred: bool) -> MatchList {
    pcre2_bounded::defer_jit(deferred);
    let l = list(json);
    pcre2_bounded::defer_jit(false);
    l
}

#[test]
fn deferred_jit_routes_and_counts_as_jit_at_compile() {
    for (json, req) in cases() {
        let eager = compiled(&json, false);
        let deferred = compiled(&json, true);
        let (e_outcome, e_work) = eager.evaluate_work(&req);
        let e = (show(e_outcome), e_work);
        // The first evaluation JIT-compiles the patterns it reaches, before their first match.
        let (d_outcome, d_work) = deferred.evaluate_work(&req);
        assert_eq!((show(d_outcome), d_work), e, "first evaluation of {json:.80}");
        let (d_outcome, d_work) = deferred.evaluate_work(&req);
        assert_eq!((show(d_outcome), d_work), e, "second evaluation of {json:.80}");
        assert_eq!(eager.memory(), deferred.memory(), "{json:.80}");
        assert!(e.1.attempts > 0, "the case must reach a regex: {json:.80}");
    }
    assert_eq!(pcre2_bounded::take_jit_refusals(), 0);

    // No JIT allowance: the patterns stay on the interpreter. The answers are the same; the
    // work is not (an interpreter step is a call of PCRE2's match function, a JIT step a
    // backtracking point), so where the JIT code does not fit a request can be charged
    // differently. The module logs a [warn] for that; by construction it does not happen for
    // a configuration's patterns (their JIT size is in the load's bound).
    pcre2_bounded::set_jit_allowance(0);
    let mut differ = 0;
    for (json, req) in cases() {
        let eager = compiled(&json, false);
        let deferred = compiled(&json, true);
        let (e_outcome, e_work) = eager.evaluate_work(&req);
        let (d_outcome, d_work) = deferred.evaluate_work(&req);
        assert_eq!(show(d_outcome), show(e_outcome), "{json:.80}");
        differ += usize::from(d_work != e_work);
    }
    assert!(pcre2_bounded::take_jit_refusals() > 0);
    pcre2_bounded::set_jit_allowance(usize::MAX);
    eprintln!(
        "deferred_jit: on the interpreter, {differ} of {} cases counted other work",
        cases().len()
    );
}
