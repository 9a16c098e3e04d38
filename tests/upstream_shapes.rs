//! Manifest sets in the shapes of the examples users start from (tests/common/shapes.rs):
//! generated with no `--backend`, every result must pass `nginx -t`, with
//! no resolver, with one, and with Service objects that leave some references dangling.

mod common;

use common::Prefix;
use common::shapes::{ADVANCED_ROUTING, HTTPS_TERMINATION, SETS, STANDARD_HTTPROUTE};
use httproute_nginx::{BackendMap, Options};

/// Generates `yaml` (plus `extra`) and runs `nginx -t` on the result: (passed, what nginx -t
/// said and the configuration, warnings).
fn load(name: &str, yaml: &str, extra: &str, resolvers: &[&str]) -> (bool, String, Vec<String>) {
    let src = Prefix::scratch(&format!("shape-{name}-in"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("set.yaml"), format!("{yaml}---\n{extra}")).unwrap();
    let out = Prefix::scratch(&format!("shape-{name}-out"));
    let opts = Options {
        resolvers: resolvers.iter().map(|s| s.to_string()).collect(),
        ..common::generator_options()
    };
    let (generated, warnings) = httproute_nginx::generate(&[src], &BackendMap::new(), &opts)
        .unwrap_or_else(|e| panic!("{name}: the generator refused it: {e}"));
    httproute_nginx::write_dir(&out, &generated).unwrap();
    let (ok, text) = Prefix::existing(out, "nginx.conf", 0).test();
    (ok, format!("{text}\n{}", generated.nginx_conf), warnings)
}

#[test]
fn every_upstream_shaped_set_loads_with_no_backend_given() {
    // A Service for one backend of the set: the inputs then hold Services, so every other
    // reference is to a Service that does not exist (500), and this one has no EndpointSlice
    // (resolved by its cluster DNS name).
    let one_service =
        "apiVersion: v1\nkind: Service\nmetadata: {name: coffee}\nspec:\n  ports: [{port: 80}]\n";
    for (name, yaml) in SETS {
        for (mode, extra, resolvers) in [
            ("no-resolver", "", &[][..]),
            ("resolver", "", &["127.0.0.1:53"][..]),
            ("services", one_service, &["127.0.0.1:53"][..]),
        ] {
            let (ok, text, warnings) = load(&format!("{name}-{mode}"), yaml, extra, resolvers);
            assert!(ok, "{name} ({mode}): nginx -t failed:\n{text}\nwarnings: {warnings:#?}");
        }
    }
    // What the sets exercise, so that a set that silently lost its point is noticed.
    let (_, text, warnings) = load("https", HTTPS_TERMINATION, "", &[]);
    assert!(text.contains("ssl_reject_handshake on;"), "{text}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("Secret certificate/cafe-secret is not among the inputs")),
        "{warnings:?}"
    );
    let (_, text, _) = load("encoded", STANDARD_HTTPROUTE, "", &[]);
    assert!(text.contains("location = \"/my path/123\""), "{text}");
    let (_, _, warnings) = load("dangling", ADVANCED_ROUTING, one_service, &[]);
    assert!(
        warnings.iter().any(|w| w.contains("Service default/tea-svc does not exist")),
        "{warnings:?}"
    );
}
