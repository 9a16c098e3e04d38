//! Precedence: each match of an attached route becomes a candidate with its Gateway API sort
//! key; the NGINX locations of a server, each with the ordered candidates that can answer a
//! request reaching it (fallback to shorter prefixes, regexes everywhere).

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::{HttpRoute, Match};

use super::entry::{Entry, INTERNAL_PREFIX, REGEX_CONDITION};
use super::ids::{RouteId, RuleId};
use super::types::{Candidate, Loc, LocationPlan, PathKind, ServerPlan, normalize_prefix};

/// Every `q` with `under(p, q)`: `/`, each part of `p` before one of its `/`, and `p`.
fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    let cuts = p.bytes().enumerate().filter(|&(i, b)| i > 0 && b == b'/').map(|(i, _)| &p[..i]);
    std::iter::once("/").chain(cuts).chain((!p.is_empty()).then_some(p))
}

/// (characters of a non-wildcard hostname, characters of the hostname); `None`: any host.
pub(super) fn host_rank(e: &Option<String>) -> (usize, usize) {
    match e {
        None => (0, 0),
        Some(e) if e.starts_with('*') => (0, e.len()),
        Some(e) => (e.len(), e.len()),
    }
}

/// Route `r`'s rules into `server.rules` and its matches into `candidates`, for requests to
/// route hostname `hostname` (after intersection with the listener's). `age`: the route's
/// place by age.
#[allow(clippy::too_many_arguments)]
pub(super) fn add_route(
    r: &HttpRoute,
    age: usize,
    hostname: &Option<String>,
    resolved: &super::backends::ResolvedRoute,
    experimental: bool,
    server: &mut ServerPlan,
    candidates: &mut Vec<Candidate>,
    warnings: &mut Vec<String>,
) {
    let route = RouteId::of(r);
    let (nonwild, chars) = host_rank(hostname);
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        let rule_slot = server.rules.len();
        let refs = &resolved.rules[ri];
        server.rules.push(super::rules::rule_plan(
            &route,
            ri,
            rule,
            refs,
            r.grpc,
            experimental,
            warnings,
        ));
        for (mi, mat) in rule.matches.iter().enumerate() {
            let before = warnings.len();
            let Some(mut c) = candidate(&route, ri, mi, mat, rule_slot, hostname, warnings) else {
                // Recorded on the rule for its route's status (plan/status.rs).
                let why = warnings.get(before).cloned().unwrap_or_default();
                server.rules[rule_slot].skipped_matches.push((mi, why));
                continue;
            };
            let (rank, path_chars) = match (r.grpc, mat.grpc_names) {
                (true, names) => {
                    let (service, method) = names.unwrap_or_default();
                    (0, (usize::from(service), usize::from(method)))
                }
                (false, _) => (c.path_kind.rank(), (c.path.len(), 0)),
            };
            c.key = (
                Reverse(nonwild),
                Reverse(chars),
                rank,
                Reverse(path_chars),
                c.method.is_none(),
                Reverse(c.headers.len()),
                Reverse(c.params.len()),
                age,
                ri,
                mi,
            );
            candidates.push(c);
        }
    }
}

