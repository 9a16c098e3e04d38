//! Typed names of what planning works on: listeners, routes and rules. Their `Display` is the
//! text warnings, comments and status show (`namespace/gateway/listener`, `namespace/name`,
//! `namespace/name rule N`).

use std::fmt;

use crate::model::Meta;

/// Indexes of `metas`, oldest first: by `creationTimestamp` (none counts as newer than every
/// dated object: a tenant cannot leave it out to go first), then
/// by the `"{namespace}/{name}"` string (the spec's words: the string, which orders `a-b/c`
/// before `a/b-c`, where the (namespace, name) pair does not). Gateway API's order wherever
/// objects conflict: precedence ties between routes, Gateways sharing a port.
pub(super) fn oldest_first(metas: &[&Meta]) -> Vec<usize> {
    let names: Vec<String> = metas.iter().map(|m| format!("{}/{}", m.namespace, m.name)).collect();
    let mut order: Vec<usize> = (0..metas.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            let t = &metas[i].creation_timestamp;
            (t.is_none(), t, &names[i])
        };
        key(a).cmp(&key(b))
    });
    order
}

/// A listener of a Gateway.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListenerId {
    pub namespace: String,
    pub gateway: String,
    pub name: String,
}

impl fmt::Display for ListenerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.gateway, self.name)
    }
}

impl ListenerId {
    /// Its Gateway.
    pub fn gateway_id(&self) -> GatewayId {
        GatewayId { namespace: self.namespace.clone(), name: self.gateway.clone() }
    }
}

/// A Gateway: shown as `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GatewayId {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for GatewayId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What kind of route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    pub fn of(grpc: bool) -> RouteKind {
        if grpc { RouteKind::Grpc } else { RouteKind::Http }
    }

    /// The Kubernetes kind: `HTTPRoute`, `GRPCRoute`.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
        }
    }
}

impl fmt::Display for RouteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A route. Shown as `namespace/name` (the kind is said separately where it matters). Its
/// names are held once ([`RouteName`], shared): every rule and candidate of the route holds a
/// pointer, not a copy (50,000 routes x 3 rules held 12 name copies a route).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteId(std::sync::Arc<RouteName>);

/// What a [`RouteId`] names.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteName {
    pub kind: RouteKind,
    pub namespace: String,
    pub name: String,
}

impl RouteId {
    pub fn new(kind: RouteKind, namespace: String, name: String) -> RouteId {
        RouteId(std::sync::Arc::new(RouteName { kind, namespace, name }))
    }

    pub fn of(r: &crate::model::HttpRoute) -> RouteId {
        let m = &r.metadata;
        RouteId::new(RouteKind::of(r.grpc), m.namespace.clone(), m.name.clone())
    }
}

impl std::ops::Deref for RouteId {
    type Target = RouteName;
    fn deref(&self) -> &RouteName {
        &self.0
    }
}

impl fmt::Display for RouteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A rule of a route: shown as `namespace/name rule N`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId {
    pub route: RouteId,
    /// Its index in the route's `rules`.
    pub index: usize,
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rule {}", self.route, self.index)
    }
}

/// Every Gateway's and route's place in Gateway API's conflict order (oldest first, see
/// [`oldest_first`]), on one scale: what the `nginx -t` safety net leaves out newest first.
#[derive(Debug, Default, Clone)]
pub struct Ages {
    routes: std::collections::HashMap<RouteId, usize>,
    /// By (namespace, name) of the Gateway.
    gateways: std::collections::HashMap<(String, String), usize>,
}

impl Ages {
    pub(super) fn of(inputs: &crate::model::Inputs) -> Ages {
        let n = inputs.gateways.len();
        let metas: Vec<&Meta> = inputs
            .gateways
            .iter()
            .map(|g| &g.metadata)
            .chain(inputs.routes.iter().map(|r| &r.metadata))
            .collect();
        let mut ages = Ages::default();
        for (age, i) in oldest_first(&metas).into_iter().enumerate() {
            match i.checked_sub(n) {
                None => {
                    let m = &inputs.gateways[i].metadata;
                    ages.gateways.insert((m.namespace.clone(), m.name.clone()), age);
                }
                Some(r) => {
                    ages.routes.insert(RouteId::of(&inputs.routes[r]), age);
                }
            }
        }
        ages
    }

