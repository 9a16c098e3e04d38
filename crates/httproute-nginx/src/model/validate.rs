//! The CRD checks the generator relies on: enums, patterns, CEL rules and length limits.

use std::fmt;

use super::syntax::path_char;
use super::types::*;

/// A field path and what is wrong with it.
type Check = Result<(), (String, String)>;

/// A field path, written out only when a check fails: `{parent}.{name}`, then `[{index}]`.
#[derive(Clone, Copy)]
struct At<'a> {
    parent: Option<&'a At<'a>>,
    name: &'a str,
    index: Option<usize>,
}

impl<'a> At<'a> {
    /// `{name}[{i}]` at the root.
    fn root(name: &'a str, i: usize) -> Self {
        At { parent: None, name, index: Some(i) }
    }

    /// `{self}.{name}`.
    fn field(&'a self, name: &'a str) -> Self {
        At { parent: Some(self), name, index: None }
    }

    /// `{self}.{name}[{i}]`.
    fn item(&'a self, name: &'a str, i: usize) -> Self {
        At { parent: Some(self), name, index: Some(i) }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.parent {
            write!(f, "{p}.")?;
        }
        f.write_str(self.name)?;
        match self.index {
            Some(i) => write!(f, "[{i}]"),
            None => Ok(()),
        }
    }
}

/// `Err((field, why))`.
fn bad<T>(field: impl Into<String>, why: impl Into<String>) -> Result<T, (String, String)> {
    Err((field.into(), why.into()))
}

/// CRD checks of a GRPCRoute that its conversion does not make as HTTPRoute checks.
pub(crate) fn validate_grpc(r: &GrpcRoute) -> Check {
    at_most(&r.spec.rules, 16, || "spec.rules".into(), "rules")?;
    validate_hostnames(&r.spec.hostnames)?;
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        let rule_at = At::root("spec.rules", ri);
        // HTTPRoute's filters the GRPCRoute CRD's enum leaves out (and that would be applied).
        let http_only = ["RequestRedirect", "URLRewrite", "CORS"];
        if let Some(fi) = rule.filters.iter().position(|f| http_only.contains(&f.kind.as_str())) {
            return bad(
                format!("{}.type", rule_at.item("filters", fi)),
                format!("{:?} is not a GRPCRoute filter type", rule.filters[fi].kind),
            );
        }
        at_most(&rule.matches, 64, || format!("{rule_at}.matches"), "matches")?;
        for (mi, m) in rule.matches.iter().enumerate() {
            let at = rule_at.item("matches", mi);
            if let Some(mm) = &m.method {
                if !matches!(mm.kind.as_str(), "Exact" | "RegularExpression") {
                    return bad(format!("{at}.method.type"), format!("unknown type {:?}", mm.kind));
                }
                let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
                if !given(&mm.service) && !given(&mm.method) {
                    return bad(format!("{at}.method"), "one of service and method must be set");
                }
                for (field, v) in [("service", &mm.service), ("method", &mm.method)] {
                    let Some(v) = v else { continue };
                    if v.len() > 1024 {
                        return bad(format!("{at}.method.{field}"), "longer than 1024 characters");
                    }
                    if mm.kind == "Exact"
                        && let Some(c) = v.chars().find(|c| *c == '/' || !path_char(*c))
                    {
                        return bad(
                            format!("{at}.method.{field}"),
                            format!("{v:?} has the character {c:?}"),
                        );
                    }
                }
            }
            at_most(&m.headers, 16, || format!("{at}.headers"), "entries")?;
            for (hi, h) in m.headers.iter().enumerate() {
                header_name(&h.name).map_err(|e| (format!("{at}.headers[{hi}].name"), e))?;
                if h.value.is_empty() || h.value.len() > 4096 {
                    return bad(format!("{at}.headers[{hi}].value"), "length must be 1-4096");
                }
                if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
                    return bad(
                        format!("{at}.headers[{hi}].type"),
                        format!("unknown match type {:?}", h.kind),
                    );
                }
            }
        }
    }
    Ok(())
}

