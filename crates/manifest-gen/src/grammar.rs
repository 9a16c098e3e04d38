//! The random manifest set: Gateway listeners, HTTPRoutes with matches, every filter and
//! backends, every string field filled with hostile text (control bytes, quotes, braces, `;`,
//! `#`, `$`, `${`, backslashes, Unicode, very long values, whole directives such as
//! `location = /pwned { alias /etc/passwd; }`), and the objects around the routes: TLS Secrets
//! (a good pair, cut, appended to or random bytes) that HTTPS listeners name, backendRefs with
//! namespaces, weights and ports of the whole range, Services (ExternalName among them),
//! EndpointSlices (address types, addresses, ports, `endpoints: null`) and ReferenceGrants.
//!
//! [`Input`] is read from bytes with `arbitrary`: libFuzzer's (`fuzz/fuzz_targets/generate.rs`,
//! whose committed seeds decode to what they did when the grammar lived there) or proptest's
//! (`any::<Vec<u8>>()` through [`Input::from_bytes`]: shrinking the bytes shrinks the set, as
//! shorter input ends lists sooner). [`manifests`] writes it with [`crate::objects`].

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Value, json};

use crate::objects::{
    Set, backend, endpoint, endpoint_slice, filter as object_filter, gateway, header, http_route,
    listener, parent, path_match, rule, service, service_grant, tls_secret,
};

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
pub enum Piece {
    Word(u8),
    Char(char),
    Long(u8, u16),
}

/// A string field: pieces of the vocabulary, any characters, or long runs.
#[derive(Arbitrary, Debug)]
pub struct S(pub Vec<Piece>);

