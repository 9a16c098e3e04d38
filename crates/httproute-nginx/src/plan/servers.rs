//! Servers: one per port and hostname (the listeners' and the attached routes' names, and a
//! catch-all), each served by the most specific listener of the port (listener isolation)
//! with the routes attached there; and whether a port speaks HTTP/2, as far as the target
//! NGINX can.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::attach::{Attachment, PortListeners};
use super::ids::{Ages, RouteId, RouteKind};
use super::listeners::Listener;
use super::precedence::{RouteRules, add_route, locations};
use super::status::{Http2Loss, Shadowed, Taken};
use super::types::{Capabilities, PortPlan, ServerPlan};

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

/// Where a request to a server goes when none of its routes answers it
/// (`http_matches_fallback`), for the servers of one port, each name walked once per
/// listener.
///
/// Gateway API gives a request's routes of the most specific hostname precedence over the
/// wildcard ones, and those over the routes of no hostname; so a server holds its own
/// hostname's routes alone and the rest are a lookup away, not a copy each: the next less
/// specific server of the port, as NGINX looks up a `Host` header (its server if written;
/// else the longest wildcard server covering it, else the port's default server). The walk
/// stays within the listener (listener isolation: past its own hostname the request ends
/// there); a name no server has is passed over (NGINX would, so the word does not change when
/// another Gateway writes a server of that name), and so is one another Gateway holds
/// ([`Serving`]): a request never falls back into another Gateway's routes.
struct Fallbacks<'s, 'a> {
    serving: &'s Serving<'a>,
    /// The port's wildcard servers, by suffix (`.a.test` of `*.a.test`).
    wild: HashSet<&'s str>,
    /// Each (listener, suffix walked; "" for every host): where a walk reaching it ends.
    memo: HashMap<(usize, &'s str), Option<Option<String>>>,
}

impl<'s> Fallbacks<'s, '_> {
    fn new<'a>(serving: &'s Serving<'a>, names: &'s BTreeSet<Option<String>>) -> Fallbacks<'s, 'a> {
        let wild = names.iter().filter_map(|n| n.as_deref()?.strip_prefix('*')).collect();
        Fallbacks { serving, wild, memo: HashMap::new() }
    }

    /// The fallback of server `h` of listener `li`: `None` for none (the server of the
    /// listener's own hostname, or nothing less specific of the listener and its Gateway).
    fn of(&mut self, li: usize, h: &'s Option<String>) -> Option<Option<String>> {
        let own = self.serving.listeners[li].hostname.as_deref();
        let h = h.as_deref().filter(|&h| own != Some(h))?;
        // The less specific names of `h`, most specific first, as suffixes of it: the
        // wildcards (`.b.c`, `.c` of `a.b.c` and of `*.a.b.c`), then every host ("").
        let body = h.strip_prefix('*').unwrap_or(h);
        let wildcards =
            body.match_indices('.').filter(|&(at, _)| at > 0).map(|(at, _)| &body[at..]);
        let (mut walked, mut end) = (Vec::new(), None);
        for suffix in wildcards.chain([""]) {
            if let Some(known) = self.memo.get(&(li, suffix)) {
                end = known.clone();
                break;
            }
            walked.push(suffix);
            if let Some(ends) = self.ends_at(li, suffix) {
                end = ends;
                break;
            }
        }
        for suffix in walked {
            self.memo.insert((li, suffix), end.clone());
        }
        end
    }

    /// Whether the walk of listener `li` ends at wildcard `suffix` ("": every host): with
    /// its server (one of the listener's Gateway), with nothing (outside the listener's
    /// hostname), or goes on (`None`).
    fn ends_at(&self, li: usize, suffix: &str) -> Option<Option<Option<String>>> {
        let listener = &self.serving.listeners[li];
        if let Some(own) = listener.hostname.as_deref() {
            // Only a wildcard listener covers a less specific name: its own or a longer one.
            if !own.strip_prefix('*').is_some_and(|own| suffix.ends_with(own)) {
                return Some(None);
            }
        }
        let name = match suffix {
            "" => None,
            _ if self.wild.contains(suffix) => Some(format!("*{suffix}")),
            _ => return None,
        };
        let other = |i: usize| !self.serving.same_gateway(i, li);
        let taken = self.serving.best(listener.port, &name).is_some_and(other);
        (!taken).then_some(Some(name))
    }
}

