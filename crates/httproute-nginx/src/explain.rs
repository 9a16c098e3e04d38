//! `explain`: which route, rule and match serve a request, and the precedence steps that
//! decided it, computed from the same plan the configuration is generated from, with the same
//! matching engine the module runs.

use std::fmt::Write as _;

use route_match::{Outcome, RequestView, Syntax};

use crate::nginx_request;
use crate::plan::{
    Candidate, Entry, INTERNAL_PREFIX, Left, Loc, LocationPlan, PathKind, Plan, PortPlan, Reason,
    RulePlan, ServerPlan, Target, wildcard_covers,
};

/// A request as a client sends it.
pub struct Request {
    /// The listener port (`None`: the first port).
    pub port: Option<u16>,
    pub method: String,
    /// The `Host` header as sent (empty: none); an absolute `path` names the host instead.
    pub host: String,
    /// The request target as sent: `/path?query` (not decoded: NGINX decodes and normalises
    /// it, see [`crate::nginx_request`]), or `http://host/path?query`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// More of the query (raw, as in the URL), after the target's own.
    pub query: String,
}

/// The request as the locations and the module see it: NGINX's `$uri`, `$args`, the
/// headers it keeps.
struct Seen<'a> {
    method: &'a str,
    uri: Vec<u8>,
    args: Vec<u8>,
    headers: Vec<(&'a str, &'a str)>,
}

impl RequestView for Seen<'_> {
    fn method(&self) -> &[u8] {
        self.method.as_bytes()
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
    }
    fn query(&self) -> &[u8] {
        &self.args
    }
    fn path(&self) -> &[u8] {
        &self.uri
    }
}

/// What `explain` found.
#[derive(Debug)]
pub struct Explanation {
    /// The steps, one a line.
    pub text: String,
    /// The HTTP status NGINX answers: 200 for a backend; 0 for no HTTP answer at all (no
    /// listener on the port, a TLS handshake refused, a gRPC route this NGINX cannot serve
    /// on the port).
    pub status: u16,
    /// For a 200: where the request may go, one of these by weight (a weighted share that
    /// cannot be served is a [`Target::Status`]).
    pub backends: Vec<Target>,
}

/// The plan as the configuration written from it serves: the rules and matches the writer
/// left out (`crate::emit::Output::dropped`: a word NGINX cannot take, a budget, a refusal of
/// `nginx -t`) are taken out of every location's candidates, so that explain does not name a
/// rule that is not served. A whole rule (or route) loses every match; a match, itself; a
/// backendRef share answers 500. Servers the writer leaves out are taken out as NGINX will not
/// have them (as `emit`'s `http` block decides): a dropped listener's servers, and a server
/// only dropped routes bring, so their hosts reach the port's other servers (a wildcard, the
/// catch-all); a port with none of its listeners left is not listened on.
pub fn without_dropped(plan: &mut Plan, dropped: &[crate::plan::Dropped]) {
    if dropped.is_empty() {
        return;
    }
    // What the writer left out, read through the plan's one predicate (`Left`).
    let mut left = Left::default();
    for d in dropped {
        left.add(&d.unit);
    }
    let any_listener = !left.listeners.is_empty();
    let mut changed = false;
    plan.ports.retain_mut(|p| {
        let alive =
            !any_listener || p.servers.iter().any(|s| s.listener.is_some() && !left.listener_of(s));
        let before = p.servers.len();
        let written = |s: &ServerPlan| left.written(s);
        let fallbacks: Vec<_> = p.servers.iter().map(|s| p.fallback_written(s, &written)).collect();
        for (s, fallback) in p.servers.iter_mut().zip(fallbacks) {
            s.fallback = fallback;
        }
        p.servers.retain(|s| left.written(s));
        changed |= !alive || p.servers.len() != before;
        alive
    });
    if changed {
        plan.remerge();
    }
    for server in plan.ports.iter_mut().flat_map(|p| &mut p.servers) {
        let off = left.at(server);
        server.retain_candidates(|c| !off.candidate(c));
        for rule in &mut server.rules {
            if !left.shares.iter().any(|(r, _)| *r == rule.id) {
                continue;
            }
            let id = rule.id.clone();
            for b in &mut std::sync::Arc::make_mut(rule).backends {
                if left.shares.contains(&(id.clone(), b.index)) {
                    b.target = crate::plan::Target::Status(500);
                }
            }
        }
    }
}

