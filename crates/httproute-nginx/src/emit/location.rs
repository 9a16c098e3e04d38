//! A rule's internal locations: a redirect, a 500, or a proxy with its filters, backends,
//! weights and mirrors.

use std::borrow::Cow;

use crate::conf::{Arg, Directive, Node, Part, braced_var, code, data, regex_data, var};
use crate::model::{HeaderModifier, PathModifier, RequestRedirect};
use crate::plan::{INTERNAL_PREFIX, RulePlan, Target};

use super::state::{Http, d, empty, entry_of, field, quoted};
use super::upstream::percent;

impl Http {
    /// The internal location of rule `ri` (a redirect, a 500, or a proxy with its filters and
    /// weights), and its mirrors' locations into `mirror_locs`.
    pub(super) fn rule_location(
        &mut self,
        listener: (u16, bool),
        ri: usize,
        rule: &RulePlan,
        out: &mut Vec<Node>,
        mirror_locs: &mut Vec<Node>,
    ) -> Result<(), String> {
        let name = rule.rule_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        out.push(Node::Comment(format!("{}{name}", rule.id)));
        self.begin_rule(&rule.id);
        let (rule, retry) = self.retried(rule);
        let rule = rule.as_ref();
        let loc = || d("location").code("=").code(format!("{INTERNAL_PREFIX}{ri}"));
        let path_field = if rule.redirect.as_ref().is_some_and(|r| r.path.is_some()) {
            "RequestRedirect path"
        } else {
            "URLRewrite path"
        };
        let path = rule
            .redirect
            .as_ref()
            .and_then(|r| r.path.as_ref())
            .or_else(|| rule.rewrite.as_ref().and_then(|r| r.path.as_ref()))
            .map(|p| self.set_path(p, &rule.match_prefix, field(rule, path_field)));
        if let Some(r) = &rule.redirect {
            // A redirect answers by itself: backendRefs are not used.
            let url = redirect_url(r, listener, path.is_some(), rule);
            let mut inner: Vec<Node> = vec![d("internal").into()];
            inner.extend(path.unwrap_or_default());
            inner.push(d("return").code(r.status_code.to_string()).arg(url).into());
            out.push(loc().inline(inner).into());
            return Ok(());
        }
        let (set, uri) = self.upstream_uri(rule, path);
        let total: u64 = rule.backends.iter().map(|b| u64::from(b.weight)).sum();
        if total == 0 {
            out.push(
                loc().inline(vec![d("internal").into(), d("return").code("500").into()]).into(),
            );
            return Ok(());
        }
        let mut mirrors = retry;
        if let Some(c) = &rule.cors {
            // Answered or decorated in every location that proxies for the rule.
            let cors = self.cors(c, rule);
            mirrors.extend(cors);
        }
        for (k, (target, share)) in rule.mirrors.iter().enumerate() {
            if let Some((mirror, location)) = self.mirror(rule, (ri, k), target, *share) {
                mirrors.push(mirror);
                mirror_locs.push(location);
            }
        }
        let proxied = Proxied { ri, set: &set, uri: &uri, mirrors: &mirrors };
        if rule.backends.iter().any(|b| matches!(b.target, Target::Inference(_))) {
            return self.inference_rule(rule, out, &proxied);
        }
        // Backends that need locations of their own: their own filters, or not all speaking
        // the same scheme (one proxy_pass takes one).
        if rule.backends_apart() && rule.backends.len() > 1 {
            return self.backends_apart(rule, &proxied, out);
        }
        if let [only] = &rule.backends[..] {
            // The rule's location (its filters are on the same line): the share has its
            // upstream.
            return self.backend_location(out, loc(), rule, only, &proxied);
        }
        self.split_location(rule, &proxied, out)
    }

