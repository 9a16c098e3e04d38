//! The regex work of one evaluation is bounded as a whole: every line, comma element, entry
//! and pattern shares one budget, and a question asked twice is answered once.

mod common;

use common::{Req, list, show};

/// Patterns that backtrack exponentially on a run of `a` followed by something else.
const CATASTROPHIC: [&str; 5] = ["^(a+)+$", "^(a|aa)+$", "^(a|a?)+$", "^(a*)*$", "^(\\\\w+a?)*$"];

fn hostile_list() -> String {
    let entries: Vec<String> = CATASTROPHIC
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(r#"{{"headers":["x:RegularExpression:{p}"],"redirectPath":"/r{i}"}}"#)
        })
        .collect();
    format!(r#"[{},{{"any":true,"redirectPath":"/any"}}]"#, entries.join(","))
}

/// Four 64 KiB lines of `aaaaaaaaaaaaaaaaaaaa!` comma elements (about 2,980 per line).
fn hostile_request() -> Req {
    let line = "aaaaaaaaaaaaaaaaaaaa!,".repeat(64 * 1024 / 22);
    (0..4).fold(Req::new("GET"), |r, _| r.h("x", &line))
}

#[test]
fn a_hostile_request_spends_the_budget_then_every_regex_fails() {
    let list = list(&hostile_list());
    let req = hostile_request();
    let (outcome, attempts) = list.evaluate_counting(&req);
    assert_eq!(show(outcome), "-> /any");
    // 5 patterns x (4 lines + ~11,900 elements) questions; the budget stops them long before.
    assert!(attempts < 5 * 4 * 2_980, "{attempts} attempts");
    let failures = req.regex_failures.borrow();
    assert_eq!(failures.len(), 1, "one report per evaluation: {failures:?}");
    assert!(
        failures[0].contains("regex budget of the request (1000000 steps) was spent"),
        "{failures:?}"
    );
}

#[test]
fn without_hostile_input_the_budget_changes_nothing() {
    let list = list(&hostile_list());
    let req = Req::new("GET").h("x", "aaaa");
    assert_eq!(show(list.evaluate(&req)), "-> /r0");
    assert!(req.regex_failures.borrow().is_empty());
}

#[test]
fn a_spent_budget_fails_later_regex_conditions_but_not_exact_ones() {
    let json = r#"[{"headers":["x:RegularExpression:^(a+)+$"],"redirectPath":"/r"},
        {"headers":["y:RegularExpression:^ok$"],"redirectPath":"/re"},
        {"headers":["y:Exact:ok"],"redirectPath":"/exact"}]"#;
    let mut req = Req::new("GET").h("x", &format!("{}!", "a".repeat(40))).h("y", "ok");
    // A budget of nothing: not even the first probe of the first attempt fits.
    req.budget = Some(Some(0));
    assert_eq!(show(list(json).evaluate(&req)), "-> /exact");
    let failures = req.regex_failures.borrow();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].starts_with("0 ^(a+)+$ "), "{failures:?}");
    assert!(failures[0].contains("budget"), "{failures:?}");
}

#[test]
fn no_budget_means_only_the_per_attempt_limit() {
    let json = r#"[{"headers":["x:RegularExpression:^(a+)+$"],"redirectPath":"/r"},
        {"headers":["y:RegularExpression:^ok$"],"redirectPath":"/re"}]"#;
    let mut req = Req::new("GET").h("x", &format!("{}!", "a".repeat(40))).h("y", "ok");
    req.budget = Some(None);
    assert_eq!(show(list(json).evaluate(&req)), "-> /re");
    let failures = req.regex_failures.borrow();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].ends_with("match limit exceeded"), "{failures:?}");
}

#[test]
fn one_pattern_on_one_subject_is_matched_once() {
    // Three entries share the pattern (compiled once per source) and the header line: one
    // attempt answers all three; the second header line is a new subject.
    let json = r#"[{"headers":["x:RegularExpression:^v[0-9]+$","y:Exact:no"],"redirectPath":"/a"},
        {"headers":["x:RegularExpression:^v[0-9]+$","y:Exact:nope"],"redirectPath":"/b"},
        {"method":"POST","headers":["x:RegularExpression:^v[0-9]+$"],"redirectPath":"/c"},
        {"headers":["x:RegularExpression:^v[0-9]+$"],"redirectPath":"/d"}]"#;
    let list = list(json);
    let req = Req::new("GET").h("x", "v12").h("y", "yes");
    let (outcome, attempts) = list.evaluate_counting(&req);
    assert_eq!((show(outcome), attempts), ("-> /d".to_owned(), 1));
    let req = Req::new("GET").h("x", "w1").h("x", "v2").h("y", "yes");
    let (outcome, attempts) = list.evaluate_counting(&req);
    assert_eq!((show(outcome), attempts), ("-> /d".to_owned(), 2));
}

#[test]
fn elements_of_a_line_are_separate_subjects() {
    // "v1, v2": the whole line, then each element. `^v2$` (anchored at both ends) cannot
    // match the 6-byte line, so that attempt is not even made: the two elements run.
    let json = r#"[{"headers":["x:RegularExpression:^v2$"],"redirectPath":"/v2"}]"#;
    let req = Req::new("GET").h("x", "v1, v2");
    let list = list(json);
    let (outcome, attempts) = list.evaluate_counting(&req);
    assert_eq!((show(outcome), attempts), ("-> /v2".to_owned(), 2));
}

/// The budget is a count of work: the same request on the same list gives the same answer,
/// the same attempts and the same report every time, and the per-thread cache of expensive
/// attempts changes none of it (it only saves the CPU).
#[test]
fn the_budget_is_deterministic_and_the_cache_changes_no_answer() {
    let list = list(&hostile_list());
    let run = || {
        let req = hostile_request();
        let (outcome, attempts) = list.evaluate_counting(&req);
        let failures = req.regex_failures.borrow().clone();
        (show(outcome), attempts, failures)
    };
    route_match::regex_cache::set_capacity(0);
    let first = run();
    assert_eq!(run(), first);
    route_match::regex_cache::set_capacity(1 << 20);
    let (hits_before, _) = route_match::regex_cache::stats();
    assert_eq!(run(), first, "cold cache");
    assert_eq!(run(), first, "warm cache");
    let (hits_after, _) = route_match::regex_cache::stats();
    assert!(hits_after > hits_before, "the second run was answered from the cache");
    route_match::regex_cache::set_capacity(0);
}

/// A list whose winner is the 1,000th regex entry routes there with the default budget: 1,000
/// cheap attempts are charged 64 steps each, far from the budget.
#[test]
fn a_thousand_cheap_attempts_fit_in_the_default_budget() {
    let entries: Vec<String> = (0..1000)
        .map(|i| format!(r#"{{"headers":["x-build:RegularExpression:^[0-9a-f]{{12}}-{i}$"],"redirectPath":"/r{i}"}}"#))
        .collect();
    let list = list(&format!("[{}]", entries.join(",")));
    let req = Req::new("GET").h("x-build", "0123456789ab-999");
    let (outcome, _) = list.evaluate_counting(&req);
    assert_eq!(show(outcome), "-> /r999");
    assert!(req.regex_failures.borrow().is_empty());
}
