//! Precedence: each match of an attached route becomes a candidate with its Gateway API sort
//! key; the NGINX locations of a server, each with the ordered candidates that can answer a
//! request reaching it (fallback to shorter prefixes, regexes everywhere).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use crate::model::{HttpRoute, Match, ValueMatch};

use super::entry::{Entry, INTERNAL_PREFIX, REGEX_CONDITION};
use super::ids::{RouteId, RuleId};
use super::segments::{block, runs};
use super::types::{
    Candidate, Loc, LocationPlan, PathKind, RulePlan, ServerPlan, host_rank, normalize_prefix,
};

/// Every `q` with `under(p, q)`: `/`, each part of `p` before one of its `/`, and `p`.
fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    let cuts = p.bytes().enumerate().filter(|&(i, b)| i > 0 && b == b'/').map(|(i, _)| &p[..i]);
    std::iter::once("/").chain(cuts).chain((!p.is_empty()).then_some(p))
}

/// A route's rules and matches, checked once and shared by every server the route lands on:
/// its rule plans, and the matches that can be served (rule, match, the path type's rank and
/// path characters of their sort key, and the candidate as built). Each server the route
/// serves takes a copy of them ([`add_route`]), its last one the candidates themselves: the
/// model is not needed to make them again.
#[derive(Clone, Default)]
pub(super) struct RouteRules {
    rules: Vec<Arc<RulePlan>>,
    matches: Vec<Served>,
}

/// A match that can be served: (rule, match, rank, path characters, the candidate as built).
type Served = (usize, usize, u8, (usize, usize), Candidate);

/// Whether each regular expression compiles (why not, if not), by pattern: each distinct
/// pattern is compiled once per plan, however many matches of however many routes hold it.
#[derive(Default)]
pub(super) struct Compiled(HashMap<String, Result<(), String>>);

impl Compiled {
    fn check(&mut self, pattern: &str) -> Result<(), String> {
        if let Some(known) = self.0.get(pattern) {
            return known.clone();
        }
        let known = route_match::Pattern::new(pattern).map(drop);
        self.0.insert(pattern.to_owned(), known.clone());
        known
    }
}

/// Route `r`'s [`RouteRules`]: each rule planned, each match checked and its regexes
/// compiled once (`compiled`), whatever the number of servers it serves. A skipped match is
/// recorded on its rule.
pub(super) fn route_rules(
    r: &HttpRoute,
    route: &RouteId,
    resolved: &super::references::ResolvedRoute,
    experimental: bool,
    compiled: &mut Compiled,
    warnings: &mut Vec<String>,
) -> RouteRules {
    let mut rules = Vec::with_capacity(r.spec.rules.len());
    let mut matches = Vec::new();
    for (ri, rule) in r.spec.rules.iter().enumerate() {
        let refs = &resolved.rules[ri];
        let mut plan =
            super::rules::rule_plan(route, ri, rule, refs, r.grpc, experimental, warnings);
        for (mi, mat) in rule.matches.iter().enumerate() {
            let before = warnings.len();
            let Some(c) = candidate(route, ri, mi, mat, compiled, warnings) else {
                // Recorded on the rule for its route's status (plan/status.rs).
                let why = warnings.get(before).cloned().unwrap_or_default();
                plan.skipped_matches.push((mi, why));
                continue;
            };
            let (rank, path_chars) = match (r.grpc, mat.grpc_names) {
                (true, names) => {
                    let (service, method) = names.unwrap_or_default();
                    (0, (usize::from(service), usize::from(method)))
                }
                (false, _) => (c.path_kind.rank(), (c.path.len(), 0)),
            };
            matches.push((ri, mi, rank, path_chars, c));
        }
        rules.push(Arc::new(plan));
    }
    RouteRules { rules, matches }
}

