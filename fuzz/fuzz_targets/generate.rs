//! The generator on manifest sets built from a grammar (Gateway listeners, HTTPRoutes with
//! matches, every filter, backends), every string field filled with hostile text: control
//! bytes, quotes, braces, `;`, `#`, `$`, `${`, backslashes, Unicode, very long values, and
//! whole directives (`location = /pwned { alias /etc/passwd; }`). Checks, besides "no panic":
//! whatever the generator accepts reads back with NGINX's tokenizer (conf_reader, written apart
//! from the writer) as exactly the directives the writer meant to write, and no `$` of the
//! manifests is a variable where NGINX compiles variables (every variable there is one the
//! generator writes).
//!
//! The grammar also makes the objects around the routes: TLS Secrets (a good pair, cut,
//! appended to or random bytes) that HTTPS listeners name, backendRefs with namespaces,
//! weights and ports of the whole range, Services (ExternalName among them), EndpointSlices
//! (address types, addresses, ports, `endpoints: null`) and ReferenceGrants.
//!
//! With FUZZ_WRITE_DIR set, each accepted input's configuration is also written to a
//! directory of its own there (scripts/fuzz-nginx-t.sh runs `nginx -t` on them), loading the
//! module FUZZ_MODULE.

#![no_main]

use std::path::Path;

use arbitrary::Arbitrary;
use base64::Engine as _;
use httproute_nginx::conf::Stmt;
use httproute_nginx::{BackendMap, Carrier, Options};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const PIECES: [&str; 52] = [
    "\n",
    "\r\n",
    "\0",
    "\t",
    "\u{7f}",
    "\u{85}",
    "\"",
    "'",
    "\\",
    "{",
    "}",
    ";",
    "#",
    "$",
    "${",
    "$host",
    "${host}",
    "x-$tenant",
    " ",
    " location = /pwned { alias /etc/passwd; } ",
    "é",
    "\u{2028}",
    "*",
    "~",
    "=",
    "/",
    ".",
    "-",
    "a",
    "default",
    "(",
    ")",
    "%00",
    "%2F",
    "^~",
    "@",
    "*.",
    "example.com",
    ":",
    "80",
    "\\n",
    "\\\"",
    "${httproute_dollar}",
    "svc",
    "x-h",
    "https://",
    "http://a.test",
    "/p",
    "GET",
    "hostnames",
    "$1",
    "}#",
];

#[derive(Arbitrary, Debug)]
enum Piece {
    Word(u8),
    Char(char),
    Long(u8, u16),
}

/// A string field: pieces of the vocabulary, any characters, or long runs.
#[derive(Arbitrary, Debug)]
struct S(Vec<Piece>);

impl S {
    fn get(&self) -> String {
        let mut s = String::new();
        for p in self.0.iter().take(12) {
            match p {
                Piece::Word(i) => s.push_str(PIECES[usize::from(*i) % PIECES.len()]),
                Piece::Char(c) => s.push(*c),
                Piece::Long(i, n) => {
                    let w = PIECES[usize::from(*i) % PIECES.len()];
                    for _ in 0..usize::from(*n % 6000) / w.len().max(1) {
                        s.push_str(w);
                    }
                }
            }
        }
        s
    }
}

#[derive(Arbitrary, Debug)]
struct Listener {
    name: S,
    port: u16,
    https: bool,
    hostname: Option<S>,
}

/// A good certificate and its key (the generator's test data).
const GOOD_CRT: &[u8] = include_bytes!("../../crates/httproute-nginx/tests/data/tls/test.crt");
const GOOD_KEY: &[u8] = include_bytes!("../../crates/httproute-nginx/tests/data/tls/test.key");

/// A TLS Secret `cert-N`: the good pair, cut, with bytes appended, or bytes of its own.
#[derive(Arbitrary, Debug)]
struct Secret {
    how: u8,
    at: u16,
    crt: Vec<u8>,
    key: Vec<u8>,
}

impl Secret {
    fn pair(&self) -> (Vec<u8>, Vec<u8>) {
        let cut = usize::from(self.at) % GOOD_CRT.len();
        match self.how % 5 {
            0 => (GOOD_CRT.to_vec(), GOOD_KEY.to_vec()),
            1 => (GOOD_CRT[..cut].to_vec(), GOOD_KEY.to_vec()),
            2 => ([GOOD_CRT, &self.crt].concat(), GOOD_KEY.to_vec()),
            3 => (GOOD_CRT.to_vec(), self.key.clone()),
            _ => (self.crt.clone(), self.key.clone()),
        }
    }
}

