//! The plan as NGINX configuration text and `matches.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::model::{HeaderModifier, PathModifier, RequestRedirect};
use crate::plan::{
    Candidate, INTERNAL_PREFIX, Loc, PathKind, Plan, PortPlan, RulePlan, ServerPlan, Target,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Carrier {
    /// `http_matches_load matches.json` + `set $match_key` (what NGF does today)
    Preload,
    /// `http_matches '<list>'` in each location
    Inline,
    /// `set $http_matches '<list>'` (blog-era NGF)
    Variable,
}

pub struct Options {
    pub module: String,
    pub carrier: Carrier,
    /// `listen ADDRESS:PORT` instead of `listen PORT`.
    pub listen_address: Option<String>,
    /// Certificate and key files of TLS Secrets (`namespace/name`); a Secret not here but
    /// among the inputs is written to `certs/NAMESPACE_NAME.crt` and `.key` next to
    /// nginx.conf (the plan leaves out Secrets that are neither).
    pub certificates: BTreeMap<String, (String, String)>,
    /// `resolver` addresses for backends named by DNS (`--resolver`, else the nameservers of
    /// /etc/resolv.conf); NGINX's syntax: `ADDRESS[:PORT]`, IPv6 in brackets.
    pub resolvers: Vec<String>,
    /// Generate Experimental-channel fields (`retry`); without it they are warned about.
    pub experimental: bool,
    /// The NGINX the configuration is for (major, minor, patch): before 1.25.1 HTTP/2 is a
    /// `listen` parameter (see `Plan::fit_nginx`).
    pub nginx_version: (u32, u32, u32),
}

pub struct Output {
    pub nginx_conf: String,
    pub matches_json: String,
    /// Other files, by path relative to nginx.conf (certificates and keys from Secrets).
    pub files: BTreeMap<String, Vec<u8>>,
    /// What the configuration cannot do (on top of the plan's warnings).
    pub warnings: Vec<String>,
    /// The `--status` file: Gateway API conditions, as YAML.
    pub status: String,
}

/// NGINX holds one configuration token in a 4 KiB buffer.
const MAX_TOKEN: usize = 4094;

/// The list entry of one candidate.
pub fn entry(c: &Candidate) -> Value {
    let redirect = format!("{INTERNAL_PREFIX}{}", c.rule);
    let regex = c.path_kind == PathKind::Regex;
    if !regex && c.method.is_none() && c.headers.is_empty() && c.params.is_empty() {
        return json!({"any": true, "redirectPath": redirect});
    }
    let mut e = serde_json::Map::new();
    if regex {
        e.insert("path".into(), json!(PathKind::regex_condition(&c.path)));
    }
    if let Some(m) = &c.method {
        e.insert("method".into(), json!(m));
    }
    if !c.headers.is_empty() {
        let h: Vec<String> = c.headers.iter().map(|(n, t, v)| format!("{n}:{t}:{v}")).collect();
        e.insert("headers".into(), json!(h));
    }
    if !c.params.is_empty() {
        let p: Vec<String> = c.params.iter().map(|(n, t, v)| format!("{n}={t}={v}")).collect();
        e.insert("params".into(), json!(p));
    }
    e.insert("redirectPath".into(), json!(redirect));
    Value::Object(e)
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn single_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

pub fn emit(plan: &Plan, opts: &Options) -> Result<Output, String> {
    let mut conf = String::new();
    let mut matches: BTreeMap<String, Value> = BTreeMap::new();
    // Locations whose lists are the same text share one key (NGF's layout: a PathPrefix
    // rule's `= /p` and `/p/` locations); a redirect path names a location of the server
    // that runs the list, so the same text means the same in every server.
    let mut key_of_text: std::collections::HashMap<String, String> = Default::default();
    let mut servers = String::new();
    let mut http = Http { experimental: opts.experimental, ..Http::default() };

    for port in &plan.ports {
        if port.tls {
            http.sni_map(port);
        }
        for (si, server) in port.servers.iter().enumerate() {
            let mut listen = match &opts.listen_address {
                Some(a) => format!("{a}:{}", port.port),
                None => port.port.to_string(),
            };
            if port.tls {
                listen.push_str(" ssl");
            }
            let legacy_http2 = opts.nginx_version < crate::plan::HTTP2_DIRECTIVE;
            if port.http2 && legacy_http2 {
                // Before 1.25.1 (see `Plan::fit_nginx`): over TLS, ALPN keeps HTTP/1.1; a
                // plain port only gets here when it serves GRPCRoutes alone (h2c).
                listen.push_str(" http2");
            }
            let _ = writeln!(servers, "\n    server {{");
            match &server.hostname {
                None => {
                    let _ = writeln!(servers, "        listen {listen} default_server;");
                    let _ = writeln!(servers, "        server_name \"\";");
                }
                Some(h) => {
                    let _ = writeln!(servers, "        listen {listen};");
                    let _ = writeln!(servers, "        server_name {h};");
                }
            }
            if port.http2 && !legacy_http2 {
                // gRPC: HTTP/2 by ALPN over TLS, or with prior knowledge (h2c) on a plain port,
                // where HTTP/1.1 still works (NGINX 1.25.1 and later).
                let _ = writeln!(servers, "        http2 on;");
            }
            match &server.listener {
                Some(l) => {
                    let _ = writeln!(servers, "        # listener {l}");
                }
                None => {
                    let _ = writeln!(servers, "        # no listener serves this host: 404");
                }
            }
            if port.tls {
                tls_server(port.port, server, opts, &mut servers);
            }
            for (li, loc) in server.locations.iter().enumerate() {
                let head = match &loc.loc {
                    Loc::Exact(p) => format!("location = {}", quote(p)),
                    Loc::Prefix(p) => format!("location {}", quote(p)),
                };
                if loc.candidates.is_empty() {
                    let _ = writeln!(servers, "        {head} {{ return 404; }}");
                    continue;
                }
                let list: Vec<Value> = loc.candidates.iter().map(entry).collect();
                let text = serde_json::to_string(&list).map_err(|e| e.to_string())?;
                let key = format!("{}_{si}_{li}", port.port);
                let body = match opts.carrier {
                    Carrier::Preload => {
                        let key = key_of_text.entry(text).or_insert_with(|| {
                            matches.insert(key.clone(), Value::Array(list));
                            key
                        });
                        format!("set $match_key {key}; http_matches;")
                    }
                    Carrier::Inline => {
                        let t = single_quote(&text);
                        check_token(&t, &key)?;
                        format!("http_matches {t};")
                    }
                    Carrier::Variable => {
                        // `set` would read a `$` of a regex as a variable.
                        let t = http.dollars(single_quote(&text));
                        check_token(&t, &key)?;
                        format!("set $http_matches {t}; http_matches;")
                    }
                };
                let _ = writeln!(servers, "        {head} {{ {body} }}");
            }
            let mut mirror_locs = String::new();
            let used: BTreeSet<usize> =
                server.locations.iter().flat_map(|l| l.candidates.iter().map(|c| c.rule)).collect();
            for ri in used {
                http.rule_location(
                    port.port,
                    ri,
                    &server.rules[ri],
                    &mut servers,
                    &mut mirror_locs,
                );
            }
            servers.push_str(&mirror_locs);
            let _ = writeln!(servers, "    }}");
        }
    }

    let _ = writeln!(
        conf,
        "# Generated by httproute-nginx: do not edit; regenerate from the manifests."
    );
    let _ = writeln!(conf, "load_module {};", opts.module);
    conf.push_str(
        "worker_processes auto;\npid logs/nginx.pid;\nerror_log logs/error.log notice;\n\n\
         events {\n    worker_connections 1024;\n}\n\nhttp {\n    access_log logs/access.log;\n    \
         client_body_temp_path tmp/client_body;\n    proxy_temp_path tmp/proxy;\n    \
         fastcgi_temp_path tmp/fastcgi;\n    uwsgi_temp_path tmp/uwsgi;\n    scgi_temp_path tmp/scgi;\n",
    );
    if opts.carrier == Carrier::Preload {
        conf.push_str("    http_matches_load matches.json;\n");
    }
    if http.dollar {
        conf.push_str(DOLLAR);
    }
    conf.push_str(&http.maps);
    if http.raw_path {
        conf.push_str(RAW_PATH);
    }
    if http.upgrade {
        conf.push_str(UPGRADE);
    }
    if http.preflight {
        conf.push_str(PREFLIGHT);
    }
    let mut warnings = std::mem::take(&mut http.warnings);
    if http.resolve {
        if opts.resolvers.is_empty() {
            warnings.push(
                "no resolver (--resolver, or a nameserver in /etc/resolv.conf): backends named \
                 by DNS answer 502"
                    .to_owned(),
            );
        } else {
            // Names are looked up when requests need them, cached for `valid`: a name that
            // does not resolve costs its own requests (502), never the configuration.
            let _ = writeln!(conf, "    resolver {} valid=10s;", opts.resolvers.join(" "));
            conf.push_str("    resolver_timeout 5s;\n");
        }
    }
    for (up, servers) in &http.upstreams {
        let _ = writeln!(conf, "\n    upstream {up} {{");
        for addr in servers {
            let _ = writeln!(conf, "        server {addr};");
        }
        conf.push_str("    }\n");
    }
    conf.push_str(&http.splits);
    conf.push_str(&servers);
    conf.push_str("}\n");
    let matches_json = serde_json::to_string(&matches).map_err(|e| e.to_string())? + "\n";
    // Secrets that came with the manifests, where tls_server expects them (unless the
    // command line named other files).
    let files = plan
        .secrets
        .iter()
        .filter(|(c, _)| !opts.certificates.contains_key(*c))
        .flat_map(|(c, (crt, key))| {
            let (crt_path, key_path) = certificate_files(c);
            [(crt_path, crt.clone()), (key_path, key.clone())]
        })
        .collect();
    let status = crate::status::yaml(&plan.status);
    Ok(Output { nginx_conf: conf, matches_json, files, warnings, status })
}

/// What the `http` block collects while the servers are written.
#[derive(Default)]
struct Http {
    upstreams: BTreeMap<String, Vec<String>>,
    /// `--experimental`.
    experimental: bool,
    /// What the configuration cannot do, found while writing it.
    warnings: Vec<String>,
    /// CORS filters written so far (`$httproute_cors_N`).
    cors_n: usize,
    /// `$httproute_preflight` is used.
    preflight: bool,
    /// `$httproute_connection` is used (upgrades passed through).
    upgrade: bool,
    /// Some backend is a name resolved per request.
    resolve: bool,
    /// `split_clients` blocks.
    splits: String,
    /// `map`s: header filters, SNI.
    maps: String,
    split_n: usize,
    /// `$httproute_dollar` is used.
    dollar: bool,
    /// `$httproute_raw_path` is used.
    raw_path: bool,
}

impl Http {
    fn split_var(&mut self) -> String {
        self.split_n += 1;
        format!("$httproute_split_{}", self.split_n - 1)
    }

    /// The internal location of rule `ri` (a redirect, a 500, or a proxy with its filters and
    /// weights), and its mirrors' locations into `mirror_locs`.
    fn rule_location(
        &mut self,
        listener_port: u16,
        ri: usize,
        rule: &RulePlan,
        out: &mut String,
        mirror_locs: &mut String,
    ) {
        let name = rule.rule_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        let _ = writeln!(out, "        # {} rule {}{name}", rule.route, rule.rule_index);
        let retried;
        let (rule, retry) = match &rule.retry {
            Some(r) if self.experimental && !rule.grpc => {
                let (directives, tries) = self.retry(rule, r);
                // NGINX retries on the next server of the upstream: each fixed address is
                // listed once per try, so a backend with one endpoint is retried too.
                retried = RulePlan {
                    backends: rule
                        .backends
                        .iter()
                        .map(|b| {
                            let mut b = b.clone();
                            if let Target::Upstream { name, servers } = &b.target {
                                b.target = Target::Upstream {
                                    name: format!("{name}_r{tries}"),
                                    // max_fails=0: a retried answer must not take the
                                    // address out of the upstream for fail_timeout.
                                    servers: servers
                                        .iter()
                                        .flat_map(|s| {
                                            std::iter::repeat_n(
                                                format!("{s} max_fails=0"),
                                                tries as usize,
                                            )
                                        })
                                        .collect(),
                                };
                            }
                            b
                        })
                        .collect(),
                    ..rule.clone()
                };
                (&retried, directives)
            }
            Some(_) => {
                self.warnings.push(format!(
                    "{} rule {}: retry is an Experimental field; generated only with \
                     --experimental",
                    rule.route, rule.rule_index
                ));
                (rule, String::new())
            }
            None => (rule, String::new()),
        };
        let loc = format!("location = {INTERNAL_PREFIX}{ri}");
        let path = rule
            .redirect
            .as_ref()
            .and_then(|r| r.path.as_ref())
            .or_else(|| rule.rewrite.as_ref().and_then(|r| r.path.as_ref()))
            .map(|p| self.set_path(p, &rule.match_prefix));
        if let Some(r) = &rule.redirect {
            // A redirect answers by itself: backendRefs are not used.
            let url = redirect_url(r, listener_port, path.is_some());
            let _ = writeln!(
                out,
                "        {loc} {{ internal; {}return {} {url}; }}",
                path.as_deref().unwrap_or(""),
                r.status_code
            );
            return;
        }
        // The URI sent upstream: the client's own, or the rewritten path.
        let (set, uri) = match &path {
            Some(set) => (set.as_str(), "$httproute_path$is_args$args"),
            // grpc_pass sends the request's current URI, which the internal redirect changed:
            // give it back the client's path.
            None if rule.grpc => {
                self.raw_path = true;
                ("rewrite ^ $httproute_raw_path break; ", "")
            }
            None => ("", "$request_uri"),
        };
        let total: u64 = rule.backends.iter().map(|b| u64::from(b.weight)).sum();
        if total == 0 {
            let _ = writeln!(out, "        {loc} {{ internal; return 500; }}");
            return;
        }
        let mut mirrors = retry;
        if let Some(c) = &rule.cors {
            // Answered or decorated in every location that proxies for the rule.
            mirrors.push_str(&self.cors(c));
        }
        for (k, (target, share)) in rule.mirrors.iter().enumerate() {
            if *share <= 0.0 {
                continue;
            }
            let Some((set_backend, host)) = self.destination(target) else { continue };
            let path = format!("{INTERNAL_PREFIX}mirror-{ri}-{k}");
            let _ = write!(mirrors, " mirror {path};");
            // A share below 1 is drawn per request; the others' mirror subrequest ends
            // at once, with no upstream.
            let gate = if *share < 1.0 {
                let var = self.split_var();
                let pct = (share * 10000.0).round() / 100.0;
                let _ = writeln!(
                    self.splits,
                    "\n    split_clients \"${{request_id}}m\" {var} {{\n        {pct:.2}% 1;\n        * \"\";\n    }}"
                );
                format!("if ({var} = \"\") {{ return 204; }} ")
            } else {
                String::new()
            };
            let _ = writeln!(
                mirror_locs,
                "        location = {path} {{ internal; {gate}{set_backend}{} }}",
                if rule.grpc {
                    self.raw_path = true;
                    format!(
                        "rewrite ^ $httproute_raw_path break; grpc_set_header Host $host; \
                         grpc_pass grpc://{host};"
                    )
                } else {
                    format!(
                        "proxy_http_version 1.1; proxy_set_header Host $host; \
                         proxy_set_header Connection \"\"; proxy_pass http://{host}$request_uri;"
                    )
                }
            );
        }
        // Backends that need locations of their own: their own filters, or not all speaking
        // the same scheme (one proxy_pass takes one).
        let own_filters = rule
            .backends
            .iter()
            .any(|b| modifies(&b.request_headers) || modifies(&b.response_headers))
            || rule.backends.iter().any(|b| b.tls) && !rule.backends.iter().all(|b| b.tls);
        if own_filters && rule.backends.len() > 1 {
            // Filters of their own: one location per backend, picked per request by
            // split_clients and reached with an internal rewrite.
            let shares: Vec<(String, u32)> = rule
                .backends
                .iter()
                .enumerate()
                .map(|(k, b)| (format!("b{k}"), b.weight))
                .collect();
            let var = self.split(&shares, total);
            let _ = writeln!(
                out,
                "        {loc} {{ internal; rewrite ^ {INTERNAL_PREFIX}{ri}-{var} last; }}"
            );
            for (k, b) in rule.backends.iter().enumerate() {
                let loc = format!("location = {INTERNAL_PREFIX}{ri}-b{k}");
                self.backend_location(out, &loc, rule, b, set, uri, &mirrors);
            }
            return;
        }
        if let [only] = &rule.backends[..] {
            self.backend_location(out, &loc, rule, only, set, uri, &mirrors);
            return;
        }
        let proxy = self.proxy(rule, &rule.request_headers, &rule.response_headers) + &mirrors;
        // Several backends: split_clients picks one per request. Its value is an upstream
        // name, a "host:port" to resolve, "" for a 500 share or "503" for a 503 share.
        let mut unavailable = false;
        let shares: Vec<(String, u32)> = rule
            .backends
            .iter()
            .map(|b| {
                let value = match &b.target {
                    Target::Upstream { name, servers } => {
                        self.upstreams.insert(name.clone(), servers.clone());
                        name.clone()
                    }
                    Target::Resolve(addr) => {
                        self.resolve = true;
                        format!("\"{addr}\"")
                    }
                    Target::Status(503) => {
                        unavailable = true;
                        "503".to_owned()
                    }
                    Target::Status(_) => "\"\"".to_owned(),
                };
                (value, b.weight)
            })
            .collect();
        let var = self.split(&shares, total);
        let status_503 = if unavailable {
            format!("if ({var} = 503) {{ return 503; }} ")
        } else {
            String::new()
        };
        let pass = pass(rule, &var, uri, rule.backends.iter().any(|b| b.tls));
        let _ = writeln!(
            out,
            "        {loc} {{ internal; if ({var} = \"\") {{ return 500; }} {status_503}{set}{proxy} \
             {pass} }}"
        );
    }

    /// A `split_clients` on `$request_id` giving each value its share of `total`: its
    /// variable.
    fn split(&mut self, shares: &[(String, u32)], total: u64) -> String {
        let var = self.split_var();
        let _ = writeln!(self.splits, "\n    split_clients $request_id {var} {{");
        let last = shares.len().saturating_sub(1);
        for (i, (value, w)) in shares.iter().enumerate() {
            if i == last {
                let _ = writeln!(self.splits, "        * {value};");
            } else {
                let pct = (u64::from(*w) * 10000 / total) as f64 / 100.0;
                let _ = writeln!(self.splits, "        {pct:.2}% {value};");
            }
        }
        let _ = writeln!(self.splits, "    }}");
        var
    }

    /// The location `loc` of one backend of a rule: its status, or a proxy with the rule's
    /// header filters followed by the backend's own, `set` (the new path) and `mirrors`.
    #[allow(clippy::too_many_arguments)]
    fn backend_location(
        &mut self,
        out: &mut String,
        loc: &str,
        rule: &RulePlan,
        b: &crate::plan::Backend,
        set: &str,
        uri: &str,
        mirrors: &str,
    ) {
        match self.destination(&b.target) {
            Some((set_backend, host)) => {
                let req = merge(&rule.request_headers, &b.request_headers);
                let resp = merge(&rule.response_headers, &b.response_headers);
                let proxy = self.proxy(rule, &req, &resp) + mirrors;
                let pass = pass(rule, &host, uri, b.tls);
                let _ =
                    writeln!(out, "        {loc} {{ internal; {set}{set_backend}{proxy} {pass} }}");
            }
            None => {
                let code = match b.target {
                    Target::Status(code) => code,
                    _ => 500,
                };
                let _ = writeln!(out, "        {loc} {{ internal; return {code}; }}");
            }
        }
    }

    /// `retry`: `proxy_next_upstream` on the codes NGINX can retry on, with `tries` attempts
    /// in all (1 + `attempts`, default 2). What NGINX cannot honour is a warning.
    fn retry(&mut self, rule: &RulePlan, r: &crate::model::Retry) -> (String, u32) {
        const CODES: [u16; 7] = [500, 502, 503, 504, 403, 404, 429];
        let at = format!("{} rule {}: retry", rule.route, rule.rule_index);
        let mut when = String::from(" error timeout");
        let mut unsupported = Vec::new();
        for c in &r.codes {
            if CODES.contains(c) {
                let _ = write!(when, " http_{c}");
            } else {
                unsupported.push(c.to_string());
            }
        }
        if !unsupported.is_empty() {
            self.warnings.push(format!(
                "{at}: NGINX retries only on 403, 404, 429, 500, 502, 503 and 504, not on {}",
                unsupported.join(", ")
            ));
        }
        if r.backoff.is_some() {
            self.warnings.push(format!(
                "{at}: backoff is not honoured: NGINX tries the next attempt at once"
            ));
        }
        let tries = r.attempts.map_or(2, |a| a.saturating_add(1)).min(100);
        let mut out = format!(" proxy_next_upstream{when}; proxy_next_upstream_tries {tries};");
        if let Some(ms) = rule.timeout_ms.filter(|ms| *ms > 0) {
            let _ = write!(out, " proxy_next_upstream_timeout {ms}ms;");
        }
        (out, tries)
    }

    /// The CORS filter of a rule: `$httproute_cors_N` is the request's Origin when
    /// `allowOrigins` allows it, else empty; every CORS header comes from a `map` on it, so an
    /// origin that is not allowed gets none (NGINX leaves out a header whose value is empty).
    /// A preflight (OPTIONS with Access-Control-Request-Method) is answered here with 204; other
    /// requests get Allow-Origin, Allow-Credentials and Expose-Headers on the backend's answer,
    /// whose own Access-Control-* headers are hidden.
    fn cors(&mut self, c: &crate::model::Cors) -> String {
        let n = self.cors_n;
        self.cors_n += 1;
        self.preflight = true;
        let origin = format!("$httproute_cors_{n}");
        let _ = write!(self.maps, "\n    map $http_origin {origin} {{\n        default \"\";\n");
        for o in &c.allow_origins {
            if o == "*" {
                let _ = writeln!(self.maps, "        \"~.\" $http_origin;");
            } else {
                let _ = writeln!(self.maps, "        \"~*^{}$\" $http_origin;", origin_regex(o));
            }
        }
        self.maps.push_str("    }\n");
        let creds = c.allow_credentials == Some(true);
        let mut gated = |name: &str, value: String| -> String {
            let var = format!("$httproute_cors_{n}_{name}");
            let _ = write!(
                self.maps,
                "\n    map {origin} {var} {{\n        \"\" \"\";\n        default {value};\n    }}\n"
            );
            var
        };
        // "*" means any; with credentials a browser takes no "*", so the request's own value
        // is echoed instead.
        let list = |l: &[String], echo: &str| -> Option<String> {
            match l {
                [] => None,
                [star] if star == "*" => {
                    Some(if creds { echo.to_owned() } else { "\"*\"".to_owned() })
                }
                _ => Some(quote(&l.join(", "))),
            }
        };
        let methods = list(&c.allow_methods, "$http_access_control_request_method")
            .map(|v| gated("methods", v));
        let headers = list(&c.allow_headers, "$http_access_control_request_headers")
            .map(|v| gated("headers", v));
        let expose = list(&c.expose_headers, "\"*\"").map(|v| gated("expose", v));
        let max_age = gated("max_age", c.max_age.unwrap_or(5).to_string());
        let credentials = creds.then(|| gated("credentials", "true".to_owned()));
        let header = |name: &str, var: &Option<String>| {
            var.as_ref().map(|v| format!(" add_header {name} {v} always;")).unwrap_or_default()
        };
        let common = format!(
            " add_header Access-Control-Allow-Origin {origin} always;{}{} add_header Vary Origin always;",
            header("Access-Control-Allow-Credentials", &credentials),
            header("Access-Control-Expose-Headers", &expose),
        );
        format!(
            " if ($httproute_preflight) {{{common}{}{} add_header Access-Control-Max-Age {max_age} always; \
             return 204; }}{common} proxy_hide_header Access-Control-Allow-Origin; \
             proxy_hide_header Access-Control-Allow-Credentials; \
             proxy_hide_header Access-Control-Expose-Headers;",
            header("Access-Control-Allow-Methods", &methods),
            header("Access-Control-Allow-Headers", &headers),
        )
    }

    /// Where `proxy_pass` sends a target, and the `set` it needs first: an upstream's name, or
    /// for a name resolved per request a variable holding it (NGINX resolves a `proxy_pass`
    /// host given through a variable when a request needs it, with `resolver`). `None` for a
    /// status.
    fn destination(&mut self, t: &Target) -> Option<(String, String)> {
        match t {
            Target::Upstream { name, servers } => {
                self.upstreams.insert(name.clone(), servers.clone());
                Some((String::new(), name.clone()))
            }
            Target::Resolve(addr) => {
                self.resolve = true;
                Some((format!("set $httproute_backend \"{addr}\"; "), "$httproute_backend".into()))
            }
            Target::Status(_) => None,
        }
    }

    /// A value in double quotes for nginx.conf: `\\` and `"` escaped, `$` spelled through the
    /// `$httproute_dollar` variable (NGINX has no escape for it), so it is never read as a variable.
    fn value(&mut self, v: &str) -> String {
        self.dollars(quote(v))
    }

    /// `text` (a quoted nginx.conf value) with each `$` spelled `${httproute_dollar}`: NGINX
    /// has no escape for a dollar sign in a value that takes variables (see DOLLAR).
    fn dollars(&mut self, text: String) -> String {
        if !text.contains('$') {
            return text;
        }
        self.dollar = true;
        text.replace('$', "${httproute_dollar}")
    }

    /// Directives that leave the new path (no query) in `$httproute_path`. ReplacePrefixMatch
    /// swaps the matched prefix of the client's raw `$request_uri` path on a segment boundary;
    /// when the raw path does not start with the prefix as written (the client percent-encoded a
    /// character of it), the path stays as the client sent it (`$httproute_raw_path`, a `map`).
    fn set_path(&mut self, p: &PathModifier, prefix: &str) -> String {
        let (replacement, prefix_only) = p.replacement();
        let replacement = replacement.as_str();
        if !prefix_only {
            return format!("set $httproute_path {}; ", self.value(replacement));
        }
        self.raw_path = true;
        let regex = regex_literal(prefix.trim_end_matches('/'));
        // The prefix alone becomes the replacement as written; the prefix and more segments
        // become the replacement (without its trailing `/`) and those segments.
        let whole = self.value(replacement);
        let base = self.value(replacement.trim_end_matches('/'));
        let more = format!("{}${{httproute_rest}}\"", &base[..base.len() - 1]);
        format!(
            "set $httproute_path $httproute_raw_path; \
             if ($request_uri ~ \"^{regex}(\\\\?|$)\") {{ set $httproute_path {whole}; }} \
             if ($request_uri ~ \"^{regex}(?<httproute_rest>/[^?]*)\") {{ set $httproute_path {more}; }} "
        )
    }

    /// The proxy directives of a rule's internal location, with its header filters.
    fn proxy(&mut self, rule: &RulePlan, req: &HeaderModifier, resp: &HeaderModifier) -> String {
        let touched = |n: &str| {
            req.set
                .iter()
                .map(|h| &h.name)
                .chain(req.add.iter().map(|h| &h.name))
                .chain(&req.remove)
                .any(|x| x.eq_ignore_ascii_case(n))
        };
        // gRPC: the same directives of the grpc module, HTTP/2 to the backend.
        let m = if rule.grpc { "grpc" } else { "proxy" };
        let mut out =
            if rule.grpc { String::new() } else { String::from("proxy_http_version 1.1;") };
        if !touched("host") {
            match rule.rewrite.as_ref().and_then(|r| r.hostname.as_deref()) {
                Some(h) => {
                    let _ = write!(out, " {m}_set_header Host {};", quote(h));
                }
                None => {
                    let _ = write!(out, " {m}_set_header Host $host;");
                }
            }
        }
        if !touched("connection") && !rule.grpc {
            // WebSocket and other upgrades pass through (NGINX tunnels after a 101); every
            // other request keeps an empty Connection (keepalive to the backend).
            self.upgrade = true;
            if !touched("upgrade") {
                out.push_str(" proxy_set_header Upgrade $http_upgrade;");
            }
            out.push_str(" proxy_set_header Connection $httproute_connection;");
        }
        match rule.timeout_ms {
            None => {}
            // 0s disables the timeout: NGINX has no "never", a day is the stand-in.
            Some(0) => {
                let _ = write!(out, " {m}_send_timeout 1d; {m}_read_timeout 1d;");
            }
            Some(ms) => {
                let _ = write!(
                    out,
                    " {m}_connect_timeout {ms}ms; {m}_send_timeout {ms}ms; {m}_read_timeout {ms}ms;"
                );
            }
        }
        for h in &req.set {
            let _ = write!(out, " {m}_set_header {} {};", h.name, self.value(&h.value));
        }
        for h in &req.add {
            // Gateway API "add" appends to what the client sent: `name: sent,value`, or `value`
            // when the client sent nothing. $http_NAME is the client's value (lines joined).
            let var = format!("$httproute_add_{}", self.maps.matches("\n    map ").count());
            let sent = format!("${{http_{}}}", h.name.to_ascii_lowercase().replace('-', "_"));
            let value = self.value(&h.value);
            let _ = write!(
                self.maps,
                "\n    map {sent} {var} {{\n        \"\" {value};\n        default \"{sent},{}\";\n    }}\n",
                &value[1..value.len() - 1]
            );
            let _ = write!(out, " {m}_set_header {} {var};", h.name);
        }
        for n in &req.remove {
            let _ = write!(out, " {m}_set_header {n} \"\";");
        }
        for h in &resp.set {
            let _ = write!(
                out,
                " {m}_hide_header {}; add_header {} {} always;",
                h.name,
                h.name,
                self.value(&h.value)
            );
        }
        for h in &resp.add {
            let _ = write!(out, " add_header {} {} always;", h.name, self.value(&h.value));
        }
        for n in &resp.remove {
            let _ = write!(out, " {m}_hide_header {n};");
        }
        out.trim_start().to_owned()
    }

    /// `$httproute_sni_PORT`: the `server_name` NGINX picks for the TLS handshake's SNI on an
    /// HTTPS port (`hostnames` gives NGINX's own order: exact, then the longest wildcard), `-` for
    /// an SNI no server names, empty without SNI.
    fn sni_map(&mut self, port: &PortPlan) {
        let _ = write!(
            self.maps,
            "\n    map $ssl_server_name $httproute_sni_{} {{\n        hostnames;\n        default \"-\";\n        \"\" \"\";\n",
            port.port
        );
        for h in port.servers.iter().filter_map(|s| s.hostname.as_deref()) {
            let _ = writeln!(self.maps, "        {h} {};", quote(h));
        }
        self.maps.push_str("    }\n");
    }
}

/// `$httproute_raw_path`: the client's raw path, `$request_uri` without its query.
const RAW_PATH: &str = "    map $request_uri $httproute_raw_path {\n        \"~^(?<httproute_p>[^?]*)\" $httproute_p;\n    }\n";

/// The Location of a RequestRedirect: scheme, host, port and path, each the filter's or the
/// request's. A port is written only when it is not the scheme's own (80, 443); with no port
/// and no scheme in the filter, it is the listener's.
fn redirect_url(r: &RequestRedirect, listener: u16, new_path: bool) -> String {
    let scheme = r.scheme.as_deref().unwrap_or("http");
    let port = match (r.port, &r.scheme) {
        (Some(p), _) => Some(p),
        (None, Some(_)) => None,
        (None, None) => Some(listener),
    }
    .filter(|p| !matches!((scheme, p), ("http", 80) | ("https", 443)));
    let mut url = String::from("\"");
    url.push_str(r.scheme.as_deref().unwrap_or("$scheme"));
    url.push_str("://");
    match &r.hostname {
        Some(h) => url.push_str(h),
        None => url.push_str("$host"),
    }
    if let Some(p) = port {
        let _ = write!(url, ":{p}");
    }
    url.push_str(if new_path { "$httproute_path$is_args$args" } else { "$request_uri" });
    url.push('"');
    url
}

/// Certificates of an HTTPS server, and the Gateway API's listener isolation for TLS: a
/// request whose Host selects another server than its SNI did answers 421 (Misdirected
/// Request).
fn tls_server(port: u16, server: &ServerPlan, opts: &Options, out: &mut String) {
    if server.certificates.is_empty() {
        let _ = writeln!(out, "        ssl_reject_handshake on;");
    }
    for c in &server.certificates {
        let (crt, key) = opts.certificates.get(c).cloned().unwrap_or_else(|| certificate_files(c));
        let _ = writeln!(out, "        ssl_certificate {};", quote(&crt));
        let _ = writeln!(out, "        ssl_certificate_key {};", quote(&key));
    }
    // This server's own SNI value(s): its name, or for the catch-all, none or an unknown one.
    let own = match &server.hostname {
        Some(h) => regex_literal(h),
        None => "-".to_owned(),
    };
    let _ = writeln!(out, "        if ($httproute_sni_{port} !~ \"^(|{own})$\") {{ return 421; }}");
}

/// `s` as a PCRE literal inside a quoted nginx.conf string: every character but letters,
/// digits, `/` and `-` is escaped, and the backslash doubled for nginx.conf (`\\.` there is
/// `\.` to PCRE). Paths and hostnames never hold `"` or `\`.
fn regex_literal(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '-' {
                c.to_string()
            } else {
                format!("\\\\{c}")
            }
        })
        .collect()
}