    /// `rule` as retried (`--experimental`: its backends' upstreams keep their servers) and
    /// the retry directives; without `--experimental`, a warning.
    fn retried<'r>(&mut self, rule: &'r RulePlan) -> (Cow<'r, RulePlan>, Vec<Node>) {
        match &rule.retry {
            Some(r) if self.experimental && !rule.grpc => {
                let (directives, tries) = self.retry(rule, r);
                let retried = rule.retried(tries);
                for b in &retried.backends {
                    if let Target::Upstream { name, .. } = &b.target {
                        self.no_fail.insert(name.clone());
                    }
                }
                (Cow::Owned(retried), directives)
            }
            Some(_) => {
                self.warnings.push(format!(
                    "{}: retry is an Experimental field; generated only with --experimental",
                    rule.id
                ));
                (Cow::Borrowed(rule), Vec::new())
            }
            None => (Cow::Borrowed(rule), Vec::new()),
        }
    }

    /// The URI sent upstream: the client's own, or the rewritten path (`path`, the
    /// directives that set it); and the directives before the proxy.
    fn upstream_uri(&mut self, rule: &RulePlan, path: Option<Vec<Node>>) -> (Vec<Node>, Vec<Part>) {
        match path {
            Some(set) => (set, vec![var("httproute_path"), var("is_args"), var("args")]),
            // grpc_pass sends the request's current URI, which the internal redirect changed:
            // give it back the client's path.
            None if rule.grpc => {
                self.raw_path = true;
                (
                    vec![d("rewrite").code("^").var("httproute_raw_path").code("break").into()],
                    vec![],
                )
            }
            None => (vec![], vec![var("request_uri")]),
        }
    }

    /// Mirror `k` of rule `ri` to `target` for `share` of its requests: the `mirror`
    /// directive and the mirror's location; `None` for none (no share, or a status).
    fn mirror(
        &mut self,
        rule: &RulePlan,
        (ri, k): (usize, usize),
        target: &Target,
        share: f64,
    ) -> Option<(Node, Node)> {
        if share <= 0.0 {
            return None;
        }
        let (set_backend, host) = self.destination(target)?;
        let path = format!("{INTERNAL_PREFIX}mirror-{ri}-{k}");
        let mirror = d("mirror").code(path.clone()).into();
        let mut inner: Vec<Node> = vec![d("internal").into()];
        // A share below 1 is drawn per request; the others' mirror subrequest ends at once,
        // with no upstream.
        if share < 1.0 {
            let v = self.split_var();
            // NGINX refuses 0.00%: a share below 0.005% is mirrored at 0.01%.
            let pct = percent(((share * 10000.0).round() as u64).clamp(1, 10000));
            self.push_split(
                &v,
                d("split_clients")
                    .arg(Arg::parts(vec![var("request_id"), code("m")]).quoted())
                    .var(v.clone())
                    .block(vec![
                        entry_of(Arg::code(pct), Arg::code("1")),
                        entry_of(Arg::code("*"), empty()),
                    ])
                    .into(),
            );
            inner.push(
                Directive::if_(v, Some(("=", empty())))
                    .inline(vec![d("return").code("204").into()])
                    .into(),
            );
        }
        inner.extend(set_backend);
        if rule.grpc {
            self.raw_path = true;
            inner.push(d("rewrite").code("^").var("httproute_raw_path").code("break").into());
            inner.push(d("grpc_set_header").code("Host").var("host").into());
            inner.push(d("grpc_pass").arg(Arg::parts(vec![code("grpc://"), host])).into());
        } else {
            inner.push(d("proxy_http_version").code("1.1").into());
            inner.push(d("proxy_set_header").code("Host").var("host").into());
            inner.push(d("proxy_set_header").code("Connection").arg(empty()).into());
            inner.push(
                d("proxy_pass")
                    .arg(Arg::parts(vec![code("http://"), host, var("request_uri")]))
                    .into(),
            );
        }
        Some((mirror, d("location").code("=").code(path).inline(inner).into()))
    }

    /// Backends with filters of their own: one location per backend, picked per request by
    /// split_clients and reached with an internal rewrite.
    fn backends_apart(
        &mut self,
        rule: &RulePlan,
        p: &Proxied<'_>,
        out: &mut Vec<Node>,
    ) -> Result<(), String> {
        let ri = p.ri;
        // The entries name the locations (the rule's): a share left out keeps its entry, its
        // location answers 500.
        let shares: Vec<(Arg, u32)> = rule
            .backends
            .iter()
            .enumerate()
            .map(|(k, b)| (Arg::code(format!("b{k}")), b.weight))
            .collect();
        let v = self.split(shares);
        out.push(
            d("location")
                .code("=")
                .code(format!("{INTERNAL_PREFIX}{ri}"))
                .inline(vec![
                    d("internal").into(),
                    d("rewrite")
                        .code("^")
                        .arg(Arg::parts(vec![code(format!("{INTERNAL_PREFIX}{ri}-")), var(v)]))
                        .code("last")
                        .into(),
                ])
                .into(),
        );
        for (k, b) in rule.backends.iter().enumerate() {
            // The backendRef's own location.
            let loc = d("location").code("=").code(format!("{INTERNAL_PREFIX}{ri}-b{k}"));
            self.backend_location(out, loc, rule, b, p)?;
        }
        Ok(())
    }

    /// Several backends sharing the rule's filters: split_clients picks one per request. Its
    /// value is an upstream name, a "host:port" to resolve, "" for a 500 share or "503" for a
    /// 503 share.
    fn split_location(
        &mut self,
        rule: &RulePlan,
        p: &Proxied<'_>,
        out: &mut Vec<Node>,
    ) -> Result<(), String> {
        let mut proxy = self.proxy(rule, &rule.request_headers, &rule.response_headers)?;
        proxy.extend(p.mirrors.iter().cloned());
        let mut unavailable = false;
        let shares: Vec<(Arg, u32)> = rule
            .backends
            .iter()
            .map(|b| {
                let value = match &b.target {
                    Target::Upstream { name, servers } => {
                        self.upstreams.insert(name.clone(), servers.clone());
                        Arg::data("backend upstream name", name.clone())
                    }
                    Target::Resolve(addr) => {
                        self.resolve = true;
                        quoted("backend address", addr.clone())
                    }
                    Target::Status(503) => {
                        unavailable = true;
                        Arg::code("503")
                    }
                    Target::Status(_) | Target::Inference(_) => empty(),
                };
                (value, b.weight)
            })
            .collect();
        let v = self.split(shares);
        let mut inner: Vec<Node> = vec![
            d("internal").into(),
            Directive::if_(v.clone(), Some(("=", empty())))
                .inline(vec![d("return").code("500").into()])
                .into(),
        ];
        if unavailable {
            inner.push(
                Directive::if_(v.clone(), Some(("=", Arg::code("503"))))
                    .inline(vec![d("return").code("503").into()])
                    .into(),
            );
        }
        inner.extend(p.set.iter().cloned());
        inner.extend(proxy);
        inner.push(pass(rule, var(v), p.uri, rule.backends.iter().any(|b| b.tls)));
        let loc = d("location").code("=").code(format!("{INTERNAL_PREFIX}{}", p.ri));
        out.push(loc.inline(inner).into());
        Ok(())
    }

    /// The location `loc` of one backend of a rule: its status, or a proxy with the rule's
    /// header filters followed by the backend's own, `set` (the new path) and `mirrors`.
    pub(super) fn backend_location(
        &mut self,
        out: &mut Vec<Node>,
        loc: Directive,
        rule: &RulePlan,
        b: &crate::plan::Backend,
        p: &Proxied<'_>,
    ) -> Result<(), String> {
        let (set, uri, mirrors) = (p.set, p.uri, p.mirrors);
        match self.destination(&b.target) {
            Some((set_backend, host)) => {
                let (req, resp) = rule.backend_filters(b);
                let proxy = self.proxy(rule, &req, &resp)?;
                // Its exact size: a location per backend of every rule (grown, it would be up
                // to twice its directives).
                let mut inner: Vec<Node> = Vec::with_capacity(
                    2 + set.len()
                        + usize::from(set_backend.is_some())
                        + proxy.len()
                        + mirrors.len(),
                );
                inner.push(d("internal").into());
                inner.extend(set.iter().cloned());
                inner.extend(set_backend);
                inner.extend(proxy);
                inner.extend(mirrors.iter().cloned());
                inner.push(pass(rule, host, uri, b.tls));
                out.push(loc.inline(inner).into());
            }
            None => {
                let code = match b.target {
                    Target::Status(code) => code,
                    _ => 500,
                };
                out.push(
                    loc.inline(vec![
                        d("internal").into(),
                        d("return").code(code.to_string()).into(),
                    ])
                    .into(),
                );
            }
        }
        Ok(())
    }

    /// `retry`: `proxy_next_upstream` on the codes NGINX can retry on, with `tries` attempts
    /// in all (1 + `attempts`, default 2). What NGINX cannot honour is a warning.
    fn retry(&mut self, rule: &RulePlan, r: &crate::model::Retry) -> (Vec<Node>, u32) {
        const CODES: [u16; 7] = [500, 502, 503, 504, 403, 404, 429];
        let at = format!("{}: retry", rule.id);
        let mut when = d("proxy_next_upstream").code("error").code("timeout");
        let mut unsupported = Vec::new();
        for c in &r.codes {
            if CODES.contains(c) {
                when = when.code(format!("http_{c}"));
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
        let tries = crate::plan::retry_tries(r);
        let mut out =
            vec![when.into(), d("proxy_next_upstream_tries").code(tries.to_string()).into()];
        if let Some(ms) = rule.timeout_ms.filter(|ms| *ms > 0) {
            out.push(d("proxy_next_upstream_timeout").code(format!("{ms}ms")).into());
        }
        (out, tries)
    }

    /// Where `proxy_pass` sends a target, and the `set` it needs first: an upstream's name, or
    /// for a name resolved per request a variable holding it (NGINX resolves a `proxy_pass`
    /// host given through a variable when a request needs it, with `resolver`). `None` for a
    /// status.
    fn destination(&mut self, t: &Target) -> Option<(Option<Node>, Part)> {
        match t {
            Target::Upstream { name, servers } => {
                self.upstreams.insert(name.clone(), servers.clone());
                Some((None, data("backend upstream name", name.clone())))
            }
            Target::Resolve(addr) => {
                self.resolve = true;
                let set =
                    d("set").var("httproute_backend").arg(quoted("backend address", addr.clone()));
                Some((Some(set.into()), var("httproute_backend")))
            }
            Target::Status(_) | Target::Inference(_) => None,
        }
    }

    /// Directives that leave the new path (no query) in `$httproute_path`. ReplacePrefixMatch
    /// swaps the matched prefix of the client's raw `$request_uri` path on a segment boundary;
    /// when the raw path does not start with the prefix as written (the client percent-encoded a
    /// character of it), the path stays as the client sent it (`$httproute_raw_path`, a `map`).
    fn set_path(&mut self, p: &PathModifier, prefix: &str, f: Cow<'static, str>) -> Vec<Node> {
        let (replacement, prefix_only) = p.replacement();
        let set = |value: Arg| -> Node { d("set").var("httproute_path").arg(value).into() };
        if !prefix_only {
            return vec![set(quoted(f, replacement))];
        }
        self.raw_path = true;
        let prefix = prefix.trim_end_matches('/').to_owned();
        let match_field = || "HTTPRoute spec.rules[].matches[].path.value (the prefix replaced)";
        // The prefix alone becomes the replacement as written; the prefix and more segments
        // become the replacement (without its trailing `/`) and those segments.
        let whole = quoted(f.clone(), replacement.clone());
        let more = Arg::parts(vec![
            data(f, replacement.trim_end_matches('/').to_owned()),
            braced_var("httproute_rest"),
        ])
        .quoted();
        let re = |tail: &'static str| {
            Arg::parts(vec![code("^"), regex_data(match_field(), prefix.clone()), code(tail)])
                .quoted()
        };
        vec![
            set(Arg::var("httproute_raw_path")),
            Directive::if_("request_uri", Some(("~", re("(\\?|$)"))))
                .inline(vec![set(whole)])
                .into(),
            Directive::if_("request_uri", Some(("~", re("(?<httproute_rest>/[^?]*)"))))
                .inline(vec![set(more)])
                .into(),
        ]
    }

    /// The proxy directives of a rule's internal location, with its header filters.
    pub(super) fn proxy(
        &mut self,
        rule: &RulePlan,
        req: &HeaderModifier,
        resp: &HeaderModifier,
    ) -> Result<Vec<Node>, String> {
        let touched = |n: &str| {
            req.set
                .iter()
                .map(|h| &h.name)
                .chain(req.add.iter().map(|h| &h.name))
                .chain(&req.remove)
                .any(|x| x.eq_ignore_ascii_case(n))
        };
        // gRPC: the same directives of the grpc module, HTTP/2 to the backend.
        let g = rule.grpc;
        let set_header = if g { "grpc_set_header" } else { "proxy_set_header" };
        let mut out: Vec<Node> = Vec::new();
        if !g {
            out.push(d("proxy_http_version").code("1.1").into());
        }
        if !touched("host") {
            match rule.rewrite.as_ref().and_then(|r| r.hostname.as_deref()) {
                Some(h) => out.push(
                    d(set_header)
                        .code("Host")
                        .arg(quoted(field(rule, "URLRewrite hostname"), h))
                        .into(),
                ),
                None => out.push(d(set_header).code("Host").var("host").into()),
            }
        }
        if !touched("connection") && !g {
            // WebSocket and other upgrades pass through (NGINX tunnels after a 101); every
            // other request keeps an empty Connection (keepalive to the backend).
            self.upgrade = true;
            if !touched("upgrade") {
                out.push(d("proxy_set_header").code("Upgrade").var("http_upgrade").into());
            }
            out.push(d("proxy_set_header").code("Connection").var("httproute_connection").into());
        }
        timeouts(g, rule.timeout_ms, &mut out);
        self.header_hash(g, req, resp);
        self.request_headers(rule, req, &mut out);
        self.response_headers(rule, resp, &mut out);
        Ok(out)
    }

    /// Header names NGINX puts in a hash: those set (request) and hidden (response). The
    /// proxy module's bucket size is raised to hold the longest; the grpc module's is fixed
    /// (a longer name refuses the rule in the plan: `plan/words.rs`).
    fn header_hash(&mut self, g: bool, req: &HeaderModifier, resp: &HeaderModifier) {
        let names = req.set.iter().chain(&req.add).map(|h| &h.name).chain(&req.remove);
        let hidden = resp.set.iter().map(|h| &h.name).chain(&resp.remove);
        if !g {
            // proxy_headers_hash_bucket_size is raised to hold it.
            let longest = names.chain(hidden).map(String::len).max().unwrap_or(0);
            self.longest_header = self.longest_header.max(longest);
        }
    }

    /// A RequestHeaderModifier's directives.
    fn request_headers(&mut self, rule: &RulePlan, req: &HeaderModifier, out: &mut Vec<Node>) {
        let set_header = if rule.grpc { "grpc_set_header" } else { "proxy_set_header" };
        let req_name = || field(rule, "RequestHeaderModifier header name");
        let req_value = || field(rule, "RequestHeaderModifier header value");
        let set = |h: &crate::model::HeaderValue| -> Node {
            d(set_header)
                .data(req_name(), h.name.clone())
                .arg(quoted(req_value(), h.value.clone()))
                .into()
        };
        for h in &req.set {
            out.push(set(h));
        }
        for h in &req.add {
            // Gateway API "add" appends to what the client sent: `name: sent,value`, or `value`
            // when the client sent nothing. $http_NAME is the client's value (lines joined).
            let sent = format!("http_{}", h.name.to_ascii_lowercase().replace('-', "_"));
            if !crate::conf::is_var_name(&sent) {
                // NGINX names a request header's variable by letters, digits and `_` only.
                self.warnings.push(format!(
                    "{}: RequestHeaderModifier add {:?}: NGINX has no variable for this \
                     header name, so the client's value cannot be kept: the header is set to the \
                     value alone",
                    rule.id, h.name
                ));
                out.push(set(h));
                continue;
            }
            let v = self.var("add");
            self.push_map(
                &v,
                d("map").var(sent.clone()).var(v.clone()).block(vec![
                    entry_of(empty(), quoted(req_value(), h.value.clone())),
                    entry_of(
                        Arg::code("default"),
                        Arg::parts(vec![
                            braced_var(sent),
                            code(","),
                            data(req_value(), h.value.clone()),
                        ])
                        .quoted(),
                    ),
                ]),
            );
            out.push(d(set_header).data(req_name(), h.name.clone()).var(v).into());
        }
        for n in &req.remove {
            out.push(d(set_header).data(req_name(), n.clone()).arg(empty()).into());
        }
    }
}

