//! What tenants share in NGINX, budgeted before anything is written: one line per resource,
//! decided in this order, each oldest first (Gateway API's conflict order, [`Ages`]) and
//! seeing what the lines above refused ([`Refusals`]). An object whose share does not fit is
//! refused with a condition naming the budget, so a newer object never evicts an older one,
//! and NGINX never refuses the configuration for it.
//!
//! | budget | charged to | limit | per tenant | rule |
//! |--------|------------|-------|------------|------|
//! | HTTP/2 per port | a GRPCRoute's attachment | a port's older listeners of other namespaces | - | [`http2_ports`] (at attachment) |
//! | list word | a rule (or its attachment) | NGINX's word, per location | - | `words::lists` |
//! | listening sockets | a listener | half of `worker_connections` or of `--open-files`, the smaller | - | [`listening_sockets`] |
//! | server-name hash | a name's owners | a bucket at NGINX's fallback size | - | [`server_names`] |
//! | regex memory, inline | a route's attachment to a Gateway | `--regex-memory-total` | `--regex-memory-per-tenant` ([`Share`]) | [`inline_regex_memory`] |
//! | regex and list memory | a route, whole | `--regex-memory-total`; what the module's memory leaves | `--regex-memory-per-tenant`; `--list-memory-per-tenant` ([`Share`] each) | `list_bytes::memory` (one walk) |

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::limits::{ADMIT_ROOM, FALLBACK_SIZE, NameBudget, regex_charge};

use super::attach::{Attachment, set_refused};
use super::entry::{Entry, REGEX_CONDITION};
use super::ids::{Ages, GatewayId, ListenerId, RouteId, RouteKind, RuleId, Unit};
use super::listeners::Listener;
use super::merge::ServerAt;
use super::status::RouteNode;
use super::types::{Candidate, Kept, Loc, LocationPlan, PathKind, PortPlan, ServerPlan};

/// The objects whose server names NGINX's hashes cannot hold beside older objects' names, with
/// why. Each name is owned by the routes that alone bring it (a name that is no listener's;
/// each through the server's Gateway, [`unit`]), else by its listeners; it is as old as its oldest owner (a route: [`Ages::attached`]; a
/// listener: its Gateway, before its routes). Names are admitted oldest first
/// ([`NameBudget`]: names crafted to share a bucket fill it at most to NGINX's limit); a name
/// that does not fit refuses its owners, and the names of owners already refused are not
/// counted (they are not written).
pub(super) fn server_names(ports: &[PortPlan], ages: &Ages, refusals: &mut Refusals) {
    let multi = multi_gateway(ports);
    let mut names: BTreeMap<&str, ((usize, usize), BTreeSet<Unit>)> = BTreeMap::new();
    // A server whose listener is left out is not written: its names are in no hash.
    for s in ports.iter().flat_map(|p| &p.servers).filter(|s| !refusals.left.listener_of(s)) {
        let Some(h) = s.hostname.as_deref() else { continue };
        let owners: Vec<((usize, usize), Unit)> = if s.brought_by.is_empty() {
            // A listener is as old as its Gateway, before any route attached to it.
            let listener = |l: &ListenerId| ((ages.listener(l), 0), Unit::Listener(l.clone()));
            s.listener.iter().map(listener).collect()
        } else {
            // A route's name comes with it through its listener ([`Ages::attached`]).
            let gateway = s.listener.as_ref().map_or(0, |l| ages.listener(l));
            let route = |r: &RouteId| (ages.attached(r, gateway), unit(r, s, &multi));
            s.brought_by.iter().map(route).collect()
        };
        let e = names.entry(h).or_insert(((usize::MAX, usize::MAX), BTreeSet::new()));
        for (age, o) in owners {
            e.0 = e.0.min(age);
            e.1.insert(o);
        }
    }
    let mut order: Vec<((usize, usize), &str, BTreeSet<Unit>)> =
        names.into_iter().map(|(h, (age, owners))| (age, h, owners)).collect();
    order.sort();
    let mut budget = NameBudget::default();
    for (_, h, owners) in order {
        let left = &refusals.left;
        if (!owners.is_empty() && owners.iter().all(|o| left.refuses(o))) || budget.admit(h) {
            continue;
        }
        let why = format!(
            "server name {h} does not fit NGINX's server-name hash beside older objects' names \
             (names that hash alike share a bucket of {ADMIT_ROOM} bytes at {FALLBACK_SIZE} \
             buckets; budget: server-name hash)"
        );
        for o in owners {
            if !refusals.left.refuses(&o) {
                refusals.push(o, why.clone());
            }
        }
    }
}