/// A Service: its name, ExternalName target, port and target port.
#[derive(Arbitrary, Debug)]
struct Service {
    name: S,
    external: Option<S>,
    port: u16,
    target: Option<u16>,
}

/// An EndpointSlice of a Service: address type, addresses (None: `endpoints: null`; each an
/// address of the list or a string), port.
#[derive(Arbitrary, Debug)]
struct Slice {
    service: S,
    kind: u8,
    addresses: Option<Vec<(u8, Option<S>)>>,
    port: i32,
    ready: Option<bool>,
}

const ADDRESSES: [&str; 10] = [
    "10.0.0.1",
    "127.0.0.1",
    "169.254.169.254",
    "224.0.0.1",
    "0.0.0.0",
    "fd00::1",
    "::1",
    "fe80::1",
    "::ffff:10.0.0.1",
    "a.example",
];

/// A ReferenceGrant in the default namespace: from which namespace and route kind, to which
/// Service (all without a name).
#[derive(Arbitrary, Debug)]
struct Grant {
    from: S,
    grpc: bool,
    to: Option<S>,
}

#[derive(Arbitrary, Debug)]
struct Match {
    path: Option<(u8, S)>,
    headers: Vec<(S, S, bool)>,
    query: Vec<(S, S)>,
    method: Option<u8>,
}

#[derive(Arbitrary, Debug)]
enum Filter {
    Request {
        set: Vec<(S, S)>,
        add: Vec<(S, S)>,
        remove: Vec<S>,
    },
    Response {
        set: Vec<(S, S)>,
        add: Vec<(S, S)>,
        remove: Vec<S>,
    },
    Redirect {
        scheme: Option<S>,
        hostname: Option<S>,
        port: Option<u16>,
        path: Option<(bool, S)>,
        status: bool,
    },
    Rewrite {
        hostname: Option<S>,
        path: Option<(bool, S)>,
    },
    Cors {
        origins: Vec<S>,
        methods: Vec<S>,
        headers: Vec<S>,
        expose: Vec<S>,
        creds: Option<bool>,
        max_age: Option<u16>,
    },
    Mirror {
        name: S,
        port: u16,
        percent: Option<u8>,
    },
}

#[derive(Arbitrary, Debug)]
struct BackendRef {
    name: S,
    port: u16,
    weight: Option<u16>,
    filters: Vec<Filter>,
}

#[derive(Arbitrary, Debug)]
struct Rule {
    name: Option<S>,
    matches: Vec<Match>,
    filters: Vec<Filter>,
    backends: Vec<BackendRef>,
    timeout: Option<S>,
}

#[derive(Arbitrary, Debug)]
struct Route {
    name: S,
    hostnames: Vec<S>,
    section: Option<S>,
    rules: Vec<Rule>,
    created: Option<S>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    listeners: Vec<Listener>,
    routes: Vec<Route>,
    carrier: u8,
    listen_address: Option<S>,
    module: Option<S>,
    resolvers: Vec<S>,
    // The fields below come after the ones the committed seeds were made for, and the
    // structs above are as they were, so those seeds still decode to the same listeners and
    // routes.
    /// The Secret the Nth HTTPS listener names (`cert-N`, N of `secrets`), or a name.
    certificates: Vec<(u8, Option<S>)>,
    /// For the Nth backendRef of the input (in order): a namespace, and a weight and a port
    /// of the whole range.
    backend_refs: Vec<(Option<S>, Option<(u32, u16)>)>,
    secrets: Vec<Secret>,
    services: Vec<Service>,
    slices: Vec<Slice>,
    grants: Vec<Grant>,
}

fn pairs(v: &[(S, S)]) -> Value {
    v.iter().take(4).map(|(n, x)| json!({"name": n.get(), "value": x.get()})).collect()
}

fn strings(v: &[S]) -> Vec<String> {
    v.iter().take(4).map(S::get).collect()
}

fn path_modifier(p: &(bool, S)) -> Value {
    if p.0 {
        json!({"type": "ReplacePrefixMatch", "replacePrefixMatch": p.1.get()})
    } else {
        json!({"type": "ReplaceFullPath", "replaceFullPath": p.1.get()})
    }
}

