//! Rules: what a rule does once it is chosen: its filters (header modifiers, redirect,
//! rewrite, mirrors, CORS), timeouts and retry, and each backendRef's target and weight.

use crate::model::{Filter, HeaderModifier, Retry, Rule, Timeouts};

use super::backends::Resolved;
use super::ids::{RouteId, RuleId};
use super::references::ResolvedRule;
use super::status::Reason;
use super::types::{Backend, Modifier, RulePlan, Target, normalize_prefix};

/// The plan of rule `ri` of route `route`, from its references as resolved once
/// (`resolved`); `grpc`: the route is a GRPCRoute. What cannot be used is a warning.
pub(super) fn rule_plan(
    route: &RouteId,
    ri: usize,
    rule: &Rule,
    resolved: &ResolvedRule,
    grpc: bool,
    experimental: bool,
    warnings: &mut Vec<String>,
) -> RulePlan {
    let at = || format!("{} {route} rules[{ri}]", route.kind);
    let retry = match &rule.retry {
        Some(_) if !experimental => {
            warnings.push(format!(
                "{route} rule {ri}: retry is an Experimental field; generated only with \
                 --experimental"
            ));
            None
        }
        r => r.clone(),
    };
    let request_headers = modifier(&rule.filters, Kind::Request, &at, warnings);
    let response_headers = modifier(&rule.filters, Kind::Response, &at, warnings);
    RulePlan {
        match_count: rule.matches.len(),
        skipped_matches: Vec::new(),
        id: RuleId { route: route.clone(), index: ri },
        rule_name: rule.name.clone(),
        request_headers,
        response_headers,
        redirect: rule.filters.iter().find_map(|f| f.request_redirect.clone()).map(Box::new),
        rewrite: rule.filters.iter().find_map(|f| f.url_rewrite.clone()).map(Box::new),
        match_prefix: rule
            .matches
            .first()
            .map(|m| normalize_prefix(&m.path.value))
            .unwrap_or_default(),
        mirrors: mirrors(rule, &resolved.mirrors, &at, warnings),
        backends: backends(rule, &resolved.backends, &at, warnings),
        cors: rule.filters.iter().find_map(|f| f.cors.clone()).map(Box::new),
        grpc,
        retry,
        timeout_ms: rule.timeouts.as_deref().and_then(timeout_ms),
    }
}

/// The time a request may take: the shorter of `request` and `backendRequest` (0: none).
fn timeout_ms(t: &Timeouts) -> Option<u64> {
    let ms = |v: &Option<String>| v.as_deref().and_then(crate::model::duration_ms);
    match (ms(&t.request), ms(&t.backend_request)) {
        (None, None) => None,
        (Some(a), Some(b)) if a != 0 && b != 0 => Some(a.min(b)),
        (Some(0), Some(b)) | (Some(b), Some(0)) | (Some(b), None) | (None, Some(b)) => Some(b),
        (Some(a), Some(_)) => Some(a),
    }
}

/// The rule's RequestMirror filters that can be mirrored to: target and share.
fn mirrors(
    rule: &Rule,
    resolved: &[Resolved],
    at: &impl Fn() -> String,
    warnings: &mut Vec<String>,
) -> Vec<(Target, f64)> {
    let mut out = Vec::new();
    let mirrors = rule.filters.iter().filter_map(|f| f.request_mirror.as_ref());
    for ((mi, m), outcome) in mirrors.enumerate().zip(resolved) {
        let why = match outcome.clone().map(|(t, _)| t) {
            Ok(t @ (Target::Upstream { .. } | Target::Resolve(_))) => {
                out.push((t, m.share()));
                continue;
            }
            Ok(Target::Status(_)) => "the Service has no ready endpoints; not mirrored".to_owned(),
            Ok(Target::Inference(_)) => "an InferencePool is not mirrored to".to_owned(),
            Err((_, why)) => format!("{why}; not mirrored"),
        };
        warnings.push(format!("{}: RequestMirror {mi}: {why}", at()));
    }
    out
}