/// The routes served in the servers of more than one Gateway (their rules or the names they
/// bring there).
pub(super) fn multi_gateway(ports: &[PortPlan]) -> BTreeSet<&RouteId> {
    let mut first: HashMap<&RouteId, (&str, &str)> = HashMap::new();
    let mut multi = BTreeSet::new();
    for s in ports.iter().flat_map(|p| &p.servers) {
        let Some(g) = gateway_of(s) else { continue };
        let mut last = None;
        for r in s.brought_by.iter().chain(s.rules.iter().map(|r| &r.id.route)) {
            // A route's rules are side by side: its first one is looked up.
            if last != Some(r) && *first.entry(r).or_insert(g) != g {
                multi.insert(r);
            }
            last = Some(r);
        }
    }
    multi
}

/// What refuses route `r`'s share of server `s` (a rule of it, a name it brings): its
/// attachment to `s`'s Gateway if it is served through others too (`multi`:
/// [`multi_gateway`]), so its older attachments keep serving; else the route.
pub(super) fn unit(r: &RouteId, s: &ServerPlan, multi: &BTreeSet<&RouteId>) -> Unit {
    match gateway_of(s) {
        Some(g) if multi.contains(r) => attachment(r, g),
        _ => Unit::Route(r.clone()),
    }
}

/// Listening sockets: every worker opens a connection of its `worker_connections` for each
/// listen address (one per port: the listen address, if any, is the run's), and a worker
/// that cannot exits at start (`ngx_event_process_init`: "worker_connections are not
/// enough") while `nginx -t` passes. At most half of them are sockets (the rest: clients
/// and upstreams). The master opens every one, and `nginx -t` too (`ngx_open_listening_sockets`),
/// within their open-file limit (`open_files`): past it they fail (`socket() failed (24: Too
/// many open files)`), so at most half of that too. Listeners are admitted oldest first; one
/// whose port would be a new socket past the smaller is refused (`Programmed: False`), so its
/// port is not listened on.
pub(super) fn listening_sockets(
    ports: &[PortPlan],
    ages: &Ages,
    worker_connections: u32,
    open_files: u32,
    refusals: &mut Refusals,
) {
    let budget = worker_connections.min(open_files) as usize / 2;
    let mut listeners: Vec<(usize, &ListenerId, u16)> = ports
        .iter()
        .flat_map(|p| p.servers.iter().filter_map(move |s| Some((s.listener.as_ref()?, p.port))))
        .map(|(l, port)| (ages.listener(l), l, port))
        .collect();
    listeners.sort();
    listeners.dedup();
    let mut open: BTreeSet<u16> = BTreeSet::new();
    for (_, l, port) in listeners {
        if open.contains(&port) || open.len() < budget && open.insert(port) {
            continue;
        }
        let why = format!(
            "listener {l} would open port {port} past the {budget} listening sockets of \
             worker_connections {worker_connections} and {open_files} open files (half of the \
             smaller; budget: listening sockets)"
        );
        refusals.push(Unit::Listener(l.clone()), why);
    }
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
    attachments: &mut Vec<Attachment>,
    nodes: &mut [RouteNode],
    ages: &Ages,
    warnings: &mut Vec<String>,
) {
    let mut grpc: Vec<usize> =
        (0..attachments.len()).filter(|&i| attachments[i].route.kind == RouteKind::Grpc).collect();
    if grpc.is_empty() {
        return;
    }
    let age = |i: usize| ages.route(&attachments[i].route);
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
                let id = &attachments[i].route;
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
pub(super) fn regexes(e: &Entry) -> impl Iterator<Item = &str> {
    let path = e.path.as_deref().and_then(|p| p.strip_prefix(REGEX_CONDITION));
    path.into_iter()
        .chain(e.headers.iter().filter_map(|h| after(h, ":RegularExpression:")))
        .chain(e.params.iter().filter_map(|q| after(q, "=RegularExpression=")))
}

/// What follows the first `sep` in `s` (`s.split_once(sep)`'s second part), found by `sep`'s
/// first byte: a condition is a few bytes, shorter than building a substring searcher. At most
/// `sep.len()` bytes compared per byte of `s`.
fn after<'s>(s: &'s str, sep: &str) -> Option<&'s str> {
    let (b, first) = (s.as_bytes(), *sep.as_bytes().first()?);
    let mut at = (0..b.len()).filter(|&i| b[i] == first);
    let i = at.find(|&i| b[i..].starts_with(sep.as_bytes()))?;
    s.get(i + sep.len()..)
}