/// Where a Secret's certificate and key are expected, relative to nginx.conf.
fn certificate_files(secret: &str) -> (String, String) {
    let file = secret.replace('/', "_");
    (format!("certs/{file}.crt"), format!("certs/{file}.key"))
}

/// A variable whose value is a literal "$" (geo values are not variable-interpolated): how a
/// `set` value spells a dollar sign.
/// A CORS preflight: OPTIONS with Access-Control-Request-Method.
const PREFLIGHT: &str = "    map \"$request_method:$http_access_control_request_method\" $httproute_preflight {\n        default \"\";\n        \"~^OPTIONS:.\" 1;\n    }\n";

/// An `allowOrigins` entry as a PCRE (matched case-insensitively against the whole Origin):
/// `*` as the host is any host, `*.name` one or more labels before `name`.
fn origin_regex(o: &str) -> String {
    let (scheme, rest) = o.split_once("://").unwrap_or(("https", o));
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, format!(":{p}")),
        None => (rest, String::new()),
    };
    let any = "[^/:]+";
    let host = match host.strip_prefix('*') {
        Some("") => any.to_owned(),
        Some(suffix) => format!("{any}{}", regex_literal(suffix)),
        None => regex_literal(host),
    };
    format!("{scheme}://{host}{port}")
}