/// The rule's backendRefs of non-zero weight: each one's target, or the status its share
/// answers and why.
fn backends(
    rule: &Rule,
    resolved: &[Resolved],
    at: &impl Fn() -> String,
    warnings: &mut Vec<String>,
) -> Vec<Backend> {
    // Its exact size: a Backend is large, and a rule has a few (grown, 4 at first).
    let mut out = Vec::with_capacity(rule.backend_refs.iter().filter(|b| b.weight != 0).count());
    for ((bi, b), outcome) in rule.backend_refs.iter().enumerate().zip(resolved) {
        if b.weight == 0 {
            continue;
        }
        let at = || format!("{}.backendRefs[{bi}]", at());
        let tls = outcome.as_ref().is_ok_and(|(_, tls)| *tls);
        let (target, problem) = match outcome.clone().map(|(t, _)| t) {
            Ok(Target::Status(code)) => {
                let what = if b.kind.as_deref() == Some("InferencePool") {
                    "InferencePool"
                } else {
                    "Service"
                };
                let why = format!("{what} {} has no ready endpoints", b.name);
                warnings.push(format!("{}: {why}; its share of requests answers {code}", at()));
                (Target::Status(code), Some((Reason::NoReadyEndpoints, why)))
            }
            Ok(t) => (t, None),
            Err((reason, why)) => {
                warnings.push(format!("{}: {why}; its share of requests answers 500", at()));
                (Target::Status(500), Some((reason, why)))
            }
        };
        out.push(Backend {
            index: bi,
            target,
            tls,
            weight: b.weight,
            request_headers: modifier(&b.filters, Kind::Request, &at, warnings),
            response_headers: modifier(&b.filters, Kind::Response, &at, warnings),
            problem,
        });
    }
    out
}

/// Which header modifier filter.
#[derive(Clone, Copy)]
enum Kind {
    Request,
    Response,
}

/// The filter of type `kind` among `filters` (the CRD allows one of each header modifier per
/// rule and per backendRef). A value with a control character (the CRD bounds only its
/// length) would split the header it is written into: that entry is left out, with a warning
/// that starts with `at()`.
fn modifier(
    filters: &[Filter],
    kind: Kind,
    at: &dyn Fn() -> String,
    warnings: &mut Vec<String>,
) -> Modifier {
    let name = match kind {
        Kind::Request => "RequestHeaderModifier",
        Kind::Response => "ResponseHeaderModifier",
    };
    let mut m = filters
        .iter()
        .find(|f| f.kind == name)
        .and_then(|f| match kind {
            Kind::Request => f.request_header_modifier.clone(),
            Kind::Response => f.response_header_modifier.clone(),
        })
        .unwrap_or_default();
    for (op, list) in [("set", &mut m.set), ("add", &mut m.add)] {
        list.retain(|h| {
            let bad = h.value.chars().find(|c| c.is_control() && *c != '\t');
            if let Some(c) = bad {
                warnings.push(format!(
                    "{}: {name} {op} {}: the value has the control character {c:?}; left out",
                    at(),
                    h.name
                ));
            }
            bad.is_none()
        });
    }
    Modifier::of(m)
}

impl RulePlan {
    /// Whether each backendRef is written in a location of its own (when the rule has
    /// several): one has header filters of its own, or they do not all speak the same scheme
    /// (one `proxy_pass` takes one).
    pub fn backends_apart(&self) -> bool {
        self.backends.iter().any(|b| modifies(&b.request_headers) || modifies(&b.response_headers))
            || self.backends.iter().any(|b| b.tls) && !self.backends.iter().all(|b| b.tls)
    }

    /// The (request, response) header filters of backend `b`'s location: the rule's, then
    /// `b`'s own ([`merge`]).
    pub fn backend_filters(&self, b: &Backend) -> (HeaderModifier, HeaderModifier) {
        (
            merge(&self.request_headers, &b.request_headers),
            merge(&self.response_headers, &b.response_headers),
        )
    }

    /// The rule with `retry` honoured in `tries` attempts in all ([`retry_tries`]): NGINX
    /// retries on the next server of the upstream, so each fixed address is listed once per
    /// try (a backend with one endpoint is retried too), in an upstream of its own named
    /// `NAME_rTRIES`.
    pub fn retried(&self, tries: u32) -> RulePlan {
        RulePlan {
            backends: self
                .backends
                .iter()
                .map(|b| {
                    let mut b = b.clone();
                    if let Target::Upstream { name, servers } = &b.target {
                        let name = format!("{name}_r{tries}");
                        b.target = Target::Upstream {
                            name,
                            servers: servers
                                .iter()
                                .flat_map(|s| std::iter::repeat_n(s.clone(), tries as usize))
                                .collect::<Vec<_>>()
                                .into(),
                        };
                    }
                    b
                })
                .collect(),
            ..self.clone()
        }
    }
}

/// The attempts of a `retry` in all: 1 + `attempts` (default 2 in all), at most 100.
pub fn retry_tries(r: &Retry) -> u32 {
    r.attempts.map_or(2, |a| a.saturating_add(1)).min(100)
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
