//! Decide once, write once (issue #45): whatever value a tenant gives a field (control bytes,
//! `$` signs that the writer spells `${httproute_dollar}`, quotes and backslashes it escapes,
//! words past NGINX's 4,094 bytes), `emit` writes the configuration in one pass and never
//! fails: what NGINX cannot take is decided before the pass, and leaves out the smallest unit
//! that holds it (the rule for a filter's value, the backendRef's share for its address),
//! never another tenant's.

mod common;

use httproute_nginx::emit::{Tree, emit_with};
use httproute_nginx::plan::{Condition, ConditionType, Unit};
use httproute_nginx::{BackendMap, Carrier, Options, conf_reader};
use manifest_gen::grammar::Input;
use proptest::prelude::*;

/// Tenant a's route (/a) and tenant b's rule whose field `field` is `value` (a JSON string:
/// a YAML double-quoted scalar).
fn manifests(field: usize, value: &str) -> String {
    let v = serde_json::to_string(value).unwrap();
    let filter = match field {
        0 => format!(
            "    filters: [{{type: RequestHeaderModifier, requestHeaderModifier: {{set: [{{name: x-b, value: {v}}}]}}}}]\n"
        ),
        1 => format!(
            "    filters: [{{type: ResponseHeaderModifier, responseHeaderModifier: {{add: [{{name: x-b, value: {v}}}]}}}}]\n"
        ),
        2 => format!(
            "    filters: [{{type: RequestHeaderModifier, requestHeaderModifier: {{add: [{{name: x-b, value: {v}}}]}}}}]\n"
        ),
        3 => format!(
            "    filters: [{{type: CORS, cors: {{allowOrigins: [\"https://b.test\"], allowHeaders: [{v}]}}}}]\n"
        ),
        5 => format!("    filters: [{{type: CORS, cors: {{allowOrigins: [{v}]}}}}]\n"),
        6 => format!(
            "    filters: [{{type: URLRewrite, urlRewrite: {{path: {{type: ReplacePrefixMatch, replacePrefixMatch: {v}}}}}}}]\n"
        ),
        _ => String::new(),
    };
    // Field 7: the second backendRef's own filter.
    let own = match field {
        7 => format!(
            ", filters: [{{type: ResponseHeaderModifier, responseHeaderModifier: {{set: [{{name: x-b, value: {v}}}]}}}}]"
        ),
        _ => String::new(),
    };
    let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]\n---\n".to_owned();
    y += "kind: HTTPRoute\nmetadata: {name: a, namespace: a}\nspec:\n  parentRefs: [{name: gw, namespace: default}]\n  rules:\n  - matches: [{path: {type: PathPrefix, value: /a}}]\n    backendRefs: [{name: s, port: 80}]\n---\n";
    y += &format!(
        "kind: HTTPRoute\nmetadata: {{name: b, namespace: b}}\nspec:\n  parentRefs: [{{name: gw, namespace: default}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b}}}}]\n{filter}    backendRefs: [{{name: s, port: 80}}, {{name: t, port: 80{own}}}]\n"
    );
    y
}

/// Values of every kind the writer treats apart: plain bytes, `$`, quotes, backslashes, tabs,
/// control bytes; short, and long enough to pass a word's 4,094 bytes once escaped.
fn value() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        4 => Just("a".to_owned()),
        3 => Just("$".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("\\".to_owned()),
        1 => Just("\t".to_owned()),
        1 => Just("\u{7}".to_owned()),
        1 => Just("\n".to_owned()),
    ];
    (prop::collection::vec(unit, 1..8), 1usize..700)
        .prop_map(|(pattern, times)| pattern.concat().repeat(times).chars().take(4096).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn one_pass_whatever_a_tenant_writes(field in 0usize..8, v in value(), address in value()) {
        let inputs = common::inputs(&manifests(field, &v));
        let mut backends = BackendMap::new();
        backends.insert("a/s:80".into(), "10.0.0.1:80".into());
        backends.insert("b/s:80".into(), "10.0.1.1:80".into());
        // Field 4: the address of tenant b's second backend (a Service's endpoints).
        let t = if field == 4 { format!("10.0.1.2:{address}") } else { "10.0.1.2:80".into() };
        backends.insert("b/t:80".into(), t);
        let opts = common::options();
        let plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
        let out = emit_with(&plan, &opts, Tree::Drop).map_err(TestCaseError::fail)?;
        // NGINX's parser (read back independently) takes every word written.
        prop_assert!(conf_reader::read(&out.nginx_conf).is_ok(), "{}", out.nginx_conf);
        // Tenant a is served, and nothing of it is left out.
        prop_assert!(out.nginx_conf.contains("location \"/a/\""));
        if field == 0 {
            // `proxy_set_header x-b "VALUE"`: NGINX cannot take the word past 4,094 bytes, a
            // `$` spelled `${httproute_dollar}`, `"`, `\` and the tab escaped; the rule is
            // left out exactly then.
            let len: usize = 2 + v.chars().map(|c| match c {
                '$' => 19,
                '"' | '\\' | '\t' => 2,
                c => c.len_utf8(),
            }).sum::<usize>();
            // A control byte but the tab: the plan leaves the header out (a warning).
            let refused = !v.chars().any(|c| c.is_ascii_control() && c != '\t') && len > 4094;
            // Unless the route is not planned (the loader or the model refused the value).
            let planned = plan.ports.iter().flat_map(|p| &p.servers).flat_map(|s| &s.rules)
                .any(|r| r.id.route.name == "b");
            let refused = refused && planned;
            prop_assert_eq!(!out.dropped.is_empty(), refused, "{} bytes: {:?}", len, out.dropped);
        }
        for d in &out.dropped {
            prop_assert_eq!(&d.unit.route().unwrap().namespace, "b", "{:?}", d);
            // The smallest unit: the rule for its filter's value, the share for an address.
            match field {
                4 | 7 => prop_assert!(matches!(&d.unit, Unit::BackendShare { index: 1, .. }), "{:?}", d),
                _ => prop_assert!(matches!(&d.unit, Unit::Rule(_)), "{:?}", d),
            }
        }
    }
}