impl Http {
    /// A ResponseHeaderModifier's directives.
    fn response_headers(&mut self, rule: &RulePlan, resp: &HeaderModifier, out: &mut Vec<Node>) {
        let hide_header = if rule.grpc { "grpc_hide_header" } else { "proxy_hide_header" };
        let resp_name = || field(rule, "ResponseHeaderModifier header name");
        let resp_value = || field(rule, "ResponseHeaderModifier header value");
        let add_header = |h: &crate::model::HeaderValue| {
            d("add_header")
                .data(resp_name(), h.name.clone())
                .arg(quoted(resp_value(), h.value.clone()))
                .code("always")
                .into()
        };
        for h in &resp.set {
            out.push(d(hide_header).data(resp_name(), h.name.clone()).into());
            out.push(add_header(h));
        }
        for h in &resp.add {
            out.push(add_header(h));
        }
        for n in &resp.remove {
            out.push(d(hide_header).data(resp_name(), n.clone()).into());
        }
    }
}

/// The timeouts of a rule's proxy (`g`: the grpc module's directives).
fn timeouts(g: bool, timeout_ms: Option<u64>, out: &mut Vec<Node>) {
    let (connect, send, read) = if g {
        ("grpc_connect_timeout", "grpc_send_timeout", "grpc_read_timeout")
    } else {
        ("proxy_connect_timeout", "proxy_send_timeout", "proxy_read_timeout")
    };
    match timeout_ms {
        None => {}
        // 0s disables the timeout: NGINX has no "never", a day is the stand-in.
        Some(0) => {
            out.push(d(send).code("1d").into());
            out.push(d(read).code("1d").into());
        }
        Some(ms) => {
            for t in [connect, send, read] {
                out.push(d(t).code(format!("{ms}ms")).into());
            }
        }
    }
}