impl S {
    pub fn get(&self) -> String {
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
pub struct Listener {
    pub name: S,
    pub port: u16,
    pub https: bool,
    pub hostname: Option<S>,
}

/// A good certificate and its key (the generator's test data).
pub const GOOD_CRT: &[u8] = include_bytes!("../../httproute-nginx/tests/data/tls/test.crt");
pub const GOOD_KEY: &[u8] = include_bytes!("../../httproute-nginx/tests/data/tls/test.key");

/// A TLS Secret `cert-N`: the good pair, cut, with bytes appended, or bytes of its own.
#[derive(Arbitrary, Debug)]
pub struct Secret {
    pub how: u8,
    pub at: u16,
    pub crt: Vec<u8>,
    pub key: Vec<u8>,
}

impl Secret {
    pub fn pair(&self) -> (Vec<u8>, Vec<u8>) {
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
pub struct Service {
    pub name: S,
    pub external: Option<S>,
    pub port: u16,
    pub target: Option<u16>,
}

/// An EndpointSlice of a Service: address type, addresses (None: `endpoints: null`; each an
/// address of the list or a string), port.
#[derive(Arbitrary, Debug)]
pub struct Slice {
    pub service: S,
    pub kind: u8,
    pub addresses: Option<Vec<(u8, Option<S>)>>,
    pub port: i32,
    pub ready: Option<bool>,
}

pub const ADDRESSES: [&str; 10] = [
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
pub struct Grant {
    pub from: S,
    pub grpc: bool,
    pub to: Option<S>,
}

#[derive(Arbitrary, Debug)]
pub struct Match {
    pub path: Option<(u8, S)>,
    pub headers: Vec<(S, S, bool)>,
    pub query: Vec<(S, S)>,
    pub method: Option<u8>,
}

#[derive(Arbitrary, Debug)]
pub enum Filter {
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
pub struct BackendRef {
    pub name: S,
    pub port: u16,
    pub weight: Option<u16>,
    pub filters: Vec<Filter>,
}

#[derive(Arbitrary, Debug)]
pub struct Rule {
    pub name: Option<S>,
    pub matches: Vec<Match>,
    pub filters: Vec<Filter>,
    pub backends: Vec<BackendRef>,
    pub timeout: Option<S>,
}

#[derive(Arbitrary, Debug)]
pub struct Route {
    pub name: S,
    pub hostnames: Vec<S>,
    pub section: Option<S>,
    pub rules: Vec<Rule>,
    pub created: Option<S>,
}

/// A backendRef's namespace, and a weight and a port of the whole range.
pub type BackendExtra = (Option<S>, Option<(u32, u16)>);

#[derive(Arbitrary, Debug)]
pub struct Input {
    pub listeners: Vec<Listener>,
    pub routes: Vec<Route>,
    pub carrier: u8,
    pub listen_address: Option<S>,
    pub module: Option<S>,
    pub resolvers: Vec<S>,
    // The fields below come after the ones the committed seeds were made for, and the
    // structs above are as they were, so those seeds still decode to the same listeners and
    // routes.
    /// The Secret the Nth HTTPS listener names (`cert-N`, N of `secrets`), or a name.
    pub certificates: Vec<(u8, Option<S>)>,
    /// For the Nth backendRef of the input (in order): a namespace, and a weight and a port
    /// of the whole range.
    pub backend_refs: Vec<BackendExtra>,
    pub secrets: Vec<Secret>,
    pub services: Vec<Service>,
    pub slices: Vec<Slice>,
    pub grants: Vec<Grant>,
}

impl Input {
    /// The input `bytes` decode to (`Unstructured` ends lists when the bytes run out, so any
    /// bytes are an input).
    pub fn from_bytes(bytes: &[u8]) -> Input {
        Input::arbitrary_take_rest(Unstructured::new(bytes)).expect("any bytes are an input")
    }
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
    let modifier =
        |set, add, remove| json!({"set": pairs(set), "add": pairs(add), "remove": strings(remove)});
    match f {
        Filter::Request { set, add, remove } => {
            object_filter("RequestHeaderModifier", modifier(set, add, remove))
        }
        Filter::Response { set, add, remove } => {
            object_filter("ResponseHeaderModifier", modifier(set, add, remove))
        }
        Filter::Redirect { scheme, hostname, port, path, status } => {
            let r = json!({"statusCode": if *status { 301 } else { 302 }})
                .set_some("scheme", scheme.as_ref().map(S::get))
                .set_some("hostname", hostname.as_ref().map(S::get))
                .set_some("port", *port)
                .set_some("path", path.as_ref().map(path_modifier));
            object_filter("RequestRedirect", r)
        }
        Filter::Rewrite { hostname, path } => {
            let r = json!({})
                .set_some("hostname", hostname.as_ref().map(S::get))
                .set_some("path", path.as_ref().map(path_modifier));
            object_filter("URLRewrite", r)
        }
        Filter::Cors { origins, methods, headers, expose, creds, max_age } => {
            let c = json!({"allowOrigins": strings(origins), "allowMethods": strings(methods),
                "allowHeaders": strings(headers), "exposeHeaders": strings(expose)})
            .set_some("allowCredentials", *creds)
            .set_some("maxAge", *max_age);
            object_filter("CORS", c)
        }
        Filter::Mirror { name, port, percent } => {
            let m = json!({"backendRef": {"name": name.get(), "port": port}})
                .set_some("percent", percent.map(|p| p % 101));
            object_filter("RequestMirror", m)
        }
    }
}

/// `name`'s text when the CRDs take it as an object name (a lowercase RFC 1123 subdomain),
/// else `otherwise()`.
fn object_name(name: &S, otherwise: impl FnOnce() -> String) -> String {
    valid_name(name).unwrap_or_else(otherwise)
}

/// `name`'s text when it is a lowercase RFC 1123 subdomain (`*.` before it too when
/// `wildcard`), as the CRDs take names, section names and host names.
fn valid(text: String, wildcard: bool) -> Option<String> {
    let rest = if wildcard { text.strip_prefix("*.").unwrap_or(&text) } else { &text };
    let ok = !rest.is_empty()
        && text.len() <= 253
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    ok.then_some(text)
}

fn valid_name(name: &S) -> Option<String> {
    valid(name.get(), false)
}

/// The Gateway `gw` and its listeners (at least one).
fn gateway_of(input: &Input) -> Value {
    let mut listeners: Vec<Value> = input
        .listeners
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, l)| {
            // A listener name the Gateway CRD refuses stops the run (the Gateway is the
            // operator's): such a name is replaced, so that the routes are reached.
            let name = object_name(&l.name, || format!("l{i}"));
            let port = if l.port > 60000 { l.port } else { l.port % 4 + 8080 };
            let v = listener(&name, port, None, None)
                .set_some("hostname", l.hostname.as_ref().map(S::get));
            if l.https { v.set("protocol", "HTTPS") } else { v }
        })
        .collect();
    if listeners.is_empty() {
        listeners.push(listener("l", 8080, None, None));
    }
    for (l, (n, name)) in listeners.iter_mut().zip(&input.certificates) {
        let name = name.as_ref().map_or_else(|| format!("cert-{}", n % 4), S::get);
        l["tls"] = json!({"certificateRefs": [{"name": name}]});
    }
    gateway(None, "gw", listeners)
}

fn match_of(m: &Match) -> Value {
    let headers: Vec<Value> = m
        .headers
        .iter()
        .take(3)
        .map(|(n, x, re)| {
            header(if *re { "RegularExpression" } else { "Exact" }, &n.get(), &x.get())
        })
        .collect();
    let v = match &m.path {
        Some((k, p)) => {
            path_match(["PathPrefix", "Exact", "RegularExpression"][usize::from(*k % 3)], &p.get())
        }
        None => json!({}),
    };
    v.set("headers", headers).set("queryParams", pairs(&m.query)).set_some(
        "method",
        m.method.map(|i| ["GET", "POST", "OPTIONS", "PATCH"][usize::from(i % 4)]),
    )
}

/// A rule; `extras` gives each backendRef in turn a namespace and a wide weight and port.
fn rule_of<'a>(r: &Rule, extras: &mut impl Iterator<Item = &'a BackendExtra>) -> Value {
    let backends: Vec<Value> = r
        .backends
        .iter()
        .take(3)
        .map(|b| {
            let mut v = backend(&b.name.get(), b.port % 2 + 80, b.weight.map(|w| u32::from(w % 5)))
                .set("filters", b.filters.iter().take(2).map(filter).collect::<Vec<_>>());
            if let Some((ns, wide)) = extras.next() {
                v = v.set_some("namespace", ns.as_ref().map(S::get));
                if let Some((w, p)) = wide {
                    v = v.set("weight", w % 1_000_001).set("port", *p);
                }
            }
            v
        })
        .collect();
    rule(
        r.matches.iter().take(4).map(match_of).collect(),
        r.filters.iter().take(4).map(filter).collect(),
        backends,
    )
    .set_some("name", r.name.as_ref().and_then(valid_name))
    .set_some("timeouts", r.timeout.as_ref().map(|t| json!({"request": t.get()})))
}

/// The manifest set as one file (JSON documents, `---` between them).
pub fn manifests(input: &Input) -> String {
    let mut extras = input.backend_refs.iter();
    let mut docs = vec![gateway_of(input)];
    for (i, r) in input.routes.iter().take(4).enumerate() {
        let rules: Vec<Value> = r.rules.iter().take(4).map(|x| rule_of(x, &mut extras)).collect();
        let parent = parent("gw", None, r.section.as_ref().and_then(valid_name).as_deref());
        // What the CRDs refuse of the route's own fields (its name, a creationTimestamp, which
        // the API server sets, a sectionName, host names) would refuse the whole route before
        // its rules are written: a name is replaced, the others left out when invalid, so
        // that the rules' hostile values are reached (the loader's refusals of those fields:
        // crates/httproute-nginx/tests/validation.rs).
        let name = object_name(&r.name, || format!("r{i}"));
        let created = r.created.as_ref().map(S::get).filter(|c| {
            !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit() || b"-:.TZ+".contains(&b))
        });
        let hostnames: Vec<String> =
            r.hostnames.iter().take(4).filter_map(|h| valid(h.get(), true)).collect();
        let route = http_route(None, &name, vec![parent], &hostnames, rules)
            .set("spec.hostnames", hostnames.clone())
            .set_some("metadata.creationTimestamp", created);
        docs.push(route);
    }
    docs.extend(core_objects(input));
    docs.iter().map(Value::to_string).collect::<Vec<_>>().join("\n---\n")
}

/// The Secrets, Services, EndpointSlices and ReferenceGrants of the input.
fn core_objects(input: &Input) -> Vec<Value> {
    let mut docs = Vec::new();
    for (i, secret) in input.secrets.iter().take(4).enumerate() {
        let (crt, key) = secret.pair();
        docs.push(tls_secret(None, &format!("cert-{i}"), &crt, &key));
    }
    for s in input.services.iter().take(4) {
        let external = s.external.as_ref().map(S::get);
        docs.push(
            service(None, &s.name.get(), s.port, external.as_deref())
                .set_some("spec.ports.0.targetPort", s.target),
        );
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
                json!([endpoint(&a, sl.ready)])
            }
        };
        let address_type = ["IPv4", "IPv6", "FQDN"][usize::from(sl.kind % 3)];
        let name = format!("slice-{i}");
        let slice = endpoint_slice(
            None,
            &name,
            &sl.service.get(),
            address_type,
            endpoints,
            i64::from(sl.port),
        );
        docs.push(slice);
    }
    for (i, g) in input.grants.iter().take(2).enumerate() {
        let kind = if g.grpc { "GRPCRoute" } else { "HTTPRoute" };
        let to = g.to.as_ref().map(S::get);
        docs.push(service_grant(None, &format!("grant-{i}"), kind, &g.from.get(), to.as_deref()));
    }
    docs
}