/// Whether `o` is an origin the CRD allows in `allowOrigins`: `*`, or
/// `http(s)://HOST[:PORT]` where HOST is `*`, `*.name` or a name.
pub(crate) fn valid_origin(o: &str) -> bool {
    if o == "*" {
        return true;
    }
    let Some(rest) = o.strip_prefix("https://").or_else(|| o.strip_prefix("http://")) else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let name = host.strip_prefix("*.").unwrap_or(host);
    let label =
        |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    port_ok && (host == "*" || name.split('.').all(label))
}

pub(crate) fn validate_cors(c: &Cors) -> Check {
    for (field, list, max) in [
        ("allowOrigins", &c.allow_origins, 64),
        ("allowMethods", &c.allow_methods, 9),
        ("allowHeaders", &c.allow_headers, 64),
        ("exposeHeaders", &c.expose_headers, 64),
    ] {
        at_most(list, max, || field.into(), "entries")?;
        if field != "exposeHeaders" && list.len() > 1 && list.iter().any(|v| v == "*") {
            return bad(field, "\"*\" must be the only entry");
        }
        for (i, v) in list.iter().enumerate() {
            let ok = match field {
                "allowOrigins" => valid_origin(v),
                "allowMethods" => v == "*" || is_method(v),
                _ => header_name(v).is_ok(),
            };
            if !ok {
                return bad(format!("{field}[{i}]"), format!("invalid value {v:?}"));
            }
        }
    }
    if c.max_age == Some(0) {
        return bad("maxAge", "must be at least 1");
    }
    Ok(())
}

pub(crate) fn validate_allowed(a: &AllowedRoutes) -> Check {
    match a.namespaces.from.as_str() {
        "Same" | "All" => {}
        "Selector" if a.namespaces.selector.is_none() => {
            return bad("namespaces.selector", "from: Selector needs a selector");
        }
        "Selector" => {}
        f => return bad("namespaces.from", format!("unknown value {f:?}")),
    }
    let exprs = a.namespaces.selector.iter().flat_map(|s| s.match_expressions.iter());
    for (i, e) in exprs.enumerate() {
        let field = format!("namespaces.selector.matchExpressions[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return bad(field + ".values", format!("{} needs values", e.operator));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => return bad(field + ".operator", format!("unknown operator {op:?}")),
        }
    }
    Ok(())
}

/// What Kubernetes and the Gateway API CRDs (v1.5, standard channel) require of a Gateway:
/// object name, 1-64 listeners with unique `SectionName` names, a `Hostname`, a port 1-65535,
/// certificate references with valid names.
pub(crate) fn validate_gateway(g: &Gateway) -> Check {
    validate_meta(&g.metadata)?;
    let ls = &g.spec.listeners;
    if ls.is_empty() || ls.len() > 64 {
        return bad("spec.listeners", "must have 1-64 listeners");
    }
    for (i, l) in ls.iter().enumerate() {
        let at = format!("spec.listeners[{i}]");
        section_name(&l.name).map_err(|e| (format!("{at}.name"), e))?;
        if ls[..i].iter().any(|o| o.name == l.name) {
            return bad(
                format!("{at}.name"),
                format!("{:?}: listener names must be unique", l.name),
            );
        }
        if let Some(h) = &l.hostname
            && !valid_hostname(h)
        {
            return bad(
                format!("{at}.hostname"),
                format!("invalid hostname {h:?} (lowercase DNS labels, optionally after \"*.\")"),
            );
        }
        if l.port == 0 {
            return bad(format!("{at}.port"), "must be 1-65535");
        }
        let same = |o: &&Listener| {
            o.port == l.port && o.protocol == l.protocol && o.hostname == l.hostname
        };
        if let Some(o) = ls[..i].iter().find(same) {
            return bad(
                "spec.listeners",
                format!(
                    "Combination of port, protocol and hostname must be unique for each listener (listeners {:?} and {:?})",
                    o.name, l.name
                ),
            );
        }
        for (ci, c) in l.tls.iter().flat_map(|t| t.certificate_refs.iter()).enumerate() {
            let at = format!("{at}.tls.certificateRefs[{ci}]");
            object_name(&c.name).map_err(|e| (format!("{at}.name"), e))?;
            if let Some(ns) = &c.namespace {
                namespace(ns).map_err(|e| (format!("{at}.namespace"), e))?;
            }
        }
    }
    Ok(())
}

