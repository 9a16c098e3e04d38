//! What tenants share in NGINX, budgeted before anything is written: an object whose share
//! does not fit is refused, newest first (Gateway API's conflict order, [`Ages`]), so a newer
//! object never evicts an older one, and NGINX never refuses the configuration for it.
//!
//! | resource | rule |
//! |----------|------|
//! | server names in NGINX's hashes (`server_names_hash`, the SNI maps) | [`server_names`] |
//! | listening sockets (one per port, in every worker, against `worker_connections`) | [`listening_sockets`] |
//! | HTTP/2 per port (`http2 on` in every server of a port with a GRPCRoute) | [`http2_ports`] |
//! | regex memory (the module's `http_matches_max_memory`) | [`regex_memory`] |

use std::collections::{BTreeMap, BTreeSet};

use crate::limits::{ADMIT_ROOM, FALLBACK_SIZE, NameBudget, regex_charge};

use super::attach::{Attachment, set_refused};
use super::entry::{Entry, REGEX_CONDITION};
use super::ids::{Ages, ListenerId, RouteId, RuleId};
use super::listeners::Listener;
use super::merge::ServerAt;
use super::status::RouteNode;
use super::types::PortPlan;

/// An object a budget refuses: left out of the configuration as NGINX's refusal of it would
/// leave it out (a listener: `Programmed: False`; a route: not served, `Accepted: False`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refused {
    Listener(ListenerId),
    Route(RouteId),
    /// A rule (a word of its filters, mirrors: `plan/words.rs`).
    Rule(RuleId),
    /// A backendRef's share of its rule (`index` among the rule's `backendRefs`).
    Share {
        rule: RuleId,
        index: usize,
    },
    /// The location of a match path: (port, server, location).
    Location(ServerAt, usize),
}

/// The objects whose server names NGINX's hashes cannot hold beside older objects' names, with
/// why. Each name is owned by the routes that alone bring it (a name that is no listener's),
/// else by its listeners; it is as old as its oldest owner (a route: the later of it and its
/// listener's Gateway). Names are admitted oldest first
/// ([`NameBudget`]: names crafted to share a bucket fill it at most to NGINX's limit); a name
/// that does not fit refuses its owners, and the names of owners already refused are not
/// counted (they are not written).
pub(super) fn server_names(
    ports: &[PortPlan],
    ages: &Ages,
    before: &[(Refused, String)],
) -> Vec<(Refused, String)> {
    let mut names: BTreeMap<&str, (usize, BTreeSet<Refused>)> = BTreeMap::new();
    for s in ports.iter().flat_map(|p| &p.servers) {
        let Some(h) = s.hostname.as_deref() else { continue };
        let owners: Vec<(usize, Refused)> = if s.brought_by.is_empty() {
            s.listener.iter().map(|l| (ages.listener(l), Refused::Listener(l.clone()))).collect()
        } else {
            // A route's name comes with the later of the route and its listener's Gateway.
            let gateway = s.listener.as_ref().map_or(0, |l| ages.listener(l));
            s.brought_by
                .iter()
                .map(|r| (ages.route(r).max(gateway), Refused::Route(r.clone())))
                .collect()
        };
        let e = names.entry(h).or_insert((usize::MAX, BTreeSet::new()));
        for (age, o) in owners {
            e.0 = e.0.min(age);
            e.1.insert(o);
        }
    }
    let mut order: Vec<(usize, &str, BTreeSet<Refused>)> =
        names.into_iter().map(|(h, (age, owners))| (age, h, owners)).collect();
    order.sort();
    let mut budget = NameBudget::default();
    let mut refused: BTreeSet<Refused> = before.iter().map(|(r, _)| r.clone()).collect();
    let mut out = Vec::new();
    for (_, h, owners) in order {
        if (!owners.is_empty() && owners.iter().all(|o| refused.contains(o))) || budget.admit(h) {
            continue;
        }
        let why = format!(
            "server name {h} does not fit NGINX's server-name hash beside older objects' names \
             (names that hash alike share a bucket of {ADMIT_ROOM} bytes at {FALLBACK_SIZE} \
             buckets; budget: server-name hash)"
        );
        for o in owners {
            if refused.insert(o.clone()) {
                out.push((o, why.clone()));
            }
        }
    }
    out
}