/// Regex memory with `--carrier inline`: the module compiles every list of the configuration
/// within `http_matches_max_memory` (128 MiB unless set), and refuses the whole configuration
/// when they do not fit. Each copy of a regex condition a written location compiles is
/// counted at the most it may hold ([`regex_charge`]: about 64 KiB; [`Inline`]); units are
/// admitted oldest first (a route's attachment to one Gateway, the copies made for it, at
/// [`Ages::attached`], then its Gateway's own: [`Via`]), while their namespace's charges stay
/// within `per_tenant` and all namespaces' within `total` (`--regex-memory-per-tenant`,
/// `--regex-memory-total`); a unit past either is refused (`Accepted: False` on that
/// parentRef), so a newer tenant never takes an older one's share. Units refused before are
/// not counted. (Preloaded and per request, a pattern is compiled once per namespace: charged
/// with the lists, in one walk of whole routes, `list_bytes::memory`.)
pub(super) fn inline_regex_memory(
    ports: &[PortPlan],
    ages: &Ages,
    refusals: &mut Refusals,
    (per_tenant, total): (usize, usize),
) {
    let budget = Share::new("regex memory", per_tenant, total);
    let refused = Inline::of(ports, ages, &refusals.left).admit(budget);
    refusals.extend(refused);
}

/// A resource shared by namespaces, taken oldest first: each namespace's charges within
/// `per_tenant`, all namespaces' within `total` (the regex and list memory budgets).
pub(super) struct Share<'a> {
    /// Its name in a refusal ("budget: ...").
    name: &'static str,
    per_tenant: usize,
    total: usize,
    used: BTreeMap<&'a str, usize>,
    all: usize,
}

impl<'a> Share<'a> {
    pub(super) fn new(name: &'static str, per_tenant: usize, total: usize) -> Share<'a> {
        Share { name, per_tenant, total, used: BTreeMap::new(), all: 0 }
    }

    /// Takes `cost` for route `id` if it fits its namespace's and the total, else says why
    /// not (`what`: what of the route takes it, with the verb).
    pub(super) fn take(&mut self, id: &'a RouteId, cost: usize, what: &str) -> Result<(), String> {
        self.fits(id, cost, what)?;
        *self.used.entry(id.namespace.as_str()).or_default() += cost;
        self.all += cost;
        Ok(())
    }

    /// Whether `cost` for route `id` fits its namespace's and the total (taking nothing),
    /// else why not, as [`Share::take`].
    pub(super) fn fits(&self, id: &RouteId, cost: usize, what: &str) -> Result<(), String> {
        let used = self.used.get(id.namespace.as_str()).copied().unwrap_or(0);
        if used.saturating_add(cost) <= self.per_tenant
            && self.all.saturating_add(cost) <= self.total
        {
            return Ok(());
        }
        Err(format!(
            "route {id}'s {what} {cost} bytes of the module's http_matches_max_memory, past \
             what is left of namespace {}'s {} or of all namespaces' {} beside older routes \
             (budget: {})",
            id.namespace, self.per_tenant, self.total, self.name
        ))
    }
}

/// What the plan leaves out, by kind: the one place that decides whether route R (through
/// Gateway G) is written in server S ([`Left::at`], [`In::route`]), which candidates a server
/// writes ([`In::candidate`]) and which servers are written ([`Left::written`]). The budgets
/// read it as they refuse (each refusal added as it is made), emit reads it (the plan's
/// refusals and NGINX's), and explain (what the writer left out).
#[derive(Debug, Default, Clone)]
pub struct Left {
    pub listeners: BTreeSet<ListenerId>,
    pub routes: BTreeSet<RouteId>,
    pub rules: BTreeSet<RuleId>,
    /// Backend shares: (rule, index among its backendRefs).
    pub shares: BTreeSet<(RuleId, usize)>,
    /// Routes left out of the servers of a Gateway's listeners ([`Unit::Attachment`]).
    pub attachments: BTreeMap<GatewayId, BTreeSet<RouteId>>,
    pub locations: BTreeSet<(ServerAt, usize)>,
    /// Matches: rule, indexes among its `matches` ([`Unit::Match`]).
    pub matches: BTreeMap<RuleId, BTreeSet<usize>>,
}

/// The plan's refusals so far, in order, with why, and what they leave out ([`Left`]): each
/// budget reads what those decided before it refused, and adds its own.
#[derive(Default)]
pub(super) struct Refusals {
    pub(super) list: Vec<(Unit, String)>,
    pub(super) left: Left,
}

impl Refusals {
    pub(super) fn push(&mut self, unit: Unit, why: String) {
        self.left.add(&unit);
        self.list.push((unit, why));
    }