/// Match `mi` of rule `ri` (in slot `rule` of its server) as a candidate, or a warning.
fn candidate(
    route: &RouteId,
    ri: usize,
    mi: usize,
    m: &Match,
    rule: usize,
    hostname: &Option<String>,
    warnings: &mut Vec<String>,
) -> Option<Candidate> {
    let at = || format!("HTTPRoute {route} rules[{ri}].matches[{mi}]");
    // NGINX matches locations against the decoded path: `/my%20path` is `/my path`.
    let mut decoded = || match crate::model::decoded_path(&m.path.value) {
        Ok(p) => Some(p),
        Err(why) => {
            warnings.push(format!(
                "{}: path {:?} {why}: no request can match it; match skipped",
                at(),
                m.path.value
            ));
            None
        }
    };
    let mut condition = None;
    let (path_kind, path) = match m.path.kind.as_str() {
        "Exact" => (PathKind::Exact, decoded()?),
        "PathPrefix" => (PathKind::Prefix, normalize_prefix(&decoded()?)),
        "RegularExpression" => {
            // The condition the module checks, compiled here as the module compiles it.
            let anchored = format!("{REGEX_CONDITION}^(?:{})", m.path.value);
            if let Err(e) = route_match::Pattern::new(&anchored[REGEX_CONDITION.len()..]) {
                warnings.push(format!(
                    "{}: path regular expression {:?} does not compile ({e}); match skipped",
                    at(),
                    m.path.value
                ));
                return None;
            }
            condition = Some(anchored);
            (PathKind::Regex, m.path.value.clone())
        }
        _ => {
            warnings.push(format!(
                "{}: path type {} is not supported yet; match skipped",
                at(),
                m.path.kind
            ));
            return None;
        }
    };
    if path.starts_with(INTERNAL_PREFIX.trim_end_matches('/')) {
        warnings
            .push(format!("{}: paths under {INTERNAL_PREFIX} are reserved; match skipped", at()));
        return None;
    }
    // Compiled as the module compiles them, so that a bad one is a warning here rather than a
    // list the module refuses.
    for (kind, list) in [("headers", &m.headers), ("queryParams", &m.query_params)] {
        for (i, h) in list.iter().enumerate() {
            if h.kind == "RegularExpression"
                && let Err(e) = route_match::Pattern::new(&h.value)
            {
                warnings.push(format!(
                    "{}.{kind}[{i}].value: regular expression {:?} does not compile ({e}); \
                     match skipped",
                    at(),
                    h.value
                ));
                return None;
            }
        }
    }
    let mut headers: Vec<(String, String, String)> = Vec::new();
    for h in &m.headers {
        if !headers.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(&h.name)) {
            headers.push((h.name.clone(), h.kind.clone(), h.value.clone()));
        }
    }
    let mut params: Vec<(String, String, String)> = Vec::new();
    for q in &m.query_params {
        if !params.iter().any(|(n, _, _)| *n == q.name) {
            params.push((q.name.clone(), q.kind.clone(), q.value.clone()));
        }
    }
    let entry = Entry::new(rule, condition, m.method.as_ref(), &headers, &params);
    Some(Candidate {
        rule,
        id: RuleId { route: route.clone(), index: ri },
        match_index: mi,
        path_kind,
        path,
        route_hostname: hostname.clone(),
        method: m.method.clone(),
        headers,
        params,
        entry,
        key: Default::default(),
    })
}

/// NGINX locations for a server's candidates, each with its ordered candidate list; always
/// one `location /`.
pub(super) fn locations(mut candidates: Vec<Candidate>) -> Vec<LocationPlan> {
    candidates.sort_by_key(|c| c.key);
    let candidates: Vec<Arc<Candidate>> = candidates.into_iter().map(Arc::new).collect();
    let mut locs: BTreeSet<Loc> = BTreeSet::new();
    locs.insert(Loc::Prefix("/".into()));
    // The candidates of each path type and value, in precedence order.
    let mut exact: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut prefix: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut regex: Vec<usize> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        match c.path_kind {
            PathKind::Exact => {
                locs.insert(Loc::Exact(c.path.clone()));
                exact.entry(&c.path).or_default().push(i);
            }
            PathKind::Prefix => {
                if c.path != "/" {
                    locs.insert(Loc::Exact(c.path.clone()));
                    locs.insert(Loc::Prefix(format!("{}/", c.path)));
                }
                prefix.entry(&c.path).or_default().push(i);
            }
            // Requests no other location takes reach `location /`.
            PathKind::Regex => regex.push(i),
        }
    }
    locs.into_iter()
        .map(|loc| {
            let mut list: Vec<usize> = regex.clone();
            let p = match &loc {
                Loc::Exact(x) => {
                    list.extend(exact.get(x.as_str()).into_iter().flatten());
                    x.as_str()
                }
                Loc::Prefix(y) => y.trim_end_matches('/'),
            };
            for q in ancestors(p) {
                list.extend(prefix.get(q).into_iter().flatten());
            }
            list.sort_unstable();
            list.dedup();
            debug_assert_eq!(
                list,
                (0..candidates.len())
                    .filter(|&i| loc.covered_by(candidates[i].path_kind, &candidates[i].path))
                    .collect::<Vec<_>>()
            );
            let candidates = list.into_iter().map(|i| Arc::clone(&candidates[i])).collect();
            LocationPlan { loc, candidates }
        })
        .collect()
}
