//! The generator on manifest sets of the shared grammar (`manifest_gen::grammar`: Gateway
//! listeners, HTTPRoutes with matches, every filter, backends and the objects around them,
//! every string field hostile text; the generator's property tests draw the same sets,
//! crates/httproute-nginx/tests/one_pass.rs). Checks, besides "no panic":
//! whatever the generator accepts reads back with NGINX's tokenizer (conf_reader, written apart
//! from the writer) as exactly the directives the writer meant to write, and no `$` of the
//! manifests is a variable where NGINX compiles variables (every variable there is one the
//! generator writes).
//!
//! With FUZZ_WRITE_DIR set, each accepted input's configuration is also written to a
//! directory of its own there (scripts/fuzz-nginx-t.sh runs `nginx -t` on them), loading the
//! module FUZZ_MODULE.

#![no_main]

use std::path::Path;

use httproute_nginx::conf::Stmt;
use httproute_nginx::{BackendMap, Carrier, Options};
use libfuzzer_sys::fuzz_target;
use manifest_gen::grammar::{Input, S, manifests};

/// NGINX's variables the generator writes where NGINX compiles variables.
const NGINX_VARS: [&str; 13] = [
    "host",
    "request_uri",
    "scheme",
    "is_args",
    "args",
    "request_id",
    "request_method",
    "ssl_server_name",
    "http_upgrade",
    "http_origin",
    "http_access_control_request_method",
    "http_access_control_request_headers",
    "match_key",
];

/// The variables named in `word`; `Err` for a `$` NGINX could not read as one.
fn variables(word: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let b = word.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let braced = b.get(i + 1) == Some(&b'{');
        let start = i + 1 + usize::from(braced);
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        if end == start || (braced && b.get(end) != Some(&b'}')) {
            return Err(format!("a `$` that is not a variable in {word:?}"));
        }
        out.push(&word[start..end]);
        i = end;
    }
    Ok(out)
}

/// Words NGINX compiles with variables, by directive (an independent table: the writer has
/// its own).
fn check_variables(stmts: &[Stmt], in_map: bool, headers: &[String]) {
    for s in stmts {
        let name = s.words[0].as_str();
        let compiled: &[usize] = if in_map {
            &[1]
        } else {
            match name {
                "set" | "add_header" | "proxy_set_header" | "grpc_set_header" => &[2],
                "proxy_pass" | "grpc_pass" | "ssl_certificate" | "ssl_certificate_key" => &[1],
                "return" if s.words.len() == 3 => &[2],
                "map" => &[1],
                _ => &[],
            }
        };
        for &i in compiled {
            let Some(w) = s.words.get(i) else { continue };
            for v in variables(w).unwrap_or_else(|e| panic!("{e}: {s:?}")) {
                let ok = v.starts_with("httproute_")
                    || NGINX_VARS.contains(&v)
                    || v == "http_matches"
                    // The module's count of fallbacks, the source of the SNI check's map.
                    || (name == "map" && !in_map && v == "matches_fallback")
                    // `add` filters read the client's header: its name, lowercased, `-` as `_`.
                    || (name == "map" && !in_map && headers.iter().any(|h| *h == v));
                assert!(ok, "variable ${v} written from data: {s:?}");
            }
        }
        if let Some(b) = &s.block {
            check_variables(b, name == "map", headers);
        }
    }
}

fuzz_target!(|input: Input| {
    let text = manifests(&input);
    let mut inputs = httproute_nginx::model::Inputs::default();
    if httproute_nginx::model::load_text(Path::new("fuzz.yaml"), &text, &mut inputs).is_err() {
        return;
    }
    let mut backends = BackendMap::new();
    backends.insert("default/svc:80".into(), "127.0.0.1:9".into());
    let write_dir = std::env::var_os("FUZZ_WRITE_DIR");
    let module = std::env::var("FUZZ_MODULE").ok();
    let opts = Options {
        module: match (&module, &input.module) {
            (Some(m), _) => m.clone(),
            (None, Some(m)) => m.get(),
            (None, None) => "modules/ngx_http_matches_module.so".into(),
        },
        carrier: [Carrier::Preload, Carrier::Inline, Carrier::Variable]
            [usize::from(input.carrier % 3)],
        listen_address: if write_dir.is_some() {
            Some("127.0.0.1".into())
        } else {
            input.listen_address.as_ref().map(S::get)
        },
        certificates: Default::default(),
        resolvers: input.resolvers.iter().take(2).map(S::get).collect(),
        experimental: true,
        nginx_version: (1, 28, 0),
        // Both reach policies: ExternalName refused (the default) and followed.
        allow_external_name: input.carrier >= 128,
        global: Default::default(),
        port_unavailable: None,
    };
    let plan =
        httproute_nginx::plan::plan(&inputs, &httproute_nginx::plan_options(&opts, &backends));
    let Ok(out) = httproute_nginx::emit::emit(&plan, &opts) else { return };
    let read = httproute_nginx::conf_reader::read(&out.nginx_conf)
        .unwrap_or_else(|e| panic!("{e}\n{}", out.nginx_conf));
    assert_eq!(read, out.tree, "{}", out.nginx_conf);
    // Header names `add` filters may read.
    let headers: Vec<String> = text
        .split('"')
        .map(|h| format!("http_{}", h.to_ascii_lowercase().replace('-', "_")))
        .collect();
    check_variables(&read, false, &headers);
    if let Some(dir) = write_dir {
        let name = format!("{:016x}", fxhash(text.as_bytes()));
        let _ = httproute_nginx::write_dir(&Path::new(&dir).join(name), &out);
    }
});

fn fxhash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &c| (h ^ u64::from(c)).wrapping_mul(0x100000001b3))
}