    pub(super) fn extend(&mut self, refused: Vec<(Unit, String)>) {
        refused.into_iter().for_each(|(unit, why)| self.push(unit, why));
    }
}

/// No route is left out of a server.
static NONE: BTreeSet<RouteId> = BTreeSet::new();

impl Left {
    pub fn of<'r>(refused: impl IntoIterator<Item = &'r (Unit, String)>) -> Left {
        let mut left = Left::default();
        for (r, _) in refused {
            left.add(r);
        }
        left
    }

    /// Leaves `r` out; whether it was not already (itself: a unit within one left out is
    /// still added).
    pub fn add(&mut self, r: &Unit) -> bool {
        match r {
            Unit::Listener(l) => self.listeners.insert(l.clone()),
            Unit::Route(r) => self.routes.insert(r.clone()),
            Unit::Rule(r) => self.rules.insert(r.clone()),
            Unit::BackendShare { rule, index } => self.shares.insert((rule.clone(), *index)),
            Unit::Location(at, li) => self.locations.insert((*at, *li)),
            Unit::Match { rule, index } => {
                self.matches.entry(rule.clone()).or_default().insert(*index)
            }
            Unit::Attachment { route, gateway } => {
                self.attachments.entry((**gateway).clone()).or_default().insert(route.clone())
            }
        }
    }

    /// Whether `r` is left out, itself or within a unit left out (a rule or attachment of a
    /// route left out, a share or match of a rule left out).
    pub fn refuses(&self, r: &Unit) -> bool {
        match r {
            Unit::Listener(l) => self.listeners.contains(l),
            Unit::Route(r) => self.routes.contains(r),
            Unit::Rule(r) => self.rule(r),
            Unit::BackendShare { rule, index } => {
                self.rule(rule) || self.shares.contains(&(rule.clone(), *index))
            }
            Unit::Location(at, li) => self.locations.contains(&(*at, *li)),
            Unit::Match { rule, index } => self.rule(rule) || self.is_match(rule, *index),
            Unit::Attachment { route, gateway } => {
                self.routes.contains(route)
                    || self.attachments.get(gateway).is_some_and(|a| a.contains(route))
            }
        }
    }

    /// Rule `id` is left out, or its route.
    pub fn rule(&self, id: &RuleId) -> bool {
        self.rules.contains(id) || self.routes.contains(&id.route)
    }

    /// Match `index` of rule `id` is left out itself.
    fn is_match(&self, id: &RuleId, index: usize) -> bool {
        self.matches.get(id).is_some_and(|m| m.contains(&index))
    }

    /// The servers whose listener is kept, each with its place and its Gateway's age (0: no
    /// listener).
    pub(super) fn servers<'p>(
        &self,
        ports: &'p [PortPlan],
        ages: &Ages,
    ) -> impl Iterator<Item = (ServerAt, &'p ServerPlan, usize)> {
        let servers = ports
            .iter()
            .enumerate()
            .flat_map(|(pi, p)| p.servers.iter().enumerate().map(move |(si, s)| ((pi, si), s)));
        let kept = servers.filter(|(_, s)| !self.listener_of(s));
        kept.map(|(at, s)| (at, s, s.listener.as_ref().map_or(0, |l| ages.listener(l))))
    }

    /// The locations of server `s` (at place `at`) not left out, with their index.
    pub(super) fn locations_of<'p>(
        &self,
        at: ServerAt,
        s: &'p ServerPlan,
    ) -> impl Iterator<Item = (usize, &'p LocationPlan)> {
        let locations = s.locations.iter().enumerate();
        locations.filter(move |(li, _)| !self.locations.contains(&(at, *li)))
    }

    /// Server `s`'s listener is left out.
    pub fn listener_of(&self, s: &ServerPlan) -> bool {
        s.listener.as_ref().is_some_and(|l| self.listeners.contains(l))
    }

    /// What server `s` leaves out ([`In`]).
    pub fn at(&self, s: &ServerPlan) -> In<'_> {
        let detached = match (&s.listener, self.attachments.is_empty()) {
            (Some(l), false) => self.attachments.get(&l.gateway_id()).unwrap_or(&NONE),
            _ => &NONE,
        };
        In { left: self, detached }
    }

    /// Server `s` is written (but for merging): its listener is kept, and if only routes'
    /// hostnames bring its name, one of them is written in it.
    pub fn written(&self, s: &ServerPlan) -> bool {
        let off = self.at(s);
        !self.listener_of(s)
            && (s.brought_by.is_empty() || !s.brought_by.iter().all(|r| off.route(r)))
    }
}

