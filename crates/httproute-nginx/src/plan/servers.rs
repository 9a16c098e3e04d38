//! Servers: one per port and hostname (the listeners' and the attached routes' names, and a
//! catch-all), each served by the most specific listener of the port (listener isolation)
//! with the routes attached there; and whether a port speaks HTTP/2, as far as the target
//! NGINX can.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::attach::{Attachment, PortListeners};
use super::ids::RouteId;
use super::listeners::Listener;
use super::precedence::{Compiled, RouteRules, add_route, locations, route_rules};
use super::status::{Http2Loss, Shadowed};
use super::types::{Capabilities, PortPlan, ServerPlan, wildcard_covers};

/// The attachments of one listener, by the hostname they serve there (each of an
/// attachment's hostnames): a server takes the attachments of its own name alone; the less
/// specific names of its listener serve the rest ([`fallback`]).
#[derive(Default)]
struct Attached<'a> {
    by_name: HashMap<&'a Option<String>, Vec<usize>>,
}

impl Attached<'_> {
    /// The attachments with hostname `h`, in order.
    fn for_host(&self, h: &Option<String>) -> &[usize] {
        self.by_name.get(h).map_or(&[], Vec::as_slice)
    }
}

/// Where a request to server `h` of `listener` goes when none of `h`'s routes answers it:
/// the name of the next less specific hostname, as NGINX looks up a `Host` header (its
/// server if written; else the longest wildcard server covering it, else the port's default
/// server). `None`: the server of the listener's own hostname, which nothing less specific of
/// the same listener serves.
///
/// Gateway API gives a request's routes of the most specific hostname precedence over the
/// wildcard ones, and those over the routes of no hostname; so a server holds its own
/// hostname's routes alone and the rest are a lookup away, not a copy each. Every server that
/// name reaches on the port is the listener's own: a wildcard server covering `h` of another
/// listener would be the more specific listener of `h` itself. The name depends on `h` and the
/// listener alone, not on which other routes there are.
fn fallback(listener: &Listener, h: &Option<String>) -> Option<Option<String>> {
    let h = h.as_deref()?;
    if listener.hostname.as_deref() == Some(h) {
        return None;
    }
    let name = h.strip_prefix("*.").unwrap_or(h);
    let parent = name.split_once('.').map(|(_, rest)| format!("*.{rest}"));
    debug_assert!(parent.as_deref().is_none_or(|p| wildcard_covers(p, h)));
    Some(parent)
}

/// Every exact hostname of every attachment that its listener does not serve
/// ([`Shadowed`]), in attachment order: one lookup per hostname, as [`ports`] makes per
/// server.
pub(super) fn shadowed(listeners: &[Listener], attachments: &[Attachment<'_>]) -> Vec<Shadowed> {
    let mut on_port: HashMap<u16, Vec<usize>> = HashMap::new();
    for (i, l) in listeners.iter().enumerate() {
        on_port.entry(l.port).or_default().push(i);
    }
    let by_port: HashMap<u16, PortListeners<'_>> =
        on_port.iter().map(|(&p, ls)| (p, PortListeners::of(listeners, ls))).collect();
    let mut out = Vec::new();
    for a in attachments {
        let l = &listeners[a.listener];
        for h in &a.hostnames {
            let Some(name) = h.as_deref().filter(|h| !h.starts_with('*')) else { continue };
            match by_port[&l.port].best(h) {
                Some(best) if best != a.listener => out.push(Shadowed {
                    node: a.node,
                    listener: l.id.clone(),
                    port: l.port,
                    hostname: name.to_owned(),
                    by: listeners[best].id.clone(),
                }),
                _ => {}
            }
        }
    }
    out
}

/// Each listener's attachments by hostname, and how many servers each route (by address) is
/// to be added to.
fn attached<'a>(
    listeners: &[Listener],
    attachments: &'a [Attachment<'_>],
) -> (Vec<Attached<'a>>, HashMap<usize, usize>) {
    let mut attached: Vec<Attached<'_>> =
        (0..listeners.len()).map(|_| Attached::default()).collect();
    let mut uses: HashMap<usize, usize> = HashMap::new();
    for (i, a) in attachments.iter().enumerate() {
        let at = &mut attached[a.listener];
        for h in &a.hostnames {
            let list = at.by_name.entry(h).or_default();
            if list.last() != Some(&i) {
                list.push(i);
                *uses.entry(std::ptr::from_ref(a.route) as usize).or_default() += 1;
            }
        }
    }
    (attached, uses)
}

