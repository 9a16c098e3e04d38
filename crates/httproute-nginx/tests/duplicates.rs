//! The same object twice in the input (a copied document not renamed): the first is kept, the
//! later one is refused with a warning naming both places (file, document, List item), it does
//! not serve, and the status has one entry for the name. Golden files in tests/data/duplicates.

mod common;

use common::data;

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::{BackendMap, Options, generate_all};

fn opts() -> Options {
    common::options()
}

/// `UPDATE_GOLDEN=1 cargo test -p httproute-nginx --test duplicates` rewrites the expected files.
#[test]
fn a_later_copy_is_refused_and_the_first_kept() {
    let mut backends = BackendMap::new();
    backends.insert("default/coffee:80".into(), "10.0.0.1:8080".into());
    let g = generate_all(&[data("duplicates")], &backends, &opts()).unwrap();
    common::assert_golden_status("duplicates", &g);
    let status = httproute_nginx::status::yaml(&g.status);
    let dir = format!("{}/", data("duplicates").display());
    let warnings: Vec<String> = g.warnings.iter().map(|w| w.replace(&dir, "")).collect();
    // The copies do not serve: not their paths, not the copied Gateway's listener.
    let conf = &g.output.nginx_conf;
    for kept in ["/coffee", "/other", "/tea", "listen 80"] {
        assert!(conf.contains(kept), "{kept}");
    }
    for refused in ["/copied", "/listed", "8081"] {
        assert!(!conf.contains(refused), "{refused}");
    }
    // One status entry per name.
    assert_eq!(status.matches("name: coffee\n").count(), 2, "{status}");
    for (copy, first) in [
        ("gateway.yaml, document 2", "gateway.yaml, document 0"),
        ("routes.yaml, document 1", "routes.yaml, document 0"),
        ("snapshot.json, document 0, items[1]", "routes.yaml, document 0"),
        ("snapshot.json, document 0, items[2]", "gateway.yaml, document 1"),
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(&format!("({copy}) is refused: the same"))
                && w.ends_with(&format!("is at {dir}{first}, which is kept").replace(&dir, ""))),
            "{copy} {warnings:?}"
        );
    }
}

/// Found by hashing: n objects, n-1 of them copies, are n-1 warnings, one kept, in one pass.
#[test]
fn copies_are_found_in_one_pass() {
    for n in [10, 1000] {
        let doc = "kind: Namespace\nmetadata: {name: a, labels: {x: y}}\n";
        let text = vec![doc; n].join("---\n");
        let mut inputs = Inputs::default();
        load_text(Path::new("t.yaml"), &text, &mut inputs).unwrap();
        assert_eq!(inputs.namespace_labels.len(), 1);
        assert_eq!(inputs.seen.len(), 1);
        assert_eq!(inputs.warnings.len(), n - 1);
        assert!(inputs.warnings[n - 2].starts_with(&format!(
            "Namespace a (t.yaml, document {}) is refused: the same Namespace is at t.yaml, document 0",
            n - 1
        )));
    }
}

/// An object as YAML (flow): kind 0 Namespace, 1 Service, 2 HTTPRoute.
fn object(kind: usize, ns: usize, name: usize) -> String {
    match kind {
        0 => format!("{{kind: Namespace, metadata: {{name: n{name}}}}}"),
        1 => format!(
            "{{kind: Service, metadata: {{name: s{name}, namespace: ns{ns}}}, spec: {{ports: [{{port: 80}}]}}}}"
        ),
        _ => format!(
            "{{kind: HTTPRoute, metadata: {{name: r{name}, namespace: ns{ns}}}, spec: {{}}}}"
        ),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Any mix of objects, as documents or as items of Lists: one kept per (kind, namespace,
    /// name), the first; one warning per other copy.
    #[test]
    fn one_kept_per_name_whatever_the_mix(
        objects in proptest::collection::vec((0usize..3, 0usize..2, 0usize..3, proptest::bool::ANY), 1..40),
    ) {
        let mut text = String::new();
        let mut list: Vec<String> = Vec::new();
        for (kind, ns, name, in_list) in &objects {
            if *in_list {
                list.push(object(*kind, *ns, *name));
            } else {
                if !list.is_empty() {
                    text += &format!("---\n{{items: [{}], kind: List}}\n", list.join(", "));
                    list.clear();
                }
                text += &format!("---\n{}\n", object(*kind, *ns, *name));
            }
        }
        if !list.is_empty() {
            text += &format!("---\n{{items: [{}], kind: List}}\n", list.join(", "));
        }
        let mut inputs = Inputs::default();
        load_text(Path::new("t.yaml"), &text, &mut inputs).unwrap();
        let keys = |k: usize| {
            let mut s: Vec<(usize, usize)> = objects
                .iter()
                .filter(|o| o.0 == k)
                .map(|o| (if k == 0 { 0 } else { o.1 }, o.2))
                .collect();
            s.sort();
            s.dedup();
            s.len()
        };
        proptest::prop_assert_eq!(inputs.namespace_labels.len(), keys(0));
        proptest::prop_assert_eq!(inputs.services.len(), keys(1));
        proptest::prop_assert_eq!(inputs.routes.len() + inputs.rejected.len(), keys(2), "{:?}", inputs.rejected);
        let copies = objects.len() - keys(0) - keys(1) - keys(2);
        let refused = inputs.warnings.iter().filter(|w| w.contains(") is refused: the same")).count();
        proptest::prop_assert_eq!(refused, copies, "{:?}", inputs.warnings);
    }
}