/// A route's rules (planned once, shared: `planned`) into `server.rules` and its matches
/// into `candidates`, for requests to route hostname `hostname` (after intersection with the
/// listener's). `age`: the route's place by age. `planned` is taken, and the route's
/// candidates moved, by its last server (it is left empty); the others copy them.
pub(super) fn add_route(
    planned: &mut RouteRules,
    last: bool,
    age: usize,
    hostname: &Option<Arc<str>>,
    server: &mut ServerPlan,
    candidates: &mut Vec<Candidate>,
) {
    let (nonwild, chars) = host_rank(hostname.as_deref());
    let first_slot = server.rules.len();
    let planned = if last { std::mem::take(planned) } else { planned.clone() };
    server.rules.extend(planned.rules);
    for (ri, mi, rank, path_chars, mut c) in planned.matches {
        let slot = first_slot + ri;
        c.rule = slot;
        c.entry.slot = slot;
        c.route_hostname.clone_from(hostname);
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        c.key = (
            Reverse(n(nonwild)),
            Reverse(n(chars)),
            rank,
            Reverse((n(path_chars.0), n(path_chars.1))),
            c.entry.method.is_none(),
            Reverse(n(c.entry.headers.len())),
            Reverse(n(c.entry.params.len())),
            n(age),
            n(ri),
            n(mi),
        );
        candidates.push(c);
    }
}

/// Match `mi` of rule `ri` as a candidate (in slot `ri` of no server, for no hostname:
/// [`add_route`] places it), or a warning.
fn candidate(
    route: &RouteId,
    ri: usize,
    mi: usize,
    m: &Match,
    compiled: &mut Compiled,
    warnings: &mut Vec<String>,
) -> Option<Candidate> {
    let (path_kind, path, condition) = match usable(m, compiled) {
        Ok(p) => p,
        Err(why) => {
            let kind = route.kind;
            warnings.push(format!("{kind} {route} rules[{ri}].matches[{mi}]{why}; match skipped"));
            return None;
        }
    };
    let headers = firsts(&m.headers, |a, b| a.eq_ignore_ascii_case(b));
    let params = firsts(&m.query_params, |a, b| a == b);
    let entry = Entry::new(ri, condition, m.method.as_deref(), &headers, &params);
    Some(Candidate {
        rule: ri,
        id: RuleId { route: route.clone(), index: ri },
        match_index: mi,
        path_kind,
        path,
        route_hostname: None,
        entry,
        key: Default::default(),
    })
}

/// A match's path kind, path and the regex condition the module checks, or why no request
/// can match it (to follow the match's place in a warning). Regexes are compiled as the
/// module compiles them, so that a bad one is a warning here rather than a list the module
/// refuses.
fn usable(
    m: &Match,
    compiled: &mut Compiled,
) -> Result<(PathKind, String, Option<String>), String> {
    let value = &m.path.value;
    // NGINX matches locations against the decoded path: `/my%20path` is `/my path`.
    let decoded = || {
        crate::model::decoded_path(value)
            .map_err(|why| format!(": path {value:?} {why}: no request can match it"))
    };
    let (kind, path, condition) = match m.path.kind.as_str() {
        "Exact" => (PathKind::Exact, decoded()?, None),
        "PathPrefix" => (PathKind::Prefix, normalize_prefix(&decoded()?), None),
        "RegularExpression" => {
            let anchored = format!("{REGEX_CONDITION}^(?:{value})");
            compiled.check(&anchored[REGEX_CONDITION.len()..]).map_err(|e| {
                format!(": path regular expression {value:?} does not compile ({e})")
            })?;
            (PathKind::Regex, value.clone(), Some(anchored))
        }
        _ => return Err(format!(": path type {} is not supported yet", m.path.kind)),
    };
    if path.starts_with(INTERNAL_PREFIX.trim_end_matches('/')) {
        return Err(format!(": paths under {INTERNAL_PREFIX} are reserved"));
    }
    for (kind, list) in [("headers", &m.headers), ("queryParams", &m.query_params)] {
        for (i, h) in list.iter().enumerate() {
            if h.kind == "RegularExpression"
                && let Err(e) = compiled.check(&h.value)
            {
                let v = &h.value;
                return Err(format!(
                    ".{kind}[{i}].value: regular expression {v:?} does not compile ({e})"
                ));
            }
        }
    }
    Ok((kind, path, condition))
}

