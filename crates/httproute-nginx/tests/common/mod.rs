//! What the generator's test files share: one set of generator options and one way to read
//! manifests from text, so that a new field of [`Options`] or a change of loading is made in
//! one place.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::{Carrier, Generated, Options};

/// The options the tests generate with: the default module path and carrier, every address,
/// one resolver (so that DNS-named backends are written, not warned about), the vendored
/// NGINX's version, no Experimental fields, ExternalName not followed. A test that needs
/// another value overrides it: `Options { carrier, ..common::options() }`.
pub fn options() -> Options {
    Options {
        module: "modules/ngx_http_matches_module.so".into(),
        carrier: Carrier::Preload,
        listen_address: None,
        certificates: Default::default(),
        resolvers: vec!["127.0.0.1:53".into()],
        experimental: false,
        nginx_version: (1, 28, 0),
        allow_external_name: false,
        global: Default::default(),
        port_unavailable: None,
    }
}

/// Manifests from YAML text (as if read from `test.yaml`); a document the loader refuses
/// fails the test.
pub fn inputs(yaml: &str) -> Inputs {
    let mut inputs = Inputs::default();
    load_text(Path::new("test.yaml"), yaml, &mut inputs).expect("the manifests load");
    inputs
}

/// A set of test data: `tests/data/NAME`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// The run's status and warnings (paths relative to the set) equal the set's golden
/// `expected/status.yaml` and `expected/warnings.txt`; `UPDATE_GOLDEN=1` rewrites them.
pub fn assert_golden_status(set: &str, g: &Generated) {
    let status = httproute_nginx::status::yaml(&g.status);
    let dir = format!("{}/", data(set).display());
    let warnings: Vec<String> = g.warnings.iter().map(|w| w.replace(&dir, "")).collect();
    let warnings = warnings.join("\n") + "\n";
    let expected = data(set).join("expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(expected.join("status.yaml"), &status).unwrap();
        std::fs::write(expected.join("warnings.txt"), &warnings).unwrap();
    }
    assert_eq!(status, std::fs::read_to_string(expected.join("status.yaml")).unwrap());
    assert_eq!(warnings, std::fs::read_to_string(expected.join("warnings.txt")).unwrap());
}

/// What `plan` answers `GET /` for `host` on `port` ([`explain`]: the explanation and the
/// HTTP status, 0 when the port is not listened on).
///
/// [`explain`]: httproute_nginx::explain::explain
pub fn explain_get(plan: &httproute_nginx::plan::Plan, port: u16, host: &str) -> (String, u16) {
    let req = httproute_nginx::explain::Request {
        port: Some(port),
        method: "GET".into(),
        host: host.into(),
        path: "/".into(),
        headers: vec![],
        query: String::new(),
    };
    httproute_nginx::explain::explain(plan, &req)
}

/// A Gateway document: `id` (`namespace/name`) created at `created` (RFC 3339), with
/// `listeners` (the flow sequence's items: [`http`] or e.g. `{name: l, port: 80, protocol: HTTP}`).
pub fn gateway(id: &str, created: &str, listeners: &str) -> String {
    let (namespace, name) = id.split_once('/').expect("namespace/name");
    format!(
        "kind: Gateway\nmetadata: {{name: {name}, namespace: {namespace}, creationTimestamp: \
         \"{created}\"}}\nspec:\n  listeners: [{listeners}]\n"
    )
}

/// A plain HTTP listener named `http` on `port`.
pub fn http(port: u16) -> String {
    format!("{{name: http, port: {port}, protocol: HTTP}}")
}