/// The plan explain answers from for a generator run with these options: [`crate::plan_for`]
/// with what the writer leaves out taken away ([`without_dropped`]); its warnings are the
/// plan's and the writer's, as generate prints them.
pub fn plan_as_served(
    model: &crate::model::Inputs,
    backends: &crate::BackendMap,
    opts: &crate::Options,
) -> Result<Plan, String> {
    let mut plan = crate::plan_for(model, backends, opts);
    let out = crate::emit::emit_with(&plan, opts, crate::emit::Tree::Drop)?;
    without_dropped(&mut plan, &out.dropped);
    plan.warnings.extend(out.warnings);
    Ok(plan)
}

/// [`plan_as_served`], the configuration checked by the NGINX binary `nginx` as `generate
/// --nginx` checks it ([`crate::nginx_check::emit_checked`], in a scratch directory under the
/// system's temporary one): what NGINX refuses is taken away too (a listener's servers, a
/// route's, a rule's; a Secret NGINX cannot load), so that explain does not answer a host
/// from a server `generate --nginx` left out. `Err` when no configuration that loads comes
/// of it (as `generate --nginx` fails).
pub fn plan_as_checked(
    model: &crate::model::Inputs,
    backends: &crate::BackendMap,
    opts: &crate::Options,
    nginx: &std::path::Path,
) -> Result<Plan, String> {
    let mut plan = crate::plan_for(model, backends, opts);
    // A directory of this run's own (made here, refused if it is there already: the shared
    // temporary directory is anyone's), which the check's scratch directory goes into.
    let private =
        std::env::temp_dir().join(format!("httproute-nginx-explain-{}", std::process::id()));
    let made = {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&private)
    };
    made.map_err(|e| format!("{}: {e}", private.display()))?;
    let checked = crate::nginx_check::emit_checked(
        &mut plan,
        opts,
        crate::emit::Tree::Drop,
        nginx,
        &private.join("out"),
    );
    let _ = std::fs::remove_dir_all(&private);
    let checked = checked?;
    without_dropped(&mut plan, &checked.output.dropped);
    plan.warnings.extend(checked.output.warnings);
    Ok(plan)
}

/// The explanation text and the HTTP status NGINX would answer (200 for a route).
pub fn explain(plan: &Plan, req: &Request) -> (String, u16) {
    let e = explain_request(plan, req);
    (e.text, e.status)
}

/// Which location, route, rule and backend answer `req`, step by step, from `plan` (which
/// must be the plan the configuration was written from: [`crate::plan_for`]).
pub fn explain_request(plan: &Plan, req: &Request) -> Explanation {
    let mut text = String::new();
    match answer(plan, req, &mut text) {
        Ok(backends) => Explanation { text, status: 200, backends },
        Err(status) => Explanation { text, status, backends: Vec::new() },
    }
}

/// The steps of [`explain_request`] into `out`: the backends of a request that reaches its
/// rule's backends, or the status NGINX answers before (`Err`, 0 for none).
fn answer(plan: &Plan, req: &Request, out: &mut String) -> Result<Vec<Target>, u16> {
    let Some(port) = plan.ports.iter().find(|p| req.port.is_none_or(|n| n == p.port)) else {
        out.push_str("no listener on that port: connection refused\n");
        return Err(0);
    };
    let _ = writeln!(out, "1. port {}", port.port);
    let sni_server = handshake(port, req, out)?;
    let (target, host) = request_line(req, out)?;
    let server = server_for(port, &host, sni_server, out)?;
    let seen = seen(req, target, out);
    let shown = String::from_utf8_lossy(&seen.uri);
    let normalised = if seen.uri == req.path.split(['?', '#']).next().unwrap_or("").as_bytes() {
        format!("path {shown:?}")
    } else {
        format!("path {shown:?} (NGINX's $uri for {:?})", req.path)
    };
    let (server, entry, c) = winner(port, server, &seen, &normalised, out)?;
    serve(port, &server.rules[c.rule], entry, c, out)
}

/// The TLS handshake, by SNI (taken to be the Host header, as browsers send it): the server
/// whose certificate it gets (`None` without TLS).
fn handshake<'p>(
    port: &'p PortPlan,
    req: &Request,
    out: &mut String,
) -> Result<Option<&'p ServerPlan>, u16> {
    if !port.tls {
        return Ok(None);
    }
    let sni = nginx_request::validate_host(req.host.as_bytes())
        .unwrap_or_else(|_| req.host.to_ascii_lowercase());
    match select_server(port, &sni) {
        Some(s) if !s.certificates.is_empty() => {
            let _ = writeln!(
                out,
                "   TLS: SNI {sni:?}, certificate of {}",
                s.hostname.as_deref().unwrap_or("(default)")
            );
            Ok(Some(s))
        }
        _ => {
            let _ =
                writeln!(out, "   TLS: no certificate for SNI {sni:?}: the handshake is refused");
            Err(0)
        }
    }
}