/// The first of each name in `list` (names the same by `same`): name, type, value.
fn firsts(list: &[ValueMatch], same: impl Fn(&str, &str) -> bool) -> Vec<&ValueMatch> {
    let mut out: Vec<&ValueMatch> = Vec::new();
    for h in list {
        if !out.iter().any(|o| same(&o.name, &h.name)) {
            out.push(h);
        }
    }
    out
}

/// NGINX locations for a server's candidates, each with its ordered candidate list as runs of
/// the server's blocks ([`super::segments`]); always one `location /`. Each candidate is held
/// once, in its block; a location holds a run per block its list takes, so the plan grows with
/// the candidates and the locations, not with their product.
pub(super) fn locations(mut candidates: Vec<Candidate>) -> Vec<LocationPlan> {
    candidates.sort_by_key(|c| c.key);
    // The block of each candidate (in precedence order within each), and the blocks of each
    // path type and value.
    // (Sized once: a block or path per candidate at the most.)
    let n = candidates.len();
    let mut exact: HashMap<String, Vec<usize>> = HashMap::with_capacity(n);
    let mut prefix: HashMap<String, Vec<usize>> = HashMap::with_capacity(n);
    let mut regex: Vec<usize> = Vec::new();
    let mut of: Vec<usize> = Vec::with_capacity(n);
    let mut count = 0;
    {
        let mut index: HashMap<((usize, usize), u8, &str), usize> = HashMap::with_capacity(n);
        for c in &candidates {
            let b = *index.entry(block(c)).or_insert_with(|| {
                count += 1;
                match c.path_kind {
                    PathKind::Exact => exact.entry(c.path.clone()).or_default().push(count - 1),
                    PathKind::Prefix => prefix.entry(c.path.clone()).or_default().push(count - 1),
                    PathKind::Regex => regex.push(count - 1),
                }
                count - 1
            });
            of.push(b);
        }
    }
    // `location /`, each exact path's, each prefix's own and its subtree's, once each, in
    // order. Requests no other location takes (a regex path's) reach `location /`.
    let mut locs = vec![Loc::Prefix("/".into())];
    locs.extend(exact.keys().cloned().map(Loc::Exact));
    for p in prefix.keys().filter(|p| *p != "/") {
        locs.extend([Loc::Exact(p.clone()), Loc::Prefix([p.as_str(), "/"].concat())]);
    }
    locs.sort_unstable();
    locs.dedup();
    let mut blocks: Vec<Vec<Candidate>> = (0..count).map(|_| Vec::new()).collect();
    for (c, b) in candidates.into_iter().zip(of) {
        blocks[b].push(c);
    }
    let blocks: Vec<Arc<[Candidate]>> = blocks.into_iter().map(Into::into).collect();
    locs.into_iter()
        .map(|loc| {
            let mut taken: Vec<usize> = regex.clone();
            let p = match &loc {
                Loc::Exact(x) => {
                    taken.extend(exact.get(x.as_str()).into_iter().flatten());
                    x.as_str()
                }
                Loc::Prefix(y) => y.trim_end_matches('/'),
            };
            for q in ancestors(p) {
                taken.extend(prefix.get(q).into_iter().flatten());
            }
            let segments = runs(&blocks, taken);
            let location = LocationPlan { loc, segments };
            debug_assert!(
                location.candidates().all(|c| location.loc.covered_by(c.path_kind, &c.path))
            );
            debug_assert_eq!(
                location.len(),
                blocks
                    .iter()
                    .flat_map(|b| b.iter())
                    .filter(|c| location.loc.covered_by(c.path_kind, &c.path))
                    .count()
            );
            location
        })
        .collect()
}