/// `metadata`: a name Kubernetes accepts for these objects (an RFC 1123 subdomain) and a
/// namespace (an RFC 1123 label); a creationTimestamp was parsed as RFC 3339 already.
pub(crate) fn validate_meta(m: &Meta) -> Check {
    if !is_dns_subdomain(&m.name) {
        return bad(
            "metadata.name",
            format!(
                "{:?} is not a valid name (lowercase RFC 1123 subdomain, at most 253 characters)",
                m.name
            ),
        );
    }
    namespace(&m.namespace).map_err(|e| ("metadata.namespace".into(), e))
}

/// A Gateway API `SectionName`: listener names, rule names, a parentRef's `sectionName`.
pub(crate) fn section_name(n: &str) -> Result<(), String> {
    let why = || {
        format!(
            "{n:?} is not a valid name (lowercase letters, digits, \"-\" and \".\", at most 253)"
        )
    };
    is_dns_subdomain(n).then_some(()).ok_or_else(why)
}

/// A Gateway API `ObjectName`: 1-253 characters.
fn object_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 253 { Err("length must be 1-253".into()) } else { Ok(()) }
}

/// A Gateway API `Namespace`: an RFC 1123 label.
fn namespace(n: &str) -> Result<(), String> {
    let why = || format!("{n:?} is not a valid namespace (lowercase RFC 1123 label)");
    is_dns_label(n).then_some(()).ok_or_else(why)
}

/// A port the CRDs allow (`PortNumber` with its minimum 1).
fn port(p: Option<u16>, field: impl Fn() -> String) -> Check {
    if p == Some(0) { bad(field(), "must be 1-65535") } else { Ok(()) }
}

/// The pattern of `SectionName` and of Kubernetes object names (RFC 1123 subdomain):
/// dot-separated labels of lowercase letters, digits and `-`, not starting or ending with
/// `-`; 1-253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// `parentRefs` (at most 32): names, namespaces, section names and ports as the CRD has them.
fn validate_parents(refs: &[ParentRef]) -> Check {
    at_most(refs, 32, || "spec.parentRefs".into(), "entries")?;
    for (i, p) in refs.iter().enumerate() {
        let at = At::root("spec.parentRefs", i);
        object_name(&p.name).map_err(|e| (format!("{at}.name"), e))?;
        if let Some(ns) = &p.namespace {
            namespace(ns).map_err(|e| (format!("{at}.namespace"), e))?;
        }
        if let Some(s) = &p.section_name {
            section_name(s).map_err(|e| (format!("{at}.sectionName"), e))?;
        }
        port(p.port, || format!("{at}.port"))?;
    }
    Ok(())
}

/// A backend reference's name, namespace and port.
fn validate_object_ref(name: &str, ns: Option<&str>, p: Option<u16>, at: At) -> Check {
    object_name(name).map_err(|e| (format!("{at}.name"), e))?;
    if let Some(ns) = ns {
        namespace(ns).map_err(|e| (format!("{at}.namespace"), e))?;
    }
    port(p, || format!("{at}.port"))
}

/// `field` holds at most `max` items.
fn at_most<T>(list: &[T], max: usize, field: impl Fn() -> String, what: &str) -> Check {
    if list.len() > max {
        return bad(field(), format!("at most {max} {what}"));
    }
    Ok(())
}

/// `spec.hostnames`: at most 16, each a valid hostname (HTTPRoute and GRPCRoute alike).
fn validate_hostnames(hostnames: &[String]) -> Check {
    at_most(hostnames, 16, || "spec.hostnames".into(), "hostnames")?;
    for (i, h) in hostnames.iter().enumerate() {
        if !valid_hostname(h) {
            return bad(format!("spec.hostnames[{i}]"), format!("invalid hostname {h:?}"));
        }
    }
    Ok(())
}