/// In NGINX's order: the request line (method, target), the Host header, then the methods it
/// refuses whatever the target. The target and the host the server is chosen by.
fn request_line(req: &Request, out: &mut String) -> Result<(nginx_request::Target, String), u16> {
    let refused = |out: &mut String, e: nginx_request::Refused| {
        let _ =
            writeln!(out, "2. method {:?}: NGINX refuses it ({}): {}", req.method, e.why, e.status);
        e.status
    };
    nginx_request::check_method_syntax(&req.method).map_err(|e| refused(out, e))?;
    let target = nginx_request::parse_target(req.path.as_bytes()).map_err(|e| {
        let _ = writeln!(out, "2. target {:?}: {}: {}", req.path, e.why, e.status);
        e.status
    })?;
    // HTTP/1.1: a Host header, exactly one, valid, even when the target names the host.
    let host = match nginx_request::validate_host(req.host.as_bytes()) {
        _ if req.host.is_empty() => {
            out.push_str("2. no Host header (HTTP/1.1): 400\n");
            return Err(400);
        }
        _ if req.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) => {
            out.push_str("2. client sent duplicate host header: 400\n");
            return Err(400);
        }
        Err(e) => {
            let _ = writeln!(out, "2. Host {:?}: {}: 400", req.host, e.why);
            return Err(400);
        }
        Ok(h) => target.host.clone().unwrap_or(h),
    };
    nginx_request::check_method(&req.method).map_err(|e| refused(out, e))?;
    Ok((target, host))
}

/// The server NGINX picks for `host`, and listener isolation over TLS: a request for a server
/// of another listener than its SNI chose is misdirected.
fn server_for<'p>(
    port: &'p PortPlan,
    host: &str,
    sni_server: Option<&ServerPlan>,
    out: &mut String,
) -> Result<&'p ServerPlan, u16> {
    let Some(server) = select_server(port, host) else {
        out.push_str("no server: 404\n");
        return Err(404);
    };
    let _ = writeln!(
        out,
        "2. host {host:?}: server {} ({})",
        server.hostname.as_deref().unwrap_or("(default)"),
        server.listener.as_ref().map_or("no listener: 404".to_owned(), |l| format!("listener {l}"))
    );
    if sni_server.is_some_and(|s| s.listener_hostname != server.listener_hostname) {
        let _ = writeln!(
            out,
            "   the SNI chose another listener's server ({}): 421 Misdirected Request",
            sni_server.and_then(|s| s.hostname.as_deref()).unwrap_or("(default)")
        );
        return Err(421);
    }
    Ok(server)
}

/// The request as the locations and the module see it: the headers NGINX keeps, the target's
/// query and then `req.query`.
fn seen<'r>(req: &'r Request, target: nginx_request::Target, out: &mut String) -> Seen<'r> {
    let mut headers = Vec::new();
    for (n, v) in &req.headers {
        if nginx_request::header_kept(n) {
            headers.push((n.as_str(), v.as_str()));
        } else {
            let _ = writeln!(
                out,
                "   header {n:?} ignored: NGINX keeps only names of letters, digits and - \
                 (ignore_invalid_headers, underscores_in_headers off)"
            );
        }
    }
    let mut args = target.args;
    if !req.query.is_empty() {
        if !args.is_empty() {
            args.push(b'&');
        }
        args.extend_from_slice(req.query.as_bytes());
    }
    Seen { method: &req.method, uri: target.uri, args, headers }
}