    /// A route's place (an unknown one counts as the newest).
    pub fn route(&self, id: &RouteId) -> usize {
        self.routes.get(id).copied().unwrap_or(usize::MAX)
    }

    /// A route's place where it comes with a listener of the Gateway at place `gateway` (0: no
    /// listener): the later of the two, then the route's own, so that routes older than a
    /// newer Gateway still go newest last, not by kind and name. The one key of every
    /// oldest-first admission of what a route brings through a listener.
    pub fn attached(&self, route: &RouteId, gateway: usize) -> (usize, usize) {
        let own = self.route(route);
        (own.max(gateway), own)
    }

    /// A listener's place: its Gateway's (an unknown one counts as the newest).
    pub fn listener(&self, id: &ListenerId) -> usize {
        let key = (id.namespace.clone(), id.gateway.clone());
        self.gateways.get(&key).copied().unwrap_or(usize::MAX)
    }

    /// A Gateway's place (an unknown one counts as the newest).
    pub fn gateway(&self, id: &GatewayId) -> usize {
        let key = (id.namespace.clone(), id.name.clone());
        self.gateways.get(&key).copied().unwrap_or(usize::MAX)
    }
}

/// A tenant's object, the smallest that holds what is left out: what a budget refuses, what a
/// word NGINX cannot take (`plan/words.rs`) leaves out, and what `nginx -t`'s refusal leaves
/// out (`crate::nginx_check`: the newest tenant's routes and listeners). Leaving out an inner
/// unit (a share of a rule, a match) removes (or, for a share, rewrites) its own part only;
/// leaving out the outer one removes it with its parts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    /// A listener: its `listen` lines, its certificates, and the `server_name` and SNI check of
    /// a server named by its hostname. Left out, its servers are not written (its port's
    /// catch-all answers 404 when other listeners keep the port): `Programmed: False`.
    Listener(ListenerId),
    /// A route: the `server_name` (and SNI check) of a server only its hostnames bring. Left
    /// out, none of its rules is served and such servers are not written (`Accepted: False`).
    Route(RouteId),
    /// A route's attachment to a Gateway: the route is not served in the servers of that
    /// Gateway's listeners (that parentRef `Accepted: False`), and is kept everywhere else.
    Attachment {
        route: RouteId,
        // Boxed: a unit of each kind is as small as before (a set of one holds 11).
        gateway: Box<GatewayId>,
    },
    /// A rule: its internal locations, and the maps and split_clients written for it.
    Rule(RuleId),
    /// One backendRef of a rule (`index` among its `backendRefs`): the `upstream` written for
    /// it, its `split_clients` entry, its own location (backends with filters of their own).
    /// Left out, its share of the rule's requests answers 500 (the others keep theirs).
    BackendShare { rule: RuleId, index: usize },
    /// `rules[rule.index].matches[index]`: left out by the writer, from the location its path
    /// makes (`emit`: the matches of a location left out), or read back by explain.
    Match { rule: RuleId, index: usize },
    /// The location of a match path: (port, server, location) in the plan (`ServerAt`,
    /// index).
    Location((usize, usize), usize),
}

impl Unit {
    /// The route the unit is, or is inside (`None` for a listener or a location).
    pub fn route(&self) -> Option<&RouteId> {
        match self {
            Unit::Match { rule, .. } | Unit::BackendShare { rule, .. } | Unit::Rule(rule) => {
                Some(&rule.route)
            }
            Unit::Route(r) | Unit::Attachment { route: r, .. } => Some(r),
            Unit::Listener(_) | Unit::Location(..) => None,
        }
    }
}