/// The directive that sends a rule's request to `host` (an upstream, a variable).
fn pass(rule: &RulePlan, host: &str, uri: &str, tls: bool) -> String {
    let s = if tls { "s" } else { "" };
    if rule.grpc {
        // gRPC keeps the request's own path (/service/method).
        format!("grpc_pass grpc{s}://{host};")
    } else {
        format!("proxy_pass http{s}://{host}{uri};")
    }
}

/// Whether a header filter does anything.
fn modifies(m: &HeaderModifier) -> bool {
    !(m.set.is_empty() && m.add.is_empty() && m.remove.is_empty())
}

/// A rule's header filter followed by a backendRef's: the backend's `set` and `remove` win
/// over the rule's for the same name; `add`s of both are kept.
fn merge(rule: &HeaderModifier, own: &HeaderModifier) -> HeaderModifier {
    if !modifies(own) {
        return rule.clone();
    }
    let overridden = |name: &str| {
        own.set
            .iter()
            .map(|h| h.name.as_str())
            .chain(own.remove.iter().map(String::as_str))
            .any(|n| n.eq_ignore_ascii_case(name))
    };
    let mut m = HeaderModifier::default();
    m.set.extend(rule.set.iter().filter(|h| !overridden(&h.name)).cloned());
    m.set.extend(own.set.iter().cloned());
    m.add.extend(rule.add.iter().filter(|h| !overridden(&h.name)).cloned());
    m.add.extend(own.add.iter().cloned());
    m.remove.extend(rule.remove.iter().cloned());
    m.remove.extend(
        own.remove
            .iter()
            .filter(|n| !rule.remove.iter().any(|r| r.eq_ignore_ascii_case(n)))
            .cloned(),
    );
    m
}

/// `Connection` to the backend: `upgrade` when the client asks for one (WebSocket), else
/// empty, so backend connections can be kept alive.
const UPGRADE: &str = "    map $http_upgrade $httproute_connection {\n        default upgrade;\n        \"\" \"\";\n    }\n";

const DOLLAR: &str = "    geo $httproute_dollar {\n        default \"$\";\n    }\n";

fn check_token(token: &str, key: &str) -> Result<(), String> {
    if token.len() > MAX_TOKEN {
        return Err(format!(
            "the list of location {key} is {} bytes; NGINX takes at most {MAX_TOKEN} in one \
             configuration token: use --carrier preload",
            token.len()
        ));
    }
    Ok(())
}