/// The server, entry and candidate that answer: each server a request goes on to when the
/// routes of the one before answer nothing (`http_matches_fallback`) is a less specific
/// hostname of the listener, so at most one per label of the host name and the catch-all.
fn winner<'p>(
    port: &'p PortPlan,
    mut server: &'p ServerPlan,
    seen: &Seen,
    normalised: &str,
    out: &mut String,
) -> Result<(&'p ServerPlan, usize, &'p Candidate), u16> {
    let path = &seen.uri[..];
    loop {
        if is_internal(server, path) {
            let _ = writeln!(out, "3. {normalised}: an internal location of the generator: 404");
            return Err(404);
        }
        let Some(loc) = location(server, path) else {
            let _ = writeln!(out, "3. {normalised}: no location: 404");
            return Err(404);
        };
        describe_location(loc, normalised, out);
        if let Some(entry) = evaluate(loc, seen, out)? {
            let Some(c) = loc.candidates().nth(entry) else {
                let _ = writeln!(out, "4. internal error: no candidate {entry}");
                return Err(500);
            };
            return Ok((server, entry, c));
        }
        let why = if loc.is_empty() { "4. no candidates" } else { "4. no candidate holds" };
        let Some(next) = fallback_of(port, server) else {
            let _ = writeln!(out, "{why}: 404");
            return Err(404);
        };
        let _ = writeln!(
            out,
            "   {why}: on to server {} (http_matches_fallback)",
            next.hostname.as_deref().unwrap_or("(default)")
        );
        server = next;
    }
}

/// The location NGINX picks for `path` among the server's exact and prefix locations.
fn location<'p>(server: &'p ServerPlan, path: &[u8]) -> Option<&'p LocationPlan> {
    let exact = |l: &&LocationPlan| matches!(&l.loc, Loc::Exact(p) if p.as_bytes() == path);
    server.locations.iter().find(exact).or_else(|| {
        server
            .locations
            .iter()
            .filter(|l| matches!(&l.loc, Loc::Prefix(p) if path.starts_with(p.as_bytes())))
            .max_by_key(|l| match &l.loc {
                Loc::Prefix(p) | Loc::Exact(p) => p.len(),
            })
    })
}

/// The location and its candidates, in precedence order.
fn describe_location(loc: &LocationPlan, normalised: &str, out: &mut String) {
    let (kind, p) = match &loc.loc {
        Loc::Exact(p) => ("location =", p),
        Loc::Prefix(p) => ("location", p),
    };
    let _ = writeln!(
        out,
        "3. {normalised}: {kind} {p} with {} candidate(s), in precedence order:",
        loc.len()
    );
    for (i, c) in loc.candidates().enumerate() {
        let kind = match c.path_kind {
            PathKind::Exact => "Exact",
            PathKind::Prefix => "PathPrefix",
            PathKind::Regex => "RegularExpression",
        };
        let _ = writeln!(
            out,
            "   [{i}] {} match {}: host {}, {kind} {}, method {}, {} header(s), {} param(s)",
            c.id,
            c.match_index,
            c.route_hostname.as_deref().unwrap_or("(any)"),
            c.path,
            c.entry.method.as_deref().unwrap_or("(any)"),
            c.entry.headers.len(),
            c.entry.params.len()
        );
    }
}

/// The first candidate of `loc` that holds for `seen`, by the module's own engine.
fn evaluate(loc: &LocationPlan, seen: &Seen, out: &mut String) -> Result<Option<usize>, u16> {
    let list: Vec<&Entry> = loc.candidates().map(|c| &c.entry).collect();
    if list.is_empty() {
        return Ok(None);
    }
    let json = serde_json::to_vec(&list).unwrap_or_default();
    let compiled = route_match::compile_list(&json, Syntax::Typed).map_err(|e| {
        let _ = writeln!(out, "4. internal error: {e}");
        500u16
    })?;
    match compiled.list.evaluate(seen) {
        Outcome::Redirect { entry, .. } => Ok(Some(entry)),
        Outcome::NoMatch => Ok(None),
        Outcome::Error(e) => {
            let _ = writeln!(out, "4. error: {e}: 500");
            Err(500)
        }
    }
}