/// CRD validation we rely on: enums, patterns, required shapes and the CRD's length limits.
pub(crate) fn validate_route(r: &HttpRoute) -> Check {
    validate_meta(&r.metadata)?;
    let s = &r.spec;
    validate_parents(&s.parent_refs)?;
    if s.rules.len() > 16 {
        return bad("spec.rules", format!("{} rules; at most 16", s.rules.len()));
    }
    validate_hostnames(&s.hostnames)?;
    for (ri, rule) in s.rules.iter().enumerate() {
        let at = At::root("spec.rules", ri);
        if let Some(n) = &rule.name {
            section_name(n).map_err(|e| (format!("{at}.name"), e))?;
            if s.rules[..ri].iter().any(|o| o.name.as_ref() == Some(n)) {
                return bad(
                    format!("{at}.name"),
                    format!("{n:?}: rule names must be unique within the route"),
                );
            }
        }
        for (bi, b) in rule.backend_refs.iter().enumerate() {
            let (ns, p) = (b.namespace.as_deref(), b.port);
            validate_object_ref(&b.name, ns, p, at.item("backendRefs", bi))?;
        }
        validate_rule_filters(rule, at)?;
        at_most(&rule.matches, 64, || format!("{at}.matches"), "matches")?;
        for (mi, m) in rule.matches.iter().enumerate() {
            validate_match(m, at.item("matches", mi))?;
        }
        if let Some(r) = &rule.retry {
            validate_retry(r, at.field("retry"))?;
        }
        if let Some(t) = &rule.timeouts {
            validate_timeouts(t, at.field("timeouts"))?;
        }
        for (bi, b) in rule.backend_refs.iter().enumerate() {
            validate_backend_filters(b, at.item("backendRefs", bi))?;
        }
    }
    Ok(())
}

/// A rule's `filters`: counts, the combinations the CRD refuses, then each filter.
fn validate_rule_filters(rule: &Rule, at: At) -> Check {
    at_most(&rule.filters, 16, || format!("{at}.filters"), "filters")?;
    let count = |kind: &str| rule.filters.iter().filter(|f| f.kind == kind).count();
    if count("RequestRedirect") > 0 && count("URLRewrite") > 0 {
        return bad(
            format!("{at}.filters"),
            "RequestRedirect and URLRewrite cannot both be used in one rule",
        );
    }
    if count("CORS") > 1 {
        return bad(format!("{at}.filters"), "at most one CORS filter");
    }
    for (fi, f) in rule.filters.iter().enumerate() {
        validate_rule_filter(rule, f, at.item("filters", fi))?;
    }
    Ok(())
}

/// The field `field` of a filter of type `kind`, required for that type.
fn required<'a, T>(
    v: &'a Option<T>,
    at: At,
    field: &str,
    kind: &str,
) -> Result<&'a T, (String, String)> {
    v.as_ref().ok_or_else(|| (format!("{at}.{field}"), format!("required for type {kind}")))
}

/// One filter of a rule, by its type.
fn validate_rule_filter(rule: &Rule, f: &Filter, at: At) -> Check {
    let path = match f.kind.as_str() {
        "CORS" => {
            let c = required(&f.cors, at, "cors", "CORS")?;
            validate_cors(c).map_err(|(field, msg)| (format!("{at}.cors.{field}"), msg))?;
            None
        }
        "RequestRedirect" => {
            let r = required(&f.request_redirect, at, "requestRedirect", "RequestRedirect")?;
            validate_redirect(r, at.field("requestRedirect"))?;
            r.path.as_ref().map(|p| (p, "requestRedirect"))
        }
        "URLRewrite" => {
            let r = required(&f.url_rewrite, at, "urlRewrite", "URLRewrite")?;
            precise_hostname(r.hostname.as_deref(), || format!("{at}.urlRewrite"))?;
            r.path.as_ref().map(|p| (p, "urlRewrite"))
        }
        "RequestMirror" => {
            let m = required(&f.request_mirror, at, "requestMirror", "RequestMirror")?;
            validate_mirror(m, at.field("requestMirror"))?;
            None
        }
        _ => {
            if let Some((field, m)) = modifier_of(f, at)? {
                validate_modifier_at(m, at, field)?;
            }
            None
        }
    };
    match path {
        Some((p, field)) => validate_path_modifier(rule, p, at.field(field).field("path")),
        None => Ok(()),
    }
}

