//! What the generator's test files share: one set of generator options and one way to read
//! manifests from text, so that a new field of [`Options`] or a change of loading is made in
//! one place.

#![allow(dead_code)]

use std::path::Path;

use httproute_nginx::model::{Inputs, load_text};
use httproute_nginx::{Carrier, Options};

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
    }
}

/// Manifests from YAML text (as if read from `test.yaml`); a document the loader refuses
/// fails the test.
pub fn inputs(yaml: &str) -> Inputs {
    let mut inputs = Inputs::default();
    load_text(Path::new("test.yaml"), yaml, &mut inputs).expect("the manifests load");
    inputs
}