/// What one server leaves out: the units of [`Left`], and the routes whose attachment to its
/// listener's Gateway is left out.
#[derive(Clone, Copy)]
pub struct In<'s> {
    left: &'s Left,
    detached: &'s BTreeSet<RouteId>,
}

impl In<'_> {
    /// Route `r` is not written in this server (itself, or its attachment to its Gateway).
    pub fn route(&self, r: &RouteId) -> bool {
        self.left.routes.contains(r) || self.detached.contains(r)
    }

    /// Candidate `c` is not written in this server (its match, rule, route or attachment).
    pub fn candidate(&self, c: &Candidate) -> bool {
        self.left.rule(&c.id)
            || self.detached.contains(&c.id.route)
            || self.left.is_match(&c.id, c.match_index)
    }
}

/// The Gateway (namespace, name) of server `s`'s listener, if it has one.
pub(super) fn gateway_of(s: &ServerPlan) -> Option<(&str, &str)> {
    s.listener.as_ref().map(|l| (l.namespace.as_str(), l.gateway.as_str()))
}

/// Refusal of route `r` in the servers of Gateway `g` (namespace, name).
pub(super) fn attachment(r: &RouteId, (namespace, name): (&str, &str)) -> Unit {
    let gateway = Box::new(GatewayId { namespace: namespace.into(), name: name.into() });
    Unit::Attachment { route: r.clone(), gateway }
}

/// A route's part in a location, with `--carrier inline`.
#[derive(Default, Clone, Copy)]
struct Touch {
    /// What its entries there take in the module: their regex conditions ([`regex_charge`]
    /// each; their lists' bytes are `plan/list_bytes.rs`'s).
    charge: usize,
    /// One of its paths makes the location (`location = P` or `location P/` for its path P).
    makes_location: bool,
}

/// `--carrier inline`: every written location compiles its own list, so a route's regex
/// conditions are compiled once per location that holds them, and a location holds every
/// regex candidate of its server. A location is written while its server is (a listener's, or
/// one of the routes that bring its name is served) and, but for `location /`, one of the
/// routes whose path makes it is. Each compiled copy is charged to the route that makes it
/// exist, the newest of: the route whose regex it is, the oldest served route that brings the
/// server, the oldest served route that makes the location. Admitted oldest first, a route is
/// charged what it adds (its copies in the written locations, and every served route's copies
/// in the locations it makes written), so an older route's charge never grows with what
/// newer routes add. A location left with its copies but none of the routes that make it is
/// refused (not written: its paths' requests take the longest prefix location left, whose
/// list is the same without them). The work is the locations' candidates (what the lists
/// hold) and each route's servers, never routes x locations of a server. The unit admitted
/// is a route through one Gateway ([`Via`]): its copies in that Gateway's servers.
#[derive(Default)]
struct Inline<'a> {
    /// Per location: its server (an index into `server_on`) and place.
    locs: Vec<(usize, (ServerAt, usize))>,
    server_on: Vec<bool>,
    /// Per server not written yet: the copies its made locations hold (written with it).
    dormant: Vec<usize>,
    loc_on: Vec<bool>,
    /// The charges of the admitted routes' copies each location holds (written or not yet).
    held: Vec<usize>,
    touches: BTreeMap<Via<'a>, BTreeMap<usize, Touch>>,
    /// The servers each unit brings (a host name of its route's own).
    brings: BTreeMap<Via<'a>, BTreeSet<usize>>,
    ages: BTreeMap<Via<'a>, (usize, usize, usize)>,
}

/// What the inline budget admits or refuses: a route through one Gateway (namespace, name),
/// whose listeners' servers hold the copies of the route made for it (`None`: a server of no
/// listener), as old as [`Ages::attached`] to that Gateway. So a newer Gateway the route also
/// attaches to is charged to that attachment alone, never to the route's older ones.
type Via<'a> = (&'a RouteId, Option<(&'a str, &'a str)>);