/// Every port of the served listeners with its servers.
pub(super) fn ports(
    listeners: &[Listener],
    attachments: &[Attachment<'_>],
    capabilities: &Capabilities,
    experimental: bool,
    warnings: &mut Vec<String>,
) -> (Vec<PortPlan>, Http2Loss) {
    let (attached, mut uses) = attached(listeners, attachments);
    // Each route's rules and matches, by the route's address, planned at its first server and
    // freed after its last (`uses`).
    let mut planned: HashMap<usize, RouteRules> = HashMap::new();
    let mut on_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        on_port.entry(l.port).or_default().push(i);
    }
    let by_port: HashMap<u16, PortListeners<'_>> =
        on_port.iter().map(|(&p, ls)| (p, PortListeners::of(listeners, ls))).collect();
    let mut names = names(listeners, &on_port, attachments);
    let mut brought = brought(listeners, &by_port, attachments);
    let mut loss = Http2Loss::default();
    let mut out = Vec::new();
    let mut compiled = Compiled::default();
    for (port, on_port) in on_port {
        let mut servers = Vec::new();
        for h in std::mem::take(names.get_mut(&port).expect("every port has names")) {
            let best = by_port[&port].best(&h);
            let mut server = ServerPlan {
                hostname: h.clone(),
                listener: best.map(|i| listeners[i].id.clone()),
                certificates: best.map(|i| listeners[i].certificates.clone()).unwrap_or_default(),
                brought_by: brought
                    .remove(&(port, h.clone()))
                    .map(|r| r.into_iter().collect())
                    .unwrap_or_default(),
                locations: Vec::new(),
                rules: Vec::new(),
                fallback: best.and_then(|li| fallback(&listeners[li], &h)),
            };
            let mut candidates = Vec::new();
            // One copy of the name for the server's candidates.
            let shared = h.as_deref().map(std::sync::Arc::<str>::from);
            if let Some(li) = best {
                for &ai in attached[li].for_host(&h) {
                    let a = &attachments[ai];
                    // Planned once per route, whatever the servers it serves.
                    let key = std::ptr::from_ref(a.route) as usize;
                    let rules = planned.entry(key).or_insert_with(|| {
                        route_rules(a.route, a.resolved, experimental, &mut compiled, warnings)
                    });
                    add_route(a.route, rules, a.age, &shared, &mut server, &mut candidates);
                    if let Some(left) = uses.get_mut(&key) {
                        *left -= 1;
                        if *left == 0 {
                            planned.remove(&key);
                        }
                    }
                }
            }
            server.locations = locations(candidates);
            servers.push(server);
        }
        let tls = on_port.iter().any(|&i| listeners[i].tls);
        let http2 = http2(port, tls, &servers, capabilities, &mut loss, warnings);
        out.push(PortPlan { port, tls, http2, servers });
    }
    (out, loss)
}

/// The server names of each port: the catch-all, its listeners' hostnames and those the
/// routes attached to them bring.
fn names(
    listeners: &[Listener],
    on_port: &BTreeMap<u16, Vec<usize>>,
    attachments: &[Attachment<'_>],
) -> BTreeMap<u16, BTreeSet<Option<String>>> {
    let mut names: BTreeMap<u16, BTreeSet<Option<String>>> = BTreeMap::new();
    for (&port, ls) in on_port {
        let n = names.entry(port).or_default();
        n.insert(None);
        n.extend(ls.iter().map(|&i| listeners[i].hostname.clone()));
    }
    for a in attachments {
        let n = names.entry(listeners[a.listener].port).or_default();
        for h in &a.hostnames {
            if !n.contains(h) {
                n.insert(h.clone());
            }
        }
    }
    names
}

/// The names only routes bring, and the routes that bring each.
fn brought(
    listeners: &[Listener],
    by_port: &HashMap<u16, PortListeners<'_>>,
    attachments: &[Attachment<'_>],
) -> BTreeMap<(u16, Option<String>), BTreeSet<RouteId>> {
    let mut brought: BTreeMap<(u16, Option<String>), BTreeSet<RouteId>> = BTreeMap::new();
    for a in attachments {
        let port = listeners[a.listener].port;
        for h in a.hostnames.iter().filter(|h| h.is_some()) {
            if !h.as_deref().is_some_and(|h| by_port[&port].has(h)) {
                brought.entry((port, h.clone())).or_default().insert(RouteId::of(a.route));
            }
        }
    }
    brought
}

/// Whether a port speaks HTTP/2 (it serves a GRPCRoute: h2c with prior knowledge on a plain
/// port, ALPN over TLS). Before NGINX 1.25.1 there is no `http2` directive: HTTP/2 is a
/// `listen` parameter, and on a plain port it makes the port speak only HTTP/2 with prior
/// knowledge. So a plain port that serves GRPCRoutes and HTTP/1.1 routes together keeps
/// HTTP/1.1: its GRPCRoutes cannot be served there (a warning; `loss` records them).
fn http2(
    port: u16,
    tls: bool,
    servers: &[ServerPlan],
    capabilities: &Capabilities,
    loss: &mut Http2Loss,
    warnings: &mut Vec<String>,
) -> bool {
    let rules = || servers.iter().flat_map(|s| s.rules.iter());
    let grpc: BTreeSet<&RouteId> = rules().filter(|r| r.grpc).map(|r| &r.id.route).collect();
    if grpc.is_empty() {
        return false;
    }
    if capabilities.http2_directive || tls || rules().all(|r| r.grpc) {
        loss.1.extend(grpc.into_iter().cloned());
        return true;
    }
    let (a, b, c) = capabilities.version;
    warnings.push(format!(
        "port {port}: NGINX {a}.{b}.{c} cannot serve HTTP/1.1 and cleartext HTTP/2 (gRPC) on one \
         port (1.25.1 can): the GRPCRoutes {} are not served there; give them a listener of \
         their own or a TLS one",
        grpc.iter()
            .map(ToString::to_string)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for route in grpc {
        loss.0.entry(route.clone()).or_default().insert(port);
    }
    false
}
