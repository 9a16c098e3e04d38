//! `explain`: which route, rule and match serve a request, and the precedence steps that
//! decided it, computed from the same plan the configuration is generated from, with the same
//! matching engine the module runs.

use std::fmt::Write as _;

use route_match::{Outcome, RequestView, Syntax};

use crate::plan::{Entry, Loc, PathKind, Plan, Reason, wildcard_covers};

pub struct Request {
    pub port: Option<u16>,
    pub method: String,
    pub host: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub query: String,
}

impl RequestView for Request {
    fn method(&self) -> &[u8] {
        self.method.as_bytes()
    }
    fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
    }
    fn query(&self) -> &[u8] {
        self.query.as_bytes()
    }
    fn path(&self) -> &[u8] {
        self.path.as_bytes()
    }
}

/// The explanation text and the HTTP status NGINX would answer (200 for a route).
pub fn explain(plan: &Plan, req: &Request) -> (String, u16) {
    let mut out = String::new();
    let host = req.host.split(':').next().unwrap_or("").to_ascii_lowercase();
    let Some(port) = plan.ports.iter().find(|p| req.port.is_none_or(|n| n == p.port)) else {
        return ("no listener on that port: connection refused\n".into(), 0);
    };
    let _ = writeln!(out, "1. port {}", port.port);
    // NGINX server selection: exact name, then the longest wildcard, then the default server.
    let server = port
        .servers
        .iter()
        .find(|s| s.hostname.as_deref() == Some(host.as_str()))
        .or_else(|| {
            port.servers
                .iter()
                .filter(|s| s.hostname.as_deref().is_some_and(|h| wildcard_covers(h, &host)))
                .max_by_key(|s| s.hostname.as_ref().map_or(0, String::len))
        })
        .or_else(|| port.servers.iter().find(|s| s.hostname.is_none()));
    let Some(server) = server else { return (out + "no server: 404\n", 404) };
    let _ = writeln!(
        out,
        "2. host {host:?}: server {} ({})",
        server.hostname.as_deref().unwrap_or("(default)"),
        server.listener.as_ref().map_or("no listener: 404".to_owned(), |l| format!("listener {l}"))
    );
    let path = &req.path;
    let loc =
        server.locations.iter().find(|l| matches!(&l.loc, Loc::Exact(p) if p == path)).or_else(
            || {
                server
                    .locations
                    .iter()
                    .filter(|l| matches!(&l.loc, Loc::Prefix(p) if path.starts_with(p.as_str())))
                    .max_by_key(|l| match &l.loc {
                        Loc::Prefix(p) | Loc::Exact(p) => p.len(),
                    })
            },
        );
    let Some(loc) = loc else { return (out + "3. no location: 404\n", 404) };
    let (kind, p) = match &loc.loc {
        Loc::Exact(p) => ("location =", p),
        Loc::Prefix(p) => ("location", p),
    };
    let _ = writeln!(
        out,
        "3. path {path:?}: {kind} {p} with {} candidate(s), in precedence order:",
        loc.candidates.len()
    );
    for (i, c) in loc.candidates.iter().enumerate() {
        let path_desc = match c.path_kind {
            PathKind::Exact => format!("Exact {}", c.path),
            PathKind::Prefix => format!("PathPrefix {}", c.path),
            PathKind::Regex => format!("RegularExpression {}", c.path),
        };
        let _ = writeln!(
            out,
            "   [{i}] {} rule {} match {}: host {}, {path_desc}, method {}, {} header(s), {} param(s)",
            c.route,
            c.rule_index,
            c.match_index,
            c.route_hostname.as_deref().unwrap_or("(any)"),
            c.method.as_deref().unwrap_or("(any)"),
            c.headers.len(),
            c.params.len()
        );
    }
    let list: Vec<&Entry> = loc.candidates.iter().map(|c| &c.entry).collect();
    if list.is_empty() {
        return (out + "4. no candidates: 404\n", 404);
    }
    let json = serde_json::to_vec(&list).unwrap_or_default();
    let compiled = match route_match::compile_list(&json, Syntax::Typed) {
        Ok(c) => c,
        Err(e) => return (out + &format!("4. internal error: {e}\n"), 500),
    };
    match compiled.list.evaluate(req) {
        Outcome::Redirect { entry, .. } => {
            let c = &loc.candidates[entry];
            let rule = &server.rules[c.rule];
            let _ = writeln!(
                out,
                "4. winner: [{entry}] {} rule {}{} match {} (the first candidate whose method, \
                 headers and query parameters all hold)",
                c.route,
                c.rule_index,
                rule.rule_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
                c.match_index
            );
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
                return (out, r.status_code);
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
                let _ = writeln!(out, "5. the rule has no backend: 500");
                return (out, 500);
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
            if let [only] = &rule.backends[..]
                && let crate::plan::Target::Status(code) = only.target
            {
                return (out, code);
            }
            (out, 200)
        }
        Outcome::NoMatch => (out + "4. no candidate holds: 404\n", 404),
        Outcome::Error(e) => (out + &format!("4. error: {e}: 500\n"), 500),
    }
}