/// A `RequestRedirect`: scheme, status code, hostname and port.
fn validate_redirect(r: &RequestRedirect, at: At) -> Check {
    if let Some(sc) = r.scheme.as_deref().filter(|s| !matches!(*s, "http" | "https")) {
        return bad(format!("{at}.scheme"), format!("{sc:?}: use http or https"));
    }
    if !matches!(r.status_code, 301 | 302 | 303 | 307 | 308) {
        return bad(
            format!("{at}.statusCode"),
            format!("{} is not a redirect status", r.status_code),
        );
    }
    precise_hostname(r.hostname.as_deref(), || at.to_string())?;
    port(r.port, || format!("{at}.port"))
}

/// A `RequestMirror`: its backend and a share of at most all requests.
fn validate_mirror(m: &RequestMirror, at: At) -> Check {
    let r = &m.backend_ref;
    validate_object_ref(&r.name, r.namespace.as_deref(), r.port, at.field("backendRef"))?;
    let bad_fraction =
        m.fraction.as_ref().is_some_and(|f| f.denominator == 0 || f.numerator > f.denominator);
    if m.percent.is_some_and(|p| p > 100) || bad_fraction {
        return bad(at.to_string(), "percent must be 0-100, a fraction at most 1");
    }
    Ok(())
}

/// A redirect's or rewrite's `path`, at `field`.
fn validate_path_modifier(rule: &Rule, p: &PathModifier, at: At) -> Check {
    let (value, field) = match p.kind.as_str() {
        "ReplaceFullPath" => (&p.replace_full_path, at.field("replaceFullPath")),
        "ReplacePrefixMatch" => {
            // The CRD's own rule: the prefix to replace must be unambiguous.
            let one_prefix = rule.matches.len() == 1 && rule.matches[0].path.kind == "PathPrefix";
            if !one_prefix {
                return bad(
                    at.to_string(),
                    "ReplacePrefixMatch needs exactly one match, of type PathPrefix",
                );
            }
            (&p.replace_prefix_match, at.field("replacePrefixMatch"))
        }
        k => return bad(format!("{at}.type"), format!("unknown path modifier {k:?}")),
    };
    let Some(v) = value else { return bad(field.to_string(), "required") };
    if v.len() > 1024 {
        return bad(field.to_string(), "longer than 1024 characters");
    }
    Ok(())
}

/// A header modifier filter's field name and modifier (required), or `None` for other types.
fn modifier_of<'a>(
    f: &'a Filter,
    at: At,
) -> Result<Option<(&'static str, &'a HeaderModifier)>, (String, String)> {
    let (field, m) = match f.kind.as_str() {
        "RequestHeaderModifier" => ("requestHeaderModifier", &f.request_header_modifier),
        "ResponseHeaderModifier" => ("responseHeaderModifier", &f.response_header_modifier),
        _ => return Ok(None),
    };
    Ok(Some((field, required(m, at, field, &f.kind)?)))
}

/// A header modifier's entries, at `{at}.{field}`.
fn validate_modifier_at(m: &HeaderModifier, at: At, field: &str) -> Check {
    validate_modifier(m).map_err(|(f, msg)| (format!("{at}.{field}.{f}"), msg))
}

/// One entry of a rule's `matches`: path, headers, query parameters and method.
fn validate_match(m: &Match, at: At) -> Check {
    match m.path.kind.as_str() {
        "Exact" | "PathPrefix" | "RegularExpression" => {}
        k => return bad(format!("{at}.path.type"), format!("unknown path type {k:?}")),
    }
    let v = &m.path.value;
    if v.len() > 1024 {
        return bad(format!("{at}.path.value"), "longer than 1024 characters");
    }
    if m.path.kind != "RegularExpression" {
        if !v.starts_with('/') {
            return bad(format!("{at}.path.value"), format!("{v:?} must start with /"));
        }
        if let Some(why) = path_problem(v) {
            return bad(format!("{at}.path.value"), format!("{v:?} {why}"));
        }
    }
    for (kind, list, name_max, value_max) in
        [("headers", &m.headers, 256, 4096), ("queryParams", &m.query_params, 256, 1024)]
    {
        at_most(list, 16, || format!("{at}.{kind}"), "entries")?;
        for (i, h) in list.iter().enumerate() {
            validate_value_match(h, at.item(kind, i), kind, name_max, value_max)?;
        }
    }
    if let Some(method) = &m.method
        && !is_method(method)
    {
        return bad(format!("{at}.method"), format!("unknown method {method:?}"));
    }
    Ok(())
}