/// Each group's listeners, indexed by hostname.
fn index<K: Eq + std::hash::Hash>(
    listeners: &[Listener],
    groups: HashMap<K, Vec<usize>>,
) -> HashMap<K, PortListeners<'_>> {
    groups.into_iter().map(|(k, ls)| (k, PortListeners::of(listeners, &ls))).collect()
}

/// How specific a listener's hostname is, smaller first: a name, a wildcard (the longer the
/// more specific), none.
fn specificity(l: &Listener) -> usize {
    match l.hostname.as_deref() {
        Some(h) if !h.starts_with('*') => 0,
        Some(w) => 1 + 256usize.saturating_sub(w.len()),
        None => usize::MAX,
    }
}

/// Which listener serves each name of each port, decided once. A name is held by the attachment
/// that has served it longest (Gateway API's conflict order on [`Ages::attached`]: the later of
/// the route's and its Gateway's creation; ties to the more specific listener, then the older
/// Gateway) among those whose hostname is the name or a wildcard covering it (`*.a.test` serves
/// `x.a.test` and `*.b.a.test`); the name belongs to that attachment's Gateway, and within it
/// to its most specific listener (listener isolation); which route of that Gateway answers is
/// Gateway API's precedence there. A name no such attachment serves belongs to the most
/// specific listener of the port (of equally specific ones, the oldest Gateway's). So neither a
/// newer Gateway's listener nor a newer route on an older Gateway takes a host an older
/// attachment serves there. A route of no hostname on a listener of none serves every name of
/// the port, and so holds every name no older attachment serves: a newer Gateway on the port
/// gets none of it.
pub(super) struct Serving<'a> {
    listeners: &'a [Listener],
    attachments: &'a [Attachment],
    /// The listeners of each port.
    by_port: HashMap<u16, PortListeners<'a>>,
    /// The listeners of each port and Gateway (namespace, name).
    by_gateway: HashMap<(u16, &'a str, &'a str), PortListeners<'a>>,
    /// Each (port, name) routes serve as written: the oldest attachment serving it.
    exact: HashMap<(u16, Option<&'a str>), usize>,
    /// Each (port, wildcard suffix: `.a.test` of `*.a.test`): the oldest attachment serving
    /// that wildcard.
    wild: HashMap<(u16, &'a str), usize>,
    /// Each attachment's place in the conflict order (smaller: older).
    place: Vec<((usize, usize), usize, usize)>,
}

impl<'a> Serving<'a> {
    pub(super) fn of(
        listeners: &'a [Listener],
        attachments: &'a [Attachment],
        ages: &Ages,
    ) -> Self {
        let mut on_port: HashMap<u16, Vec<usize>> = HashMap::new();
        let mut on_gateway: HashMap<(u16, &str, &str), Vec<usize>> = HashMap::new();
        for (i, l) in listeners.iter().enumerate() {
            on_port.entry(l.port).or_default().push(i);
            on_gateway.entry((l.port, &l.id.namespace, &l.id.gateway)).or_default().push(i);
        }
        // Each attachment's place: its age; of one route's attachments of the same age (a
        // route newer than the Gateways it attaches to), the most specific listener's (a
        // Gateway's own listener for the name before a shared catch-all); then the listener's
        // (listeners are in Gateway order, oldest first).
        let gateway: Vec<usize> = listeners.iter().map(|l| ages.listener(&l.id)).collect();
        let place: Vec<_> = attachments
            .iter()
            .map(|a| {
                let l = a.listener;
                (ages.attached(&a.route, gateway[l]), specificity(&listeners[l]), l)
            })
            .collect();
        let mut exact: HashMap<(u16, Option<&str>), usize> = HashMap::new();
        let mut wild: HashMap<(u16, &str), usize> = HashMap::new();
        let older = |held: &mut usize, ai: usize| {
            if place[ai] < place[*held] {
                *held = ai;
            }
        };
        for (ai, a) in attachments.iter().enumerate() {
            let port = listeners[a.listener].port;
            for h in &a.hostnames {
                older(exact.entry((port, h.as_deref())).or_insert(ai), ai);
                if let Some(suffix) = h.as_deref().and_then(|h| h.strip_prefix('*')) {
                    older(wild.entry((port, suffix)).or_insert(ai), ai);
                }
            }
        }
        Serving {
            listeners,
            attachments,
            by_port: index(listeners, on_port),
            by_gateway: index(listeners, on_gateway),
            exact,
            wild,
            place,
        }
    }

    /// The attachment that holds `h` on `port`, if any serves it: of those serving `h` as
    /// written, a wildcard covering it (the suffixes of `h` from a dot past its first
    /// character) or every name, the oldest.
    fn holder(&self, port: u16, h: Option<&str>) -> Option<usize> {
        let exact = self.exact.get(&(port, h)).copied();
        let Some(h) = h else { return exact };
        let every = self.exact.get(&(port, None)).copied();
        let covering = h.match_indices('.').filter(|&(at, _)| at > 0);
        covering
            .filter_map(|(at, _)| self.wild.get(&(port, &h[at..])).copied())
            .chain(exact)
            .chain(every)
            .min_by_key(|&ai| self.place[ai])
    }

    /// Whether listeners `i` and `j` are of one Gateway.
    fn same_gateway(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.listeners[i].id, &self.listeners[j].id);
        (&a.namespace, &a.gateway) == (&b.namespace, &b.gateway)
    }

    /// The listener that serves `h` on `port`, if any.
    pub(super) fn best(&self, port: u16, h: &Option<String>) -> Option<usize> {
        let Some(ai) = self.holder(port, h.as_deref()) else {
            return self.by_port.get(&port)?.best(h);
        };
        let id = &self.listeners[self.attachments[ai].listener].id;
        self.by_gateway[&(port, id.namespace.as_str(), id.gateway.as_str())].best(h)
    }

    /// Which older Gateway's route holds `h` on `port`, if it is not listener `li`'s Gateway.
    fn held_by(&self, port: u16, h: &Option<String>, li: usize) -> Option<String> {
        let a = &self.attachments[self.holder(port, h.as_deref())?];
        let g = &self.listeners[a.listener].id;
        (!self.same_gateway(a.listener, li)).then(|| {
            format!(
                "Gateway {}/{}'s route {} serves it there (the attachment that has served it longest)",
                g.namespace, g.gateway, a.route
            )
        })
    }
}

