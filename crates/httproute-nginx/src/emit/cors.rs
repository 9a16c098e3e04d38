//! A rule's CORS filter: its maps and headers.

use std::borrow::Cow;

use crate::conf::{Arg, Directive, Node, Part, code, data, regex_data};
use crate::plan::RulePlan;

use super::state::{Http, d, empty, entry_of, field, quoted};

impl Http {
    /// The CORS filter of a rule: `$httproute_cors_TAG` is the request's Origin when
    /// `allowOrigins` allows it, else empty; every CORS header comes from a `map` on it, so an
    /// origin that is not allowed gets none (NGINX leaves out a header whose value is empty).
    /// A preflight (OPTIONS with Access-Control-Request-Method) is answered here with 204; other
    /// requests get Allow-Origin, Allow-Credentials and Expose-Headers on the backend's answer,
    /// whose own Access-Control-* headers are hidden.
    pub(super) fn cors(&mut self, c: &crate::model::Cors, rule: &RulePlan) -> Vec<Node> {
        self.preflight = true;
        // One CORS filter a rule: named by the rule's tag alone.
        let origin = format!("httproute_cors_{}", self.tag());
        if !self.defined.contains(&origin) {
            self.cors_n += 1;
        }
        self.cors_origin_map(c, rule, &origin);
        let creds = c.allow_credentials == Some(true);
        // `$httproute_cors_TAG_X`, X: m allowMethods, h allowHeaders, e exposeHeaders, a maxAge,
        // c allowCredentials (one letter: NGINX's default variables hash holds 46 bytes).
        let mut gated = |name: &str, value: Arg| -> String {
            let v = format!("{origin}_{name}");
            self.push_map(
                &v,
                d("map")
                    .var(origin.clone())
                    .var(v.clone())
                    .block(vec![entry_of(empty(), empty()), entry_of(Arg::code("default"), value)]),
            );
            v
        };
        // "*" means any; with credentials a browser takes no "*", so the request's own value
        // is echoed instead.
        let list = |l: &[String], echo: Option<&'static str>, f: &str| -> Option<Arg> {
            match l {
                [] => None,
                [star] if star == "*" => Some(match echo {
                    Some(echo) if creds => Arg::var(echo),
                    _ => Arg::code("*").quoted(),
                }),
                _ => Some(quoted(field(rule, f), l.join(", "))),
            }
        };
        let methods =
            list(&c.allow_methods, Some("http_access_control_request_method"), "CORS allowMethods")
                .map(|v| gated("m", v));
        let headers = list(
            &c.allow_headers,
            Some("http_access_control_request_headers"),
            "CORS allowHeaders",
        )
        .map(|v| gated("h", v));
        let expose = list(&c.expose_headers, None, "CORS exposeHeaders").map(|v| gated("e", v));
        let max_age = gated("a", Arg::code(c.max_age.unwrap_or(5).to_string()));
        let credentials = creds.then(|| gated("c", Arg::code("true")));
        cors_headers(&CorsVars { origin, credentials, expose, methods, headers, max_age })
    }

    /// `map $http_origin $ORIGIN`: the request's Origin when an `allowOrigins` entry matches
    /// it, else empty.
    fn cors_origin_map(&mut self, c: &crate::model::Cors, rule: &RulePlan, origin: &str) {
        let mut entries = vec![entry_of(Arg::code("default"), empty())];
        for o in &c.allow_origins {
            let key = if o == "*" {
                Arg::code("~.").quoted()
            } else {
                let mut parts = vec![code("~*^")];
                parts.extend(origin_regex(o, field(rule, "CORS allowOrigins[]")));
                parts.push(code("$"));
                Arg::parts(parts).quoted()
            };
            entries.push(entry_of(key, Arg::var("http_origin")));
        }
        self.push_map(origin, d("map").var("http_origin").var(origin.to_owned()).block(entries));
    }
}

/// The variables a CORS filter's headers take their values from (`None`: not written).
struct CorsVars {
    origin: String,
    credentials: Option<String>,
    expose: Option<String>,
    methods: Option<String>,
    headers: Option<String>,
    max_age: String,
}

/// A CORS filter's headers: the preflight's `if` block answering 204, the headers of every
/// other answer, and the backend's own Access-Control-* headers hidden.
fn cors_headers(v: &CorsVars) -> Vec<Node> {
    let header = |name: &'static str, v: &Option<String>| -> Option<Node> {
        v.as_ref().map(|v| d("add_header").code(name).var(v.clone()).code("always").into())
    };
    let common = || -> Vec<Node> {
        let mut c: Vec<Node> = vec![
            d("add_header")
                .code("Access-Control-Allow-Origin")
                .var(v.origin.clone())
                .code("always")
                .into(),
        ];
        c.extend(header("Access-Control-Allow-Credentials", &v.credentials));
        c.extend(header("Access-Control-Expose-Headers", &v.expose));
        c.push(d("add_header").code("Vary").code("Origin").code("always").into());
        c
    };
    let mut preflight = common();
    preflight.extend(header("Access-Control-Allow-Methods", &v.methods));
    preflight.extend(header("Access-Control-Allow-Headers", &v.headers));
    preflight.push(
        d("add_header").code("Access-Control-Max-Age").var(v.max_age.clone()).code("always").into(),
    );
    preflight.push(d("return").code("204").into());
    let mut out: Vec<Node> =
        vec![Directive::if_("httproute_preflight", None).inline(preflight).into()];
    out.extend(common());
    for h in [
        "Access-Control-Allow-Origin",
        "Access-Control-Allow-Credentials",
        "Access-Control-Expose-Headers",
    ] {
        out.push(d("proxy_hide_header").code(h).into());
    }
    out
}

/// An `allowOrigins` entry as a PCRE (matched case-insensitively against the whole Origin):
/// `*` as the host is any host, `*.name` one or more labels before `name`.
fn origin_regex(o: &str, f: Cow<'static, str>) -> Vec<Part> {
    let (scheme, rest) = o.split_once("://").unwrap_or(("https", o));
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    // Scheme and port as they are when they are what they should be (letters; digits).
    let plain = |s: &str, ok: fn(char) -> bool| !s.is_empty() && s.chars().all(ok);
    let mut parts = vec![if plain(scheme, |c| c.is_ascii_alphanumeric()) {
        data(f.clone(), scheme.to_owned())
    } else {
        regex_data(f.clone(), scheme.to_owned())
    }];
    parts.push(code("://"));
    let any = "[^/:]+";
    match host.strip_prefix('*') {
        Some("") => parts.push(code(any)),
        Some(suffix) => {
            parts.push(code(any));
            parts.push(regex_data(f.clone(), suffix.to_owned()));
        }
        None => parts.push(regex_data(f.clone(), host.to_owned())),
    }
    if let Some(p) = port {
        parts.push(code(":"));
        parts.push(if plain(p, |c| c.is_ascii_digit()) {
            data(f, p.to_owned())
        } else {
            regex_data(f, p.to_owned())
        });
    }
    parts
}
