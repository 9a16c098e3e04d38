//! The same object twice in the input (a copied document not renamed): the first is kept, the
//! later one is refused with a warning naming both places (file, document, List item), it does
//! not serve, and the status has one entry for the name. Golden files in tests/data/duplicates.

mod common;

use std::path::{Path, PathBuf};

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::{BackendMap, Options, generate_all};

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(p)
}

fn opts() -> Options {
    common::options()
}

/// `UPDATE_GOLDEN=1 cargo test -p httproute-nginx --test duplicates` rewrites the expected files.
#[test]
fn a_later_copy_is_refused_and_the_first_kept() {
    let mut backends = BackendMap::new();
    backends.insert("default/coffee:80".into(), "10.0.0.1:8080".into());
    let g = generate_all(&[data("duplicates")], &backends, &opts()).unwrap();
    let status = httproute_nginx::status::yaml(&g.status);
    let dir = format!("{}/", data("duplicates").display());
    let warnings: Vec<String> = g.warnings.iter().map(|w| w.replace(&dir, "")).collect();
    let expected = data("duplicates/expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(expected.join("status.yaml"), &status).unwrap();
        std::fs::write(expected.join("warnings.txt"), warnings.join("\n") + "\n").unwrap();
    }
    assert_eq!(status, std::fs::read_to_string(expected.join("status.yaml")).unwrap());
    assert_eq!(
        warnings.join("\n") + "\n",
        std::fs::read_to_string(expected.join("warnings.txt")).unwrap()
    );
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
