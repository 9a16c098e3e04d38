//! The CRD checks the generator relies on: enums, patterns, CEL rules and length limits.

use super::syntax::path_char;
use super::types::*;

/// CRD checks of a GRPCRoute that its conversion does not make as HTTPRoute checks.
pub(crate) fn validate_grpc(r: &GrpcRoute) -> Result<(), (String, String)> {
    if r.spec.rules.len() > 16 {
        return Err(("spec.rules".into(), "at most 16 rules".into()));
    }
    if r.spec.hostnames.len() > 16 {
        return Err(("spec.hostnames".into(), "at most 16 hostnames".into()));
    }
    for (i, h) in r.spec.hostnames.iter().enumerate() {
        if !valid_hostname(h) {
            return Err((format!("spec.hostnames[{i}]"), format!("invalid hostname {h:?}")));
        }
    }
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        if rule.matches.len() > 64 {
            return Err((format!("spec.rules[{ri}].matches"), "at most 64 matches".into()));
        }
        for (mi, m) in rule.matches.iter().enumerate() {
            let at = format!("spec.rules[{ri}].matches[{mi}]");
            if let Some(mm) = &m.method {
                if !matches!(mm.kind.as_str(), "Exact" | "RegularExpression") {
                    return Err((
                        format!("{at}.method.type"),
                        format!("unknown type {:?}", mm.kind),
                    ));
                }
                let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
                if !given(&mm.service) && !given(&mm.method) {
                    return Err((
                        format!("{at}.method"),
                        "one of service and method must be set".into(),
                    ));
                }
                for (field, v) in [("service", &mm.service), ("method", &mm.method)] {
                    let Some(v) = v else { continue };
                    if v.len() > 1024 {
                        return Err((
                            format!("{at}.method.{field}"),
                            "longer than 1024 characters".into(),
                        ));
                    }
                    if mm.kind == "Exact"
                        && let Some(c) = v.chars().find(|c| *c == '/' || !path_char(*c))
                    {
                        return Err((
                            format!("{at}.method.{field}"),
                            format!("{v:?} has the character {c:?}"),
                        ));
                    }
                }
            }
            if m.headers.len() > 16 {
                return Err((format!("{at}.headers"), "at most 16 entries".into()));
            }
            for (hi, h) in m.headers.iter().enumerate() {
                header_name(&h.name).map_err(|e| (format!("{at}.headers[{hi}].name"), e))?;
                if h.value.is_empty() || h.value.len() > 4096 {
                    return Err((
                        format!("{at}.headers[{hi}].value"),
                        "length must be 1-4096".into(),
                    ));
                }
                if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
                    return Err((
                        format!("{at}.headers[{hi}].type"),
                        format!("unknown match type {:?}", h.kind),
                    ));
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

pub(crate) fn validate_cors(c: &Cors) -> Result<(), (String, String)> {
    for (field, list, max) in [
        ("allowOrigins", &c.allow_origins, 64),
        ("allowMethods", &c.allow_methods, 9),
        ("allowHeaders", &c.allow_headers, 64),
        ("exposeHeaders", &c.expose_headers, 64),
    ] {
        if list.len() > max {
            return Err((field.into(), format!("at most {max} entries")));
        }
        if field != "exposeHeaders" && list.len() > 1 && list.iter().any(|v| v == "*") {
            return Err((field.into(), "\"*\" must be the only entry".into()));
        }
        for (i, v) in list.iter().enumerate() {
            let ok = match field {
                "allowOrigins" => valid_origin(v),
                "allowMethods" => v == "*" || is_method(v),
                _ => header_name(v).is_ok(),
            };
            if !ok {
                return Err((format!("{field}[{i}]"), format!("invalid value {v:?}")));
            }
        }
    }
    if c.max_age == Some(0) {
        return Err(("maxAge".into(), "must be at least 1".into()));
    }
    Ok(())
}

pub(crate) fn validate_allowed(a: &AllowedRoutes) -> Result<(), (String, String)> {
    match a.namespaces.from.as_str() {
        "Same" | "All" => {}
        "Selector" if a.namespaces.selector.is_none() => {
            return Err(("namespaces.selector".into(), "from: Selector needs a selector".into()));
        }
        "Selector" => {}
        f => return Err(("namespaces.from".into(), format!("unknown value {f:?}"))),
    }
    let exprs = a.namespaces.selector.iter().flat_map(|s| s.match_expressions.iter());
    for (i, e) in exprs.enumerate() {
        let field = format!("namespaces.selector.matchExpressions[{i}]");
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err((field + ".values", format!("{} needs values", e.operator)));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => return Err((field + ".operator", format!("unknown operator {op:?}"))),
        }
    }
    Ok(())
}

/// What Kubernetes and the Gateway API CRDs (v1.5, standard channel) require of a Gateway:
/// object name, 1-64 listeners with unique `SectionName` names, a `Hostname`, a port 1-65535,
/// certificate references with valid names.
pub(crate) fn validate_gateway(g: &Gateway) -> Result<(), (String, String)> {
    validate_meta(&g.metadata)?;
    let ls = &g.spec.listeners;
    if ls.is_empty() || ls.len() > 64 {
        return Err(("spec.listeners".into(), "must have 1-64 listeners".into()));
    }
    for (i, l) in ls.iter().enumerate() {
        let at = format!("spec.listeners[{i}]");
        section_name(&l.name).map_err(|e| (format!("{at}.name"), e))?;
        if ls[..i].iter().any(|o| o.name == l.name) {
            return Err((
                format!("{at}.name"),
                format!("{:?}: listener names must be unique", l.name),
            ));
        }
        if let Some(h) = &l.hostname
            && !valid_hostname(h)
        {
            return Err((
                format!("{at}.hostname"),
                format!("invalid hostname {h:?} (lowercase DNS labels, optionally after \"*.\")"),
            ));
        }
        if l.port == 0 {
            return Err((format!("{at}.port"), "must be 1-65535".into()));
        }
        let same = |o: &&Listener| {
            o.port == l.port && o.protocol == l.protocol && o.hostname == l.hostname
        };
        if let Some(o) = ls[..i].iter().find(same) {
            return Err((
                "spec.listeners".into(),
                format!(
                    "Combination of port, protocol and hostname must be unique for each listener \
                     (listeners {:?} and {:?})",
                    o.name, l.name
                ),
            ));
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
pub(crate) fn validate_meta(m: &Meta) -> Result<(), (String, String)> {
    if !is_dns_subdomain(&m.name) {
        return Err((
            "metadata.name".into(),
            format!(
                "{:?} is not a valid name (lowercase RFC 1123 subdomain, at most 253 characters)",
                m.name
            ),
        ));
    }
    namespace(&m.namespace).map_err(|e| ("metadata.namespace".into(), e))
}

/// A Gateway API `SectionName`: listener names, rule names, a parentRef's `sectionName`.
pub(crate) fn section_name(n: &str) -> Result<(), String> {
    if is_dns_subdomain(n) {
        Ok(())
    } else {
        Err(format!(
            "{n:?} is not a valid name (lowercase letters, digits, \"-\" and \".\", at most 253)"
        ))
    }
}

/// A Gateway API `ObjectName`: 1-253 characters.
fn object_name(n: &str) -> Result<(), String> {
    if n.is_empty() || n.len() > 253 { Err("length must be 1-253".into()) } else { Ok(()) }
}

/// A Gateway API `Namespace`: an RFC 1123 label.
fn namespace(n: &str) -> Result<(), String> {
    if is_dns_label(n) {
        Ok(())
    } else {
        Err(format!("{n:?} is not a valid namespace (lowercase RFC 1123 label)"))
    }
}

/// A port the CRDs allow (`PortNumber` with its minimum 1).
fn port(p: Option<u16>, field: impl Fn() -> String) -> Result<(), (String, String)> {
    if p == Some(0) { Err((field(), "must be 1-65535".into())) } else { Ok(()) }
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
fn validate_parents(refs: &[ParentRef]) -> Result<(), (String, String)> {
    if refs.len() > 32 {
        return Err(("spec.parentRefs".into(), "at most 32 entries".into()));
    }
    for (i, p) in refs.iter().enumerate() {
        let at = format!("spec.parentRefs[{i}]");
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

/// A backend reference: name, namespace, port.
fn validate_object_ref(r: &ObjectRef, at: &str) -> Result<(), (String, String)> {
    object_name(&r.name).map_err(|e| (format!("{at}.name"), e))?;
    if let Some(ns) = &r.namespace {
        namespace(ns).map_err(|e| (format!("{at}.namespace"), e))?;
    }
    port(r.port, || format!("{at}.port"))
}

/// CRD validation we rely on: enums, patterns, required shapes and the CRD's length limits.
pub(crate) fn validate_route(r: &HttpRoute) -> Result<(), (String, String)> {
    validate_meta(&r.metadata)?;
    let s = &r.spec;
    validate_parents(&s.parent_refs)?;
    if s.rules.len() > 16 {
        return Err(("spec.rules".into(), format!("{} rules; at most 16", s.rules.len())));
    }
    if s.hostnames.len() > 16 {
        return Err(("spec.hostnames".into(), "at most 16 hostnames".into()));
    }
    for (i, h) in s.hostnames.iter().enumerate() {
        if !valid_hostname(h) {
            return Err((format!("spec.hostnames[{i}]"), format!("invalid hostname {h:?}")));
        }
    }
    for (ri, rule) in s.rules.iter().enumerate() {
        if let Some(n) = &rule.name {
            section_name(n).map_err(|e| (format!("spec.rules[{ri}].name"), e))?;
            if s.rules[..ri].iter().any(|o| o.name.as_ref() == Some(n)) {
                return Err((
                    format!("spec.rules[{ri}].name"),
                    format!("{n:?}: rule names must be unique within the route"),
                ));
            }
        }
        for (bi, b) in rule.backend_refs.iter().enumerate() {
            validate_object_ref(&b.object(), &format!("spec.rules[{ri}].backendRefs[{bi}]"))?;
        }
        if rule.filters.len() > 16 {
            return Err((format!("spec.rules[{ri}].filters"), "at most 16 filters".into()));
        }
        let redirects = rule.filters.iter().filter(|f| f.kind == "RequestRedirect").count();
        let rewrites = rule.filters.iter().filter(|f| f.kind == "URLRewrite").count();
        if redirects > 0 && rewrites > 0 {
            return Err((
                format!("spec.rules[{ri}].filters"),
                "RequestRedirect and URLRewrite cannot both be used in one rule".into(),
            ));
        }
        if rule.filters.iter().filter(|f| f.kind == "CORS").count() > 1 {
            return Err((format!("spec.rules[{ri}].filters"), "at most one CORS filter".into()));
        }
        for (fi, f) in rule.filters.iter().enumerate() {
            let at = format!("spec.rules[{ri}].filters[{fi}]");
            if f.kind == "CORS" {
                let Some(c) = &f.cors else {
                    return Err((format!("{at}.cors"), "required for type CORS".into()));
                };
                validate_cors(c).map_err(|(field, msg)| (format!("{at}.cors.{field}"), msg))?;
            }
            let path = match f.kind.as_str() {
                "RequestRedirect" => {
                    let Some(r) = &f.request_redirect else {
                        return Err((
                            format!("{at}.requestRedirect"),
                            "required for type RequestRedirect".into(),
                        ));
                    };
                    if let Some(sc) =
                        r.scheme.as_deref().filter(|s| !matches!(*s, "http" | "https"))
                    {
                        return Err((
                            format!("{at}.requestRedirect.scheme"),
                            format!("{sc:?}: use http or https"),
                        ));
                    }
                    if !matches!(r.status_code, 301 | 302 | 303 | 307 | 308) {
                        return Err((
                            format!("{at}.requestRedirect.statusCode"),
                            format!("{} is not a redirect status", r.status_code),
                        ));
                    }
                    precise_hostname(r.hostname.as_deref(), || format!("{at}.requestRedirect"))?;
                    port(r.port, || format!("{at}.requestRedirect.port"))?;
                    r.path.as_ref().map(|p| (p, format!("{at}.requestRedirect.path")))
                }
                "URLRewrite" => {
                    let Some(r) = &f.url_rewrite else {
                        return Err((
                            format!("{at}.urlRewrite"),
                            "required for type URLRewrite".into(),
                        ));
                    };
                    precise_hostname(r.hostname.as_deref(), || format!("{at}.urlRewrite"))?;
                    r.path.as_ref().map(|p| (p, format!("{at}.urlRewrite.path")))
                }
                "RequestMirror" => {
                    let Some(m) = &f.request_mirror else {
                        return Err((
                            format!("{at}.requestMirror"),
                            "required for type RequestMirror".into(),
                        ));
                    };
                    validate_object_ref(&m.backend_ref, &format!("{at}.requestMirror.backendRef"))?;
                    if m.percent.is_some_and(|p| p > 100)
                        || m.fraction
                            .as_ref()
                            .is_some_and(|f| f.denominator == 0 || f.numerator > f.denominator)
                    {
                        return Err((
                            format!("{at}.requestMirror"),
                            "percent must be 0-100, a fraction at most 1".into(),
                        ));
                    }
                    None
                }
                _ => None,
            };
            if let Some((p, field)) = path {
                let (value, field) = match p.kind.as_str() {
                    "ReplaceFullPath" => (&p.replace_full_path, format!("{field}.replaceFullPath")),
                    "ReplacePrefixMatch" => {
                        // The CRD's own rule: the prefix to replace must be unambiguous.
                        let one_prefix =
                            rule.matches.len() == 1 && rule.matches[0].path.kind == "PathPrefix";
                        if !one_prefix {
                            return Err((
                                field,
                                "ReplacePrefixMatch needs exactly one match, of type PathPrefix"
                                    .into(),
                            ));
                        }
                        (&p.replace_prefix_match, format!("{field}.replacePrefixMatch"))
                    }
                    k => {
                        return Err((
                            format!("{field}.type"),
                            format!("unknown path modifier {k:?}"),
                        ));
                    }
                };
                let Some(v) = value else { return Err((field, "required".into())) };
                if v.len() > 1024 {
                    return Err((field, "longer than 1024 characters".into()));
                }
            }
            let (field, m) = match f.kind.as_str() {
                "RequestHeaderModifier" => ("requestHeaderModifier", &f.request_header_modifier),
                "ResponseHeaderModifier" => ("responseHeaderModifier", &f.response_header_modifier),
                _ => continue,
            };
            let Some(m) = m else {
                return Err((format!("{at}.{field}"), format!("required for type {}", f.kind)));
            };
            validate_modifier(m).map_err(|(f, msg)| (format!("{at}.{field}.{f}"), msg))?;
        }
        if rule.matches.len() > 64 {
            return Err((format!("spec.rules[{ri}].matches"), "at most 64 matches".into()));
        }
        for (mi, m) in rule.matches.iter().enumerate() {
            let at = format!("spec.rules[{ri}].matches[{mi}]");
            match m.path.kind.as_str() {
                "Exact" | "PathPrefix" | "RegularExpression" => {}
                k => return Err((format!("{at}.path.type"), format!("unknown path type {k:?}"))),
            }
            let v = &m.path.value;
            if v.len() > 1024 {
                return Err((format!("{at}.path.value"), "longer than 1024 characters".into()));
            }
            if m.path.kind != "RegularExpression" {
                if !v.starts_with('/') {
                    return Err((format!("{at}.path.value"), format!("{v:?} must start with /")));
                }
                if let Some(why) = path_problem(v) {
                    return Err((format!("{at}.path.value"), format!("{v:?} {why}")));
                }
            }
            for (kind, list, name_max, value_max) in
                [("headers", &m.headers, 256, 4096), ("queryParams", &m.query_params, 256, 1024)]
            {
                if list.len() > 16 {
                    return Err((format!("{at}.{kind}"), "at most 16 entries".into()));
                }
                for (i, h) in list.iter().enumerate() {
                    let f = format!("{at}.{kind}[{i}]");
                    if !matches!(h.kind.as_str(), "Exact" | "RegularExpression") {
                        return Err((
                            format!("{f}.type"),
                            format!("unknown match type {:?}", h.kind),
                        ));
                    }
                    if h.name.is_empty() || h.name.len() > name_max {
                        return Err((format!("{f}.name"), format!("length must be 1-{name_max}")));
                    }
                    // Query parameter names are `HTTPHeaderName`s too.
                    if !h.name.bytes().all(header_token) {
                        let what = if kind == "headers" { "header" } else { "query parameter" };
                        return Err((
                            format!("{f}.name"),
                            format!("invalid {what} name {:?}", h.name),
                        ));
                    }
                    if h.value.is_empty() || h.value.len() > value_max {
                        return Err((
                            format!("{f}.value"),
                            format!("length must be 1-{value_max}"),
                        ));
                    }
                }
            }
            if let Some(method) = &m.method {
                if !is_method(method) {
                    return Err((format!("{at}.method"), format!("unknown method {method:?}")));
                }
            }
        }
        if let Some(r) = &rule.retry {
            let at = format!("spec.rules[{ri}].retry");
            if let Some(c) = r.codes.iter().find(|c| !(400..=599).contains(*c)) {
                return Err((format!("{at}.codes"), format!("{c} is not a status code 400-599")));
            }
            if r.attempts == Some(0) {
                return Err((format!("{at}.attempts"), "must be at least 1".into()));
            }
            if let Some(b) = &r.backoff
                && duration_ms(b).is_none()
            {
                return Err((format!("{at}.backoff"), format!("{b:?} is not a duration")));
            }
        }
        if let Some(t) = &rule.timeouts {
            let at = format!("spec.rules[{ri}].timeouts");
            let mut ms = [None, None];
            for (i, (field, v)) in
                [("request", &t.request), ("backendRequest", &t.backend_request)].iter().enumerate()
            {
                if let Some(v) = v {
                    ms[i] = Some(duration_ms(v).ok_or_else(|| {
                        (
                            format!("{at}.{field}"),
                            format!("{v:?} is not a duration like 1h30m or 500ms"),
                        )
                    })?);
                }
            }
            // The CRD's rule: a backend request cannot outlast the whole request.
            if let [Some(request), Some(backend)] = ms
                && request != 0
                && (backend == 0 || backend > request)
            {
                return Err((
                    format!("{at}.backendRequest"),
                    "must not be greater than timeouts.request".into(),
                ));
            }
        }
        for (bi, b) in rule.backend_refs.iter().enumerate() {
            if b.filters.len() > 16 {
                return Err((
                    format!("spec.rules[{ri}].backendRefs[{bi}].filters"),
                    "at most 16 filters".into(),
                ));
            }
            for (fi, f) in b.filters.iter().enumerate() {
                let at = format!("spec.rules[{ri}].backendRefs[{bi}].filters[{fi}]");
                let (field, m) = match f.kind.as_str() {
                    "RequestHeaderModifier" => {
                        ("requestHeaderModifier", &f.request_header_modifier)
                    }
                    "ResponseHeaderModifier" => {
                        ("responseHeaderModifier", &f.response_header_modifier)
                    }
                    _ => continue,
                };
                let Some(m) = m else {
                    return Err((format!("{at}.{field}"), format!("required for type {}", f.kind)));
                };
                if b.filters[..fi].iter().any(|o| o.kind == f.kind) {
                    return Err((at, format!("at most one {} per backendRef", f.kind)));
                }
                validate_modifier(m).map_err(|(f, msg)| (format!("{at}.{field}.{f}"), msg))?;
            }
            if b.weight > 1_000_000 {
                return Err((
                    format!("spec.rules[{ri}].backendRefs[{bi}].weight"),
                    "at most 1000000".into(),
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn header_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A filter's `hostname`, if any: a hostname without wildcard.
pub(crate) fn precise_hostname(
    h: Option<&str>,
    at: impl Fn() -> String,
) -> Result<(), (String, String)> {
    match h {
        Some(h) if !valid_hostname(h) || h.starts_with('*') => {
            Err((format!("{}.hostname", at()), format!("invalid hostname {h:?}")))
        }
        _ => Ok(()),
    }
}

pub(crate) fn validate_modifier(m: &HeaderModifier) -> Result<(), (String, String)> {
    for (kind, list) in [("set", &m.set), ("add", &m.add)] {
        if list.len() > 16 {
            return Err((kind.into(), "at most 16 entries".into()));
        }
        for (i, h) in list.iter().enumerate() {
            header_name(&h.name).map_err(|e| (format!("{kind}[{i}].name"), e))?;
            if h.value.len() > 4096 {
                return Err((format!("{kind}[{i}].value"), "longer than 4096 characters".into()));
            }
            if list[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&h.name)) {
                return Err((format!("{kind}[{i}].name"), format!("{:?} appears twice", h.name)));
            }
        }
    }
    if m.remove.len() > 16 {
        return Err(("remove".into(), "at most 16 entries".into()));
    }
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
    match n.chars().find(|c| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(*c))) {
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
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
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
    for (bad, what) in [("//", "\"//\""), ("/./", "\"/./\""), ("/../", "\"/../\"")] {
        if v.contains(bad) {
            return Some(format!("has {what}"));
        }
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