/// Every exact hostname of every attachment that its listener does not serve
/// ([`Shadowed`]), in attachment order, every listener that would serve a name but for
/// an older Gateway's routes serving it ([`Taken`]), and whether a server of [`ports`] takes
/// each attachment (its listener serves one of its hostnames): one lookup per hostname, as
/// [`ports`] makes per server.
pub(super) fn shadowed(
    listeners: &[Listener],
    attachments: &[Attachment],
    serving: &Serving<'_>,
) -> (Vec<Shadowed>, Vec<Taken>, Vec<bool>) {
    let mut out = Vec::new();
    let mut served = vec![false; attachments.len()];
    for (a, served) in attachments.iter().zip(&mut served) {
        let l = &listeners[a.listener];
        for h in &a.hostnames {
            let best = serving.best(l.port, h);
            *served |= best == Some(a.listener);
            let Some(name) = h.as_deref().filter(|h| !h.starts_with('*')) else { continue };
            match best {
                Some(best) if best != a.listener => out.push(Shadowed {
                    node: a.node,
                    listener: l.id.clone(),
                    port: l.port,
                    hostname: name.to_owned(),
                    by: listeners[best].id.clone(),
                    held: serving.held_by(l.port, h, a.listener),
                }),
                _ => {}
            }
        }
    }
    let mut taken: Vec<Taken> = Vec::new();
    // The names routes serve, and the listeners' own (an older wildcard route may hold one).
    let listed = listeners.iter().map(|l| (l.port, l.hostname.as_deref()));
    let names: BTreeSet<(u16, Option<&str>)> =
        serving.exact.keys().copied().chain(listed).collect();
    for (port, h) in names {
        let h = h.map(str::to_owned);
        let Some(li) = serving.by_port.get(&port).and_then(|p| p.best(&h)) else { continue };
        if let Some(held) = serving.held_by(port, &h, li) {
            let l = &listeners[li];
            taken.push(Taken { status: l.status, listener: l.id.clone(), port, hostname: h, held });
        }
    }
    taken.sort_by(|x, y| (x.status, &x.hostname).cmp(&(y.status, &y.hostname)));
    (out, taken, served)
}