fn filter(f: &Filter) -> Value {
    match f {
        Filter::Request { set, add, remove } => json!({"type": "RequestHeaderModifier",
            "requestHeaderModifier": {"set": pairs(set), "add": pairs(add), "remove": strings(remove)}}),
        Filter::Response { set, add, remove } => json!({"type": "ResponseHeaderModifier",
            "responseHeaderModifier": {"set": pairs(set), "add": pairs(add), "remove": strings(remove)}}),
        Filter::Redirect { scheme, hostname, port, path, status } => {
            let mut r = serde_json::Map::new();
            if let Some(s) = scheme {
                r.insert("scheme".into(), json!(s.get()));
            }
            if let Some(h) = hostname {
                r.insert("hostname".into(), json!(h.get()));
            }
            if let Some(p) = port {
                r.insert("port".into(), json!(p));
            }
            if let Some(p) = path {
                r.insert("path".into(), path_modifier(p));
            }
            r.insert("statusCode".into(), json!(if *status { 301 } else { 302 }));
            json!({"type": "RequestRedirect", "requestRedirect": r})
        }
        Filter::Rewrite { hostname, path } => {
            let mut r = serde_json::Map::new();
            if let Some(h) = hostname {
                r.insert("hostname".into(), json!(h.get()));
            }
            if let Some(p) = path {
                r.insert("path".into(), path_modifier(p));
            }
            json!({"type": "URLRewrite", "urlRewrite": r})
        }
        Filter::Cors { origins, methods, headers, expose, creds, max_age } => {
            let mut c = json!({"allowOrigins": strings(origins), "allowMethods": strings(methods),
                "allowHeaders": strings(headers), "exposeHeaders": strings(expose)});
            if let Some(b) = creds {
                c["allowCredentials"] = json!(b);
            }
            if let Some(m) = max_age {
                c["maxAge"] = json!(m);
            }
            json!({"type": "CORS", "cors": c})
        }
        Filter::Mirror { name, port, percent } => {
            let mut m = json!({"backendRef": {"name": name.get(), "port": port}});
            if let Some(p) = percent {
                m["percent"] = json!(p % 101);
            }
            json!({"type": "RequestMirror", "requestMirror": m})
        }
    }
}

fn manifests(input: &Input) -> String {
    let listeners: Vec<Value> = input
        .listeners
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, l)| {
            // A listener name the Gateway CRD refuses stops the run (the Gateway is the
            // operator's): such a name is replaced, so that the routes are reached.
            let name = Some(l.name.get())
                .filter(|n| {
                    !n.is_empty()
                        && n.len() <= 253
                        && n.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                        })
                })
                .unwrap_or_else(|| format!("l{i}"));
            let mut v = json!({"name": name, "port": l.port % 4 + 8080,
                "protocol": if l.https { "HTTPS" } else { "HTTP" }});
            if l.port > 60000 {
                v["port"] = json!(l.port);
            }
            if let Some(h) = &l.hostname {
                v["hostname"] = json!(h.get());
            }
            v
        })
        .collect();
    let mut listeners = listeners;
    if listeners.is_empty() {
        listeners.push(json!({"name": "l", "port": 8080, "protocol": "HTTP"}));
    }
    for (l, (n, name)) in listeners.iter_mut().zip(&input.certificates) {
        let name = name.as_ref().map_or_else(|| format!("cert-{}", n % 4), S::get);
        l["tls"] = json!({"certificateRefs": [{"name": name}]});
    }
    let mut extras = input.backend_refs.iter();
    let mut docs = vec![json!({"kind": "Gateway", "metadata": {"name": "gw"},
        "spec": {"listeners": listeners}})];
    for r in input.routes.iter().take(4) {
        let rules: Vec<Value> = r
            .rules
            .iter()
            .take(4)
            .map(|rule| {
                let matches: Vec<Value> = rule
                    .matches
                    .iter()
                    .take(4)
                    .map(|m| {
                        let mut v = serde_json::Map::new();
                        if let Some((k, p)) = &m.path {
                            let kind =
                                ["PathPrefix", "Exact", "RegularExpression"][usize::from(*k % 3)];
                            v.insert("path".into(), json!({"type": kind, "value": p.get()}));
                        }
                        let headers: Vec<Value> = m
                            .headers
                            .iter()
                            .take(3)
                            .map(|(n, x, re)| {
                                json!({"name": n.get(), "value": x.get(),
                                "type": if *re { "RegularExpression" } else { "Exact" }})
                            })
                            .collect();
                        v.insert("headers".into(), json!(headers));
                        v.insert("queryParams".into(), pairs(&m.query));
                        if let Some(i) = m.method {
                            let methods = ["GET", "POST", "OPTIONS", "PATCH"];
                            v.insert("method".into(), json!(methods[usize::from(i % 4)]));
                        }
                        Value::Object(v)
                    })
                    .collect();
                let backends: Vec<Value> = rule
                    .backends
                    .iter()
                    .take(3)
                    .map(|b| {
                        let mut v = json!({"name": b.name.get(), "port": b.port % 2 + 80,
                            "filters": b.filters.iter().take(2).map(filter).collect::<Vec<_>>()});
                        if let Some(w) = b.weight {
                            v["weight"] = json!(w % 5);
                        }
                        if let Some((ns, wide)) = extras.next() {
                            if let Some(ns) = ns {
                                v["namespace"] = json!(ns.get());
                            }
                            if let Some((w, p)) = wide {
                                v["weight"] = json!(w % 1_000_001);
                                v["port"] = json!(p);
                            }
                        }
                        v
                    })
                    .collect();
                let mut v = json!({"matches": matches,
                    "filters": rule.filters.iter().take(4).map(filter).collect::<Vec<_>>(),
                    "backendRefs": backends});
                if let Some(n) = &rule.name {
                    v["name"] = json!(n.get());
                }
                if let Some(t) = &rule.timeout {
                    v["timeouts"] = json!({"request": t.get()});
                }
                v
            })
            .collect();
        let mut parent = json!({"name": "gw"});
        if let Some(s) = &r.section {
            parent["sectionName"] = json!(s.get());
        }
        let mut meta = json!({"name": r.name.get()});
        if let Some(c) = &r.created {
            meta["creationTimestamp"] = json!(c.get());
        }
        docs.push(json!({"kind": "HTTPRoute", "metadata": meta, "spec": {
            "parentRefs": [parent], "hostnames": strings(&r.hostnames), "rules": rules}}));
    }
    docs.extend(core_objects(input));
    docs.iter().map(Value::to_string).collect::<Vec<_>>().join("\n---\n")
}

