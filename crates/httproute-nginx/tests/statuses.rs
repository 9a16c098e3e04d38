//! Status of what is left out: every dropped match or rule has a condition on its route, and
//! a route with nothing left to serve is not accepted (tests/data/dropped: one route per case,
//! golden status and warnings).

mod common;

use common::data;

use httproute_nginx::plan::{ConditionType, Reason};
use httproute_nginx::{BackendMap, generate_all};

#[test]
fn dropped_matches_and_rules_have_conditions_and_a_route_with_none_left_is_not_accepted() {
    let g = generate_all(&[data("dropped")], &BackendMap::new(), &common::options()).unwrap();
    common::assert_golden_status("dropped", &g);

    // What each route's one parentRef says, whatever the golden file holds.
    let conditions = |name: &str| {
        let r = g.status.routes.iter().find(|r| r.id.name == name).expect(name);
        assert_eq!(r.parents.len(), 1, "{name}");
        r.parents[0].1.clone()
    };
    let find =
        |name: &str, kind: ConditionType| conditions(name).into_iter().find(|c| c.kind == kind);
    for (name, left) in [
        ("partial-match", true),
        ("partial-rule", true),
        ("every-match", false),
        ("every-rule", false),
    ] {
        let accepted = find(name, ConditionType::Accepted).expect("Accepted");
        let partial = find(name, ConditionType::PartiallyInvalid);
        assert_eq!(accepted.ok, left, "{name}: {accepted:?}");
        if left {
            let p = partial.expect("PartiallyInvalid");
            assert!(p.ok && p.reason == Reason::UnsupportedValue, "{name}: {p:?}");
            assert!(p.message.starts_with("Dropped Rule "), "{name}: {p:?}");
        } else {
            assert_eq!(partial, None, "{name}: no valid rule is left for PartiallyInvalid");
            assert_eq!(accepted.reason, Reason::UnsupportedValue, "{name}");
            assert!(accepted.message.starts_with("no rule is left to serve: Dropped Rule "));
        }
        // One condition of each type.
        let mut kinds: Vec<&str> = conditions(name).iter().map(|c| c.kind.as_str()).collect();
        let n = kinds.len();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), n, "{name}: {kinds:?}");
    }
    let p = find("partial-match", ConditionType::PartiallyInvalid).unwrap();
    assert!(
        p.message.starts_with("Dropped Rule 0: match 1: headers[0].value: regular expression"),
        "{p:?}"
    );
    let untouched = conditions("untouched");
    assert!(untouched.iter().all(|c| c.ok && c.kind != ConditionType::PartiallyInvalid));
}