/// Each listener's attachments by hostname, and how many servers each route (by node) is to
/// be added to.
fn attached<'a>(
    listeners: &[Listener],
    attachments: &'a [Attachment],
    routes: usize,
) -> (Vec<Attached<'a>>, Vec<usize>) {
    let mut attached: Vec<Attached<'_>> =
        (0..listeners.len()).map(|_| Attached::default()).collect();
    let mut uses = vec![0; routes];
    for (i, a) in attachments.iter().enumerate() {
        let at = &mut attached[a.listener];
        for h in &a.hostnames {
            let list = at.by_name.entry(h).or_default();
            if list.last() != Some(&i) {
                list.push(i);
                uses[a.node] += 1;
            }
        }
    }
    (attached, uses)
}

/// Every port of the served listeners with its servers; `planned`: each attached route's
/// rules and matches, by node, each freed at the route's last server.
pub(super) fn ports(
    listeners: &[Listener],
    attachments: &[Attachment],
    serving: &Serving<'_>,
    mut planned: Vec<RouteRules>,
    capabilities: &Capabilities,
    warnings: &mut Vec<String>,
) -> (Vec<PortPlan>, Http2Loss) {
    let (attached, mut uses) = attached(listeners, attachments, planned.len());
    let mut on_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate() {
        on_port.entry(l.port).or_default().push(i);
    }
    let mut names = names(listeners, &on_port, attachments);
    let mut brought = brought(serving, attachments);
    let mut loss = Http2Loss::default();
    let mut out = Vec::new();
    for (port, on_port) in on_port {
        let mut servers = Vec::new();
        let on_port_names = std::mem::take(names.get_mut(&port).expect("every port has names"));
        let mut fallbacks = Fallbacks::new(serving, &on_port_names);
        // The oldest attachment served on the port (`Serving::place`, attachment).
        let mut oldest = None;
        for h in &on_port_names {
            let best = serving.best(port, h);
            let mut server = ServerPlan {
                hostname: h.clone(),
                listener: best.map(|i| listeners[i].id.clone()),
                listener_hostname: best.and_then(|i| listeners[i].hostname.clone()),
                certificates: best.map(|i| listeners[i].certificates.clone()).unwrap_or_default(),
                brought_by: brought
                    .remove(&(port, h.clone()))
                    .map(|r| r.into_iter().collect())
                    .unwrap_or_default(),
                locations: Vec::new(),
                rules: Vec::new(),
                fallback: best.and_then(|li| fallbacks.of(li, h)),
            };
            let mut candidates = Vec::new();
            // One copy of the name for the server's candidates.
            let shared = h.as_deref().map(std::sync::Arc::<str>::from);
            for &ai in best.map_or(&[][..], |li| attached[li].for_host(h)) {
                let here = (serving.place[ai], ai);
                oldest = Some(oldest.map_or(here, |o: (_, usize)| o.min(here)));
                let a = &attachments[ai];
                uses[a.node] -= 1;
                let (rules, last) = (&mut planned[a.node], uses[a.node] == 0);
                add_route(rules, last, a.age, &shared, &mut server, &mut candidates);
            }
            server.locations = locations(candidates);
            servers.push(server);
        }
        let tls = on_port.iter().any(|&i| listeners[i].tls);
        let oldest = oldest.map(|(_, ai)| &attachments[ai].route);
        let speaks = Speaks { port, tls, oldest };
        let (http1, http2) = speaks.decide(&servers, capabilities, &mut loss, warnings);
        out.push(PortPlan { port, tls, http2, http1, servers });
    }
    (out, loss)
}