/// Listening sockets: every worker opens a connection of its `worker_connections` for each
/// listen address (one per port: the listen address, if any, is the run's), and a worker
/// that cannot exits at start (`ngx_event_process_init`: "worker_connections are not
/// enough") while `nginx -t` passes. At most half of them are sockets (the rest: clients
/// and upstreams). Listeners are admitted oldest first; one whose port would be a new
/// socket past that is refused (`Programmed: False`), so its port is not listened on.
pub(super) fn listening_sockets(
    ports: &[PortPlan],
    ages: &Ages,
    worker_connections: u32,
) -> Vec<(Refused, String)> {
    let budget = worker_connections as usize / 2;
    let mut listeners: Vec<(usize, &ListenerId, u16)> = ports
        .iter()
        .flat_map(|p| p.servers.iter().filter_map(move |s| Some((s.listener.as_ref()?, p.port))))
        .map(|(l, port)| (ages.listener(l), l, port))
        .collect();
    listeners.sort();
    listeners.dedup();
    let mut open: BTreeSet<u16> = BTreeSet::new();
    let mut out = Vec::new();
    for (_, l, port) in listeners {
        if open.contains(&port) || open.len() < budget && open.insert(port) {
            continue;
        }
        let why = format!(
            "listener {l} would open port {port} past the {budget} listening sockets of \
             worker_connections {worker_connections} (half of them; budget: listening sockets)"
        );
        out.push((Refused::Listener(l.clone()), why));
    }
    out
}

/// HTTP/2 per port: `http2 on` is written in every server of a port that serves a GRPCRoute
/// (NGINX decides cleartext HTTP/2 by the port's default server, ALPN by each server). So a
/// GRPCRoute is refused on a listener (`Accepted: False` there, newest first) when its port
/// has a listener of another namespace's Gateway older than the route and its own Gateway,
/// which serves no GRPCRoute: that tenant's
/// servers stay HTTP/1.1 as they were. Taken oldest route first; a listener serves gRPC once
/// one of its GRPCRoutes is kept (its owner opted in, so later ones may join).
pub(super) fn http2_ports(
    listeners: &[Listener],
    attachments: &mut Vec<Attachment<'_>>,
    nodes: &mut [RouteNode],
    ages: &Ages,
    warnings: &mut Vec<String>,
) {
    let mut grpc: Vec<usize> =
        (0..attachments.len()).filter(|&i| attachments[i].route.grpc).collect();
    if grpc.is_empty() {
        return;
    }
    let age = |i: usize| ages.route(&RouteId::of(attachments[i].route));
    grpc.sort_by_key(|&i| (age(i), i));
    let mut on_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        on_port.entry(l.port).or_default().push(i);
    }
    let mut serves: BTreeSet<usize> = BTreeSet::new();
    let mut lost: BTreeSet<usize> = BTreeSet::new();
    for i in grpc {
        let l = &listeners[attachments[i].listener];
        // gRPC comes to the port with the later of the route and its listener's Gateway.
        let route_age = age(i).max(ages.listener(&l.id));
        let other = on_port[&l.port].iter().copied().find(|&m| {
            let m_id = &listeners[m].id;
            m_id.namespace != l.id.namespace
                && ages.listener(m_id) < route_age
                && !serves.contains(&m)
        });
        match other {
            None => {
                serves.insert(attachments[i].listener);
            }
            Some(m) => {
                let id = RouteId::of(attachments[i].route);
                let why = format!(
                    "GRPCRoute {id} would turn HTTP/2 on for every server of port {}, where the \
                     older listener {} of another namespace serves HTTP/1.1 only (budget: HTTP/2 \
                     per port)",
                    l.port, listeners[m].id
                );
                warnings.push(why.clone());
                set_refused(&mut nodes[attachments[i].node], &l.id, &why);
                lost.insert(i);
            }
        }
    }
    let mut i = 0;
    attachments.retain(|_| {
        i += 1;
        !lost.contains(&(i - 1))
    });
}