/// A header or query parameter match: type, name and value lengths.
fn validate_value_match(
    h: &ValueMatch,
    f: At,
    kind: &str,
    name_max: usize,
    value_max: usize,
) -> Check {
    if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
        return bad(format!("{f}.type"), format!("unknown match type {:?}", h.kind));
    }
    if h.name.is_empty() || h.name.len() > name_max {
        return bad(format!("{f}.name"), format!("length must be 1-{name_max}"));
    }
    // Query parameter names are `HTTPHeaderName`s too.
    if !h.name.bytes().all(header_token) {
        let what = if kind == "headers" { "header" } else { "query parameter" };
        return bad(format!("{f}.name"), format!("invalid {what} name {:?}", h.name));
    }
    if h.value.is_empty() || h.value.len() > value_max {
        return bad(format!("{f}.value"), format!("length must be 1-{value_max}"));
    }
    Ok(())
}

/// A rule's `retry`: codes 400-599, at least one attempt, a backoff duration.
fn validate_retry(r: &Retry, at: At) -> Check {
    if let Some(c) = r.codes.iter().find(|c| !(400..=599).contains(*c)) {
        return bad(format!("{at}.codes"), format!("{c} is not a status code 400-599"));
    }
    if r.attempts == Some(0) {
        return bad(format!("{at}.attempts"), "must be at least 1");
    }
    if let Some(b) = &r.backoff
        && duration_ms(b).is_none()
    {
        return bad(format!("{at}.backoff"), format!("{b:?} is not a duration"));
    }
    Ok(())
}

/// A rule's `timeouts`: durations, the backend request within the request.
fn validate_timeouts(t: &Timeouts, at: At) -> Check {
    let mut ms = [None, None];
    for (i, (field, v)) in
        [("request", &t.request), ("backendRequest", &t.backend_request)].iter().enumerate()
    {
        if let Some(v) = v {
            ms[i] = Some(duration_ms(v).ok_or_else(|| {
                (format!("{at}.{field}"), format!("{v:?} is not a duration like 1h30m or 500ms"))
            })?);
        }
    }
    // The CRD's rule: a backend request cannot outlast the whole request.
    if let [Some(request), Some(backend)] = ms
        && request != 0
        && (backend == 0 || backend > request)
    {
        return bad(format!("{at}.backendRequest"), "must not be greater than timeouts.request");
    }
    Ok(())
}

/// A backendRef's filters (header modifiers, one of each type) and weight.
fn validate_backend_filters(b: &BackendRef, at: At) -> Check {
    at_most(&b.filters, 16, || format!("{at}.filters"), "filters")?;
    for (fi, f) in b.filters.iter().enumerate() {
        let fat = at.item("filters", fi);
        let Some((field, m)) = modifier_of(f, fat)? else { continue };
        if b.filters[..fi].iter().any(|o| o.kind == f.kind) {
            return bad(fat.to_string(), format!("at most one {} per backendRef", f.kind));
        }
        validate_modifier_at(m, fat, field)?;
    }
    if b.weight > 1_000_000 {
        return bad(format!("{at}.weight"), "at most 1000000");
    }
    Ok(())
}

/// RFC 9110 token characters: what a header name is made of.
pub(crate) fn header_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A filter's `hostname`, if any: a hostname without wildcard.
pub(crate) fn precise_hostname(h: Option<&str>, at: impl Fn() -> String) -> Check {
    match h {
        Some(h) if !valid_hostname(h) || h.starts_with('*') => {
            bad(format!("{}.hostname", at()), format!("invalid hostname {h:?}"))
        }
        _ => Ok(()),
    }
}