/// The server names of each port: the catch-all, its listeners' hostnames and those the
/// routes attached to them bring.
fn names(
    listeners: &[Listener],
    on_port: &BTreeMap<u16, Vec<usize>>,
    attachments: &[Attachment],
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

/// The names only routes bring (not the hostname of the listener serving them), and the
/// routes that bring each.
fn brought(
    serving: &Serving<'_>,
    attachments: &[Attachment],
) -> BTreeMap<(u16, Option<String>), BTreeSet<RouteId>> {
    let mut brought: BTreeMap<(u16, Option<String>), BTreeSet<RouteId>> = BTreeMap::new();
    for a in attachments {
        let port = serving.listeners[a.listener].port;
        for h in a.hostnames.iter().filter(|h| h.is_some()) {
            let best = serving.best(port, h).map(|i| &serving.listeners[i].hostname);
            if best != Some(h) {
                brought.entry((port, h.clone())).or_default().insert(a.route.clone());
            }
        }
    }
    brought
}

/// A port, for [`Speaks::decide`]: its number, whether it is HTTPS, and the route of its
/// oldest attachment served (`Serving::place`).
struct Speaks<'r> {
    port: u16,
    tls: bool,
    oldest: Option<&'r RouteId>,
}

impl Speaks<'_> {
    /// Whether the port speaks HTTP/1.1 and HTTP/2 (HTTP/2 when it serves a GRPCRoute: h2c
    /// with prior knowledge on a plain port, ALPN over TLS). Before NGINX 1.25.1 there is no
    /// `http2` directive: HTTP/2 is a `listen` parameter, and on a plain port it makes the port
    /// speak HTTP/2 alone. So a plain port that serves GRPCRoutes and HTTPRoutes together
    /// speaks the protocol of its oldest route there (a newer route never turns it), and the
    /// routes of the other kind are not served there (a warning; `loss` records them, and the
    /// routes served on every port where they are not lost).
    fn decide(
        &self,
        servers: &[ServerPlan],
        capabilities: &Capabilities,
        loss: &mut Http2Loss,
        warnings: &mut Vec<String>,
    ) -> (bool, bool) {
        let rules = || servers.iter().flat_map(|s| s.rules.iter());
        let any_grpc = rules().any(|r| r.grpc);
        let legacy_plain = !capabilities.http2_directive && !self.tls;
        if !legacy_plain || !any_grpc || rules().all(|r| r.grpc) {
            if !capabilities.http2_directive {
                loss.1.extend(rules().map(|r| r.id.route.clone()));
            }
            return (!(legacy_plain && any_grpc), any_grpc);
        }
        let h2 = self.oldest.is_some_and(|r| r.kind == RouteKind::Grpc);
        let lost: BTreeSet<&RouteId> =
            rules().filter(|r| r.grpc != h2).map(|r| &r.id.route).collect();
        loss.1.extend(rules().filter(|r| r.grpc == h2).map(|r| r.id.route.clone()));
        let (a, b, c) = capabilities.version;
        let (kind, holds) = if h2 { ("HTTPRoutes", "HTTP/2") } else { ("GRPCRoutes", "HTTP/1.1") };
        let names: BTreeSet<String> = lost.iter().map(ToString::to_string).collect();
        warnings.push(format!(
            "port {}: NGINX {a}.{b}.{c} cannot serve HTTP/1.1 and cleartext HTTP/2 (gRPC) on one \
             port (1.25.1 can): the {kind} {} are not served there (its oldest route, {}, holds \
             it for {holds}); give them a listener of their own or a TLS one",
            self.port,
            names.into_iter().collect::<Vec<_>>().join(", "),
            self.oldest.map_or_else(String::new, ToString::to_string),
        ));
        for route in lost {
            loss.0.entry(route.clone()).or_default().insert(self.port);
        }
        (!h2, h2)
    }
}