/// The fuzz target's check on one input of its grammar (`manifest_gen::grammar`,
/// fuzz/fuzz_targets/generate.rs): whatever the loader takes is planned and written in one
/// pass, never an error, and NGINX's tokenizer (`conf_reader`, written apart from the writer)
/// reads back exactly the directives the writer meant. Answers how many routes a parentRef
/// accepted (what reached the writer's route paths).
fn grammar_case(bytes: &[u8]) -> Result<usize, TestCaseError> {
    let input = Input::from_bytes(bytes);
    let text = manifest_gen::grammar::manifests(&input);
    let mut inputs = httproute_nginx::model::Inputs::default();
    if httproute_nginx::model::load_text(std::path::Path::new("g.yaml"), &text, &mut inputs)
        .is_err()
    {
        return Ok(0);
    }
    let mut backends = BackendMap::new();
    backends.insert("default/svc:80".into(), "127.0.0.1:9".into());
    let opts = Options {
        carrier: [Carrier::Preload, Carrier::Inline, Carrier::Variable]
            [usize::from(input.carrier % 3)],
        experimental: true,
        allow_external_name: input.carrier >= 128,
        ..common::options()
    };
    let plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
    let out = httproute_nginx::emit::emit(&plan, &opts).map_err(TestCaseError::fail)?;
    let read = conf_reader::read(&out.nginx_conf).map_err(TestCaseError::fail)?;
    prop_assert!(read == out.tree, "{}", out.nginx_conf);
    let accepted = |c: &&Condition| c.kind == ConditionType::Accepted && c.ok;
    Ok(plan
        .status
        .routes
        .iter()
        .filter(|r| r.parents.iter().any(|(_, cs)| cs.iter().any(|c| accepted(&c))))
        .count())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// [`grammar_case`] on proptest's bytes: shrinking the bytes shrinks the set (lists end
    /// where the bytes do). About one case in seven has a route every field of which the
    /// loader takes (the fuzzer's coverage finds more): the seeds below have such routes.
    #[test]
    fn the_fuzz_grammars_sets_are_written_in_one_pass_and_read_back_as_written(
        bytes in prop::collection::vec(any::<u8>(), 0..4096)
    ) {
        grammar_case(&bytes)?;
    }
}

/// [`grammar_case`] on the fuzz target's committed seeds (fuzz/corpus/generate), which hold
/// accepted routes with matches, filters and backends.
#[test]
fn the_fuzz_targets_seeds_are_written_in_one_pass_and_read_back_as_written() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/generate");
    let mut seeds = 0;
    let mut accepted = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        accepted += grammar_case(&bytes).unwrap_or_else(|e| panic!("{e}"));
        seeds += 1;
    }
    assert!(seeds > 0 && accepted > 0, "{seeds} seeds, {accepted} accepted routes");
}

/// A `$`-laden header value past a word's bytes once spelled: the rule is left out by the
/// plan (`plan/words.rs`), and the writer's one pass meets no word it refuses.
#[test]
fn a_refused_word_is_decided_before_the_one_pass() {
    let inputs = common::inputs(&manifests(0, &"$".repeat(300)));
    let mut backends = BackendMap::new();
    for (k, a) in [("a/s:80", "10.0.0.1:80"), ("b/s:80", "10.0.1.1:80"), ("b/t:80", "10.0.1.2:80")]
    {
        backends.insert(k.into(), a.into());
    }
    let opts = common::options();
    let plan = httproute_nginx::plan_for(&inputs, &backends, &opts);
    let out = emit_with(&plan, &opts, Tree::Drop).unwrap();
    assert_eq!(out.dropped.len(), 1, "{:?}", out.dropped);
    assert!(matches!(&out.dropped[0].unit, Unit::Rule(r) if r.route.name == "b"));
    assert!(out.dropped[0].message.contains("bytes in one nginx.conf word"), "{:?}", out.dropped);
    assert!(plan.refused.iter().any(|(r, _)| matches!(r, Unit::Rule(id) if id.route.name == "b")));
}