/// The patterns of an entry's regex conditions (its path, headers and query parameters).
fn regexes(e: &Entry) -> impl Iterator<Item = &str> {
    let path = e.path.as_deref().and_then(|p| p.strip_prefix(REGEX_CONDITION));
    path.into_iter()
        .chain(e.headers.iter().filter_map(|h| Some(h.split_once(":RegularExpression:")?.1)))
        .chain(e.params.iter().filter_map(|q| Some(q.split_once("=RegularExpression=")?.1)))
}

/// Regex memory: the module compiles every list of the configuration within
/// `http_matches_max_memory` (128 MiB unless set; the generator does not set it), and refuses
/// the whole configuration when they do not fit. Each distinct regex condition of a namespace
/// is counted at the most it may hold ([`regex_charge`]: about 64 KiB), or with
/// `--carrier inline` (`per_location`) each copy a location holds; routes are admitted
/// oldest first (a route as new as the later of it and its listener's Gateway), while their
/// namespace's patterns stay within `per_tenant` and all namespaces' within `total`
/// (`--regex-memory-per-tenant`, `--regex-memory-total`); a route past either is refused (`Accepted: False`), so a newer
/// tenant never takes an older one's share. Routes `before` refused are not counted.
pub(super) fn regex_memory(
    ports: &[PortPlan],
    ages: &Ages,
    before: &[(Refused, String)],
    (per_tenant, total_budget, per_location): (usize, usize, bool),
) -> Vec<(Refused, String)> {
    // Each route's age, distinct patterns, and (per location) what its compiled copies take:
    // a run of a server looked at once, or once per location that holds it (`per_location`).
    let mut routes: BTreeMap<&RouteId, (usize, BTreeSet<&str>, usize)> = BTreeMap::new();
    for s in ports.iter().flat_map(|p| &p.servers) {
        let gateway = s.listener.as_ref().map_or(0, |l| ages.listener(l));
        let mut seen = std::collections::HashSet::new();
        for run in s.locations.iter().flat_map(|l| &l.segments) {
            if !seen.insert(run.id()) && !per_location {
                continue;
            }
            for c in run.candidates() {
                let r = routes.entry(&c.id.route).or_insert((usize::MAX, BTreeSet::new(), 0));
                r.0 = r.0.min(ages.route(&c.id.route).max(gateway));
                for p in regexes(&c.entry) {
                    r.1.insert(p);
                    r.2 += regex_charge(p.len());
                }
            }
        }
    }
    let mut order: Vec<(usize, &RouteId, BTreeSet<&str>, usize)> = routes
        .into_iter()
        .filter(|(_, (_, p, _))| !p.is_empty())
        .map(|(r, (a, p, copies))| (a, r, p, copies))
        .collect();
    order.sort();
    let refused: BTreeSet<&Refused> = before.iter().map(|(r, _)| r).collect();
    let mut tenants: BTreeMap<&str, (usize, BTreeSet<&str>)> = BTreeMap::new();
    let mut total = 0usize;
    let mut out = Vec::new();
    for (_, id, patterns, copies) in order {
        let route = Refused::Route(id.clone());
        if refused.contains(&route) {
            continue;
        }
        let (used, have) = tenants.entry(id.namespace.as_str()).or_default();
        let new: Vec<&str> = patterns.into_iter().filter(|p| !have.contains(p)).collect();
        // Inline, each location compiles its own copies: none is shared with older routes.
        let cost: usize = match per_location {
            true => copies,
            false => new.iter().map(|p| regex_charge(p.len())).sum(),
        };
        if *used + cost <= per_tenant && total + cost <= total_budget {
            *used += cost;
            total += cost;
            have.extend(new);
            continue;
        }
        let why = format!(
            "route {id}'s {} new regex conditions may take {cost} bytes of the module's \
             http_matches_max_memory, past what is left of namespace {}'s {per_tenant} or of \
             all namespaces' {total_budget} beside older routes (budget: regex memory)",
            new.len(),
            id.namespace
        );
        out.push((route, why));
    }
    out
}