/// What the winning rule does: refuse gRPC without HTTP/2, redirect, rewrite, then its
/// backends (one status for all of them: that status).
fn serve(
    port: &PortPlan,
    rule: &RulePlan,
    entry: usize,
    c: &Candidate,
    out: &mut String,
) -> Result<Vec<Target>, u16> {
    let _ = writeln!(
        out,
        "4. winner: [{entry}] {}{} match {} (the first candidate whose method, \
         headers and query parameters all hold)",
        c.id,
        rule.rule_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
        c.match_index
    );
    // Before 1.25.1 a plain port speaks one of the two: its oldest route's (see the warnings).
    let unserved = match rule.grpc {
        true if !port.http2 => Some("a GRPCRoute, and this NGINX does not speak HTTP/2"),
        false if !port.http1 => Some("an HTTPRoute, and this NGINX speaks HTTP/2 alone"),
        _ => None,
    };
    if let Some(why) = unserved {
        let _ = writeln!(
            out,
            "5. not served: {why} on port {} (it cannot speak both before 1.25.1; see the \
             warnings)",
            port.port
        );
        return Err(0);
    }
    if let Some(r) = &rule.redirect {
        let _ = writeln!(
            out,
            "5. RequestRedirect filter: {} to {}://{}{}{}",
            r.status_code,
            r.scheme.as_deref().unwrap_or("(request scheme)"),
            r.hostname.as_deref().unwrap_or("(request host)"),
            r.port.map(|p| format!(":{p}")).unwrap_or_default(),
            r.path.as_ref().map_or("(request path)".to_owned(), |p| p.replacement().0),
        );
        return Err(r.status_code);
    }
    if let Some(r) = &rule.rewrite {
        let _ = writeln!(
            out,
            "5. URLRewrite filter: host {}, path {}",
            r.hostname.as_deref().unwrap_or("(unchanged)"),
            r.path.as_ref().map_or("(unchanged)".to_owned(), |p| match p.replacement() {
                (v, true) => format!("prefix {} -> {v}", rule.match_prefix),
                (v, false) => v,
            }),
        );
    }
    if rule.backends.is_empty() {
        out.push_str("5. the rule has no backend: 500\n");
        return Err(500);
    }
    for b in &rule.backends {
        let _ = write!(out, "5. backend {}, weight {}", b.target, b.weight);
        match &b.problem {
            Some((Reason::NoReadyEndpoints, why)) => {
                let _ = write!(out, ": {why}");
            }
            Some((reason, why)) => {
                let _ = write!(out, ": {why} (condition ResolvedRefs=False, {reason})");
            }
            None => {}
        }
        out.push('\n');
    }
    let backends: Vec<Target> = rule.backends.iter().map(|b| b.target.clone()).collect();
    // Every share answered with one status: that status.
    if let Some(Target::Status(code)) = backends.first()
        && backends.iter().all(|t| t == &backends[0])
    {
        return Err(*code);
    }
    Ok(backends)
}

/// The server a request none of `server`'s routes answers goes on in: the one NGINX picks for
/// its fallback name on the port (the plan as served holds the servers written), unless that
/// is `server` itself (the module answers 404 then).
fn fallback_of<'p>(port: &'p PortPlan, server: &ServerPlan) -> Option<&'p ServerPlan> {
    let next = match server.fallback.as_ref()? {
        Some(name) => select_server(port, name)?,
        None => port.servers.iter().find(|s| s.hostname.is_none())?,
    };
    (!std::ptr::eq(next, server)).then_some(next)
}

/// NGINX's server selection: the exact name, then the longest wildcard, then the default
/// server.
fn select_server<'p>(port: &'p PortPlan, host: &str) -> Option<&'p ServerPlan> {
    port.servers
        .iter()
        .find(|s| s.hostname.as_deref() == Some(host))
        .or_else(|| {
            port.servers
                .iter()
                .filter(|s| s.hostname.as_deref().is_some_and(|h| wildcard_covers(h, host)))
                .max_by_key(|s| s.hostname.as_ref().map_or(0, String::len))
        })
        .or_else(|| port.servers.iter().find(|s| s.hostname.is_none()))
}

/// Whether `path` names one of the `location = /_httproute-internal/...` the configuration
/// writes for the server's rules (`N`, `N-bK`, `mirror-N-K`): those are `internal`, a client's
/// request for one is answered 404.
fn is_internal(server: &ServerPlan, path: &[u8]) -> bool {
    let Some(rest) = path.strip_prefix(INTERNAL_PREFIX.as_bytes()) else { return false };
    let Ok(rest) = std::str::from_utf8(rest) else { return false };
    // An InferencePool's inner location (`N-inference`, `N-bK-inference`).
    let rest = rest.strip_suffix("-inference").unwrap_or(rest);
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // A rule index as the generator writes it (no leading zero), of a rule the server uses.
    let used = |ri: &str| {
        ri.parse::<usize>().is_ok_and(|n| {
            n.to_string() == ri
                && server.locations.iter().any(|l| l.candidates().any(|c| c.rule == n))
        })
    };
    if let Some(m) = rest.strip_prefix("mirror-") {
        return m.split_once('-').is_some_and(|(ri, k)| used(ri) && number(k));
    }
    match rest.split_once("-b") {
        Some((ri, k)) => used(ri) && number(k),
        None => used(rest),
    }
}