/// What every proxying location of a rule has: the rule's number, the directives that set
/// the new path (`set`), the URI sent upstream and the mirrors' (and retry, CORS) directives.
pub(super) struct Proxied<'a> {
    pub(super) ri: usize,
    pub(super) set: &'a [Node],
    pub(super) uri: &'a [Part],
    pub(super) mirrors: &'a [Node],
}

/// The Location of a RequestRedirect: scheme, host, port and path, each the filter's or the
/// request's. A port is written only when it is not the scheme's own (80, 443); with no port
/// and no scheme in the filter, it is the listener's.
fn redirect_url(
    r: &RequestRedirect,
    (listener, tls): (u16, bool),
    new_path: bool,
    rule: &RulePlan,
) -> Arg {
    // No scheme: the request's, which is the listener's (HTTPS when it terminates TLS).
    let scheme = r.scheme.as_deref().unwrap_or(if tls { "https" } else { "http" });
    let port = match (r.port, &r.scheme) {
        (Some(p), _) => Some(p),
        (None, Some(_)) => None,
        (None, None) => Some(listener),
    }
    .filter(|p| !matches!((scheme, p), ("http", 80) | ("https", 443)));
    let mut parts = vec![match &r.scheme {
        Some(s) => data(field(rule, "RequestRedirect scheme"), s.clone()),
        None => var("scheme"),
    }];
    parts.push(code("://"));
    parts.push(match &r.hostname {
        Some(h) => data(field(rule, "RequestRedirect hostname"), h.clone()),
        None => var("host"),
    });
    if let Some(p) = port {
        parts.push(code(format!(":{p}")));
    }
    if new_path {
        parts.extend([var("httproute_path"), var("is_args"), var("args")]);
    } else {
        parts.push(var("request_uri"));
    }
    Arg::parts(parts).quoted()
}

/// The directive that sends a rule's request to `host` (an upstream, a variable).
fn pass(rule: &RulePlan, host: Part, uri: &[Part], tls: bool) -> Node {
    let s = if tls { "s" } else { "" };
    if rule.grpc {
        // gRPC keeps the request's own path (/service/method).
        d("grpc_pass").arg(Arg::parts(vec![code(format!("grpc{s}://")), host])).into()
    } else {
        let mut parts = vec![code(format!("http{s}://")), host];
        parts.extend(uri.iter().cloned());
        d("proxy_pass").arg(Arg::parts(parts)).into()
    }
}