/// The Secrets, Services, EndpointSlices and ReferenceGrants of the input.
fn core_objects(input: &Input) -> Vec<Value> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut docs = Vec::new();
    for (i, secret) in input.secrets.iter().take(4).enumerate() {
        let (crt, key) = secret.pair();
        docs.push(json!({"kind": "Secret", "metadata": {"name": format!("cert-{i}")},
            "type": "kubernetes.io/tls", "data": {"tls.crt": b64(&crt), "tls.key": b64(&key)}}));
    }
    for s in input.services.iter().take(4) {
        let mut port = json!({"port": s.port});
        if let Some(t) = s.target {
            port["targetPort"] = json!(t);
        }
        let mut spec = json!({"ports": [port]});
        if let Some(e) = &s.external {
            spec["type"] = json!("ExternalName");
            spec["externalName"] = json!(e.get());
        }
        docs.push(json!({"kind": "Service", "metadata": {"name": s.name.get()}, "spec": spec}));
    }
    for (i, sl) in input.slices.iter().take(4).enumerate() {
        let endpoints = match &sl.addresses {
            None => Value::Null,
            Some(a) => {
                let a: Vec<String> = a
                    .iter()
                    .take(3)
                    .map(|(k, s)| match s {
                        Some(s) => s.get(),
                        None => ADDRESSES[usize::from(*k) % ADDRESSES.len()].to_owned(),
                    })
                    .collect();
                let mut e = json!({"addresses": a});
                if let Some(r) = sl.ready {
                    e["conditions"] = json!({"ready": r});
                }
                json!([e])
            }
        };
        let address_type = ["IPv4", "IPv6", "FQDN"][usize::from(sl.kind % 3)];
        docs.push(json!({"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": {"name": format!("slice-{i}"),
                "labels": {"kubernetes.io/service-name": sl.service.get()}},
            "addressType": address_type,
            "endpoints": endpoints, "ports": [{"port": sl.port}]}));
    }
    for (i, g) in input.grants.iter().take(2).enumerate() {
        let mut to = json!({"group": "", "kind": "Service"});
        if let Some(n) = &g.to {
            to["name"] = json!(n.get());
        }
        let kind = if g.grpc { "GRPCRoute" } else { "HTTPRoute" };
        docs.push(json!({"kind": "ReferenceGrant",
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "metadata": {"name": format!("grant-{i}")},
            "spec": {"from": [{"group": "gateway.networking.k8s.io",
                "kind": kind, "namespace": g.from.get()}],
                "to": [to]}}));
    }
    docs
}

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