/// Route `r` through the Gateway of server `s`'s listener.
fn via<'a>(r: &'a RouteId, s: &'a ServerPlan) -> Via<'a> {
    (r, gateway_of(s))
}

impl<'a> Inline<'a> {
    fn of(ports: &'a [PortPlan], ages: &Ages, left: &Left) -> Inline<'a> {
        let mut m = Inline::default();
        // With an inline carrier `out` holds `words::lists`' refusals: each location's kept
        // candidates are its written list's, so this walk is bounded by what is written.
        let mut kept = Kept::default();
        // Each candidate's charge per copy, computed once whatever the locations that hold it.
        let mut bytes: rustc_hash::FxHashMap<*const Candidate, usize> = Default::default();
        for (place, s, gateway) in left.servers(ports, ages) {
            let off = left.at(s);
            let server = m.server_on.len();
            m.server_on.push(s.brought_by.is_empty());
            m.dormant.push(0);
            for r in s.brought_by.iter().filter(|r| !off.route(r)) {
                m.age(via(r, s), ages.attached(r, gateway), gateway);
                m.brings.entry(via(r, s)).or_default().insert(server);
            }
            for (li, l) in left.locations_of(place, s) {
                let at = m.locs.len();
                m.locs.push((server, (place, li)));
                m.loc_on.push(l.loc == Loc::Prefix("/".into()));
                m.held.push(0);
                for c in kept.of(l, |c| !off.candidate(c)) {
                    m.age(via(&c.id.route, s), ages.attached(&c.id.route, gateway), gateway);
                    let list = *bytes
                        .entry(c as *const Candidate)
                        .or_insert_with(|| regexes(&c.entry).map(|p| regex_charge(p.len())).sum());
                    let t = m.touches.entry(via(&c.id.route, s)).or_default();
                    let t = t.entry(at).or_default();
                    t.charge = t.charge.saturating_add(list);
                    t.makes_location |= makes(&l.loc, c);
                }
            }
        }
        m
    }

    /// Unit `r`'s place: [`Ages::attached`], then its Gateway's own (`gateway`), so that of
    /// one route's attachments, all to Gateways older than it, the older Gateway's goes first
    /// (then the Gateway's namespace/name, in [`Via`]).
    fn age(&mut self, r: Via<'a>, (attached, own): (usize, usize), gateway: usize) {
        let a = self.ages.entry(r).or_insert((usize::MAX, 0, 0));
        *a = (*a).min((attached, own, gateway));
    }

    fn oldest_first(&self) -> Vec<Via<'a>> {
        let mut order: Vec<((usize, usize, usize), Via<'a>)> =
            self.ages.iter().map(|(&r, &a)| (a, r)).collect();
        order.sort();
        order.into_iter().map(|(_, r)| r).collect()
    }

    /// The servers unit `id` would make written.
    fn turns_on(&self, id: Via<'a>) -> BTreeSet<usize> {
        let brings = self.brings.get(&id).into_iter().flatten();
        brings.copied().filter(|&s| !self.server_on[s]).collect()
    }

    /// Unit `id` admitted: what it makes is written, its copies held.
    fn commit(&mut self, id: Via<'a>) {
        for (&l, t) in self.touches.get(&id).into_iter().flatten() {
            let s = self.locs[l].0;
            if !self.loc_on[l] && t.makes_location {
                self.loc_on[l] = true;
                self.dormant[s] += self.held[l];
            }
            self.held[l] += t.charge;
            if self.loc_on[l] {
                self.dormant[s] += t.charge;
            }
        }
        for s in self.turns_on(id) {
            self.server_on[s] = true;
        }
    }

    /// What admitting unit `id` adds: its copies in the locations written with it, and the
    /// admitted units' copies in the locations and servers it makes written.
    fn cost(&self, id: Via<'a>) -> usize {
        let on = self.turns_on(id);
        let mut cost: usize = on.iter().map(|&s| self.dormant[s]).sum();
        for (&l, t) in self.touches.get(&id).into_iter().flatten() {
            let s = self.locs[l].0;
            if !(self.server_on[s] || on.contains(&s)) || !(self.loc_on[l] || t.makes_location) {
                continue;
            }
            cost += t.charge;
            // Made written now: its copies, unless the server's `dormant` counted them.
            let counted = self.loc_on[l] && (self.server_on[s] || on.contains(&s));
            if !counted {
                cost += self.held[l];
            }
        }
        cost
    }

    /// Units oldest first within `budget`: the attachments refused (each alone, the route's
    /// others kept), then the locations left with copies but none of their makers.
    fn admit(mut self, mut budget: Share<'a>) -> Vec<(Unit, String)> {
        let mut out = Vec::new();
        for id in self.oldest_first() {
            let cost = self.cost(id);
            let (route, refused) = match id {
                (r, Some(g)) => (r, attachment(r, g)),
                (r, None) => (r, Unit::Route(r.clone())),
            };
            let what = match &refused {
                Unit::Attachment { gateway, .. } => format!(
                    "regex conditions and the locations it adds through Gateway {gateway} \
                     (inline) may take"
                ),
                _ => "regex conditions and the locations it adds (inline) may take".into(),
            };
            match budget.take(route, cost, &what) {
                Ok(()) => self.commit(id),
                Err(why) => out.push((refused, why)),
            }
        }
        for (l, &(s, (at, li))) in self.locs.iter().enumerate() {
            if self.server_on[s] && !self.loc_on[l] && self.held[l] > 0 {
                let why = "every route whose path makes this location is refused, and with \
                           --carrier inline it would compile the regex conditions of others \
                           (budget: regex memory)";
                out.push((Unit::Location(at, li), why.to_owned()));
            }
        }
        out
    }
}

/// Candidate `c`'s path makes location `loc` (`precedence::locations`): an exact path its
/// `location =`, a prefix P (not `/`) both `location = P` and `location P/`.
pub fn makes(loc: &Loc, c: &Candidate) -> bool {
    match (loc, c.path_kind) {
        (Loc::Exact(x), PathKind::Exact) => *x == c.path,
        (Loc::Exact(x), PathKind::Prefix) => c.path != "/" && *x == c.path,
        (Loc::Prefix(y), PathKind::Prefix) => {
            c.path != "/" && y.strip_suffix('/') == Some(c.path.as_str())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::{Inline, Left};
    use crate::plan::plan_yaml;

    /// Tenant a's route (a regex path and two prefixes) on a Gateway that admits every
    /// namespace, and `n` newer routes of tenant b, each a plain prefix `/bK` on a's host name.
    fn yaml(n: usize) -> String {
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: a.test, allowedRoutes: {namespaces: {from: All}}}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: a, creationTimestamp: \"2026-01-01T00:00:01Z\"}\nspec:\n  parentRefs: [{name: gw}]\n  rules:\n  - matches: [{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}, {path: {type: PathPrefix, value: /a}}, {path: {type: PathPrefix, value: /}}]\n".to_owned();
        for k in 0..n {
            y += &format!(
                "---\nkind: HTTPRoute\nmetadata: {{name: r{k}, namespace: b, creationTimestamp: \"2026-01-02T00:00:{:02}Z\"}}\nspec:\n  parentRefs: [{{name: gw, namespace: a}}]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /b{k}}}}}]\n",
                k % 60
            );
        }
        y
    }

    /// Each route's charge, admitted oldest first with no budget: namespace/name -> bytes.
    fn charges(n: usize) -> BTreeMap<String, usize> {
        charges_of(&yaml(n)).0
    }

    /// The charges of `yaml`'s routes, and the model's size (route-location pairs and
    /// route-server pairs it holds).
    fn charges_of(yaml: &str) -> (BTreeMap<String, usize>, usize) {
        let p = plan_yaml(yaml, |o| o.regex_per_location = true);
        let mut m = Inline::of(&p.ports, &p.ages, &Left::default());
        let size = m.touches.values().map(BTreeMap::len).sum::<usize>()
            + m.brings.values().map(BTreeSet::len).sum::<usize>();
        let mut out = BTreeMap::new();
        for id in m.oldest_first() {
            *out.entry(id.0.to_string()).or_default() += m.cost(id);
            m.commit(id);
        }
        (out, size)
    }

    /// n routes bringing one host name (the listener has none), each its own prefix: the
    /// model holds each route's candidates in the locations that list them and its server,
    /// linear in n (before, each bringer touched every location of the server: n x 2n).
    #[test]
    fn the_inline_model_is_linear_in_routes_bringing_one_host_name() {
        let yaml = |n: usize| {
            let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: a}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP}]\n".to_owned();
            for k in 0..n {
                y += &format!(
                    "---\nkind: HTTPRoute\nmetadata: {{name: r{k}, namespace: a}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [h.test]\n  rules:\n  - matches: [{{path: {{type: PathPrefix, value: /p{k}}}}}]\n"
                );
            }
            y
        };
        let ((_, at_n), (_, at_2n)) = (charges_of(&yaml(64)), charges_of(&yaml(128)));
        assert!(at_2n <= 2 * at_n + 8, "{at_n} -> {at_2n}");
    }

    /// Review rv-ga MED: one route's attachments to two Gateways both older than it tie on
    /// [`crate::plan::Ages::attached`]; the older Gateway's goes first, not the one whose
    /// namespace/name sorts first. team-x/r (day 5) on team-x/gw (day 1, one listener) and
    /// gateway-system/gw (day 2, 6 listeners), a budget for the larger of the two but not
    /// both: the route keeps its own older Gateway, its attachment to gateway-system/gw is
    /// refused. Before: gateway-system/gw's admitted first, team-x/r refused on team-x/gw.
    #[test]
    fn of_one_route_s_attachments_the_older_gateway_s_goes_first() {
        let mut y = "kind: Gateway\nmetadata: {name: gw, namespace: team-x, creationTimestamp: \"2026-01-01T00:00:00Z\"}\nspec:\n  listeners: [{name: l, port: 80, protocol: HTTP, hostname: x.test}]\n---\nkind: HTTPRoute\nmetadata: {name: r, namespace: team-x, creationTimestamp: \"2026-01-05T00:00:00Z\"}\nspec:\n  parentRefs: [{name: gw}, {name: gw, namespace: gateway-system}]\n  rules:\n  - matches: [{path: {type: RegularExpression, value: \"/v[0-9]+/.*\"}}]\n---\n".to_owned();
        let ls: Vec<String> = (0..6)
            .map(|k| format!("{{name: l{k}, port: 80, protocol: HTTP, hostname: h{k}.test, allowedRoutes: {{namespaces: {{from: All}}}}}}"))
            .collect();
        y += &format!(
            "kind: Gateway\nmetadata: {{name: gw, namespace: gateway-system, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\nspec:\n  listeners: [{}]\n",
            ls.join(", ")
        );
        let p = plan_yaml(&y, |o| o.regex_per_location = true);
        let m = Inline::of(&p.ports, &p.ages, &Left::default());
        let cost = |ns: &str| {
            let id = m.ages.keys().find(|v| v.1.is_some_and(|g| g.0 == ns)).unwrap();
            m.cost(*id)
        };
        let (mine, shared) = (cost("team-x"), cost("gateway-system"));
        assert!(mine < shared, "{mine} {shared}");
        let p = plan_yaml(&y, |o| {
            o.regex_per_location = true;
            (o.regex_memory_per_tenant, o.regex_memory_total) = (shared, shared);
        });
        let refused: Vec<String> = p
            .refused
            .iter()
            .map(|(r, _)| match r {
                super::Unit::Attachment { route, gateway } => format!("{route} via {gateway}"),
                r => format!("{r:?}"),
            })
            .collect();
        assert_eq!(refused, ["team-x/r via gateway-system/gw"]);
    }

    /// The older route's charge is its own copies (`location /`, `= /a`, `/a/`: 3), the same
    /// with n and 2n newer plain paths on its host name; the newer routes pay for the copies
    /// their locations hold (2 each: `= /bK`, `/bK/`), so theirs doubles with n. Regex
    /// conditions alone: the lists' bytes are `plan/list_bytes.rs`'s (before, each copy's
    /// list bytes were charged here too, and again there).
    #[test]
    fn an_older_inline_regex_route_is_charged_the_same_at_n_and_2n_newer_paths() {
        let copy = crate::limits::regex_charge("^(?:/v[0-9]+/.*)".len());
        let b = |c: &BTreeMap<String, usize>| -> usize {
            c.iter().filter(|(k, _)| k.starts_with("b/")).map(|(_, v)| v).sum()
        };
        let (alone, n, twice) = (charges(0), charges(16), charges(32));
        assert_eq!(alone["a/r"], 3 * copy, "{alone:?}");
        assert_eq!((n["a/r"], twice["a/r"]), (alone["a/r"], alone["a/r"]));
        assert_eq!((b(&n), b(&twice)), (16 * 2 * copy, 32 * 2 * copy), "{n:?} {twice:?}");
    }
}