pub(crate) fn validate_modifier(m: &HeaderModifier) -> Check {
    for (kind, list) in [("set", &m.set), ("add", &m.add)] {
        at_most(list, 16, || kind.into(), "entries")?;
        for (i, h) in list.iter().enumerate() {
            header_name(&h.name).map_err(|e| (format!("{kind}[{i}].name"), e))?;
            if h.value.len() > 4096 {
                return bad(format!("{kind}[{i}].value"), "longer than 4096 characters");
            }
            if list[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&h.name)) {
                return bad(format!("{kind}[{i}].name"), format!("{:?} appears twice", h.name));
            }
        }
    }
    at_most(&m.remove, 16, || "remove".into(), "entries")?;
    for (i, n) in m.remove.iter().enumerate() {
        header_name(n).map_err(|e| (format!("remove[{i}]"), e))?;
    }
    Ok(())
}

/// An HTTP header name as the CRD allows it (RFC 9110 token, 1-256 characters).
pub(crate) fn header_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 256 {
        return Err("length must be 1-256".into());
    }
    match n.chars().find(|c| !u8::try_from(*c).is_ok_and(header_token)) {
        Some(c) => Err(format!("{n:?} has the character {c:?}")),
        None => Ok(()),
    }
}

/// What the HTTPRoute CRD (v1.2 and later, standard channel) refuses in an `Exact` or
/// `PathPrefix` value, besides its length and leading `/`: characters outside RFC 3986
/// pchar and `/` other than `%XX` escapes, an escaped `/` (`%2F`), and `//`, `/./`, `/../`,
/// `#`, or a final `/.` or `/..`.
pub(crate) fn path_problem(v: &str) -> Option<String> {
    let b = v.as_bytes();
    // Whether "//", "/./" and "/../" occur, found in the same pass; reported in this order.
    let mut has = [false; 3];
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '/' {
            let rest = &b[i + 1..];
            has = [
                has[0] || rest.starts_with(b"/"),
                has[1] || rest.starts_with(b"./"),
                has[2] || rest.starts_with(b"../"),
            ];
        }
        if c == '%' {
            let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
            let Some(hex) = hex else {
                return Some("has a \"%\" that is not followed by two hexadecimal digits".into());
            };
            if hex.eq_ignore_ascii_case(b"2f") {
                return Some("has an escaped \"/\" (%2F)".into());
            }
            i += 3;
            continue;
        }
        if !path_char(c) {
            let c = v[i..].chars().next().unwrap_or(c);
            return Some(format!("has the character {c:?}"));
        }
        i += 1;
    }
    if let Some((_, what)) = has.iter().zip(["\"//\"", "\"/./\"", "\"/../\""]).find(|(h, _)| **h) {
        return Some(format!("has {what}"));
    }
    if v.ends_with("/.") || v.ends_with("/..") {
        return Some("ends with a \".\" or \"..\" segment".into());
    }
    None
}

/// A path value as NGINX matches it (`$uri`): `%XX` escapes decoded. `Err` when the decoded
/// path is not something NGINX ever matches a location against (a NUL or other control
/// byte, or bytes that are not UTF-8, which nginx.conf text here cannot carry).
pub fn decoded_path(v: &str) -> Result<String, String> {
    if !v.contains('%') {
        return Ok(v.to_owned());
    }
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    if let Some(c) = out.iter().find(|c| c.is_ascii_control()) {
        return Err(format!("decodes to the control character 0x{c:02x}"));
    }
    String::from_utf8(out).map_err(|_| "does not decode to UTF-8".to_owned())
}

pub fn valid_hostname(h: &str) -> bool {
    let rest = h.strip_prefix("*.").unwrap_or(h);
    !rest.is_empty() && h.len() <= 253 && rest.split('.').all(is_dns_label)
}

/// An RFC 1123 label (lowercase): what Kubernetes allows as a Service or namespace name, and
/// each label of a Gateway API hostname.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS host name: dot-separated labels of letters (either case), digits and `-`, at most
/// 253 bytes (no final dot).
pub fn is_host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The HTTP methods the CRD's `HTTPMethod` enum allows.
fn is_method(m: &str) -> bool {
    matches!(
        m,
        "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE" | "PATCH"
    )
}
